//! The response body type: a list of byte pieces written one by one, with an optional pause
//! between pieces, that reports to the observation log how many bytes went out and whether the
//! client dropped the connection before the end.
//!
//! Each piece becomes its own HTTP/1.1 chunk (or HTTP/2 DATA frame). When the pause is zero,
//! hyper may coalesce pieces into one socket write; when it is non-zero, each piece is flushed
//! before the pause, so the reader sees separate reads.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::observe::RequestGuard;

/// Body error used to reset the connection on purpose (`x-mock-drop-after-chunks`): hyper
/// aborts the connection when a body yields an error, so the client sees a truncated stream.
#[derive(Debug, thiserror::Error)]
#[error("tollgate-mock dropped the connection mid-body on request")]
pub struct Aborted;

/// Response body made of pieces separated by `gap`.
pub struct MockBody {
    pieces: VecDeque<Bytes>,
    gap: Duration,
    sleep: Option<async_io::Timer>,
    guard: RequestGuard,
    exact_len: Option<u64>,
    abort_after: Option<usize>,
    sent: usize,
}

impl MockBody {
    /// Body sent as one piece with an exact `content-length`.
    pub fn full(bytes: impl Into<Bytes>, guard: RequestGuard) -> Self {
        let b: Bytes = bytes.into();
        let len = b.len() as u64;
        let mut pieces = VecDeque::with_capacity(1);
        if !b.is_empty() {
            pieces.push_back(b);
        }
        Self::finish_if_empty(Self {
            pieces,
            gap: Duration::ZERO,
            sleep: None,
            guard,
            exact_len: Some(len),
            abort_after: None,
            sent: 0,
        })
    }

    /// Body sent piece by piece (chunked), pausing `gap` between consecutive pieces.
    pub fn pieces(pieces: Vec<Bytes>, gap: Duration, guard: RequestGuard) -> Self {
        let pieces: VecDeque<Bytes> = pieces.into_iter().filter(|p| !p.is_empty()).collect();
        Self::finish_if_empty(Self {
            pieces,
            gap,
            sleep: None,
            guard,
            exact_len: None,
            abort_after: None,
            sent: 0,
        })
    }

    fn finish_if_empty(mut self) -> Self {
        if self.pieces.is_empty() {
            self.guard.finish();
        }
        self
    }

    /// Hold the first piece back for `delay` (the head goes out at once).
    pub fn first_piece_after(mut self, delay: Duration) -> Self {
        if !self.pieces.is_empty() {
            self.sleep = Some(crate::timer::sleep(delay));
        }
        self
    }

    /// Reset the connection after `n` pieces instead of finishing the body.
    pub fn abort_after(mut self, n: usize) -> Self {
        self.abort_after = Some(n);
        self.exact_len = None;
        self
    }

    /// Access to the guard (to record the response status).
    pub fn guard(&self) -> &RequestGuard {
        &self.guard
    }
}

impl Body for MockBody {
    type Data = Bytes;
    type Error = Aborted;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Aborted>>> {
        let this = &mut *self;
        if let Some(sleep) = this.sleep.as_mut() {
            if Pin::new(sleep).poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        if this.abort_after == Some(this.sent) {
            this.abort_after = None;
            this.pieces.clear();
            this.guard.dropped_by_mock();
            return Poll::Ready(Some(Err(Aborted)));
        }
        match this.pieces.pop_front() {
            Some(piece) => {
                this.sent += 1;
                this.guard.add_bytes(piece.len());
                if this.pieces.is_empty() && this.abort_after.is_none() {
                    // The last byte is with the connection now: the response is complete.
                    this.guard.finish();
                } else if !this.gap.is_zero() {
                    this.sleep = Some(crate::timer::sleep(this.gap));
                }
                Poll::Ready(Some(Ok(Frame::data(piece))))
            }
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty() && self.abort_after.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact_len {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

/// Cut `body` at the given byte offsets (offsets outside the body or not increasing are ignored).
pub fn split_at_offsets(body: &Bytes, offsets: &[usize]) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(offsets.len() + 1);
    let mut start = 0usize;
    for &off in offsets {
        if off > start && off < body.len() {
            out.push(body.slice(start..off));
            start = off;
        }
    }
    out.push(body.slice(start..));
    out
}

/// Cut `body` every `n` bytes (`n == 0` means one piece).
pub fn split_every(body: &Bytes, n: usize) -> Vec<Bytes> {
    if n == 0 || body.len() <= n {
        return vec![body.clone()];
    }
    (0..body.len())
        .step_by(n)
        .map(|start| body.slice(start..(start + n).min(body.len())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_split_and_rejoin() {
        let b = Bytes::from_static(b"abcdefghij");
        let parts = split_at_offsets(&b, &[3, 3, 2, 7, 99]);
        let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lens, vec![3, 4, 3]);
        assert_eq!(parts.concat(), b.to_vec());
    }

    #[test]
    fn every_n() {
        let b = Bytes::from_static(b"abcdefg");
        let parts = split_every(&b, 3);
        assert_eq!(parts, vec!["abc", "def", "g"]);
        assert_eq!(split_every(&b, 1).len(), 7);
        assert_eq!(split_every(&b, 0).len(), 1);
    }
}
