//! The fallback chain: which groups a plan enters once its requested group is exhausted.

use std::borrow::Cow;
use std::sync::Arc;

use super::{AttemptPlan, ChainEntry};
use crate::failure::FailureClass;

/// The source key of a fallback rule that applies to every group without its own rule.
const GENERIC_FALLBACK_KEY: &str = "*";

impl<'a> AttemptPlan<'a> {
    /// Appends the fallback groups of the requested group for a failure of `class`.
    pub(super) fn build_chain(&mut self, class: FailureClass) {
        let router = self.router;
        let cfg = &router.config;
        let primary = &self.chain[0];
        let keys = [primary.group.name.as_str(), primary.requested.as_ref()];
        // The group's own entry, else the generic one: a rule keyed `*` applies to every group
        // without its own (LiteLLM's `get_fallback_model_group`).
        let entry_of = |map: &'a std::collections::HashMap<String, Vec<String>>| {
            keys.iter()
                .find_map(|k| map.get(*k))
                .or_else(|| map.get(GENERIC_FALLBACK_KEY))
        };
        let special = match class {
            FailureClass::ContextWindowExceeded => entry_of(&cfg.context_window_fallbacks),
            FailureClass::ContentPolicy => entry_of(&cfg.content_policy_fallbacks),
            _ => None,
        };
        let request = self.request_fallbacks.take();
        let names: Vec<Cow<'a, str>> = match (special, request) {
            (Some(list), _) => list.iter().map(|s| Cow::Borrowed(s.as_str())).collect(),
            (None, Some(list)) => list.into_iter().map(Cow::Owned).collect(),
            // `default_fallbacks` is LiteLLM's `{"*": default_fallbacks}` appended to
            // `fallbacks`: it wins over an earlier `*` rule.
            (None, None) => keys
                .iter()
                .find_map(|k| cfg.fallbacks.get(*k))
                .or((!cfg.default_fallbacks.is_empty()).then_some(&cfg.default_fallbacks))
                .or_else(|| cfg.fallbacks.get(GENERIC_FALLBACK_KEY))
                .unwrap_or(&cfg.default_fallbacks)
                .iter()
                .map(|s| Cow::Borrowed(s.as_str()))
                .collect(),
        };
        for name in names {
            if self.chain.len() > cfg.max_fallbacks {
                break;
            }
            let Some((group, matched)) = router.lookup(&name) else {
                continue;
            };
            if self.chain.iter().any(|e| Arc::ptr_eq(e.group, group)) {
                continue;
            }
            self.chain.push(ChainEntry {
                group,
                requested: name,
                matched,
            });
        }
    }
}
