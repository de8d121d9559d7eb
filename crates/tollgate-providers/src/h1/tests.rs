//! Exchanges against a loopback server that answers from a script, byte for byte.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::uri::Authority;
use http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// What the server does after reading one request on a connection.
#[derive(Clone)]
enum Reply {
    /// Writes these bytes and keeps the connection.
    Send(&'static [u8]),
    /// Writes these bytes and closes the connection.
    SendClose(&'static [u8]),
    /// Writes these pieces with a pause between them, then keeps the connection.
    Trickle(Vec<&'static [u8]>),
}

/// The server: replies in order, one per request across all connections. Records each
/// request (head and body) with the index of the connection it came on.
struct Server {
    uri: String,
    seen: Arc<Mutex<Vec<(usize, String)>>>,
}

async fn server(replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let replies = Arc::new(Mutex::new(replies.into_iter()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut index = 0;
        while let Ok((mut sock, _)) = listener.accept().await {
            let (replies, log) = (Arc::clone(&replies), Arc::clone(&log));
            let conn = index;
            index += 1;
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let Some(request) = read_request(&mut sock, &mut buf).await else {
                        return;
                    };
                    log.lock().unwrap().push((conn, request));
                    let Some(reply) = replies.lock().unwrap().next() else {
                        return;
                    };
                    match reply {
                        Reply::Send(b) => sock.write_all(b).await.unwrap(),
                        Reply::SendClose(b) => {
                            sock.write_all(b).await.unwrap();
                            return;
                        }
                        Reply::Trickle(pieces) => {
                            for p in pieces {
                                sock.write_all(p).await.unwrap();
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                        }
                    }
                }
            });
        }
    });
    Server { uri, seen }
}

/// One request (head and `content-length` body) as text, or `None` at the end of the
/// connection.
async fn read_request(sock: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buf[..end + 4].to_vec()).unwrap();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + len {
                let all: Vec<u8> = buf.drain(..end + 4 + len).collect();
                return Some(String::from_utf8(all).unwrap());
            }
        }
        let mut chunk = [0u8; 4096];
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn post(pool: &Pool, base: &str, body: &'static str) -> Result<(Head, Body), ExchangeError> {
    call(pool, &Method::POST, base, body).await
}

async fn call(
    pool: &Pool,
    method: &Method,
    base: &str,
    body: &'static str,
) -> Result<(Head, Body), ExchangeError> {
    let uri: Uri = format!("{base}/v1/chat/completions").parse().unwrap();
    let fields = [(
        HeaderName::from_static("authorization"),
        HeaderValue::from_static("Bearer sk-up"),
    )];
    send(
        pool,
        Outgoing {
            method,
            uri: &uri,
            fields: fields.iter().map(|(n, v)| (n, v)),
            body: Bytes::from_static(body.as_bytes()),
            addrs: None,
        },
        Duration::from_secs(2),
    )
    .await
}

async fn collect(mut body: Body) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk?);
    }
    Ok(out)
}

const OK_HELLO: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n\"hello\"";

#[tokio::test]
async fn keep_alive_connections_carry_the_next_request() {
    let chunked: &[u8] =
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    let s = server(vec![
        Reply::Send(OK_HELLO),
        Reply::Send(chunked),
        Reply::Send(OK_HELLO),
    ])
    .await;
    let pool = Pool::default();
    let (head, body) = post(&pool, &s.uri, "{\"a\":1}").await.unwrap();
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.headers["content-type"], "application/json");
    assert_eq!(body.exact_len(), Some(7));
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    let (_, body) = post(&pool, &s.uri, "{}").await.unwrap();
    assert_eq!(body.exact_len(), None);
    assert_eq!(collect(body).await.unwrap(), b"abcde");
    let (_, body) = post(&pool, &s.uri, "{}").await.unwrap();
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [0, 0, 0]);
    let port = s.uri.rsplit(':').next().unwrap();
    assert_eq!(
        seen[0].1,
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: 7\r\n\
             authorization: Bearer sk-up\r\n\r\n{{\"a\":1}}"
        )
    );
}

fn authority(base: &str) -> Authority {
    base.trim_start_matches("http://").parse().unwrap()
}

/// A connection to a listener of its own that is put in `pool` under `base`'s host. Its peer
/// resets it at once (`reset`), or reads one request and closes without answering; `true`
/// is sent on the returned channel when a request reached it.
async fn doomed_connection(
    pool: &Pool,
    base: &str,
    reset: bool,
) -> tokio::sync::oneshot::Receiver<bool> {
    let other = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stream = tokio::net::TcpStream::connect(other.local_addr().unwrap())
        .await
        .unwrap();
    let (mut peer, _) = other.accept().await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    if reset {
        // A zero linger makes the close a reset; it cannot block, having nothing to send.
        #[expect(
            deprecated,
            reason = "SO_LINGER 0 is how the test makes the peer send a reset"
        )]
        peer.set_linger(Some(Duration::ZERO)).unwrap();
        drop(peer);
        let _ = tx.send(false);
    } else {
        tokio::spawn(async move {
            let got = read_request(&mut peer, &mut Vec::new()).await.is_some();
            let _ = tx.send(got);
        });
    }
    pool.put(authority(base), stream);
    rx
}

