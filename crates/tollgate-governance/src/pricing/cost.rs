//! The cost of one request from its token [`Usage`] and a [`ModelPrice`].

use serde::{Deserialize, Serialize};

use super::ModelPrice;

/// Token usage of one request, in the OpenAI convention that LiteLLM normalises every
/// provider to (litellm-surface §6.1):
///
/// - `prompt_tokens` **includes** `cached_tokens` and `cache_write_tokens`
///   (for Anthropic: `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`);
/// - `completion_tokens` **includes** `reasoning_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// All prompt tokens, cached ones included.
    pub prompt_tokens: u64,
    /// All completion tokens, reasoning tokens included.
    pub completion_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache
    /// (`prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (Anthropic `cache_creation_input_tokens`).
    pub cache_write_tokens: u64,
    /// Completion tokens spent on reasoning (`completion_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Usage with only prompt and completion tokens.
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            ..Self::default()
        }
    }

    /// `prompt_tokens + completion_tokens`, what TPM limits count (litellm-surface §5.4).
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// A cost split by component, USD. `total()` is what [`cost`] returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CostBreakdown {
    /// Uncached prompt tokens × input price.
    pub input: f64,
    /// Cache-read tokens × cache-read price (input price when the model has none).
    pub cache_read: f64,
    /// Cache-write tokens × cache-write price (input price when the model has none).
    pub cache_write: f64,
    /// Non-reasoning completion tokens × output price.
    pub output: f64,
    /// Reasoning tokens × reasoning price (output price when the model has none).
    pub reasoning: f64,
    /// The per-request price.
    pub per_request: f64,
}

impl CostBreakdown {
    /// Sum of every component, USD.
    pub fn total(&self) -> f64 {
        self.input
            + self.cache_read
            + self.cache_write
            + self.output
            + self.reasoning
            + self.per_request
    }
}

/// Cost of one request in USD:
///
/// ```text
/// (prompt − cache_read − cache_write) · input
///   + cache_read · cache_read_price   (input price if unset)
///   + cache_write · cache_write_price (input price if unset)
///   + (completion − reasoning) · output
///   + reasoning · reasoning_price     (output price if unset)
///   + per_request
/// ```
///
/// This is LiteLLM's formula (litellm-surface §6.1) without the audio/image/tier components.
/// Counts that do not add up (cached > prompt) saturate at 0 instead of going negative.
pub fn cost(usage: &Usage, price: &ModelPrice) -> f64 {
    cost_breakdown(usage, price).total()
}

/// [`cost`], split by component (for `x-litellm-response-cost-*` headers and spend logs).
pub fn cost_breakdown(usage: &Usage, price: &ModelPrice) -> CostBreakdown {
    let cache_read = usage.cached_tokens.min(usage.prompt_tokens);
    let cache_write = usage
        .cache_write_tokens
        .min(usage.prompt_tokens - cache_read);
    let uncached = usage.prompt_tokens - cache_read - cache_write;
    let reasoning = usage.reasoning_tokens.min(usage.completion_tokens);
    let plain_output = usage.completion_tokens - reasoning;
    CostBreakdown {
        input: uncached as f64 * price.input_per_token,
        cache_read: cache_read as f64 * price.cache_read_per_token.unwrap_or(price.input_per_token),
        cache_write: cache_write as f64
            * price.cache_write_per_token.unwrap_or(price.input_per_token),
        output: plain_output as f64 * price.output_per_token,
        reasoning: reasoning as f64 * price.reasoning_per_token.unwrap_or(price.output_per_token),
        per_request: price.per_request,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    fn sonnet() -> ModelPrice {
        // Anthropic Claude Sonnet 4.5: $3 / $15 per MTok, cache read $0.30, cache write $3.75.
        ModelPrice {
            input_per_token: 3e-6,
            output_per_token: 15e-6,
            cache_read_per_token: Some(0.3e-6),
            cache_write_per_token: Some(3.75e-6),
            ..ModelPrice::default()
        }
    }

    #[test]
    fn plain_prompt_and_completion() {
        // A deployment priced 1e-6 in, 2e-6 out; 1000 + 500 tokens = $0.002.
        let p = ModelPrice {
            input_per_token: 1e-6,
            output_per_token: 2e-6,
            ..ModelPrice::default()
        };
        close(cost(&Usage::new(1000, 500), &p), 0.002);
        close(cost(&Usage::new(0, 0), &p), 0.0);
    }

    #[test]
    fn cache_read_and_write_priced_separately() {
        let u = Usage {
            prompt_tokens: 10_000,
            completion_tokens: 1_000,
            cached_tokens: 6_000,
            cache_write_tokens: 2_000,
            reasoning_tokens: 0,
        };
        // 2000·3e-6 + 6000·0.3e-6 + 2000·3.75e-6 + 1000·15e-6
        // = 0.006 + 0.0018 + 0.0075 + 0.015 = 0.0303
        close(cost(&u, &sonnet()), 0.0303);
        let b = cost_breakdown(&u, &sonnet());
        close(b.input, 0.006);
        close(b.cache_read, 0.0018);
        close(b.cache_write, 0.0075);
        close(b.output, 0.015);
    }

    #[test]
    fn cache_prices_fall_back_to_input_price() {
        let p = ModelPrice {
            input_per_token: 2e-6,
            output_per_token: 8e-6,
            ..ModelPrice::default()
        };
        let u = Usage {
            prompt_tokens: 1_000,
            completion_tokens: 100,
            cached_tokens: 400,
            cache_write_tokens: 100,
            reasoning_tokens: 0,
        };
        // every prompt token at 2e-6 = 0.002, + 100·8e-6 = 0.0008
        close(cost(&u, &p), 0.0028);
    }

    #[test]
    fn per_request_and_reasoning() {
        let p = ModelPrice {
            input_per_token: 1e-6,
            output_per_token: 4e-6,
            reasoning_per_token: Some(10e-6),
            per_request: 0.005,
            ..ModelPrice::default()
        };
        let u = Usage {
            prompt_tokens: 100,
            completion_tokens: 300,
            reasoning_tokens: 200,
            ..Usage::default()
        };
        // 100·1e-6 + 100·4e-6 + 200·10e-6 + 0.005 = 0.0001 + 0.0004 + 0.002 + 0.005
        close(cost(&u, &p), 0.0075);
        // without a reasoning price, reasoning tokens are output tokens
        let p2 = ModelPrice {
            reasoning_per_token: None,
            ..p
        };
        close(cost(&u, &p2), 0.0001 + 0.0012 + 0.005);
    }

    #[test]
    fn inconsistent_counts_saturate() {
        let u = Usage {
            prompt_tokens: 100,
            completion_tokens: 10,
            cached_tokens: 150,
            cache_write_tokens: 50,
            reasoning_tokens: 99,
        };
        // all 100 prompt tokens are cache reads; write clamps to 0; reasoning clamps to 10
        close(cost(&u, &sonnet()), 100.0 * 0.3e-6 + 10.0 * 15e-6);
        assert_eq!(u.total_tokens(), 110);
    }
}
