//! Token usage as the gateway records it, read from OpenAI-dialect responses and stream chunks.
//!
//! OpenAI's `usage` (API reference, "The chat completion object"): `prompt_tokens` includes
//! `prompt_tokens_details.cached_tokens`; `completion_tokens` includes
//! `completion_tokens_details.reasoning_tokens`.

use serde::Deserialize;

use crate::json_scan::{Cursor, after_top_level_key};

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

    /// The prompt tokens when the usage reported them: every prompt has at least one
    /// token, so 0 means the provider left the count out (the readers default it to 0).
    pub fn reported_prompt_tokens(&self) -> Option<u64> {
        (self.prompt_tokens > 0).then_some(self.prompt_tokens)
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
/// Only the `usage` value is read: the top-level key is found without decoding the rest of
/// the body, and its counts are read by the scanner of [`crate::json_scan`], with serde as
/// the fallback for what the scanner leaves undecided (a float, an escaped key). A body whose
/// `usage` key is itself written with escapes (`"us\u0061ge"`) is parsed whole.
pub fn openai_response_usage(body: &[u8]) -> Option<Usage> {
    let Some(rest) = after_top_level_key(body, b"usage") else {
        return serde_json::from_slice::<WithUsage>(body)
            .ok()?
            .usage
            .map(Usage::from);
    };
    match read_openai_usage(rest) {
        Some(decided) => decided,
        None => Option::<OpenAiUsage>::deserialize(&mut serde_json::Deserializer::from_slice(rest))
            .ok()?
            .map(Usage::from),
    }
}

/// The OpenAI `usage` value at the start of `json` (`null` gives `Some(None)`), read by the
/// scanner as [`OpenAiUsage`]'s serde derive would read it; `None` when the scanner leaves it
/// undecided.
fn read_openai_usage(json: &[u8]) -> Option<Option<Usage>> {
    let mut c = Cursor::new(json);
    if c.eat_literal(b"null") {
        return Some(None);
    }
    let mut u = Usage::default();
    let mut seen = [false; 4];
    c.object(|key, c| {
        let i = match key {
            b"prompt_tokens" => 0,
            b"completion_tokens" => 1,
            b"prompt_tokens_details" => 2,
            b"completion_tokens_details" => 3,
            _ => return c.skip_value(),
        };
        if std::mem::replace(&mut seen[i], true) {
            return None; // a duplicate field: serde refuses it
        }
        match i {
            0 => u.prompt_tokens = c.count()?.unwrap_or(0),
            1 => u.completion_tokens = c.count()?.unwrap_or(0),
            2 => {
                let [cached, written] = c
                    .counts([b"cached_tokens", b"cache_write_tokens"])?
                    .unwrap_or_default();
                u.cached_tokens = cached.unwrap_or(0);
                u.cache_write_tokens = written.unwrap_or(0);
            }
            _ => {
                let [reasoning] = c.counts([b"reasoning_tokens"])?.unwrap_or_default();
                u.reasoning_tokens = reasoning.unwrap_or(0);
            }
        }
        Some(())
    })?;
    Some(Some(u))
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

    /// The scanner's answer, where it gives one, is serde's; where it gives none, serde
    /// decides (the public function's answer is then serde's too).
    #[test]
    fn the_scanner_agrees_with_serde_or_defers_to_it() {
        let serde_reads = |v: &[u8]| -> Option<Usage> {
            Option::<OpenAiUsage>::deserialize(&mut serde_json::Deserializer::from_slice(v))
                .ok()?
                .map(Usage::from)
        };
        let cases: &[(&[u8], bool)] = &[
            // (the usage value and what follows it, whether the scanner decides)
            (br#"{"prompt_tokens":4,"completion_tokens":8,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default"}"#, true),
            (br#"{"prompt_tokens":120,"completion_tokens":30,"prompt_tokens_details":{"cached_tokens":100,"cache_write_tokens":7},"completion_tokens_details":{"reasoning_tokens":10}}}"#, true),
            (b" {\n \"completion_tokens\" : 3 ,\"prompt_tokens\":null } ,", true),
            (br#"{"prompt_tokens_details":null,"completion_tokens_details":{},"extra":[{"a":"}"}],"s":"\"q"}"#, true),
            (br#"{}"#, true),
            (br#"null,"#, true),
            (br#"{"prompt_tokens":5,"prompt_tokens":6}"#, false),
            (br#"{"prompt_tokens":5.0}"#, false),
            (br#"{"prompt_tokens":-5}"#, false),
            (br#"{"prompt_tokens":"5"}"#, false),
            (br#"{"pr\u006fmpt_tokens":5}"#, false),
            (br#"{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}"#, false),
            (br#"{"prompt_tokens_details":3}"#, false),
            (br#"{"prompt_tokens":5"#, false),
            (br#"[1,2]"#, false),
        ];
        for (value, decides) in cases {
            let shown = String::from_utf8_lossy(value);
            match read_openai_usage(value) {
                Some(decided) => {
                    assert!(decides, "scanner decided {shown}");
                    assert_eq!(decided, serde_reads(value), "{shown}");
                }
                None => assert!(!decides, "scanner deferred {shown}"),
            }
            let body = [&b"{\"id\":\"x\",\"usage\":"[..], value].concat();
            let whole = openai_response_usage(&body);
            assert_eq!(whole, serde_reads(value), "{shown}");
        }
        assert_eq!(
            read_openai_usage(br#"{"prompt_tokens":120,"completion_tokens":30,"prompt_tokens_details":{"cached_tokens":100,"cache_write_tokens":7},"completion_tokens_details":{"reasoning_tokens":10}}"#),
            Some(Some(Usage {
                prompt_tokens: 120,
                completion_tokens: 30,
                cached_tokens: 100,
                cache_write_tokens: 7,
                reasoning_tokens: 10,
            }))
        );
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