#[tokio::test]
async fn a_connection_the_upstream_closed_while_idle_is_replaced() {
    // The first answer does not say `close`, but the server closes right after it.
    let s = server(vec![
        Reply::SendClose(OK_HELLO),
        Reply::Send(OK_HELLO),
        Reply::Send(OK_HELLO),
    ])
    .await;
    let pool = Pool::default();
    let (_, body) = post(&pool, &s.uri, "1").await.unwrap();
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    assert_eq!(pool.idle_count(&authority(&s.uri)), 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (head, body) = post(&pool, &s.uri, "2").await.unwrap();
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    let seen = s.seen.lock().unwrap().clone();
    // The second request went once, on a new connection.
    assert_eq!(seen.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [0, 1]);

    // A kept connection reset by its peer: the request goes once, on a new connection (not
    // the kept connection 1, which sits below the doomed one).
    let _reset = doomed_connection(&pool, &s.uri, true).await;
    let (head, body) = post(&pool, &s.uri, "3").await.unwrap();
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    let conns: Vec<usize> = s.seen.lock().unwrap().iter().map(|(c, _)| *c).collect();
    assert_eq!(conns, [0, 1, 2]);
}

#[tokio::test]
async fn a_written_post_is_never_sent_twice_but_a_get_is() {
    let s = server(vec![Reply::Send(OK_HELLO)]).await;
    let pool = Pool::default();
    // The peer reads the POST and closes without a word: it may have acted on it.
    let reached = doomed_connection(&pool, &s.uri, false).await;
    let e = post(&pool, &s.uri, "{}").await.unwrap_err();
    assert!(matches!(e, ExchangeError::Closed), "{e:?}");
    assert!(reached.await.unwrap());
    assert!(s.seen.lock().unwrap().is_empty());
    // The same for a GET: answered on a new connection.
    let reached = doomed_connection(&pool, &s.uri, false).await;
    let (head, body) = call(&pool, &Method::GET, &s.uri, "").await.unwrap();
    assert!(reached.await.unwrap());
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0]
            .1
            .starts_with("GET /v1/chat/completions HTTP/1.1\r\n"),
        "{}",
        seen[0].1
    );
}

#[tokio::test]
async fn only_a_body_read_to_its_end_returns_its_connection() {
    let close: &[u8] = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok";
    let s = server(vec![
        Reply::Trickle(vec![
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n01234",
            b"56789",
        ]),
        Reply::Send(close),
        Reply::Send(OK_HELLO),
    ])
    .await;
    let pool = Pool::default();
    let authority = authority(&s.uri);
    // Dropped half-way: the connection is closed, not kept.
    let (_, mut body) = post(&pool, &s.uri, "1").await.unwrap();
    assert_eq!(&body.next().await.unwrap().unwrap()[..], b"01234");
    drop(body);
    assert_eq!(pool.idle_count(&authority), 0);
    // `connection: close`: read to the end, still not kept.
    let (_, body) = post(&pool, &s.uri, "2").await.unwrap();
    assert_eq!(collect(body).await.unwrap(), b"ok");
    assert_eq!(pool.idle_count(&authority), 0);
    let (_, body) = post(&pool, &s.uri, "3").await.unwrap();
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    assert_eq!(pool.idle_count(&authority), 1);
    let conns: Vec<usize> = s.seen.lock().unwrap().iter().map(|(c, _)| *c).collect();
    assert_eq!(conns, [0, 1, 2]);
}

