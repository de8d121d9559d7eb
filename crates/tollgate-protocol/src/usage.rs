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
///
/// Only the `usage` value is parsed: the top-level key is found by [`after_top_level_key`],
/// which skips strings and nested values without decoding them. Deserializing the whole body
/// to ignore all but `usage` cost about as many instructions as the rest of the unary
/// response's path (callgrind, bench/README.md 2026-11-30). A body whose key is written with
/// escapes (`"us\u0061ge"`) is parsed whole, as before.
pub fn openai_response_usage(body: &[u8]) -> Option<Usage> {
    let usage = match after_top_level_key(body, b"usage") {
        Some(rest) => {
            Option::<OpenAiUsage>::deserialize(&mut serde_json::Deserializer::from_slice(rest))
                .ok()?
        }
        None => serde_json::from_slice::<WithUsage>(body).ok()?.usage,
    };
    usage.map(Usage::from)
}

/// What follows `"key":` in the top-level object of `json` (the key's value and the rest of
/// the document), or `None` when the top-level object has no such key written without
/// escapes. Strings are skipped whole (escaped quotes included) and nesting is counted, so a
/// key of a nested object or text inside a string never matches. Nothing else is validated.
fn after_top_level_key<'a>(json: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&byte) = json.get(i) {
        match byte {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                let end = loop {
                    let k = j + memchr::memchr2(b'"', b'\\', json.get(j..)?)?;
                    if json[k] == b'"' {
                        break k;
                    }
                    // A backslash escapes the byte after it.
                    j = k + 2;
                };
                i = end + 1;
                if depth == 1 {
                    let rest = json.get(i..)?;
                    let colon = rest
                        .iter()
                        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
                    if rest[colon] == b':' && &json[start..end] == key {
                        return rest.get(colon + 1..);
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
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

/// Anthropic `usage` (Messages API reference): `input_tokens` excludes cache reads and writes.
#[derive(Deserialize, Default)]
struct AnthropicUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl AnthropicUsage {
    /// Merges a later report over this one: Anthropic's `message_delta.usage` values are
    /// cumulative, so a present field replaces the earlier value (never added).
    fn merge(&mut self, later: AnthropicUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    fn to_usage(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: self.input_tokens.unwrap_or(0) + read + write,
            completion_tokens: self.output_tokens.unwrap_or(0),
            cached_tokens: read,
            cache_write_tokens: write,
            reasoning_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
struct AnthropicWithUsage {
    #[serde(default)]
    usage: Option<AnthropicUsage>,
}

/// Usage of an Anthropic Messages response body, in OpenAI terms
/// (`prompt_tokens` = input + cache read + cache write).
pub fn anthropic_response_usage(body: &[u8]) -> Option<Usage> {
    serde_json::from_slice::<AnthropicWithUsage>(body)
        .ok()
        .and_then(|w| w.usage)
        .map(|u| u.to_usage())
}

/// Accumulates usage over an Anthropic Messages stream: `message_start.message.usage` gives
/// the input side, each `message_delta.usage` the cumulative output (B10: the last value wins).
#[derive(Default)]
pub struct AnthropicStreamUsage {
    acc: Option<AnthropicUsage>,
}

impl std::fmt::Debug for AnthropicStreamUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicStreamUsage")
            .field("usage", &self.usage())
            .finish()
    }
}

impl AnthropicStreamUsage {
    /// Feeds one event's `data` JSON (any event type; only usage-bearing ones matter).
    pub fn feed(&mut self, data: &[u8]) {
        #[derive(Deserialize)]
        struct Start {
            message: AnthropicWithUsage,
        }
        if memchr::memmem::find(data, b"\"usage\"").is_none() {
            return;
        }
        let found = if data.starts_with(b"{\"type\":\"message_start\"") {
            serde_json::from_slice::<Start>(data)
                .ok()
                .and_then(|s| s.message.usage)
        } else {
            serde_json::from_slice::<AnthropicWithUsage>(data)
                .ok()
                .and_then(|w| w.usage)
        };
        if let Some(u) = found {
            match &mut self.acc {
                Some(acc) => acc.merge(u),
                None => self.acc = Some(u),
            }
        }
    }

    /// The usage so far, if any event carried usage.
    pub fn usage(&self) -> Option<Usage> {
        self.acc.as_ref().map(AnthropicUsage::to_usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_top_level_usage_counts() {
        // A nested `usage` key, and `"usage":` text inside strings (escaped quotes, a string
        // ending in an escaped backslash), come before the real one.
        let body = br#"{"id":"a\\","choices":[{"message":{"content":"say \"usage\":{\"prompt_tokens\":99}","usage":{"prompt_tokens":98}}}],"usage":{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}},"system_fingerprint":"fp"}"#;
        assert_eq!(
            openai_response_usage(body),
            Some(Usage {
                prompt_tokens: 7,
                completion_tokens: 3,
                cached_tokens: 2,
                cache_write_tokens: 0,
                reasoning_tokens: 1,
            })
        );
    }

    #[test]
    fn usage_anywhere_in_the_object_pretty_printed_or_escaped() {
        let first = b"{\n  \"usage\" : {\"prompt_tokens\": 5, \"completion_tokens\": 1},\n  \"choices\": []\n}";
        let u = openai_response_usage(first).unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (5, 1));
        // Written with an escape, the key is still found (the whole body is parsed).
        let escaped = br#"{"choices":[],"us\u0061ge":{"prompt_tokens":4,"completion_tokens":2}}"#;
        let u = openai_response_usage(escaped).unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (4, 2));
    }

    #[test]
    fn no_usage_null_usage_or_not_json_is_none() {
        assert_eq!(openai_response_usage(br#"{"choices":[]}"#), None);
        assert_eq!(
            openai_response_usage(br#"{"choices":[],"usage":null}"#),
            None
        );
        assert_eq!(
            openai_response_usage(br#"{"data":[{"usage":{"prompt_tokens":3}}]}"#),
            None
        );
        assert_eq!(openai_response_usage(b"not json"), None);
        assert_eq!(openai_response_usage(br#"{"usage":"#), None);
        assert_eq!(openai_response_usage(br#"{"a":"unterminated"#), None);
    }

    #[test]
    fn the_scan_returns_what_follows_the_key() {
        let json = br#"{"x":{"usage":1},"y":["usage",{"usage":2}],"usage" :[3],"z":4}"#;
        assert_eq!(
            after_top_level_key(json, b"usage"),
            Some(&br#"[3],"z":4}"#[..])
        );
        assert_eq!(after_top_level_key(json, b"z"), Some(&b"4}"[..]));
        assert_eq!(after_top_level_key(json, b"w"), None);
        assert_eq!(after_top_level_key(br#"["usage",1]"#, b"usage"), None);
        assert_eq!(after_top_level_key(br#"{"a":"\"#, b"usage"), None);
    }

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
    fn anthropic_usage_folds_cache_into_prompt() {
        let body = br#"{"id":"msg","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}}"#;
        let u = anthropic_response_usage(body).unwrap();
        assert_eq!(
            (
                u.prompt_tokens,
                u.completion_tokens,
                u.cached_tokens,
                u.cache_write_tokens
            ),
            (130, 5, 100, 20)
        );
    }

    #[test]
    fn anthropic_stream_usage_is_cumulative_not_summed() {
        // B10: message_delta usage is cumulative; 13 then 20 means 20, input counted once.
        let mut s = AnthropicStreamUsage::default();
        s.feed(br#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":64,"output_tokens":1}}}"#);
        s.feed(
            br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
        );
        s.feed(br#"{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":13}}"#);
        s.feed(br#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}}"#);
        let u = s.usage().unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (64, 20));
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
