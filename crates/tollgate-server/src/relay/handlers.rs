//! What the stream relay does with each upstream event, per (client dialect, upstream dialect).
//!
//! - [`OpenAiPassthrough`]: OpenAI chunks to an OpenAI client (exact bytes; forced usage hidden).
//! - [`AnthropicPassthrough`]: Anthropic events to an Anthropic client (exact bytes).
//! - [`ResponsesPassthrough`]: Responses events to a Responses client (exact bytes; a failed
//!   stream ends with `response.failed`).
//! - [`Translated`]: any [`tollgate_translate::StreamTranslate`] state machine (dialects
//!   differ), as the pair's codec makes it.
//!
//! Each handler also keeps the usage seen so far, for settlement.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::LazyLock;

use bytes::{Bytes, BytesMut};
use memchr::memmem;
use tollgate_protocol::usage::{AnthropicStreamUsage, scan_openai_chunk};
use tollgate_protocol::{RawEvent, Usage};
use tollgate_translate::{StreamOutcome, StreamTranslate};

/// What happened with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More events expected.
    Continue,
    /// That was the last event; `failed` when it reported an error.
    End {
        /// The upstream reported an error.
        failed: bool,
    },
}

/// Per-event processing of an upstream stream.
///
/// The failure contract: when the upstream reports an error after content was relayed (its
/// first event is checked before the head, [`super::first_event`]), `on_event` returns
/// [`Step::End`] with `failed: true` and `out` ends with the client dialect's terminal error
/// (chat and completions `data: {"error": ...}`, Messages `event: error`, Responses
/// `response.failed`, after the upstream's `error` event when it sent one): the upstream's own
/// event for a passthrough, the translator's for a translated stream, which also holds back every clean-end marker (a `stop` finish
/// chunk and `[DONE]`, `message_delta` / `message_stop`, `response.completed`) until the
/// upstream's own end arrives.
pub trait EventHandler: Send {
    /// One complete upstream event; bytes for the client are appended to `out`.
    fn on_event(&mut self, ev: RawEvent, out: &mut VecDeque<Bytes>) -> Step;
    /// The stream failed (upstream EOF before its final event, read error, idle timeout):
    /// append a closing error event in the client's dialect.
    fn on_failure(&mut self, message: &str, out: &mut VecDeque<Bytes>);
    /// Usage seen so far (final cumulative values).
    fn usage(&self) -> Option<Usage>;
}

/// The terminal error of a chat or completions stream cut short: the event a translated
/// stream ends with too ([`tollgate_translate::errors::write_openai_stream_error`]), so every
/// pair ends alike.
fn cut_short_event(message: &str) -> Bytes {
    let mut b = BytesMut::new();
    tollgate_translate::errors::write_openai_stream_error(&mut b, message, None);
    b.freeze()
}

// Built once: these run on every event a stream relays.
static DATA_FIELD: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"data:"));
static EVENT_FIELD: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"event:"));

/// The first occurrence of `name` in `raw` (`finder` searches for it): the common event
/// that starts with it is told without a search.
fn field_start(raw: &[u8], name: &[u8], finder: &memmem::Finder<'_>) -> Option<usize> {
    if raw.starts_with(name) {
        Some(0)
    } else {
        finder.find(raw)
    }
}

/// The `data:` payload of a single-data-line event, without parsing the rest.
pub(crate) fn data_payload(raw: &[u8]) -> &[u8] {
    let Some(start) = field_start(raw, b"data:", &DATA_FIELD) else {
        return b"";
    };
    let mut rest = &raw[start + 5..];
    if rest.first() == Some(&b' ') {
        rest = &rest[1..];
    }
    let end = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
    &rest[..end]
}

/// The `event:` name, if the event has one.
pub(crate) fn event_name(raw: &[u8]) -> &[u8] {
    let Some(start) = field_start(raw, b"event:", &EVENT_FIELD) else {
        return b"";
    };
    let mut rest = &raw[start + 6..];
    if rest.first() == Some(&b' ') {
        rest = &rest[1..];
    }
    let end = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
    &rest[..end]
}

/// OpenAI chunks relayed to an OpenAI client. With `strip_usage` (the gateway forced
/// `include_usage` on a client that did not ask), every usage member the gateway caused is
/// removed, however the upstream formats its JSON: each chunk's top-level `usage` (the
/// `"usage": null` of content chunks, and the usage object an upstream puts on every content
/// chunk, as vLLM's `continuous_usage_stats` does) and the final `choices: []` usage chunk;
/// the last usage seen is still kept for billing.
#[derive(Debug)]
pub struct OpenAiPassthrough {
    strip_usage: bool,
    usage: Option<Usage>,
}

impl OpenAiPassthrough {
    /// A handler; `strip_usage` as above.
    pub fn new(strip_usage: bool) -> Self {
        Self {
            strip_usage,
            usage: None,
        }
    }
}

