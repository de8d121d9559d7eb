//! The text an answer produced, kept for the rare answer whose usage leaves the completion
//! tokens out (an OpenAI-compatible server that ignores `stream_options.include_usage` or
//! writes no `usage`, a stream cut off before its usage event): settlement then counts these
//! tokens with the model's tokenizer, as LiteLLM counts a response without usage.
//!
//! [`ProducedText`] collects the JSON-escaped bytes of the string values that carry generated
//! output, with no parse tree and no allocation until the first one, and for a stream at most
//! [`KEPT_STREAM_BYTES`] of them (the length of the rest is kept):
//!
//! - stream events, by their SSE `event:` name: an unnamed event (an OpenAI chat or completions
//!   chunk) gives `content`, `reasoning_content`, `reasoning`, `text`, `arguments`, `refusal`;
//!   Anthropic `content_block_delta` gives `text`, `partial_json`, `thinking`; a Responses
//!   `response.*.delta` gives `delta`; every other named event (`message_start`, `ping`,
//!   `response.created`, `*.done`, `response.completed`, `error`, ...) gives nothing, so
//!   neither envelopes nor the `.done` repeats of a text count;
//! - a whole answer body (any dialect): `content`, `text`, `arguments`, `reasoning_content`,
//!   `reasoning`, `thinking`, `refusal`.
//!
//! Only string values count (`"content": [...]` of an Anthropic body and `"content": null` of a
//! tool-call message are a container and nothing), at any depth; within one event or body they
//! are appended key by key (a body's `text` blocks, then its `thinking`), events in the order
//! they came. A stream's events are not read as they pass: up to [`HELD_EVENT_BYTES`] of them
//! are held (reference-counted handles on the bytes already received, no copy) and read only
//! when settlement asks for the text, which it does only when the usage leaves tokens out; a
//! longer stream's events are read as they come from then on (a few vectorised substring
//! searches per event), so what is kept stays bounded. A key spelled with escapes (`"cont\u0065nt"`) is not recognised: the text is an
//! estimate of what was billed nowhere else, never a replacement for a usage the provider
//! reported.

use std::borrow::Cow;
use std::sync::LazyLock;

use bytes::Bytes;

use memchr::memchr2;
use memchr::memmem::{self, Finder};

/// Finders of `"<key>"` (quotes included) for each key of a list, built once.
type Keys = LazyLock<Vec<Finder<'static>>>;

