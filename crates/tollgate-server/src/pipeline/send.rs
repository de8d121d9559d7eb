//! The send stage: one upstream request through the [`Upstream`] seam (the HTTP client, or
//! the in-process mock), up to an answer ready to relay ([`Reply`]): a whole body, or a 2xx
//! event stream whose first event is not an error. Transport failures and errors in a
//! stream's first event come back with the failure class the router acts on.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};

use tollgate_providers::deployment::MockBehaviour;
use tollgate_providers::{Deployment, Upstream, UpstreamError, UpstreamRequest, UpstreamResponse};
use tollgate_router::FailureClass;

use crate::errors::{GatewayError, upstream_failure};
use crate::mock_provider::MockUpstream;
use crate::relay::first_event::{self, Peek, Primed};
use crate::relay::unary::MAX_ERROR_BODY;
use crate::state::AppState;

/// An upstream's answer, before relaying.
pub enum Reply {
    /// Complete body (any status).
    Full {
        /// Upstream status.
        status: StatusCode,
        /// Upstream headers.
        headers: HeaderMap,
        /// The whole body.
        body: Bytes,
    },
    /// A 2xx event stream whose first event is not an error.
    Stream {
        /// Upstream headers.
        headers: HeaderMap,
        /// The stream, read up to its first event with content.
        body: Primed,
    },
}

/// One upstream request, ready to send.
pub struct Outgoing<'a> {
    /// Path under the deployment's base URL.
    pub path: &'static str,
    /// Answer in process instead (a `mock/` deployment or the request's `mock_response`).
    pub mock: Option<&'a MockBehaviour>,
    /// The upstream body.
    pub body: Bytes,
    /// The attempt's limits.
    pub timeouts: tollgate_providers::Timeouts,
    /// Per-request headers (e.g. the client's `anthropic-beta`).
    pub extra: &'a [(HeaderName, HeaderValue)],
    /// `x-litellm-call-id`.
    pub call_id: &'a str,
    /// The client asked for a shorter timeout than the deployment's: a timeout then never
    /// counts against the deployment.
    pub client_shortened: bool,
    /// The client's dialect (an error in a stream's first event is answered in it).
    pub client_dialect: tollgate_protocol::Dialect,
    /// Credentials the client sent in the body ([`crate::clientside`]).
    pub client_upstream: Option<&'a crate::clientside::ClientUpstream>,
}

/// Sends `out` to `dep` (or to the in-process mock) and waits for the response head; reads a
/// whole body, or a stream up to its first event.
///
/// Errors: the client's error and the attempt's failure class (unreachable → 502, timeouts
/// → 504, an error event first in a stream).
pub async fn send(
    state: &AppState,
    dep: &Deployment,
    out: Outgoing<'_>,
) -> Result<Reply, (GatewayError, FailureClass)> {
    let peek = Peek {
        idle: out.timeouts.idle,
        client: out.client_dialect,
        client_shortened: out.client_shortened,
    };
    let mut own = None;
    let dep = crate::clientside::for_attempt(out.client_upstream, dep, &mut own)
        .await
        .map_err(|e| (e, FailureClass::BadRequest))?;
    let request = UpstreamRequest {
        deployment: dep,
        path: out.path,
        body: out.body,
        timeouts: out.timeouts,
        extra: out.extra,
        call_id: out.call_id,
    };
    let upstream = match out.mock {
        Some(behaviour) => MockUpstream { behaviour }.send(request).await,
        None => state.client.send(request).await,
    };
    let fail = |e: UpstreamError| upstream_failure(&e, &dep.id, out.client_shortened);
    let upstream = upstream.map_err(fail)?;
    read(upstream, dep, peek)
        .await
        .map_err(|e| e.unwrap_or_else(fail))
}

/// Reads the answer after its head. Errors: a stream's first event (`Ok`), or the body's
/// read error (`Err`).
async fn read(
    mut upstream: UpstreamResponse,
    dep: &Deployment,
    peek: Peek,
) -> Result<Reply, Result<(GatewayError, FailureClass), UpstreamError>> {
    let status = upstream.status;
    // The headers are moved out, not cloned: the body readers below do not need them.
    let headers = std::mem::take(&mut upstream.headers);
    if status.is_success() && is_event_stream(&headers) {
        // The first event decides: an error there fails the attempt before the head is sent.
        // Boxed: the peek's state stays out of the future of every request (streams only).
        let stream = Box::pin(upstream.into_stream());
        let body = Box::pin(first_event::peek(stream, &headers, peek))
            .await
            .map_err(Ok)?;
        return Ok(Reply::Stream { headers, body });
    }
    let limit = if status.is_success() {
        dep.max_response_bytes
    } else {
        MAX_ERROR_BODY
    };
    let body = upstream.read_body(limit).await.map_err(Err)?;
    if !status.is_success() {
        tracing::debug!(deployment = %dep.id, status = status.as_u16(), "upstream returned an error");
    }
    Ok(Reply::Full {
        status,
        headers,
        body,
    })
}

/// A numeric request or response header, if present and valid.
pub fn header_num<T: std::str::FromStr>(
    headers: &HeaderMap,
    name: impl http::header::AsHeaderName,
) -> Option<T> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
}

/// Client headers forwarded per request to Anthropic upstreams: `anthropic-beta`, and the
/// client's `anthropic-version` (replacing the deployment's default).
pub fn per_request_headers(
    headers: &HeaderMap,
    dep: &Deployment,
) -> Vec<(HeaderName, HeaderValue)> {
    if dep.provider.dialect != tollgate_providers::WireDialect::Anthropic {
        return Vec::new();
    }
    ["anthropic-version", "anthropic-beta"]
        .into_iter()
        .flat_map(|name| {
            headers
                .get_all(name)
                .iter()
                .map(move |v| (HeaderName::from_static(name), v.clone()))
        })
        .collect()
}

fn is_event_stream(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}