impl EventHandler for OpenAiPassthrough {
    fn on_event(&mut self, ev: RawEvent, out: &mut VecDeque<Bytes>) -> Step {
        let raw = ev.raw;
        let data = data_payload(&raw);
        let mut step = Step::Continue;
        let mut cut = None;
        if data == b"[DONE]" {
            step = Step::End { failed: false };
        } else if super::first_event::is_error_data(data) {
            // The upstream's error chunk is OpenAI's terminal error already: relayed as is.
            step = Step::End { failed: true };
        } else {
            let chunk = scan_openai_chunk(data);
            if let Some(cu) = &chunk.usage {
                // Usage values are cumulative: the last one wins (never summed).
                self.usage = Some(cu.usage);
                if self.strip_usage && cu.usage_only {
                    return step;
                }
            }
            if self.strip_usage {
                cut = chunk.usage_member;
                if cut.is_none() && chunk.usage.is_some() {
                    // A chunk the scanner left to serde (rare): rebuilt without its usage.
                    out.push_back(without_usage(&raw, data));
                    return step;
                }
            }
        }
        out.push_back(match cut {
            Some(range) => cut_out(&raw, data, range),
            None => raw,
        });
        step
    }

    fn on_failure(&mut self, message: &str, out: &mut VecDeque<Bytes>) {
        out.push_back(cut_short_event(message));
    }

    fn usage(&self) -> Option<Usage> {
        self.usage
    }
}

/// `raw` with its chunk `data` (a slice of `raw`) rewritten by serde without its top-level
/// `usage` member (members otherwise in their order); `raw` itself if it is not a JSON object.
fn without_usage(raw: &Bytes, data: &[u8]) -> Bytes {
    let Ok(mut chunk) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(data)
    else {
        return raw.clone();
    };
    chunk.remove("usage");
    let Ok(json) = serde_json::to_vec(&chunk) else {
        return raw.clone();
    };
    let at = data.as_ptr() as usize - raw.as_ptr() as usize;
    let mut out = BytesMut::with_capacity(raw.len());
    out.extend_from_slice(&raw[..at]);
    out.extend_from_slice(&json);
    out.extend_from_slice(&raw[at + data.len()..]);
    out.freeze()
}

/// `raw` without `range` of `data` (a slice of `raw`): the chunk without its `usage` member
/// ([`tollgate_protocol::usage::OpenAiChunk::usage_member`]).
fn cut_out(raw: &Bytes, data: &[u8], range: Range<usize>) -> Bytes {
    let at = data.as_ptr() as usize - raw.as_ptr() as usize;
    let mut out = BytesMut::with_capacity(raw.len() - range.len());
    out.extend_from_slice(&raw[..at + range.start]);
    out.extend_from_slice(&raw[at + range.end..]);
    out.freeze()
}

/// Anthropic events relayed to an Anthropic client; usage from `message_start` and the
/// cumulative `message_delta`s; the stream ends at `message_stop` or `error`.
#[derive(Debug, Default)]
pub struct AnthropicPassthrough {
    usage: AnthropicStreamUsage,
}

impl EventHandler for AnthropicPassthrough {
    fn on_event(&mut self, ev: RawEvent, out: &mut VecDeque<Bytes>) -> Step {
        let name = event_name(&ev.raw);
        let step = match name {
            b"message_stop" => Step::End { failed: false },
            b"error" => Step::End { failed: true },
            _ => {
                self.usage.feed(data_payload(&ev.raw));
                Step::Continue
            }
        };
        out.push_back(ev.raw);
        step
    }

    fn on_failure(&mut self, message: &str, out: &mut VecDeque<Bytes>) {
        // `event: error` `api_error`, as a translated Messages stream ends.
        let mut b = BytesMut::new();
        tollgate_translate::errors::write_anthropic_stream_error(&mut b, "api_error", message);
        out.push_back(b.freeze());
    }

    fn usage(&self) -> Option<Usage> {
        self.usage.usage()
    }
}

/// Usage of a Responses object or of an event wrapping one under `response`.
pub use tollgate_protocol::usage::responses_usage;

pub use super::responses_passthrough::{OnId, ResponsesPassthrough};

/// Called once with the final Response object of a completed translated Responses stream.
pub type OnResponse = Box<dyn FnOnce(&serde_json::Value) + Send>;

/// Converts translated usage to the gateway's (`prompt_tokens` includes cache reads and writes).
pub fn from_translate_usage(u: tollgate_translate::Usage) -> Usage {
    Usage {
        prompt_tokens: u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
        completion_tokens: u.output_tokens,
        cached_tokens: u.cache_read_tokens,
        cache_write_tokens: u.cache_write_tokens,
        reasoning_tokens: u.reasoning_tokens,
    }
}

/// A stream whose dialect is translated event by event.
pub struct Translated {
    inner: Box<dyn StreamTranslate>,
    buf: BytesMut,
    on_response: Option<OnResponse>,
}

impl Translated {
    /// Wraps a translator (the one the pair's codec made for this stream).
    pub fn new(inner: Box<dyn StreamTranslate>) -> Self {
        Self {
            inner,
            buf: BytesMut::new(),
            on_response: None,
        }
    }

