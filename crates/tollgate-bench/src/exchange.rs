//! One request/response exchange on a worker's connection, timed.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;

use crate::endpoint::Endpoint;
use crate::sse::SseScanner;
use crate::workload::RequestTemplate;

/// Timings of a completed exchange (any status).
#[derive(Debug, Clone)]
pub struct Exchange {
    /// HTTP status code.
    pub status: u16,
    /// Time from send to response headers.
    pub ttfb: Duration,
    /// Time from send to the end of the body.
    pub total: Duration,
    /// Response body size in bytes.
    pub body_bytes: u64,
    /// For streams: time from send to the first complete SSE data event.
    pub first_event: Option<Duration>,
    /// For streams: gaps between consecutive SSE data events.
    pub event_gaps: Vec<Duration>,
}

/// Why an exchange failed before a complete response was read.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The request could not be built (bad path or header).
    #[error("request: {0}")]
    Build(#[from] http::Error),
    /// Connection or protocol error.
    #[error("http: {0}")]
    Http(#[from] hyper::Error),
}

/// Sends `t` on `sender` and reads the whole response. With `stream` the body
/// is scanned for SSE events to time the first one and the gaps between them.
pub async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    endpoint: &Endpoint,
    t: &RequestTemplate,
    stream: bool,
) -> Result<Exchange, ExchangeError> {
    let mut builder = Request::builder()
        .method(t.method.clone())
        .uri(format!("{}{}", endpoint.prefix, t.path))
        .header(http::header::HOST, endpoint.authority.as_str());
    if let Some(h) = builder.headers_mut() {
        h.extend(t.headers.clone());
    }
    let req = builder.body(Full::new(t.body.clone()))?;
    let start = Instant::now();
    sender.ready().await?;
    let resp = sender.send_request(req).await?;
    let ttfb = start.elapsed();
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut body_bytes = 0u64;
    let mut scanner = stream.then(SseScanner::new);
    let mut first_event = None;
    let mut last_event: Option<Instant> = None;
    let mut event_gaps = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame?;
        if let Some(data) = frame.data_ref() {
            body_bytes += data.len() as u64;
            if let Some(sc) = scanner.as_mut() {
                let events = sc.feed(data);
                if events > 0 {
                    let now = Instant::now();
                    if first_event.is_none() {
                        first_event = Some(now - start);
                    }
                    // Events delivered in one chunk arrived together: one gap for the
                    // chunk, zero gaps for the rest.
                    if let Some(prev) = last_event {
                        event_gaps.push(now - prev);
                    }
                    event_gaps.extend(std::iter::repeat_n(Duration::ZERO, events - 1));
                    last_event = Some(now);
                }
            }
        }
    }
    Ok(Exchange {
        status,
        ttfb,
        total: start.elapsed(),
        body_bytes,
        first_event,
        event_gaps,
    })
}
