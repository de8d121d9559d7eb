//! A response body read off the upstream connection by the task that consumes it, as a
//! stream of network reads; at its end the connection goes back to the pool.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use http::uri::Authority;
use tokio::net::TcpStream;

use super::chunked::{ChunkedDecoder, Step};
use super::head::Framing;
use super::pool::Pool;

/// Bytes reserved for each read from the upstream.
pub(crate) const READ_BYTES: usize = 8 * 1024;

/// The most bytes a dropped [`Body`] still reads from the socket (without waiting) to reach
/// its end and keep the connection.
const DRAIN_ON_DROP_BYTES: usize = 64 * 1024;

/// A connection in use: the socket, what was read and not yet consumed, and where it goes
/// back when the exchange ends cleanly.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    pub(crate) buf: BytesMut,
    pub(crate) pool: Pool,
    pub(crate) authority: Authority,
}

impl Conn {
    /// `stream` to `authority`, with nothing read yet; it returns to `pool` when clean.
    pub(crate) fn new(stream: TcpStream, pool: &Pool, authority: Authority) -> Self {
        Self {
            stream,
            buf: BytesMut::new(),
            pool: pool.clone(),
            authority,
        }
    }
}

#[derive(Debug)]
enum Decode {
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

/// Why a body could not be read to its end. The message never holds body bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    /// The upstream closed the connection before the body was complete.
    #[error("the upstream closed the connection before the response body was complete")]
    Incomplete,
    /// A read failed.
    #[error("{0}")]
    Io(String),
    /// The chunked coding was broken.
    #[error(transparent)]
    Chunked(#[from] super::chunked::ChunkedError),
}

/// The response body. Dropped before its end, it still consumes what has already arrived, up
/// to [`DRAIN_ON_DROP_BYTES`] and without waiting: a stream relay stops reading at
/// `data: [DONE]`, and the chunked coding's last chunk usually sits right behind it, so the
/// connection is kept. When the end has not arrived the connection is closed, which is also
/// what tells a model server that a client that went away no longer wants the rest.
#[derive(Debug)]
pub(crate) struct Body {
    conn: Option<Conn>,
    decode: Decode,
    keep_alive: bool,
    exact: Option<u64>,
}

impl Body {
    /// The body of a response with `framing`; the connection returns to the pool at its end
    /// when `keep_alive`.
    pub(crate) fn new(conn: Conn, framing: Framing, keep_alive: bool) -> Self {
        let (decode, exact) = match framing {
            Framing::Empty => (Decode::Length(0), Some(0)),
            Framing::Length(n) => (Decode::Length(n), Some(n)),
            Framing::Chunked => (Decode::Chunked(ChunkedDecoder::new()), None),
            Framing::UntilClose => (Decode::UntilClose, None),
        };
        let mut body = Self {
            conn: Some(conn),
            decode,
            keep_alive,
            exact,
        };
        if exact == Some(0) {
            body.finish();
        }
        body
    }

    /// The body's length when the head gave it.
    pub(crate) fn exact_len(&self) -> Option<u64> {
        self.exact
    }

    /// The body ended: its connection goes back to the pool if it can carry another request
    /// (nothing unread after the body).
    fn finish(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.keep_alive
            && conn.buf.is_empty()
        {
            conn.pool.put(conn.authority, conn.stream);
        }
    }

    /// The next data from the buffer, or `None` when it has to be read first.
    fn decode(&mut self) -> Option<Result<Option<Bytes>, BodyError>> {
        let conn = self.conn.as_mut()?;
        let buf = &mut conn.buf;
        match &mut self.decode {
            Decode::Length(0) => {
                self.finish();
                Some(Ok(None))
            }
            Decode::Length(_) | Decode::UntilClose if buf.is_empty() => None,
            Decode::Length(left) => {
                let n = usize::try_from(*left).unwrap_or(usize::MAX).min(buf.len());
                *left -= n as u64;
                let data = buf.split_to(n).freeze();
                if *left == 0 {
                    self.finish();
                }
                Some(Ok(Some(data)))
            }
            Decode::UntilClose => Some(Ok(Some(buf.split().freeze()))),
            Decode::Chunked(d) => match d.decode(buf) {
                Ok(Step::Data(data)) => Some(Ok(Some(data))),
                Ok(Step::NeedMore) => None,
                Ok(Step::Done) => {
                    self.finish();
                    Some(Ok(None))
                }
                Err(e) => {
                    self.conn = None;
                    Some(Err(e.into()))
                }
            },
        }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        // Counted in bytes read, not in data decoded: chunk framing is not free to parse.
        let mut budget = DRAIN_ON_DROP_BYTES;
        loop {
            match self.decode() {
                Some(Ok(Some(_))) => continue,
                // Ended (and put back), or broken.
                Some(_) => return,
                None => {}
            }
            let Some(conn) = self.conn.as_mut() else {
                return;
            };
            if matches!(self.decode, Decode::UntilClose) {
                return;
            }
            conn.buf.reserve(READ_BYTES);
            // Without waiting: `WouldBlock` (nothing more yet), EOF and errors all close it.
            match conn.stream.try_read_buf(&mut conn.buf) {
                Ok(n) if n > 0 && n <= budget => budget -= n,
                // Nothing more yet, EOF, an error, or too much left.
                _ => return,
            }
        }
    }
}

impl Stream for Body {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(step) = this.decode() {
                return Poll::Ready(step.transpose());
            }
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            if conn.buf.capacity() - conn.buf.len() < READ_BYTES / 4 {
                conn.buf.reserve(READ_BYTES);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut conn.stream), cx, &mut conn.buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    this.conn = None;
                    return Poll::Ready(match this.decode {
                        Decode::UntilClose => None,
                        _ => Some(Err(BodyError::Incomplete)),
                    });
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(BodyError::Io(e.to_string()))));
                }
            }
        }
    }
}
