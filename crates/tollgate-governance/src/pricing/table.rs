//! [`ModelPrice`], [`PriceTable`] and per-deployment [`PriceOverrides`].

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// One model's prices. All `*_per_token` values are **USD per token**; `per_request` is USD
/// per request. `None` for a cache price means "charge the input price" (see [`crate::pricing::cost`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// USD per uncached prompt token (LiteLLM `input_cost_per_token`).
    pub input_per_token: f64,
    /// USD per completion token (LiteLLM `output_cost_per_token`).
    pub output_per_token: f64,
    /// USD per prompt token read from the provider's prompt cache
    /// (LiteLLM `cache_read_input_token_cost`). `None` = input price.
    pub cache_read_per_token: Option<f64>,
    /// USD per prompt token written to the provider's prompt cache
    /// (LiteLLM `cache_creation_input_token_cost`). `None` = input price.
    pub cache_write_per_token: Option<f64>,
    /// USD per reasoning token (LiteLLM `output_cost_per_reasoning_token`). `None` = output
    /// price. Reasoning tokens are part of `completion_tokens` (OpenAI usage convention).
    pub reasoning_per_token: Option<f64>,
    /// USD per request, charged once whatever the tokens (LiteLLM `input_cost_per_request`).
    pub per_request: f64,
    /// Provider name as LiteLLM spells it (`openai`, `anthropic`, `gemini`, ...), if known.
    pub provider: Option<String>,
    /// Context window in tokens (LiteLLM `max_input_tokens`), if known.
    pub max_input_tokens: Option<u64>,
    /// Maximum completion tokens (LiteLLM `max_output_tokens`, else legacy `max_tokens`), if known.
    pub max_output_tokens: Option<u64>,
}

/// Per-deployment price overrides, as LiteLLM reads them from a deployment's
/// `litellm_params` / `model_info` (litellm-surface §6.1: "Deployment `litellm_params.*_cost_per_*`
/// override the map"). Every field is USD per token except `input_cost_per_request` (USD per request).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceOverrides {
    /// Overrides [`ModelPrice::input_per_token`].
    #[serde(default)]
    pub input_cost_per_token: Option<f64>,
    /// Overrides [`ModelPrice::output_per_token`].
    #[serde(default)]
    pub output_cost_per_token: Option<f64>,
    /// Overrides [`ModelPrice::cache_read_per_token`].
    #[serde(default)]
    pub cache_read_input_token_cost: Option<f64>,
    /// Overrides [`ModelPrice::cache_write_per_token`].
    #[serde(default)]
    pub cache_creation_input_token_cost: Option<f64>,
    /// Overrides [`ModelPrice::reasoning_per_token`].
    #[serde(default)]
    pub output_cost_per_reasoning_token: Option<f64>,
    /// Overrides [`ModelPrice::per_request`].
    #[serde(default)]
    pub input_cost_per_request: Option<f64>,
}

impl PriceOverrides {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `base` (the table's entry, or zero prices when the model is not in any table) with every
    /// set field replaced.
    pub fn apply(&self, base: Option<&ModelPrice>) -> ModelPrice {
        let mut p = base.cloned().unwrap_or_default();
        if let Some(v) = self.input_cost_per_token {
            p.input_per_token = v;
        }
        if let Some(v) = self.output_cost_per_token {
            p.output_per_token = v;
        }
        if let Some(v) = self.cache_read_input_token_cost {
            p.cache_read_per_token = Some(v);
        }
        if let Some(v) = self.cache_creation_input_token_cost {
            p.cache_write_per_token = Some(v);
        }
        if let Some(v) = self.output_cost_per_reasoning_token {
            p.reasoning_per_token = Some(v);
        }
        if let Some(v) = self.input_cost_per_request {
            p.per_request = v;
        }
        p
    }
}

/// Model name → [`ModelPrice`]. Keys are stored as given (`gpt-4o`, `openai/gpt-4o`,
/// `gemini/gemini-2.5-flash`), case-sensitive like LiteLLM's map.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    entries: HashMap<String, ModelPrice>,
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Inserts or replaces the entry for `name`.
    pub fn insert(&mut self, name: impl Into<String>, price: ModelPrice) {
        self.entries.insert(name.into(), price);
    }

    /// Copies every entry of `other` into `self`, replacing entries with the same name
    /// (later sources win: built-in table, then a configured LiteLLM map).
    pub fn merge(&mut self, other: PriceTable) {
        self.entries.extend(other.entries);
    }

