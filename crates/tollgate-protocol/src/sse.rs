//! Server-Sent Events framing, as specified by the WHATWG HTML Living Standard §9.2
//! ("Server-sent events", event stream interpretation).
//!
//! [`SseFramer`] cuts a byte stream into complete events. Events end at a blank line; lines end
//! with `\n`, `\r\n` or `\r`. Network reads are not events: an event (or a multi-byte UTF-8
//! character inside it) may be split across any number of [`SseFramer::push`] calls, and one
//! push may carry several events. Each event is returned as the exact bytes it arrived as
//! ([`RawEvent::raw`]), so a relay can forward it unchanged, and can be parsed on demand into
//! fields with [`RawEvent::parse`].
//!
//! The buffer is bounded: an event longer than `max_event_bytes` is an error
//! ([`SseError::EventTooLarge`]), so a hostile or broken upstream cannot grow memory without bound.

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};

/// Errors from framing or parsing an SSE stream.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SseError {
    /// An event grew past the framer's bound before its terminating blank line arrived.
    #[error("SSE event exceeds {limit} bytes")]
    EventTooLarge {
        /// The configured bound, in bytes.
        limit: usize,
    },
    /// An event's bytes are not valid UTF-8 (the SSE spec requires UTF-8).
    #[error("SSE event is not valid UTF-8")]
    InvalidUtf8,
}

/// Splits an incoming byte stream into complete SSE events, zero-copy.
///
/// Scanning is incremental: bytes already scanned are not scanned again on the next push, so
/// feeding one byte at a time costs O(n) overall.
#[derive(Debug)]
pub struct SseFramer {
    buf: BytesMut,
    /// Start of the line currently being scanned, relative to `buf`.
    line_start: usize,
    /// Next byte to scan, relative to `buf`.
    pos: usize,
    max_event_bytes: usize,
}

/// One complete SSE event: its exact bytes, including the terminating blank line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    /// The event's bytes as received, terminator included.
    pub raw: Bytes,
}

/// The fields of one event. Comment lines (starting with `:`) are skipped; several `data:`
/// lines are joined with `\n`, as the spec says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedEvent<'a> {
    /// The `event:` field, if present.
    pub event: Option<&'a str>,
    /// The `data:` field(s); empty when the event has no data line (e.g. a `: ping` comment).
    pub data: Cow<'a, str>,
    /// The `id:` field, if present.
    pub id: Option<&'a str>,
    /// Whether at least one `data:` line was present.
    pub has_data: bool,
}

impl SseFramer {
    /// A framer that refuses events longer than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            line_start: 0,
            pos: 0,
            max_event_bytes,
        }
    }

    /// Appends bytes read from the network.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes buffered but not yet returned as an event.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next complete event, or `Ok(None)` when more bytes are needed.
    ///
    /// Blank lines that do not close an event (e.g. extra separators) are consumed silently.
    pub fn next_event(&mut self) -> Result<Option<RawEvent>, SseError> {
        loop {
            let Some(rel) = memchr::memchr2(b'\n', b'\r', &self.buf[self.pos..]) else {
                self.pos = self.buf.len();
                return self.check_bound();
            };
            let i = self.pos + rel;
            let term_len = if self.buf[i] == b'\r' {
                match self.buf.get(i + 1) {
                    // A lone trailing '\r' may be the first half of "\r\n": wait for more.
                    None => {
                        self.pos = i;
                        return self.check_bound();
                    }
                    Some(b'\n') => 2,
                    Some(_) => 1,
                }
            } else {
                1
            };
            let line_empty = i == self.line_start;
            let next = i + term_len;
            if !line_empty {
                self.line_start = next;
                self.pos = next;
                continue;
            }
            // A blank line: the event (if any) ends here.
            let raw = self.buf.split_to(next).freeze();
            self.line_start = 0;
            self.pos = 0;
            if raw.len() == term_len {
                // Blank line with no event before it: nothing to dispatch.
                continue;
            }
            return Ok(Some(RawEvent { raw }));
        }
    }

    /// Call at end of input: returns a final event that lacked its terminating blank line.
    /// Per the spec such an incomplete event is discarded by browsers; a gateway still wants
    /// to see it (e.g. a trailing `data: {"error":...}` without `\n\n`), so it is returned.
    pub fn finish(&mut self) -> Result<Option<RawEvent>, SseError> {
        if self.buf.iter().all(|b| *b == b'\n' || *b == b'\r') {
            self.buf.clear();
            self.line_start = 0;
            self.pos = 0;
            return Ok(None);
        }
        let raw = self.buf.split().freeze();
        self.line_start = 0;
        self.pos = 0;
        Ok(Some(RawEvent { raw }))
    }

    fn check_bound(&self) -> Result<Option<RawEvent>, SseError> {
        if self.buf.len() > self.max_event_bytes {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(None)
    }
}

