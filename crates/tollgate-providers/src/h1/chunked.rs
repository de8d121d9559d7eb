//! The chunked transfer coding's decoder (RFC 9112 §7.1): chunk-size lines (extensions
//! ignored), chunk data handed out as slices of the read buffer, the trailer section skipped.
//! Works on whatever part of the body has arrived and resumes when more does.

use bytes::{Bytes, BytesMut};

/// The longest chunk-size line or trailer line accepted, bytes.
const MAX_LINE_BYTES: usize = 4096;
/// The largest trailer section accepted, bytes.
const MAX_TRAILER_BYTES: usize = 16 * 1024;

/// Where the decoder is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data: this many bytes left.
    Data(u64),
    /// Expecting the CRLF that ends a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty one; bytes read so far.
    Trailers(usize),
    /// The body is complete.
    Done,
}

/// What one [`ChunkedDecoder::decode`] step produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Chunk data (never empty).
    Data(Bytes),
    /// The buffer holds no complete next element: read more.
    NeedMore,
    /// The body ended; bytes after it stay in the buffer.
    Done,
}

/// A body that breaks the chunked coding. The message names the rule broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed chunked body: {0}")]
pub(crate) struct ChunkedError(&'static str);

/// Decodes one chunked body.
#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
}

impl ChunkedDecoder {
    /// A decoder at the start of a body.
    pub(crate) fn new() -> Self {
        Self { state: State::Size }
    }

    /// Consumes what it can from the front of `buf`: the next chunk data, or the end.
    ///
    /// Errors: [`ChunkedError`] for a bad size line, a missing CRLF after data, or a line or
    /// trailer section over its bound.
    pub(crate) fn decode(&mut self, buf: &mut BytesMut) -> Result<Step, ChunkedError> {
        loop {
            match self.state {
                State::Done => return Ok(Step::Done),
                State::Size => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::NeedMore);
                    };
                    let size = parse_size(&line)?;
                    self.state = if size == 0 {
                        State::Trailers(0)
                    } else {
                        State::Data(size)
                    };
                }
                State::Data(left) => {
                    if buf.is_empty() {
                        return Ok(Step::NeedMore);
                    }
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                    return Ok(Step::Data(buf.split_to(n).freeze()));
                }
                State::DataEnd => {
                    if buf.len() < 2 {
                        return Ok(Step::NeedMore);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err(ChunkedError("chunk data not followed by CRLF"));
                    }
                    let _ = buf.split_to(2);
                    self.state = State::Size;
                }
                State::Trailers(seen) => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::NeedMore);
                    };
                    if line.len() == 2 {
                        self.state = State::Done;
                    } else if seen + line.len() > MAX_TRAILER_BYTES {
                        return Err(ChunkedError("trailer section too large"));
                    } else {
                        self.state = State::Trailers(seen + line.len());
                    }
                }
            }
        }
    }
}

/// The next CRLF-terminated line (CRLF included), consumed from `buf`; `None` when it has
/// not fully arrived.
fn take_line(buf: &mut BytesMut) -> Result<Option<BytesMut>, ChunkedError> {
    match memchr::memchr(b'\n', buf) {
        Some(i) if i == 0 || buf[i - 1] != b'\r' => Err(ChunkedError("line not ended by CRLF")),
        Some(i) if i >= MAX_LINE_BYTES => Err(ChunkedError("line too long")),
        Some(i) => Ok(Some(buf.split_to(i + 1))),
        None if buf.len() >= MAX_LINE_BYTES => Err(ChunkedError("line too long")),
        None => Ok(None),
    }
}

/// The hex size at the start of a chunk-size line, before any `;extension` (and the
/// whitespace allowed before it).
fn parse_size(line: &[u8]) -> Result<u64, ChunkedError> {
    let invalid = ChunkedError("invalid chunk size");
    let line = &line[..line.len() - 2];
    let end = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    if end == 0 {
        return Err(invalid);
    }
    // Only spaces and tabs may stand before an extension (RFC 9110 §5.6.3 "BWS").
    let rest = &line[end..];
    let ext = rest.iter().position(|b| *b != b' ' && *b != b'\t');
    if !rest.is_empty() && ext.is_none_or(|i| rest[i] != b';') {
        return Err(invalid);
    }
    // Leading zeros are allowed; what is left must fit in 64 bits.
    let digits = &line[..end];
    let significant = &digits[digits.iter().position(|d| *d != b'0').unwrap_or(end)..];
    if significant.len() > 16 {
        return Err(invalid);
    }
    significant
        .iter()
        .try_fold(0u64, |n, d| {
            Some(n << 4 | u64::from(char::from(*d).to_digit(16)?))
        })
        .ok_or(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes; the data and whether the end was seen.
    fn decode_in_steps(
        input: &[u8],
        step: usize,
    ) -> Result<(Vec<u8>, bool, Vec<u8>), ChunkedError> {
        let mut d = ChunkedDecoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut fed = 0;
        loop {
            match d.decode(&mut buf)? {
                Step::Data(b) => {
                    assert!(!b.is_empty());
                    out.extend_from_slice(&b);
                }
                Step::Done => return Ok((out, true, buf.to_vec())),
                Step::NeedMore if fed >= input.len() => return Ok((out, false, buf.to_vec())),
                Step::NeedMore => {
                    let end = (fed + step).min(input.len());
                    buf.extend_from_slice(&input[fed..end]);
                    fed = end;
                }
            }
        }
    }

    #[test]
    fn decodes_whatever_way_the_bytes_arrive() {
        let body = b"5\r\nhello\r\n1 \t;ext=\"a\"\r\n \r\n000000000000000010\r\n0123456789abcdef\r\n0\r\nx-usage: 3\r\n\r\nNEXT";
        for step in [1, 2, 3, 7, body.len()] {
            let (data, done, rest) = decode_in_steps(body, step).unwrap();
            assert_eq!(data, b"hello 0123456789abcdef", "step {step}");
            assert!(done);
            // Bytes after the body stay for the next response on the connection.
            assert!(b"NEXT".starts_with(&rest), "step {step}: {rest:?}");
            if step == body.len() {
                assert_eq!(rest, b"NEXT");
            }
        }
    }

    #[test]
    fn an_unfinished_body_asks_for_more() {
        let (data, done, _) = decode_in_steps(b"5\r\nhel", 2).unwrap();
        assert_eq!(data, b"hel");
        assert!(!done);
    }

    #[test]
    fn broken_bodies_are_errors() {
        for (body, why) in [
            (&b"zz\r\n"[..], "invalid chunk size"),
            (b"\r\n", "invalid chunk size"),
            (b"5 x\r\nhello\r\n", "invalid chunk size"),
            (b"11111111111111111\r\n", "invalid chunk size"),
            (b"5\r\r\nhello\r\n", "invalid chunk size"),
            (b"5 \r\nhello\r\n", "invalid chunk size"),
            (b"5\nhello", "line not ended by CRLF"),
            (b"5\r\nhelloXX0\r\n\r\n", "chunk data not followed by CRLF"),
        ] {
            assert_eq!(decode_in_steps(body, 64).unwrap_err(), ChunkedError(why));
        }
        let long = format!("5{}", " ".repeat(MAX_LINE_BYTES));
        assert_eq!(
            decode_in_steps(long.as_bytes(), 64).unwrap_err(),
            ChunkedError("line too long")
        );
    }
}
