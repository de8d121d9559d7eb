//! Token usage as the gateway records it, read from OpenAI-dialect responses and stream chunks.
//!
//! OpenAI's `usage` (API reference, "The chat completion object"): `prompt_tokens` includes
//! `prompt_tokens_details.cached_tokens`; `completion_tokens` includes
//! `completion_tokens_details.reasoning_tokens`.

use serde::Deserialize;

/// Token counts of one request, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// All prompt tokens, cached ones included.
    pub prompt_tokens: u64,
    /// All completion tokens, reasoning included.
    pub completion_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's cache (Anthropic cache creation).
    pub cache_write_tokens: u64,
    /// Completion tokens spent on reasoning.
    pub reasoning_tokens: u64,
}

impl Usage {
    /// prompt + completion.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// OpenAI `usage` object (chat, completions, embeddings). Unknown fields ignored.
#[derive(Deserialize, Default)]
struct OpenAiUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

impl From<OpenAiUsage> for Usage {
    fn from(u: OpenAiUsage) -> Self {
        let p = u.prompt_tokens_details.unwrap_or_default();
        let c = u.completion_tokens_details.unwrap_or_default();
        Usage {
            prompt_tokens: u.prompt_tokens.unwrap_or(0),
            completion_tokens: u.completion_tokens.unwrap_or(0),
            cached_tokens: p.cached_tokens.unwrap_or(0),
            cache_write_tokens: p.cache_write_tokens.unwrap_or(0),
            reasoning_tokens: c.reasoning_tokens.unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct WithUsage {
    #[serde(default)]
    usage: Option<OpenAiUsage>,
    #[serde(default)]
    choices: Option<Vec<serde::de::IgnoredAny>>,
}

/// Usage of an OpenAI-dialect response body (chat.completion, text_completion, embeddings list);
/// `None` when the body has no usage object or is not JSON.
pub fn openai_response_usage(body: &[u8]) -> Option<Usage> {
    serde_json::from_slice::<WithUsage>(body)
        .ok()
        .and_then(|w| w.usage)
        .map(Usage::from)
}

/// What a usage-bearing OpenAI stream chunk says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkUsage {
    /// The usage on this chunk.
    pub usage: Usage,
    /// True for the extra final chunk that `stream_options.include_usage` adds
    /// (`"choices": []` plus usage): a client that did not ask for it must not see it.
    pub usage_only: bool,
}

/// Reads usage from one OpenAI stream chunk's `data` JSON. Cheap when the chunk carries none:
/// chunks without a `"usage":{` substring are not parsed at all.
pub fn openai_chunk_usage(data: &[u8]) -> Option<ChunkUsage> {
    memchr::memmem::find(data, b"\"usage\":{")?;
    let w: WithUsage = serde_json::from_slice(data).ok()?;
    let usage = Usage::from(w.usage?);
    Some(ChunkUsage {
        usage,
        usage_only: w.choices.map(|c| c.is_empty()).unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_usage_with_details() {
        let body = br#"{"id":"x","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":10}}}"#;
        let u = openai_response_usage(body).unwrap();
        assert_eq!(
            u,
            Usage {
                prompt_tokens: 120,
                completion_tokens: 30,
                cached_tokens: 100,
                cache_write_tokens: 0,
                reasoning_tokens: 10
            }
        );
        assert_eq!(u.total_tokens(), 150);
        assert_eq!(openai_response_usage(b"{\"id\":1}"), None);
        assert_eq!(openai_response_usage(b"not json"), None);
    }

    #[test]
    fn chunk_usage_detects_usage_only_chunk() {
        let c = br#"{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#;
        let u = openai_chunk_usage(c).unwrap();
        assert!(u.usage_only);
        assert_eq!(u.usage.completion_tokens, 7);
        let with_choice = br#"{"choices":[{"index":0,"delta":{}}],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#;
        assert!(!openai_chunk_usage(with_choice).unwrap().usage_only);
        assert_eq!(openai_chunk_usage(br#"{"choices":[],"usage":null}"#), None);
    }
}
