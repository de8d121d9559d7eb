//! The upstream seam: an [`Upstream`] answers one [`UpstreamRequest`] with an
//! [`UpstreamResponse`] whose head has arrived. Two implementations: the pooled HTTP
//! [`UpstreamClient`], and answers made in process (the gateway's `mock/` provider), which
//! build their response with [`UpstreamResponse::local`] so that reading, streaming, limits and
//! relaying are the same code for both.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::Stream;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

use crate::client::{ResponseBody, UpstreamClient, UpstreamError, UpstreamResponse};
use crate::deployment::{Deployment, Timeouts};

/// One upstream request, ready to send.
#[derive(Debug)]
pub struct UpstreamRequest<'a> {
    /// The deployment called (its base URL, credentials and headers).
    pub deployment: &'a Deployment,
    /// Path under the deployment's base URL (`/chat/completions`, `/messages`, ...).
    pub path: &'a str,
    /// The JSON body.
    pub body: Bytes,
    /// Connect, first-byte, idle and total limits.
    pub timeouts: Timeouts,
    /// Per-request headers (e.g. the client's `anthropic-beta`), replacing the deployment's
    /// header of the same name.
    pub extra: &'a [(HeaderName, HeaderValue)],
    /// The gateway's call id (`x-litellm-call-id`): in-process answers derive their ids
    /// from it.
    pub call_id: &'a str,
}

/// Something that answers upstream requests.
pub trait Upstream: Sync {
    /// Sends `req` and waits for the response head; the body is read or streamed next.
    ///
    /// Errors: as [`UpstreamClient::post_json`] ([`UpstreamError::Connect`],
    /// [`UpstreamError::Timeout`], ...).
    fn send(
        &self,
        req: UpstreamRequest<'_>,
    ) -> impl Future<Output = Result<UpstreamResponse, UpstreamError>> + Send;
}

impl Upstream for UpstreamClient {
    fn send(
        &self,
        req: UpstreamRequest<'_>,
    ) -> impl Future<Output = Result<UpstreamResponse, UpstreamError>> + Send {
        self.post_json(req.deployment, req.path, req.body, req.timeouts, req.extra)
    }
}

/// The body of an answer made in process: a stream of chunks, and its length when known.
pub struct LocalBody {
    pub(crate) stream: Pin<Box<dyn Stream<Item = Result<Bytes, UpstreamError>> + Send>>,
    pub(crate) len: Option<u64>,
}

impl std::fmt::Debug for LocalBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBody")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl LocalBody {
    /// A whole body, delivered in one chunk.
    pub fn whole(body: Bytes) -> Self {
        Self {
            len: Some(body.len() as u64),
            stream: Box::pin(futures_util::stream::once(async move { Ok(body) })),
        }
    }

    /// A body produced chunk by chunk (an event stream).
    pub fn stream(s: Pin<Box<dyn Stream<Item = Result<Bytes, UpstreamError>> + Send>>) -> Self {
        Self {
            stream: s,
            len: None,
        }
    }
}

impl UpstreamResponse {
    /// A response made in process: `status`, `headers` and `body`, read under `timeouts`
    /// (the total limit counted from now) like a network answer.
    pub fn local(
        status: StatusCode,
        headers: HeaderMap,
        body: LocalBody,
        timeouts: Timeouts,
    ) -> Self {
        Self {
            status,
            headers,
            body: ResponseBody::Local(body),
            timeouts,
            started: tokio::time::Instant::now(),
        }
    }
}
