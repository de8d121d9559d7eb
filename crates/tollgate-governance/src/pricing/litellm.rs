//! Loader for LiteLLM's `model_prices_and_context_window.json` format (litellm-surface §6.1):
//! a JSON object `{"<model or provider/model>": {"input_cost_per_token": 2.5e-06, ...}, ...}`,
//! prices in USD per token. Fields Tollgate prices by: `input_cost_per_token`,
//! `output_cost_per_token`, `cache_read_input_token_cost`, `cache_creation_input_token_cost`,
//! `output_cost_per_reasoning_token`, `input_cost_per_request`; plus `litellm_provider`,
//! `max_input_tokens`, `max_output_tokens` / `max_tokens`. Other fields (tiers, audio, images)
//! are ignored. The `sample_spec` entry and entries without any of those prices are skipped.

use std::path::Path;

use serde_json::{Map, Value};

use super::{ModelPrice, PriceError, PriceTable};

impl PriceTable {
    /// Parses a LiteLLM-format price map.
    ///
    /// Errors: [`PriceError::Format`] when `json` is not a JSON object. Individual entries that
    /// are not objects, or carry no price, are skipped (LiteLLM's map has such entries).
    pub fn from_litellm_json(json: &str) -> Result<Self, PriceError> {
        let doc: Value =
            serde_json::from_str(json).map_err(|e| PriceError::Format(e.to_string()))?;
        let Value::Object(map) = doc else {
            return Err(PriceError::Format("top level is not a JSON object".into()));
        };
        let mut table = PriceTable::new();
        for (name, entry) in map {
            if name == "sample_spec" {
                continue;
            }
            let Value::Object(fields) = entry else {
                continue;
            };
            if let Some(price) = entry_price(&fields) {
                table.insert(name, price);
            }
        }
        Ok(table)
    }

    /// Reads and parses a LiteLLM-format price map from a file.
    ///
    /// Errors: [`PriceError::Io`] when the file cannot be read, [`PriceError::Format`] as in
    /// [`Self::from_litellm_json`].
    pub fn load_litellm_file(path: impl AsRef<Path>) -> Result<Self, PriceError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| PriceError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_litellm_json(&text)
    }
}

fn num(fields: &Map<String, Value>, name: &str) -> Option<f64> {
    fields
        .get(name)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
}

fn count(fields: &Map<String, Value>, name: &str) -> Option<u64> {
    fields.get(name).and_then(Value::as_u64)
}

fn entry_price(fields: &Map<String, Value>) -> Option<ModelPrice> {
    let input = num(fields, "input_cost_per_token");
    let output = num(fields, "output_cost_per_token");
    let per_request = num(fields, "input_cost_per_request");
    if input.is_none() && output.is_none() && per_request.is_none() {
        return None;
    }
    Some(ModelPrice {
        input_per_token: input.unwrap_or(0.0),
        output_per_token: output.unwrap_or(0.0),
        cache_read_per_token: num(fields, "cache_read_input_token_cost"),
        cache_write_per_token: num(fields, "cache_creation_input_token_cost"),
        reasoning_per_token: num(fields, "output_cost_per_reasoning_token"),
        per_request: per_request.unwrap_or(0.0),
        provider: fields
            .get("litellm_provider")
            .and_then(Value::as_str)
            .map(str::to_owned),
        max_input_tokens: count(fields, "max_input_tokens"),
        max_output_tokens: count(fields, "max_output_tokens")
            .or_else(|| count(fields, "max_tokens")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::{Usage, cost};

    #[test]
    fn parses_entries_and_skips_sample_spec_and_unpriced() {
        let json = r#"{
            "sample_spec": {"input_cost_per_token": 0.0, "litellm_provider": "one of ..."},
            "gpt-x": {"input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05,
                      "cache_read_input_token_cost": 1.25e-06, "litellm_provider": "openai",
                      "max_input_tokens": 128000, "max_output_tokens": 16384, "mode": "chat"},
            "legacy": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06, "max_tokens": 4096},
            "search/thing": {"input_cost_per_request": 0.005},
            "image-only": {"output_cost_per_image": 0.04},
            "not-an-object": 3
        }"#;
        let t = PriceTable::from_litellm_json(json).unwrap();
        assert_eq!(t.len(), 3);
        assert!(t.get("sample_spec").is_none());
        assert!(t.get("image-only").is_none());
        let g = t.get("gpt-x").unwrap();
        assert_eq!(g.input_per_token, 2.5e-6);
        assert_eq!(g.output_per_token, 1e-5);
        assert_eq!(g.cache_read_per_token, Some(1.25e-6));
        assert_eq!(g.cache_write_per_token, None);
        assert_eq!(g.provider.as_deref(), Some("openai"));
        assert_eq!(
            (g.max_input_tokens, g.max_output_tokens),
            (Some(128000), Some(16384))
        );
        assert_eq!(t.get("legacy").unwrap().max_output_tokens, Some(4096));
        assert_eq!(t.get("search/thing").unwrap().per_request, 0.005);
    }

    #[test]
    fn rejects_non_object_documents() {
        assert!(matches!(
            PriceTable::from_litellm_json("[1,2]"),
            Err(PriceError::Format(_))
        ));
        assert!(matches!(
            PriceTable::from_litellm_json("{"),
            Err(PriceError::Format(_))
        ));
        let err = PriceTable::load_litellm_file("/nonexistent/prices.json").unwrap_err();
        assert!(matches!(err, PriceError::Io { .. }));
    }

    /// Loads LiteLLM's real map from `../shared/pricing/` (or `$TOLLGATE_SHARED_DIR/pricing/`).
    #[test]
    fn loads_litellm_shared_price_map() {
        let Some(path) = crate::test_support::shared_dir()
            .map(|d| d.join("pricing/litellm_model_prices.json"))
            .filter(|p| p.exists())
        else {
            println!(
                "SKIPPED loads_litellm_shared_price_map: shared/pricing/litellm_model_prices.json not found"
            );
            return;
        };
        let t = PriceTable::load_litellm_file(&path).unwrap();
        assert!(t.len() > 3000, "only {} entries", t.len());
        let gpt4o = t.lookup(Some("openai"), "gpt-4o").unwrap();
        assert_eq!(gpt4o.input_per_token, 2.5e-6);
        assert_eq!(gpt4o.output_per_token, 1e-5);
        assert_eq!(gpt4o.cache_read_per_token, Some(1.25e-6));
        // 1000 prompt (400 cached) + 200 completion:
        // 600·2.5e-6 + 400·1.25e-6 + 200·1e-5 = 0.0015 + 0.0005 + 0.002 = 0.004
        let u = Usage {
            prompt_tokens: 1000,
            completion_tokens: 200,
            cached_tokens: 400,
            ..Usage::default()
        };
        assert!((cost(&u, gpt4o) - 0.004).abs() < 1e-12);
        let sonnet = t.lookup(Some("anthropic"), "claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.cache_write_per_token, Some(3.75e-6));
        let flash = t.lookup(Some("gemini"), "gemini-2.5-flash").unwrap();
        assert_eq!(flash.reasoning_per_token, Some(2.5e-6));
        let pplx = t.get("perplexity/pplx-70b-online").unwrap();
        assert!(pplx.per_request > 0.0);
    }
}