    /// The entry stored under exactly `name`.
    pub fn get(&self, name: &str) -> Option<&ModelPrice> {
        self.entries.get(name)
    }

    /// Looks a model up the way LiteLLM keys its map: first `"{provider}/{model}"` (when a
    /// provider is given), then `model` as given, then — when `model` itself carries a
    /// `prefix/` (e.g. `openai/gpt-4o` from a deployment's `litellm_params.model`) — the part
    /// after the first `/`.
    pub fn lookup(&self, provider: Option<&str>, model: &str) -> Option<&ModelPrice> {
        if let Some(p) = provider.filter(|p| !p.is_empty()) {
            let mut key = String::with_capacity(p.len() + 1 + model.len());
            key.push_str(p);
            key.push('/');
            key.push_str(model);
            if let Some(found) = self.entries.get(&key) {
                return Some(found);
            }
        }
        if let Some(found) = self.entries.get(model) {
            return Some(found);
        }
        match model.split_once('/') {
            Some((_, rest)) if !rest.is_empty() => self.entries.get(rest),
            _ => None,
        }
    }

    /// The price for a deployment: [`Self::lookup`] with `overrides` applied on top. Returns
    /// `None` only when the model is in no table and no override is set (the caller then
    /// records cost 0 and may warn once: an unpriced model).
    pub fn price_for(
        &self,
        provider: Option<&str>,
        model: &str,
        overrides: &PriceOverrides,
    ) -> Option<ModelPrice> {
        let base = self.lookup(provider, model);
        if base.is_none() && overrides.is_empty() {
            return None;
        }
        Some(overrides.apply(base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(input: f64, output: f64) -> ModelPrice {
        ModelPrice {
            input_per_token: input,
            output_per_token: output,
            ..ModelPrice::default()
        }
    }

    #[test]
    fn lookup_prefers_provider_prefixed_entry() {
        let mut t = PriceTable::new();
        t.insert("gpt-4o", p(1.0, 2.0));
        t.insert("azure/gpt-4o", p(3.0, 4.0));
        assert_eq!(
            t.lookup(Some("azure"), "gpt-4o").unwrap().input_per_token,
            3.0
        );
        assert_eq!(
            t.lookup(Some("openai"), "gpt-4o").unwrap().input_per_token,
            1.0
        );
        assert_eq!(t.lookup(None, "gpt-4o").unwrap().input_per_token, 1.0);
        assert_eq!(t.lookup(None, "azure/gpt-4o").unwrap().input_per_token, 3.0);
        // a prefixed name not in the table falls back to the bare model
        assert_eq!(
            t.lookup(None, "openai/gpt-4o").unwrap().input_per_token,
            1.0
        );
        assert!(t.lookup(Some("openai"), "gpt-5-nonexistent").is_none());
        assert!(t.lookup(None, "").is_none());
    }

    #[test]
    fn overrides_replace_only_set_fields() {
        let mut t = PriceTable::new();
        t.insert(
            "m",
            ModelPrice {
                cache_read_per_token: Some(0.5),
                ..p(1.0, 2.0)
            },
        );
        let o = PriceOverrides {
            output_cost_per_token: Some(9.0),
            input_cost_per_request: Some(0.01),
            ..Default::default()
        };
        let got = t.price_for(None, "m", &o).unwrap();
        assert_eq!(got.input_per_token, 1.0);
        assert_eq!(got.output_per_token, 9.0);
        assert_eq!(got.cache_read_per_token, Some(0.5));
        assert_eq!(got.per_request, 0.01);
        // unknown model: priced by overrides alone, or not at all
        let only = t.price_for(None, "unknown", &o).unwrap();
        assert_eq!((only.input_per_token, only.output_per_token), (0.0, 9.0));
        assert!(
            t.price_for(None, "unknown", &PriceOverrides::default())
                .is_none()
        );
    }

    #[test]
    fn merge_later_source_wins() {
        let mut a = PriceTable::new();
        a.insert("x", p(1.0, 1.0));
        a.insert("y", p(1.0, 1.0));
        let mut b = PriceTable::new();
        b.insert("y", p(2.0, 2.0));
        a.merge(b);
        assert_eq!(a.len(), 2);
        assert_eq!(a.get("x").unwrap().input_per_token, 1.0);
        assert_eq!(a.get("y").unwrap().input_per_token, 2.0);
    }
}