fn finders(names: &[&'static [u8]]) -> Vec<Finder<'static>> {
    names.iter().map(|k| Finder::new(*k)).collect()
}

/// Keys of an OpenAI chat or completions stream chunk.
static CHUNK_KEYS: Keys = LazyLock::new(|| {
    finders(&[
        b"\"content\"",
        b"\"reasoning_content\"",
        b"\"reasoning\"",
        b"\"text\"",
        b"\"arguments\"",
        b"\"refusal\"",
    ])
});
/// Keys of an Anthropic `content_block_delta` (`text_delta`, `input_json_delta`,
/// `thinking_delta`).
static ANTHROPIC_DELTA_KEYS: Keys =
    LazyLock::new(|| finders(&[b"\"text\"", b"\"partial_json\"", b"\"thinking\""]));
/// Key of a Responses `response.output_text.delta`, `response.function_call_arguments.delta`,
/// `response.reasoning_summary_text.delta`, ...
static RESPONSES_DELTA_KEYS: Keys = LazyLock::new(|| finders(&[b"\"delta\""]));
/// Keys of a complete answer body: chat `message.content` / `tool_calls[].function.arguments`,
/// completions `choices[].text`, Anthropic `content[].text` / `thinking`, Responses
/// `output[].content[].text` / `arguments` / `summary[].text`.
static BODY_KEYS: Keys = LazyLock::new(|| {
    finders(&[
        b"\"content\"",
        b"\"text\"",
        b"\"arguments\"",
        b"\"reasoning_content\"",
        b"\"reasoning\"",
        b"\"thinking\"",
        b"\"refusal\"",
    ])
});

/// Escaped bytes of a stream's text kept for counting (about 2,000 tokens of English). Past it
/// only their number is kept ([`ProducedText::dropped_bytes`]), so a long generation holds a
/// bounded buffer; the count extrapolates from the kept text.
pub const KEPT_STREAM_BYTES: usize = 8 << 10;

/// Raw bytes of stream events held unread (see the module docs): a stream this short whose
/// provider reports its usage costs no reading at all. Past it, the held events are read and
/// every later one is read as it comes.
pub const HELD_EVENT_BYTES: usize = 32 << 10;

/// Generated text seen in an answer (see the module docs). Empty until something is fed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducedText {
    /// The captured string values, still JSON-escaped, back to back.
    escaped: Vec<u8>,
    /// Escaped bytes of stream deltas not kept (past [`KEPT_STREAM_BYTES`]).
    dropped: u64,
    /// Stream events not read yet, in order, at most [`HELD_EVENT_BYTES`] in all.
    held: Vec<Bytes>,
    /// Their length in bytes.
    held_bytes: usize,
    /// Set once the stream outgrew [`HELD_EVENT_BYTES`]: events are read as they come.
    reading: bool,
}

impl ProducedText {
    /// Adds one SSE event (its raw bytes: `event:` and `data:` lines): held, or read when the
    /// stream is past [`HELD_EVENT_BYTES`].
    pub fn feed_event(&mut self, event: &Bytes) {
        if !self.reading {
            if self.held_bytes + event.len() <= HELD_EVENT_BYTES {
                self.held_bytes += event.len();
                self.held.push(event.clone());
                return;
            }
            self.reading = true;
            for held in std::mem::take(&mut self.held) {
                self.read_event(&held);
            }
            self.held_bytes = 0;
        }
        self.read_event(event);
    }

    /// This text with every held event read: borrowed when none is held (settlement reads
    /// it once, then asks the view for [`Self::text`], [`Self::kept_bytes`], ...).
    pub fn read(&self) -> Cow<'_, Self> {
        if self.held.is_empty() {
            return Cow::Borrowed(self);
        }
        let mut all = Self {
            escaped: self.escaped.clone(),
            dropped: self.dropped,
            ..Self::default()
        };
        for held in &self.held {
            all.read_event(held);
        }
        Cow::Owned(all)
    }

    /// Captures the generated text of one SSE event.
    fn read_event(&mut self, event: &[u8]) {
        let keys: &Keys = match event_name(event) {
            None | Some(b"message") => &CHUNK_KEYS,
            Some(b"content_block_delta") => &ANTHROPIC_DELTA_KEYS,
            Some(n) if n.starts_with(b"response.") && n.ends_with(b".delta") => {
                &RESPONSES_DELTA_KEYS
            }
            Some(_) => return,
        };
        capture(event, keys, &mut |value| {
            if self.escaped.len() + value.len() <= KEPT_STREAM_BYTES {
                self.escaped.extend_from_slice(value);
            } else {
                self.dropped += value.len() as u64;
            }
        });
    }

    /// Adds the generated text of a complete (non-streamed) answer body.
    pub fn feed_body(&mut self, body: &[u8]) {
        // a body is in memory already, and counted at once: all of it is kept
        capture(body, &BODY_KEYS, &mut |value| {
            self.escaped.extend_from_slice(value)
        });
    }

    /// True when nothing was captured (held events read first).
    pub fn is_empty(&self) -> bool {
        let all = self.read();
        all.escaped.is_empty() && all.dropped == 0
    }

    /// Escaped bytes kept (what [`Self::text`] unescapes; held events read first).
    pub fn kept_bytes(&self) -> usize {
        self.read().escaped.len()
    }

    /// Escaped bytes of stream text past [`KEPT_STREAM_BYTES`], counted but not kept (held
    /// events read first).
    pub fn dropped_bytes(&self) -> u64 {
        self.read().dropped
    }

    /// The text captured, unescaped (invalid escapes and bytes replaced, never an error; held
    /// events read first).
    pub fn text(&self) -> String {
        let all = self.read();
        let escaped = &all.escaped;
        if !escaped.contains(&b'\\') {
            return String::from_utf8_lossy(escaped).into_owned();
        }
        let mut quoted = Vec::with_capacity(escaped.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(escaped);
        quoted.push(b'"');
        serde_json::from_slice::<String>(&quoted)
            .unwrap_or_else(|_| String::from_utf8_lossy(escaped).into_owned())
    }
}

/// The value of the event's `event:` field, if a line starts with it (a JSON string cannot
/// hold a raw line break, so `\nevent:` is never inside the data).
fn event_name(event: &[u8]) -> Option<&[u8]> {
    let start = if event.starts_with(b"event:") {
        0
    } else {
        memmem::find(event, b"\nevent:")? + 1
    };
    let rest = &event[start + 6..];
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    let end = memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Hands `found` the raw contents of every string value whose key is one of `keys`, key by key (a
/// few vectorised substring searches, nothing walked byte by byte). In a JSON text, `"<key>"`
/// followed by `:` can only be that key: a quote inside a string is escaped, so the needle
/// never starts or ends inside one, and a string followed by `:` is a key (one preceded by a
/// backslash is the tail of a longer key, and skipped).
fn capture(json: &[u8], keys: &[Finder<'static>], found: &mut dyn FnMut(&[u8])) {
    for key in keys {
        for at in key.find_iter(json) {
            if at > 0 && json[at - 1] == b'\\' {
                continue;
            }
            let mut j = skip_ws(json, at + key.needle().len());
            if json.get(j) != Some(&b':') {
                continue;
            }
            j = skip_ws(json, j + 1);
            if json.get(j) != Some(&b'"') {
                continue;
            }
            if let Some(end) = string_end(json, j + 1) {
                found(&json[j + 1..end]);
            }
        }
    }
}

/// Index of the quote closing the string whose contents start at `from`.
fn string_end(json: &[u8], from: usize) -> Option<usize> {
    let mut k = from;
    loop {
        let p = k + memchr2(b'"', b'\\', json.get(k..)?)?;
        if json[p] == b'"' {
            return Some(p);
        }
        k = p + 2; // the escaped character
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while matches!(json.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of_events(events: &[&str]) -> String {
        let mut p = ProducedText::default();
        for e in events {
            p.feed_event(&Bytes::copy_from_slice(e.as_bytes()));
        }
        p.text()
    }

    #[test]
    fn openai_chunks_give_their_deltas_only() {
        let text = of_events(&[
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}}]}\n\n",
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"logprobs\":{\"content\":[{\"token\":\"Hel\"}]}}]}\n\n",
            // Python's json.dumps spacing, an escaped quote and a unicode escape
            "data: {\"id\": \"c\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"lo \\\"w\\u00f6rld\\\"\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n",
            "data: [DONE]\n\n",
        ]);
        assert_eq!(text, "Hello \"wörld\"{\"x\":1}think");
        // a value string that looks like a key is not one
        assert_eq!(
            of_events(&[
                "data: {\"choices\":[{\"delta\":{\"role\":\"content\",\"x\":\"content\"}}]}\n\n"
            ]),
            ""
        );
        // legacy completions
        assert_eq!(
            of_events(&["data: {\"choices\":[{\"text\":\"abc\",\"index\":0}]}\n\n"]),
            "abc"
        );
    }

    #[test]
    fn anthropic_envelopes_and_pings_give_nothing() {
        let text = of_events(&[
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"content\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"abcd\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n",
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"text\"}}\n\n",
        ]);
        assert_eq!(text, "abcd{\"a\"");
    }

    #[test]
    fn responses_deltas_count_once() {
        let text = of_events(&[
            "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"output\":[]}}\n\n",
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"delta\":\"Hello \"}\n\n",
            "event: response.output_text.delta\r\ndata: {\"type\": \"response.output_text.delta\", \"delta\": \"there\"}\r\n\r\n",
            "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"text\":\"Hello there\"}\n\n",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"content\":[{\"text\":\"Hello there\"}]}]}}\n\n",
        ]);
        assert_eq!(text, "Hello there");
    }

    #[test]
    fn bodies_of_each_dialect() {
        let mut p = ProducedText::default();
        p.feed_body(br#"{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from fake upstream."},"finish_reason":"stop"}]}"#);
        assert_eq!(p.text(), "Hello from fake upstream.");
        let mut p = ProducedText::default();
        p.feed_body(br#"{"id":"msg_1","type":"message","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"calling"},{"type":"tool_use","id":"t","name":"f","input":{"x":1}}]}"#);
        // key by key: the text blocks, then the thinking one
        assert_eq!(p.text(), "callinghmm");
        let mut p = ProducedText::default();
        p.feed_body(br#"{"id":"resp_1","instructions":"be brief","text":{"format":{"type":"text"}},"output":[{"type":"message","content":[{"type":"output_text","text":"Hi","annotations":[]}]},{"type":"function_call","name":"f","arguments":"{}"}]}"#);
        assert_eq!(p.text(), "Hi{}");
        let mut p = ProducedText::default();
        p.feed_body(
            br#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[]}}]}"#,
        );
        assert!(p.is_empty());
        // broken JSON: what was complete is kept, nothing panics
        p.feed_body(br#"{"content":"ab","text":"cd\"#);
        assert_eq!(p.text(), "ab");
    }

    #[test]
    fn a_long_stream_keeps_a_bounded_text_and_counts_the_rest() {
        let mut p = ProducedText::default();
        let delta = "data: {\"choices\":[{\"delta\":{\"content\":\"abcdefgh\"}}]}\n\n";
        for _ in 0..(KEPT_STREAM_BYTES / 8 + 100) {
            p.feed_event(&Bytes::from_static(delta.as_bytes()));
        }
        assert_eq!(p.kept_bytes(), KEPT_STREAM_BYTES);
        assert_eq!(p.dropped_bytes(), 800);
        assert_eq!(p.text().len(), KEPT_STREAM_BYTES);
        assert!(!p.is_empty());
    }

    proptest::proptest! {
        /// Whatever the text (quotes, backslashes, `"content":` inside it, any Unicode) and
        /// the formatting, the captured text is the one serde reads.
        #[test]
        fn captured_text_is_what_serde_reads(
            pieces in proptest::collection::vec("(\\PC|[\"\\\\:{}]|\"content\": \"x)*", 1..5),
            pretty in proptest::bool::ANY,
        ) {
            let mut events = ProducedText::default();
            let mut body = ProducedText::default();
            for piece in &pieces {
                let chunk = serde_json::json!({"id": "c", "note": piece, "choices": [{"index": 0,
                    "delta": {"content": piece}, "logprobs": {"content": [{"token": piece}]}}]});
                events.feed_event(&Bytes::from(format!("data: {chunk}\n\n")));
                let answer = serde_json::json!({"id": "c", "choices": [{"message":
                    {"role": "assistant", "content": piece, "refusal": null}}], "x": piece});
                let text = if pretty {
                    serde_json::to_string_pretty(&answer).unwrap()
                } else {
                    answer.to_string()
                };
                body.feed_body(text.as_bytes());
            }
            proptest::prop_assert_eq!(events.text(), pieces.concat());
            proptest::prop_assert_eq!(body.text(), pieces.concat());
        }
    }
}
