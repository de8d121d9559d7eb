//! Tollgate's built-in price table, `data/prices.json` (format `tollgate-prices/1`):
//!
//! ```json
//! {"format": "tollgate-prices/1",
//!  "models": {"gpt-4o": {"provider": "openai", "input": 2.5, "output": 10.0, "cache_read": 1.25,
//!                        "cache_write": null, "reasoning": null, "per_request": 0.0,
//!                        "context": 128000, "max_output": 16384}}}
//! ```
//!
//! Token prices are **USD per 1M tokens** (as the providers' price pages state them) and are
//! divided by 1e6 on load; `per_request` is USD. A key without `/` is registered both as given
//! and as `<provider>/<key>`.
//!
//! Sources (the file's `sources` member; standard tier, prompts up to 200K tokens): OpenAI's
//! pricing page <https://platform.openai.com/docs/pricing> and model pages
//! <https://platform.openai.com/docs/models> (each dated snapshot, `gpt-4o-2024-08-06`, priced
//! as the page lists it, older snapshots at their own price: `gpt-4o-2024-05-13` is 5 / 15);
//! Anthropic's pricing page <https://docs.anthropic.com/en/docs/about-claude/pricing> with the
//! model ids and aliases of <https://docs.anthropic.com/en/docs/about-claude/models/overview>
//! (`claude-sonnet-4-20250514`, `claude-3-5-sonnet-latest`, ...; `cache_write` is the 5-minute
//! write price); Google's <https://ai.google.dev/gemini-api/docs/pricing>, Mistral's
//! <https://mistral.ai/pricing#api-pricing>, Groq's <https://groq.com/pricing>. A model missing
//! here is priced by a LiteLLM-format map (`LITELLM_MODEL_COST_MAP_URL`) or the deployment's
//! own `*_cost_per_token`; with neither, the gateway says so at start and in `check-config`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ModelPrice, PriceError, PriceTable};

const BUILTIN_JSON: &str = include_str!("../../data/prices.json");

#[derive(Deserialize)]
struct File {
    format: String,
    models: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    provider: String,
    input: f64,
    output: f64,
    #[serde(default)]
    cache_read: Option<f64>,
    #[serde(default)]
    cache_write: Option<f64>,
    #[serde(default)]
    reasoning: Option<f64>,
    #[serde(default)]
    per_request: f64,
    #[serde(default)]
    context: Option<u64>,
    #[serde(default)]
    max_output: Option<u64>,
}

const PER_MILLION: f64 = 1_000_000.0;

impl PriceTable {
    /// Tollgate's built-in table (OpenAI and Anthropic models with their dated snapshot ids and
    /// aliases; Gemini, Mistral and Groq models).
    pub fn builtin() -> Self {
        // The file is compiled in and covered by a test, so parsing cannot fail at run time;
        // fall back to an empty table rather than panic if it ever did.
        Self::from_tollgate_json(BUILTIN_JSON).unwrap_or_default()
    }