impl RawEvent {
    /// Parses the event's fields. Borrowed when the event has a single `data:` line.
    pub fn parse(&self) -> Result<ParsedEvent<'_>, SseError> {
        parse_event(&self.raw)
    }
}

/// Parses one event's bytes (as returned in [`RawEvent::raw`]) into its fields.
pub fn parse_event(raw: &[u8]) -> Result<ParsedEvent<'_>, SseError> {
    let text = std::str::from_utf8(raw).map_err(|_| SseError::InvalidUtf8)?;
    let mut event = None;
    let mut id = None;
    let mut data: Option<Cow<'_, str>> = None;
    for line in lines(text) {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                data = Some(match data {
                    None => Cow::Borrowed(value),
                    Some(prev) => {
                        let mut s = prev.into_owned();
                        s.push('\n');
                        s.push_str(value);
                        Cow::Owned(s)
                    }
                })
            }
            "event" => event = Some(value),
            "id" => id = Some(value),
            _ => {}
        }
    }
    let has_data = data.is_some();
    Ok(ParsedEvent {
        event,
        data: data.unwrap_or(Cow::Borrowed("")),
        id,
        has_data,
    })
}

/// Splits on `\r\n`, `\n` or `\r`.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match rest.find(['\r', '\n']) {
            Some(i) => {
                let line = &rest[..i];
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = &rest[i + skip..];
                Some(line)
            }
            None => {
                let line = rest;
                rest = "";
                Some(line)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]]) -> Vec<Bytes> {
        let mut f = SseFramer::new(1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            f.push(c);
            while let Some(e) = f.next_event().unwrap() {
                out.push(e.raw);
            }
        }
        if let Some(e) = f.finish().unwrap() {
            out.push(e.raw);
        }
        out
    }

    const STREAM: &str = "data: {\"a\":\"h\u{e9}llo \u{1F680}\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n: ping\n\ndata: [DONE]\n\n";

    #[test]
    fn whole_stream_yields_each_event_with_exact_bytes() {
        let evs = collect(&[STREAM.as_bytes()]);
        assert_eq!(evs.len(), 4);
        let joined: Vec<u8> = evs.iter().flat_map(|b| b.to_vec()).collect();
        assert_eq!(joined, STREAM.as_bytes());
        assert_eq!(&evs[3][..], b"data: [DONE]\n\n");
    }

    #[test]
    fn split_at_every_offset_gives_identical_events() {
        let whole = collect(&[STREAM.as_bytes()]);
        let b = STREAM.as_bytes();
        for cut in 0..=b.len() {
            assert_eq!(collect(&[&b[..cut], &b[cut..]]), whole, "cut at {cut}");
        }
        let singles: Vec<&[u8]> = b.chunks(1).collect();
        assert_eq!(collect(&singles), whole);
    }

    #[test]
    fn crlf_and_cr_line_endings_terminate_events() {
        let evs = collect(&[b"data: 1\r\n\r\ndata: 2\r\rdata: 3\n\n"]);
        let parsed: Vec<String> = evs
            .iter()
            .map(|e| parse_event(e).unwrap().data.into_owned())
            .collect();
        assert_eq!(parsed, vec!["1", "2", "3"]);
    }

    #[test]
    fn trailing_cr_waits_for_possible_lf() {
        let mut f = SseFramer::new(1024);
        f.push(b"data: x\r\n\r");
        // "\r" might be the start of "\r\n": not yet decided.
        assert_eq!(f.next_event().unwrap(), None);
        f.push(b"\n");
        let e = f.next_event().unwrap().unwrap();
        assert_eq!(&e.raw[..], b"data: x\r\n\r\n");
        assert_eq!(f.pending(), 0);
    }

    #[test]
    fn parse_fields_multiline_data_and_comments() {
        let p = parse_event(b": comment\nevent: delta\nid: 7\ndata: one\ndata:two\n\n").unwrap();
        assert_eq!(p.event, Some("delta"));
        assert_eq!(p.id, Some("7"));
        assert_eq!(p.data, "one\ntwo");
        assert!(p.has_data);
        let ping = parse_event(b": ping\n\n").unwrap();
        assert!(!ping.has_data);
        assert_eq!(ping.event, None);
    }

    #[test]
    fn oversized_event_is_an_error() {
        let mut f = SseFramer::new(16);
        f.push(b"data: 0123456789abcdef");
        assert_eq!(f.next_event(), Err(SseError::EventTooLarge { limit: 16 }));
    }

    #[test]
    fn invalid_utf8_is_reported_on_parse_not_framing() {
        let evs = collect(&[b"data: \xff\n\n"]);
        assert_eq!(evs.len(), 1);
        assert_eq!(parse_event(&evs[0]), Err(SseError::InvalidUtf8));
    }

    #[test]
    fn finish_returns_unterminated_event() {
        let evs = collect(&[b"data: a\n\ndata: {\"error\":1}"]);
        assert_eq!(evs.len(), 2);
        assert_eq!(parse_event(&evs[1]).unwrap().data, "{\"error\":1}");
    }
}
