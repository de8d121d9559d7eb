//! One request–response exchange on a pooled or new connection, driven by the calling task.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Method, Uri};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::body::{Body, Conn, READ_BYTES};
use super::head::{self, Head, Parsed};
use super::pool::Pool;

/// Bodies up to this size are copied behind the head and sent in one write.
const COALESCE_BYTES: usize = 64 * 1024;

/// A failed exchange, before the response head was complete.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExchangeError {
    /// No connection could be made within the limit.
    #[error("could not connect within {} ms", .0.as_millis())]
    ConnectTimeout(Duration),
    /// No connection could be made.
    #[error("tcp connect error: {0}")]
    Connect(std::io::Error),
    /// Writing the request or reading the head failed.
    #[error("{0}")]
    Io(std::io::Error),
    /// The connection closed before a complete response head.
    #[error("the upstream closed the connection before sending a response")]
    Closed,
    /// The response head was unusable.
    #[error(transparent)]
    Head(#[from] head::HeadError),
}

/// What to send: the request line's method and target, the header fields besides `host` and
/// `content-length`, and the whole body (`content-length` is sent when the method carries
/// one, even when it is empty). `addrs`, when set, are the only addresses a new connection
/// may go to (a client-chosen host, checked by [`crate::egress::check_base`]); the URI's host
/// is then not looked up again.
pub(crate) struct Outgoing<'r, F> {
    pub method: &'r Method,
    pub uri: &'r Uri,
    pub fields: F,
    pub body: Bytes,
    pub addrs: Option<&'r [std::net::SocketAddr]>,
}

/// Sends the request on an idle connection to the URI's host when one is kept, else on a
/// new one (`connect_limit` bounds the connect), and reads the response head.
///
/// A kept connection the peer closed while it was idle is replaced by a new one, once, when
/// the request cannot have been processed: the write failed, or (for `GET`/`HEAD` only) the
/// connection ended before any byte of a response. A `POST` that was written is never sent
/// twice: the peer may have acted on it (a model call is paid for). The same rule as Go's
/// `net/http` transport; such a failure is the caller's to retry.
///
/// Errors: [`ExchangeError`]; the caller bounds the whole call by its first-byte limit.
pub(crate) async fn send<'a, F>(
    pool: &Pool,
    out: Outgoing<'_, F>,
    connect_limit: Duration,
) -> Result<(Head, Body), ExchangeError>
where
    F: Iterator<Item = (&'a HeaderName, &'a HeaderValue)>,
{
    let Some(authority) = out.uri.authority().cloned() else {
        return Err(ExchangeError::Head(head::HeadError::Malformed("no host")));
    };
    let with_body = out.method != Method::GET && out.method != Method::HEAD;
    let mut request = BytesMut::with_capacity(512 + out.body.len().min(COALESCE_BYTES));
    head::encode_request(
        &mut request,
        out.method,
        out.uri,
        (with_body || !out.body.is_empty()).then_some(out.body.len()),
        out.fields,
    );
    let body = if out.body.len() <= COALESCE_BYTES {
        request.extend_from_slice(&out.body);
        Bytes::new()
    } else {
        out.body
    };
    let request = request.freeze();
    if let Some(stream) = pool.take(&authority) {
        let conn = Conn::new(stream, pool, authority.clone());
        match exchange(conn, &request, &body, out.method).await {
            Err(Attempt::Stale(_)) => {} // replaced below
            Err(Attempt::Failed(e)) => return Err(e),
            Ok(done) => return Ok(done),
        }
    }
    let stream = match out.addrs {
        Some(addrs) => connect_pinned(addrs, connect_limit).await?,
        None => connect(out.uri, connect_limit).await?,
    };
    exchange(
        Conn::new(stream, pool, authority),
        &request,
        &body,
        out.method,
    )
    .await
    .map_err(|e| match e {
        Attempt::Stale(e) | Attempt::Failed(e) => e,
    })
}

enum Attempt {
    /// The connection was found closed before the request could have been processed: it can
    /// go on another connection.
    Stale(ExchangeError),
    /// The exchange failed.
    Failed(ExchangeError),
}

