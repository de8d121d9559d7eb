//! One normalized token usage, with conversions from and to each dialect's usage object.
//!
//! The dialects count the prompt differently:
//! - OpenAI Chat `prompt_tokens` **includes** `prompt_tokens_details.cached_tokens` (and the
//!   non-standard `cache_write_tokens`); `completion_tokens` includes `reasoning_tokens`
//!   (OpenAI API reference, `CompletionUsage`).
//! - OpenAI Responses `input_tokens` includes `input_tokens_details.cached_tokens`;
//!   `output_tokens` includes `output_tokens_details.reasoning_tokens`.
//! - Anthropic `input_tokens` **excludes** `cache_read_input_tokens` and
//!   `cache_creation_input_tokens` (Anthropic API reference, "Usage").
//!
//! [`Usage`] stores the Anthropic-style split: `input_tokens` is the uncached remainder, so
//! `prompt_tokens = input_tokens + cache_read_tokens + cache_write_tokens`
//! (`shared/fixtures/translation/chat_to_messages.usage.json`).

use serde_json::{Map, Value, json};
use tollgate_protocol::usage::count::value_count;

/// Token counts of one response, all in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens that were neither read from nor written to the prompt cache.
    pub input_tokens: u64,
    /// Generated tokens, reasoning included.
    pub output_tokens: u64,
    /// Prompt tokens served from the cache (OpenAI `cached_tokens`, Anthropic
    /// `cache_read_input_tokens`).
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache (Anthropic `cache_creation_input_tokens`).
    pub cache_write_tokens: u64,
    /// Part of `output_tokens` spent on reasoning (OpenAI `reasoning_tokens`; Anthropic does not
    /// report it separately, so 0 there).
    pub reasoning_tokens: u64,
}

/// The count at `key`, by the gateway's count rule ([`tollgate_protocol::usage::count`]:
/// `1000`, `1000.0` and `1e3` are 1000 tokens); 0 when absent or not a count.
fn u(v: &Value, key: &str) -> u64 {
    n(v, key).unwrap_or(0)
}

fn n(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(value_count)
}

