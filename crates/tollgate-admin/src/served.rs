//! Warnings for per-model budgets that no request can reach: a `model_max_budget` entry is
//! kept as given (LiteLLM's `/key/generate` and `/key/update` validate only its shape, and a
//! model group may be added after the key, with `/model/new`), but an entry that names nothing
//! this proxy serves is most often a typo that leaves the model without a budget, so the key
//! routes answer with a `warnings` list naming each such entry (and log it).
//!
//! An entry is served when a request can be governed by it ([`tollgate_governance::store::ModelNames`]):
//! it names a model group or a name a wildcard group serves (`w/x` through `w/*`, by the
//! router's wildcard rule), or it is an alias of the key (`aliases`) or of its team
//! (`metadata.model_aliases`). Router-level `model_group_alias` names are not known here and
//! are warned about.

use serde_json::Value;
use tollgate_governance::store::VerificationToken;
use tollgate_protocol::model_name::entry_admits;

use crate::ModelRegistry;

/// One warning per `model_max_budget` entry of `row` that no model group, wildcard group or
/// alias of the key (`row.aliases`, `team_aliases`) serves; empty when every entry is
/// reachable.
pub(crate) fn unserved_budgets(
    models: &dyn ModelRegistry,
    row: &VerificationToken,
    team_aliases: &Value,
) -> Vec<String> {
    let Some(entries) = row.model_max_budget.as_object().filter(|m| !m.is_empty()) else {
        return Vec::new();
    };
    let listing = models.list();
    let groups: Vec<&str> = listing
        .iter()
        .filter_map(|d| d.get("model_name").and_then(Value::as_str))
        .collect();
    let aliased = |name: &str| row.aliases.get(name).is_some() || team_aliases.get(name).is_some();
    entries
        .keys()
        .filter(|name| !aliased(name) && !groups.iter().any(|g| entry_admits(g, name)))
        .map(|name| {
            format!(
                "model_max_budget[{name}]: no model group, wildcard group or alias of this key serves this name, so this budget applies to no request until one does"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Groups(Vec<Value>);

    #[async_trait::async_trait]
    impl ModelRegistry for Groups {
        fn list(&self) -> Vec<Value> {
            self.0.clone()
        }
        async fn add(&self, _: Value, _: &str) -> Result<Value, crate::ModelChangeError> {
            unreachable!()
        }
        async fn delete(&self, _: &str) -> Result<(), crate::ModelChangeError> {
            unreachable!()
        }
        async fn update(
            &self,
            _: &str,
            _: Value,
            _: &str,
        ) -> Result<Value, crate::ModelChangeError> {
            unreachable!()
        }
    }

    #[test]
    fn groups_wildcards_and_aliases_serve_entries() {
        let groups = Groups(vec![
            json!({"model_name": "gpt-4o"}),
            json!({"model_name": "w/*"}),
        ]);
        let row = VerificationToken {
            model_max_budget: json!({"gpt-4o": 1, "w/x": 1, "fast": 1, "w/": 1, "wx": 1, "x": 1}),
            aliases: json!({"fast": "gpt-4o"}),
            ..VerificationToken::default()
        };
        let w = unserved_budgets(&groups, &row, &json!({"x": "gpt-4o"}));
        let named: Vec<&str> = w
            .iter()
            .map(|w| w.split(']').next().unwrap_or_default())
            .collect();
        assert_eq!(named, ["model_max_budget[w/", "model_max_budget[wx"]);
        let none = VerificationToken::default();
        assert!(unserved_budgets(&groups, &none, &Value::Null).is_empty());
    }
}