/// Writes the request while reading the response head: a server may answer before it has
/// read the whole body (a 413 or 401 to a multi-megabyte upload) and then stop reading or
/// close (RFC 9112 §9.5). The answer is taken as it is, sending stops, and the connection is
/// not kept unless the whole request went out.
async fn exchange(
    mut conn: Conn,
    request: &[u8],
    body: &[u8],
    method: &Method,
) -> Result<(Head, Body), Attempt> {
    let (sent, head) = {
        let (mut rd, mut wr) = conn.stream.split();
        let write = async {
            wr.write_all(request).await?;
            if !body.is_empty() {
                wr.write_all(body).await?;
            }
            Ok::<_, std::io::Error>(())
        };
        let read = read_head(&mut rd, &mut conn.buf, method);
        tokio::pin!(write, read);
        let mut sent: Option<std::io::Result<()>> = None;
        let head = loop {
            tokio::select! {
                biased;
                r = &mut write, if sent.is_none() => sent = Some(r),
                h = &mut read => break h,
            }
        };
        (sent, head)
    };
    let replayable = method == Method::GET || method == Method::HEAD;
    match (head, sent) {
        (Ok(mut head), sent) => {
            // Part of the body is still unsent: the connection cannot carry another request.
            head.keep_alive &= matches!(sent, Some(Ok(())));
            let body = Body::new(conn, head.framing, head.keep_alive);
            Ok((head, body))
        }
        // The request did not fully go out, and nothing came back: it cannot have been
        // processed (its length was announced).
        (Err(fail), Some(Err(e))) if !fail.received => Err(Attempt::Stale(ExchangeError::Io(e))),
        (Err(fail), _) if !fail.received && fail.closed && replayable => {
            Err(Attempt::Stale(fail.error))
        }
        (Err(fail), _) => Err(Attempt::Failed(fail.error)),
    }
}

/// Why no response head was read.
struct ReadFail {
    error: ExchangeError,
    /// Some bytes of a response (an interim one included) had arrived.
    received: bool,
    /// The connection ended (EOF or reset).
    closed: bool,
}

/// Reads until a final response head is complete, skipping interim (1xx) ones.
async fn read_head(
    rd: &mut tokio::net::tcp::ReadHalf<'_>,
    buf: &mut BytesMut,
    method: &Method,
) -> Result<Head, ReadFail> {
    let mut received = false;
    let fail = |error, received, closed| ReadFail {
        error,
        received,
        closed,
    };
    loop {
        match head::parse_response(buf, method) {
            Ok(Parsed::Final(head)) => return Ok(head),
            Ok(Parsed::Interim) => {
                received = true;
                continue;
            }
            Ok(Parsed::Partial) => {}
            Err(e) => return Err(fail(e.into(), received, false)),
        }
        received |= !buf.is_empty();
        if buf.capacity() - buf.len() < READ_BYTES / 4 {
            buf.reserve(READ_BYTES);
        }
        match tokio::io::AsyncReadExt::read_buf(rd, buf).await {
            Ok(0) => return Err(fail(ExchangeError::Closed, received, true)),
            Ok(_) => {}
            Err(e) => {
                let closed = is_reset(&e);
                return Err(fail(ExchangeError::Io(e), received, closed));
            }
        }
    }
}

fn is_reset(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
    )
}

/// A new connection to the URI's host and port (80 when absent), with TCP_NODELAY: small
/// requests would otherwise wait for the peer's delayed ACK. The resolved addresses are tried
/// in turn, each with an equal share of what is left of `limit` (as hyper-util's connector
/// does), so an address that drops packets cannot use up the whole limit.
async fn connect(uri: &Uri, limit: Duration) -> Result<TcpStream, ExchangeError> {
    let host = uri.host().unwrap_or_default();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = uri.port_u16().unwrap_or(80);
    let deadline = tokio::time::Instant::now() + limit;
    let attempt = async {
        let addrs: Vec<_> = tokio::net::lookup_host((host, port))
            .await
            .map_err(ExchangeError::Connect)?
            .collect();
        connect_in_turn(&addrs, deadline).await
    };
    match tokio::time::timeout_at(deadline, attempt).await {
        // Every address (or the last one tried) timed out, or the lookup used up the limit.
        Ok(Err(ExchangeError::Connect(e))) if e.kind() == std::io::ErrorKind::TimedOut => {
            Err(ExchangeError::ConnectTimeout(limit))
        }
        Ok(r) => r,
        Err(_) => Err(ExchangeError::ConnectTimeout(limit)),
    }
}

/// A new connection to one of `addrs` (already resolved and checked), within `limit`.
async fn connect_pinned(
    addrs: &[std::net::SocketAddr],
    limit: Duration,
) -> Result<TcpStream, ExchangeError> {
    match connect_in_turn(addrs, tokio::time::Instant::now() + limit).await {
        Err(ExchangeError::Connect(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
            Err(ExchangeError::ConnectTimeout(limit))
        }
        r => r,
    }
}

/// Tries `addrs` in turn, each with an equal share of the time left until `deadline`.
/// Errors: the last address's error ([`std::io::ErrorKind::TimedOut`] when its share ran
/// out), `NotFound` when there is no address.
pub(super) async fn connect_in_turn(
    addrs: &[std::net::SocketAddr],
    deadline: tokio::time::Instant,
) -> Result<TcpStream, ExchangeError> {
    let mut last = None;
    for (i, addr) in addrs.iter().enumerate() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let share = left / u32::try_from(addrs.len() - i).unwrap_or(u32::MAX);
        match tokio::time::timeout(share, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                s.set_nodelay(true).map_err(ExchangeError::Connect)?;
                return Ok(s);
            }
            Ok(Err(e)) => last = Some(e),
            Err(_) => {
                last = Some(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connect timed out",
                ));
            }
        }
    }
    Err(ExchangeError::Connect(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the host name resolved to no address",
        )
    })))
}