    /// Parses a table in Tollgate's own format (see the module docs).
    ///
    /// Errors: [`PriceError::Format`] for invalid JSON, an unknown `format`, or unknown fields.
    pub fn from_tollgate_json(json: &str) -> Result<Self, PriceError> {
        let file: File =
            serde_json::from_str(json).map_err(|e| PriceError::Format(e.to_string()))?;
        if file.format != "tollgate-prices/1" {
            return Err(PriceError::Format(format!(
                "unknown format {:?}",
                file.format
            )));
        }
        let mut table = PriceTable::new();
        for (name, e) in file.models {
            let price = ModelPrice {
                input_per_token: e.input / PER_MILLION,
                output_per_token: e.output / PER_MILLION,
                cache_read_per_token: e.cache_read.map(|v| v / PER_MILLION),
                cache_write_per_token: e.cache_write.map(|v| v / PER_MILLION),
                reasoning_per_token: e.reasoning.map(|v| v / PER_MILLION),
                per_request: e.per_request,
                provider: Some(e.provider.clone()),
                max_input_tokens: e.context,
                max_output_tokens: e.max_output,
            };
            if !name.contains('/') {
                table.insert(format!("{}/{}", e.provider, name), price.clone());
            }
            table.insert(name, price);
        }
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::{Usage, cost};

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    #[test]
    fn builtin_parses_and_covers_the_common_providers() {
        let t = PriceTable::from_tollgate_json(BUILTIN_JSON).unwrap();
        assert_eq!(t.len(), PriceTable::builtin().len());
        for (provider, model) in [
            ("openai", "gpt-4o"),
            ("openai", "gpt-4o-mini"),
            ("anthropic", "claude-sonnet-4-5"),
            ("gemini", "gemini-2.5-flash"),
            ("mistral", "mistral-small-latest"),
            ("groq", "llama-3.3-70b-versatile"),
        ] {
            let p = t
                .lookup(Some(provider), model)
                .unwrap_or_else(|| panic!("{provider}/{model}"));
            assert_eq!(p.provider.as_deref(), Some(provider));
            assert!(p.input_per_token > 0.0 && p.output_per_token > 0.0);
        }
        // bare OpenAI names resolve without a provider, and with one
        assert!(t.get("openai/gpt-4o").is_some());
        assert!(t.get("gpt-4o").is_some());
    }

    #[test]
    fn builtin_prices_are_per_token() {
        let t = PriceTable::builtin();
        let p = t.lookup(None, "gpt-4o").unwrap();
        close(p.input_per_token, 2.5e-6);
        close(p.output_per_token, 10e-6);
        // 1M prompt tokens + 1M completion tokens = $12.50
        close(cost(&Usage::new(1_000_000, 1_000_000), p), 12.5);
        let s = t.lookup(Some("anthropic"), "claude-sonnet-4-5").unwrap();
        let u = Usage {
            prompt_tokens: 2_000,
            completion_tokens: 100,
            cached_tokens: 1_000,
            cache_write_tokens: 500,
            reasoning_tokens: 0,
        };
        // 500·3e-6 + 1000·0.3e-6 + 500·3.75e-6 + 100·15e-6 = 0.0015+0.0003+0.001875+0.0015
        close(cost(&u, s), 0.005175);
    }

    /// Dated snapshot ids and aliases that clients send, each at its family's price (USD per
    /// 1M tokens: input, output).
    #[test]
    fn dated_ids_and_aliases_are_priced() {
        let t = PriceTable::builtin();
        for (provider, model, input, output) in [
            ("anthropic", "claude-sonnet-4-20250514", 3.0, 15.0),
            ("anthropic", "claude-3-5-sonnet-20241022", 3.0, 15.0),
            ("anthropic", "claude-3-5-sonnet-latest", 3.0, 15.0),
            ("anthropic", "claude-3-7-sonnet-20250219", 3.0, 15.0),
            ("anthropic", "claude-sonnet-4-5-20250929", 3.0, 15.0),
            ("anthropic", "claude-opus-4-1-20250805", 15.0, 75.0),
            ("anthropic", "claude-opus-4-5-20251101", 5.0, 25.0),
            ("anthropic", "claude-3-5-haiku-20241022", 0.8, 4.0),
            ("anthropic", "claude-haiku-4-5-20251001", 1.0, 5.0),
            ("openai", "gpt-4o-2024-08-06", 2.5, 10.0),
            ("openai", "gpt-4o-2024-05-13", 5.0, 15.0),
            ("openai", "gpt-4o-mini-2024-07-18", 0.15, 0.6),
            ("openai", "gpt-4.1-2025-04-14", 2.0, 8.0),
            ("openai", "gpt-5-2025-08-07", 1.25, 10.0),
            ("openai", "o3-2025-04-16", 2.0, 8.0),
            ("openai", "chatgpt-4o-latest", 5.0, 15.0),
        ] {
            let p = t
                .lookup(Some(provider), model)
                .unwrap_or_else(|| panic!("{provider}/{model} is priced"));
            close(p.input_per_token, input / PER_MILLION);
            close(p.output_per_token, output / PER_MILLION);
            assert_eq!(p.provider.as_deref(), Some(provider), "{model}");
            // also as LiteLLM names it in a deployment's `model`
            assert!(t.lookup(None, &format!("{provider}/{model}")).is_some());
        }
    }

    #[test]
    fn rejects_unknown_format_and_fields() {
        let bad = r#"{"format":"x","models":{}}"#;
        assert!(PriceTable::from_tollgate_json(bad).is_err());
        let typo = r#"{"format":"tollgate-prices/1","models":{"m":{"provider":"p","input":1,"output":1,"ouput":2}}}"#;
        assert!(PriceTable::from_tollgate_json(typo).is_err());
    }
}
