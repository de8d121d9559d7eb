//! Anthropic Messages usage (API reference, "Usage"): `input_tokens` excludes
//! `cache_read_input_tokens` and `cache_creation_input_tokens`; the gateway's prompt count is
//! their sum.

use memchr::memmem;
use serde::Deserialize;

use super::Usage;
use super::count::Count;
use crate::json_scan::{Cursor, document};

/// The counts of one Anthropic `usage` object as written, each `None` when absent or `null`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
struct AnthropicUsage {
    input_tokens: Option<Count>,
    output_tokens: Option<Count>,
    cache_read_input_tokens: Option<Count>,
    cache_creation_input_tokens: Option<Count>,
}

const NAMES: [&[u8]; 4] = [
    b"input_tokens",
    b"output_tokens",
    b"cache_read_input_tokens",
    b"cache_creation_input_tokens",
];

/// Reads the usage value at the cursor (`null` gives `Some(None)`); `None` when undecided.
fn scan_usage(c: &mut Cursor<'_>) -> Option<Option<AnthropicUsage>> {
    Some(c.counts(NAMES)?.map(|[i, o, r, w]| AnthropicUsage {
        input_tokens: i.map(Count),
        output_tokens: o.map(Count),
        cache_read_input_tokens: r.map(Count),
        cache_creation_input_tokens: w.map(Count),
    }))
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

    fn to_usage(self) -> Usage {
        let n = |c: Option<Count>| c.map_or(0, |c| c.0);
        let read = n(self.cache_read_input_tokens);
        let write = n(self.cache_creation_input_tokens);
        Usage {
            prompt_tokens: n(self.input_tokens)
                .saturating_add(read)
                .saturating_add(write),
            completion_tokens: n(self.output_tokens),
            cached_tokens: read,
            cache_write_tokens: write,
            reasoning_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
struct WithUsage {
    usage: Option<AnthropicUsage>,
}

/// A stream event's data as serde reads it.
#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<WithUsage>,
    usage: Option<AnthropicUsage>,
}

/// Usage of an Anthropic Messages response body, in OpenAI terms
/// (`prompt_tokens` = input + cache read + cache write); `None` without a `usage` object.
pub fn anthropic_response_usage(body: &[u8]) -> Option<Usage> {
    let raw = match document(body, |c| c.member(b"usage", scan_usage)) {
        Some(found) => found.flatten(),
        None => serde_json::from_slice::<WithUsage>(body).ok()?.usage,
    };
    raw.map(AnthropicUsage::to_usage)
}

/// The usage an event carries: `message.usage` for `message_start`, the top-level `usage`
/// for any other type (`message_delta`). `None` when undecided.
fn scan_event(c: &mut Cursor<'_>) -> Option<Option<AnthropicUsage>> {
    let mut seen = [false; 3];
    let mut start = false;
    let mut message = None;
    let mut top = None;
    c.object(|key, _, c| {
        let i = match key {
            b"type" => 0,
            b"message" => 1,
            b"usage" => 2,
            _ => return c.skip_value(),
        };
        if std::mem::replace(&mut seen[i], true) {
            return None;
        }
        match i {
            0 => start = !c.eat_literal(b"null") && c.plain_string()? == b"message_start",
            1 if c.eat_literal(b"null") => {}
            1 => message = c.member(b"usage", scan_usage)?.flatten(),
            _ => top = scan_usage(c)?,
        }
        Some(())
    })?;
    Some(if start { message } else { top })
}

/// Accumulates usage over an Anthropic Messages stream: `message_start.message.usage` gives
/// the input side, each `message_delta.usage` the cumulative output (the last value wins).
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
    /// Feeds one event's `data` JSON (any event type; only usage-bearing ones matter). Events
    /// with neither `"usage"` nor a `\u` escape (which could spell the key) are not read.
    pub fn feed(&mut self, data: &[u8]) {
        if memmem::find(data, b"\"usage\"").is_none() && memmem::find(data, b"\\u").is_none() {
            return;
        }
        let found = match document(data, scan_event) {
            Some(found) => found,
            None => serde_json::from_slice::<Event>(data).ok().and_then(|e| {
                if e.kind.as_deref() == Some("message_start") {
                    e.message.and_then(|m| m.usage)
                } else {
                    e.usage
                }
            }),
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
        self.acc.map(AnthropicUsage::to_usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // `message_delta` usage is cumulative; 13 then 20 means 20, input counted once.
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

    /// Python-style `message_start` (`{"type": "message_start", ...}`) was not recognised by
    /// its first bytes, so its input tokens were lost.
    #[test]
    fn message_start_is_read_whatever_its_formatting() {
        for start in [
            &br#"{"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 64, "output_tokens": 1}}}"#[..],
            br#"{"message":{"usage":{"input_tokens":64,"output_tokens":1}},"type":"message_start"}"#,
            br#"{"type":"message_start","message":{"us\u0061ge":{"input_tokens":64.0,"output_tokens":1}}}"#,
        ] {
            let mut s = AnthropicStreamUsage::default();
            s.feed(start);
            s.feed(br#"{"type": "message_delta", "delta": {}, "usage": {"output_tokens": 20}}"#);
            let u = s.usage().unwrap();
            assert_eq!((u.prompt_tokens, u.completion_tokens), (64, 20), "{start:?}");
        }
    }
}