    /// Calls `f` with the final Response object when the stream completes (Responses API).
    pub fn on_response(mut self, f: OnResponse) -> Self {
        self.on_response = Some(f);
        self
    }

    fn flush(&mut self, out: &mut VecDeque<Bytes>) {
        if !self.buf.is_empty() {
            out.push_back(self.buf.split().freeze());
        }
    }
}

impl EventHandler for Translated {
    fn on_event(&mut self, ev: RawEvent, out: &mut VecDeque<Bytes>) -> Step {
        let step = match ev.parse() {
            Ok(parsed) => match self.inner.feed(&parsed, &mut self.buf) {
                // On Err the translator already wrote the client-dialect error event.
                Err(_) => Step::End { failed: true },
                Ok(()) => match self.inner.outcome() {
                    StreamOutcome::InProgress => Step::Continue,
                    StreamOutcome::Completed => {
                        if let (Some(f), Some(resp)) =
                            (self.on_response.take(), self.inner.response())
                        {
                            f(resp);
                        }
                        Step::End { failed: false }
                    }
                    _ => Step::End { failed: true },
                },
            },
            Err(e) => {
                self.inner
                    .cut_short(&mut self.buf, &super::stream::unreadable_message(&e));
                Step::End { failed: true }
            }
        };
        self.flush(out);
        step
    }

    fn on_failure(&mut self, message: &str, out: &mut VecDeque<Bytes>) {
        // The translator knows the client's dialect: it writes the dialect's error event with
        // the relay's message.
        self.inner.cut_short(&mut self.buf, message);
        self.flush(out);
    }

    fn usage(&self) -> Option<Usage> {
        Some(from_translate_usage(self.inner.usage()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay(strip: bool, events: &[&'static str]) -> (Vec<u8>, Option<Usage>) {
        let mut h = OpenAiPassthrough::new(strip);
        let mut out = VecDeque::new();
        for e in events {
            h.on_event(
                RawEvent {
                    raw: Bytes::from_static(e.as_bytes()),
                },
                &mut out,
            );
        }
        (
            out.into_iter().flat_map(|b| b.to_vec()).collect(),
            h.usage(),
        )
    }

    /// The usage the gateway forced on is hidden from a client that did not ask for it,
    /// compact or written by Python's `json.dumps`; a client that asked sees it unchanged.
    #[test]
    fn forced_usage_is_hidden_whatever_the_formatting() {
        let compact = [
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n",
            "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n",
        ];
        let python = [
            "data: {\"id\": \"c\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"hi\"}}], \"usage\": null}\r\n\r\n",
            "data: {\"id\": \"c\", \"choices\": [], \"usage\": {\"prompt_tokens\": 9, \"completion_tokens\": 2}}\r\n\r\n",
            "data: [DONE]\r\n\r\n",
        ];
        let (bytes, usage) = relay(true, &compact);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"
        );
        assert_eq!(
            usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
            Some((9, 2))
        );
        let (bytes, usage) = relay(true, &python);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "data: {\"id\": \"c\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"hi\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n"
        );
        assert_eq!(
            usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
            Some((9, 2))
        );
        let (bytes, usage) = relay(false, &python);
        assert_eq!(bytes, python.concat().into_bytes());
        assert_eq!(usage.map(|u| u.prompt_tokens), Some(9));
    }

    /// vLLM's `continuous_usage_stats`: a usage object on every content chunk. A client that
    /// did not ask sees none of them; the last one is billed.
    #[test]
    fn usage_on_every_content_chunk_is_hidden_when_forced() {
        let events = [
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":0}}\n\n",
            "data: {\"id\": \"c\", \"usage\": {\"prompt_tokens\": 9, \"completion_tokens\": 1}, \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"hi\"}}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2.0}}\n\n",
            "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n",
        ];
        let (bytes, usage) = relay(true, &events);
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            concat!(
                "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
                "data: {\"id\": \"c\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"hi\"}}]}\n\n",
                "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
                "data: [DONE]\n\n",
            )
        );
        assert_eq!(
            usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
            Some((9, 2))
        );
        let (bytes, _) = relay(false, &events);
        assert_eq!(bytes, events.concat().into_bytes());
    }

    #[test]
    fn anthropic_passthrough_ends_at_message_stop_with_usage() {
        let mut h = AnthropicPassthrough::default();
        let mut out = VecDeque::new();
        let ev = |s: &'static str| RawEvent {
            raw: Bytes::from_static(s.as_bytes()),
        };
        assert_eq!(h.on_event(ev("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"), &mut out), Step::Continue);
        assert_eq!(h.on_event(ev("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":4}}\n\n"), &mut out), Step::Continue);
        assert_eq!(
            h.on_event(
                ev("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
                &mut out
            ),
            Step::End { failed: false }
        );
        assert_eq!(out.len(), 3);
        let u = h.usage().unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (9, 4));
    }
}
