//! Token usage as the gateway records it, read from upstream responses and stream events.
//!
//! OpenAI's `usage` (API reference, "The chat completion object"): `prompt_tokens` includes
//! `prompt_tokens_details.cached_tokens`; `completion_tokens` includes
//! `completion_tokens_details.reasoning_tokens`. Responses' `input_tokens` / `output_tokens`
//! are counted the same way; Anthropic's `input_tokens` excludes its cache reads and writes.
//!
//! Every reader gives serde_json's answer on every JSON document, whatever its formatting:
//! whitespace anywhere (Python's `json.dumps` writes `", "` and `": "`; pretty-printed
//! bodies have newlines), any member order, escaped keys (`"prompt\u005ftokens"`), nested
//! `*_details` objects, unknown members. A fast scanner ([`crate::json_scan`]) reads the few
//! members that matter without building the document; what it leaves undecided (a number
//! with a fraction or exponent, a duplicate member, broken JSON) is read by serde. What a
//! count is, for both: [`count`] (`1000`, and integer-valued `1000.0` / `1e3`).
//! `usage/differential.rs` checks the scanner against serde on generated documents.

mod anthropic;
pub mod count;
#[cfg(test)]
mod differential;
mod openai;
mod responses;

pub use anthropic::{AnthropicStreamUsage, anthropic_response_usage};
pub use openai::{OpenAiChunk, openai_chunk_usage, openai_response_usage, scan_openai_chunk};
pub use responses::responses_usage;

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
    /// prompt + completion (saturating: the counts come from the upstream).
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// The prompt tokens when the usage reported them: every prompt has at least one
    /// token, so 0 means the provider left the count out (the readers default it to 0).
    pub fn reported_prompt_tokens(&self) -> Option<u64> {
        (self.prompt_tokens > 0).then_some(self.prompt_tokens)
    }
}

/// What a usage-bearing OpenAI stream chunk says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkUsage {
    /// The usage on this chunk.
    pub usage: Usage,
    /// True for the extra final chunk that `stream_options.include_usage` adds
    /// (`"choices": []`, or no `choices`, plus usage): a client that did not ask for it must
    /// not see it.
    pub usage_only: bool,
}