#[tokio::test]
async fn a_stream_dropped_at_its_last_event_keeps_its_connection() {
    // An SSE relay stops at `data: [DONE]`; the terminating chunk came in the same read.
    let sse: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
        10\r\ndata: {\"a\": 1}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
    let s = server(vec![Reply::Send(sse), Reply::Send(OK_HELLO)]).await;
    let pool = Pool::default();
    let (_, mut body) = post(&pool, &s.uri, "{}").await.unwrap();
    assert_eq!(
        &body.next().await.unwrap().unwrap()[..],
        b"data: {\"a\": 1}\n\n"
    );
    drop(body);
    assert_eq!(pool.idle_count(&authority(&s.uri)), 1);
    let (_, body) = post(&pool, &s.uri, "{}").await.unwrap();
    assert_eq!(collect(body).await.unwrap(), b"\"hello\"");
    let conns: Vec<usize> = s.seen.lock().unwrap().iter().map(|(c, _)| *c).collect();
    assert_eq!(conns, [0, 0]);
}

#[tokio::test]
async fn an_answer_before_the_whole_body_was_sent_is_taken() {
    // The server answers after the head and then neither reads nor closes: a client that
    // wrote the whole 4 MiB first would wait until its timeout.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            sock.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        sock.write_all(b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 9\r\n\r\ntoo large")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    let pool = Pool::default();
    let uri: Uri = format!("{base}/v1/chat/completions").parse().unwrap();
    let exchange = send(
        &pool,
        Outgoing {
            method: &Method::POST,
            uri: &uri,
            fields: std::iter::empty(),
            body: Bytes::from(vec![b'x'; 4 << 20]),
            addrs: None,
        },
        Duration::from_secs(2),
    );
    let (head, body) = tokio::time::timeout(Duration::from_secs(2), exchange)
        .await
        .expect("answered before the body was sent")
        .unwrap();
    assert_eq!(head.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(!head.keep_alive);
    assert_eq!(collect(body).await.unwrap(), b"too large");
    assert_eq!(pool.idle_count(&authority(&base)), 0);
}

#[tokio::test]
async fn interim_answers_are_skipped_and_a_close_delimited_body_is_read_whole() {
    let s = server(vec![Reply::SendClose(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\n\r\noverloaded",
    )])
    .await;
    let pool = Pool::default();
    let (head, body) = post(&pool, &s.uri, "{}").await.unwrap();
    assert_eq!(head.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(head.headers["retry-after"], "1");
    assert_eq!(collect(body).await.unwrap(), b"overloaded");
}

#[tokio::test]
async fn a_body_cut_short_and_a_head_never_finished_are_errors() {
    let s = server(vec![Reply::SendClose(
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n01234",
    )])
    .await;
    let pool = Pool::default();
    let (_, body) = post(&pool, &s.uri, "{}").await.unwrap();
    assert_eq!(collect(body).await.unwrap_err(), BodyError::Incomplete);
    let s = server(vec![Reply::SendClose(b"HTTP/1.1 200 OK\r\ncontent-")]).await;
    let e = post(&pool, &s.uri, "{}").await.unwrap_err();
    assert!(matches!(e, ExchangeError::Closed), "{e:?}");
    let s = server(vec![Reply::SendClose(b"hello there\r\n\r\n")]).await;
    let e = post(&pool, &s.uri, "{}").await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "malformed HTTP response head: not an HTTP/1.x status line and headers"
    );
}

#[tokio::test]
async fn a_refused_connection_names_its_cause() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = post(&Pool::default(), &format!("http://127.0.0.1:{port}"), "{}")
        .await
        .unwrap_err();
    assert!(matches!(e, ExchangeError::Connect(_)), "{e:?}");
    assert!(e.to_string().to_lowercase().contains("refused"), "{e}");
}

/// A loopback address that never completes a handshake: a listener whose accept queue is
/// full drops new SYNs (Linux `tcp_conn_request`), so a connect to it hangs. Returns the
/// address and what must stay alive for it to keep hanging.
async fn address_that_drops_syns() -> (
    std::net::SocketAddr,
    Vec<tokio::net::TcpStream>,
    TcpListener,
) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    // Fill the queue (its length is the backlog + 1) without accepting.
    let mut queued = Vec::new();
    while let Ok(Ok(s)) = tokio::time::timeout(
        Duration::from_millis(200),
        tokio::net::TcpStream::connect(addr),
    )
    .await
    {
        queued.push(s);
        assert!(queued.len() < 16, "the accept queue never filled");
    }
    (addr, queued, listener)
}

#[tokio::test]
async fn an_address_that_hangs_gets_only_its_share_of_the_connect_limit() {
    let (hanging, _queued, _full) = address_that_drops_syns().await;
    let good = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let good_addr = good.local_addr().unwrap();
    let started = tokio::time::Instant::now();
    let limit = Duration::from_millis(1200);
    let conn = exchange::connect_in_turn(&[hanging, good_addr], started + limit)
        .await
        .expect("the second address answers");
    let took = started.elapsed();
    assert_eq!(conn.peer_addr().unwrap(), good_addr);
    // The first address had half the limit (600 ms), then the second connected at once.
    assert!(
        took >= Duration::from_millis(550) && took < Duration::from_millis(1100),
        "{took:?}"
    );
    // Alone, the hanging address uses up the whole limit and reports a timeout.
    let started = tokio::time::Instant::now();
    let err = exchange::connect_in_turn(&[hanging], started + Duration::from_millis(300))
        .await
        .expect_err("nothing answers");
    assert!(
        matches!(&err, ExchangeError::Connect(e) if e.kind() == std::io::ErrorKind::TimedOut),
        "{err:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(290));
}