impl Usage {
    /// All prompt tokens: uncached + cache read + cache write (OpenAI `prompt_tokens`).
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Prompt plus output tokens (OpenAI `total_tokens`).
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens() + self.output_tokens
    }

    /// From an OpenAI Chat `usage` object. Missing fields count as 0.
    pub fn from_openai_chat(v: &Value) -> Self {
        let details = v.get("prompt_tokens_details").unwrap_or(&Value::Null);
        let cache_read = u(details, "cached_tokens");
        let cache_write = u(details, "cache_write_tokens");
        let prompt = u(v, "prompt_tokens");
        Self {
            input_tokens: prompt.saturating_sub(cache_read + cache_write),
            output_tokens: u(v, "completion_tokens"),
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
            reasoning_tokens: u(
                v.get("completion_tokens_details").unwrap_or(&Value::Null),
                "reasoning_tokens",
            ),
        }
    }

    /// To an OpenAI Chat `usage` object. `prompt_tokens_details.cached_tokens` is always
    /// present; `cache_write_tokens` and `completion_tokens_details` only when non-zero.
    pub fn to_openai_chat(&self) -> Value {
        let mut details = Map::new();
        details.insert("cached_tokens".into(), self.cache_read_tokens.into());
        if self.cache_write_tokens > 0 {
            details.insert("cache_write_tokens".into(), self.cache_write_tokens.into());
        }
        let mut out = json!({
            "prompt_tokens": self.prompt_tokens(),
            "completion_tokens": self.output_tokens,
            "total_tokens": self.total_tokens(),
            "prompt_tokens_details": details,
        });
        if self.reasoning_tokens > 0 {
            out["completion_tokens_details"] = json!({"reasoning_tokens": self.reasoning_tokens});
        }
        out
    }

    /// From an Anthropic `usage` object (message, `message_start` or `message_delta`).
    /// `null` cache fields count as 0.
    pub fn from_anthropic(v: &Value) -> Self {
        Self {
            input_tokens: u(v, "input_tokens"),
            output_tokens: u(v, "output_tokens"),
            cache_read_tokens: u(v, "cache_read_input_tokens"),
            cache_write_tokens: u(v, "cache_creation_input_tokens"),
            reasoning_tokens: 0,
        }
    }

    /// Overwrites the fields an Anthropic `message_delta.usage` carries. Its values are
    /// cumulative totals, not increments (Anthropic streaming docs), so they replace.
    pub fn merge_anthropic(&mut self, v: &Value) {
        if let Some(c) = n(v, "input_tokens") {
            self.input_tokens = c;
        }
        if let Some(c) = n(v, "output_tokens") {
            self.output_tokens = c;
        }
        if let Some(c) = n(v, "cache_read_input_tokens") {
            self.cache_read_tokens = c;
        }
        if let Some(c) = n(v, "cache_creation_input_tokens") {
            self.cache_write_tokens = c;
        }
    }

    /// To an Anthropic `usage` object (`input_tokens` without the cache).
    pub fn to_anthropic(&self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_write_tokens,
            "cache_read_input_tokens": self.cache_read_tokens,
            "output_tokens": self.output_tokens,
        })
    }

    /// From an OpenAI Responses `usage` object.
    pub fn from_responses(v: &Value) -> Self {
        let details = v.get("input_tokens_details").unwrap_or(&Value::Null);
        let cache_read = u(details, "cached_tokens");
        let cache_write = u(details, "cache_write_tokens");
        Self {
            input_tokens: u(v, "input_tokens").saturating_sub(cache_read + cache_write),
            output_tokens: u(v, "output_tokens"),
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
            reasoning_tokens: u(
                v.get("output_tokens_details").unwrap_or(&Value::Null),
                "reasoning_tokens",
            ),
        }
    }

    /// To an OpenAI Responses `usage` object (the shape of
    /// `shared/fixtures/openai/responses/text.response.json`).
    pub fn to_responses(&self) -> Value {
        json!({
            "input_tokens": self.prompt_tokens(),
            "input_tokens_details": {
                "cached_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens,
            },
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.total_tokens(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python servers' integer-valued floats count as the gateway's scanner counts them.
    #[test]
    fn integer_valued_floats_count() {
        let u = Usage::from_openai_chat(&json!({"prompt_tokens": 1000.0, "completion_tokens": 2e1,
            "prompt_tokens_details": {"cached_tokens": 1.5}}));
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cache_read_tokens),
            (1000, 20, 0)
        );
        let mut a = Usage::from_anthropic(&json!({"input_tokens": 64.0, "output_tokens": 1}));
        a.merge_anthropic(&json!({"output_tokens": 3e1}));
        assert_eq!((a.input_tokens, a.output_tokens), (64, 30));
    }

    #[test]
    fn anthropic_to_openai_matches_fixture_rule() {
        // shared/fixtures/translation/chat_to_messages.usage.json
        let a = json!({"input_tokens":23,"cache_creation_input_tokens":150,"cache_read_input_tokens":1024,"output_tokens":13});
        let u = Usage::from_anthropic(&a);
        assert_eq!(
            u.to_openai_chat(),
            json!({"prompt_tokens":1197,"completion_tokens":13,"total_tokens":1210,
                   "prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":150}})
        );
        assert_eq!(Usage::from_openai_chat(&u.to_openai_chat()), u);
        assert_eq!(Usage::from_responses(&u.to_responses()), u);
        assert_eq!(Usage::from_anthropic(&u.to_anthropic()), u);
    }

    #[test]
    fn openai_cached_tokens_are_subtracted_for_anthropic() {
        let o = json!({"prompt_tokens":1187,"completion_tokens":14,"total_tokens":1201,
                       "prompt_tokens_details":{"cached_tokens":1024},
                       "completion_tokens_details":{"reasoning_tokens":5}});
        let u = Usage::from_openai_chat(&o);
        assert_eq!(u.input_tokens, 163);
        assert_eq!(u.cache_read_tokens, 1024);
        assert_eq!(u.reasoning_tokens, 5);
        assert_eq!(u.to_anthropic()["input_tokens"], 163);
    }

    #[test]
    fn null_cache_fields_and_cumulative_merge() {
        let mut u = Usage::from_anthropic(
            &json!({"input_tokens":64,"cache_read_input_tokens":null,"output_tokens":1}),
        );
        assert_eq!(u.cache_read_tokens, 0);
        // `message_delta` usage is cumulative; the last one wins, never a sum.
        u.merge_anthropic(&json!({"output_tokens":13}));
        u.merge_anthropic(&json!({"output_tokens":20}));
        assert_eq!((u.input_tokens, u.output_tokens), (64, 20));
    }
}
