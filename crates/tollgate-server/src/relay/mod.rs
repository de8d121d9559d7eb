//! Relaying the upstream answer to the client, and reporting how the call went.
//!
//! - [`unary`]: non-streamed answers, relayed as bytes (status and body kept; errors never
//!   turned into 2xx or emptied).
//! - [`first_event`]: a 2xx stream read up to its first event with content before the
//!   client's head, so an upstream that reports an error there fails the attempt (retries,
//!   fallbacks, an HTTP error); [`preamble`] tells the content-free events before it.
//! - [`stream`]: SSE relayed event by event as it arrives (never buffered whole), with usage
//!   captured from a copy of each event.
//! - [`CallRecord`] / [`CallSink`]: what the settle stage delivers exactly once per attempt
//!   (the pipeline's guard, or the stream relay at the stream's end): [`LogSink`] logs it;
//!   with governance, [`crate::gate::sink::GovernedSink`] bills it and returns the
//!   [`Settled`] figures for the answer's headers.

pub mod first_event;
pub mod handlers;
pub mod preamble;
pub mod responses_passthrough;
pub mod restamp;
pub mod stream;
pub mod unary;

use std::time::Instant;

use axum::body::Body;
use axum::response::Response;
use chrono::{DateTime, Utc};
use tollgate_governance::runtime::Charge;
use tollgate_protocol::Usage;

/// Header slots a relayed answer is given up front: content type, the forwarded rate-limit
/// and request-id headers, the `x-litellm-*` ids and attempt counts, spend and limit headers
/// (~10–20). An empty map grows two or three times while they are added, rehashing each time.
const RESPONSE_HEADER_CAPACITY: usize = 24;

/// An empty-headed 200 response with `body` and room for the gateway's headers.
pub fn new_response(body: Body) -> Response {
    let mut r = Response::new(body);
    *r.headers_mut() = http::HeaderMap::with_capacity(RESPONSE_HEADER_CAPACITY);
    r
}

/// How one upstream call ended. Delivered exactly once per call to the [`CallSink`].
#[derive(Debug)]
pub struct CallRecord {
    /// `x-litellm-call-id`.
    pub call_id: String,
    /// LiteLLM call type (`acompletion`, `aembedding`, ...).
    pub call_type: &'static str,
    /// Model group the client asked for.
    pub model_group: String,
    /// Deployment id.
    pub deployment_id: String,
    /// Upstream model id sent.
    pub upstream_model: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// HTTP status returned to the client.
    pub status: u16,
    /// Usage reported by the upstream (final cumulative value), if any.
    pub usage: Option<Usage>,
    /// The client went away before the answer was complete.
    pub client_disconnected: bool,
    /// The upstream failed after the response started (mid-stream error, reset, idle timeout).
    pub upstream_failed: bool,
    /// When the request arrived.
    pub started: Instant,
    /// When the first byte of the answer was ready for the client.
    pub first_byte: Option<Instant>,
    /// When the call ended.
    pub ended: Instant,
    /// Wall-clock time of `started` (spend logs).
    pub started_at: DateTime<Utc>,
    /// SSE events relayed to the client (content or not; the billed output of a stream cut
    /// off before its usage is counted from its content, [`Self::unreported`]).
    pub events_out: u64,
    /// The admitted attempt to settle (governance on).
    /// Boxed: the record moves through every stage of the attempt, and the spend-log row
    /// inside the charge is most of its size.
    pub charge: Option<Box<Charge>>,
    /// The response id the client saw (`chatcmpl-…`, `msg_…`, `resp_…`: the upstream's, or a
    /// translated answer's own): the spend-log `request_id`, as LiteLLM keys its rows
    /// (litellm-surface §6.3), so `/spend/logs?request_id=<id in the answer>` finds the row.
    pub response_id: Option<String>,
    /// What settlement counts tokens from when the usage leaves them out (governed calls).
    pub unreported: crate::gate::unreported::Unreported,
}

/// The response id in a JSON answer or stream event: top-level `id`, else `message.id`
/// (Anthropic `message_start`) or `response.id` (Responses events). Other members are
/// skipped without being built.
pub fn response_id(json: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Doc {
        id: Option<String>,
        message: Option<Id>,
        response: Option<Id>,
    }
    let d: Doc = serde_json::from_slice(json).ok()?;
    d.id.or(d.message.and_then(|m| m.id))
        .or(d.response.and_then(|r| r.id))
        .filter(|s| !s.is_empty())
}

/// What settlement reports back for the response headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// `x-litellm-response-cost`, USD.
    pub cost_usd: f64,
    /// `x-litellm-key-spend` after this call, USD (virtual keys).
    pub key_spend: Option<f64>,
    /// Remaining limits counting the tokens actually used (`x-ratelimit-*` headers).
    pub rate_limits: Vec<tollgate_governance::admission::RateLimitStatus>,
}

/// Receives every finished call. Must not block: implementations queue work.
pub trait CallSink: Send + Sync + std::fmt::Debug {
    /// Called once per call, from the request's task (or the stream's drop). Returns the
    /// settlement when the call was governed.
    fn record(&self, record: CallRecord) -> Option<Settled>;
}

/// The default sink: one debug log line per call (no secrets: ids and counts only).
#[derive(Debug, Default)]
pub struct LogSink;

impl CallSink for LogSink {
    fn record(&self, r: CallRecord) -> Option<Settled> {
        log_call(&r);
        None
    }
}

/// One debug line per finished call: ids and counts only, never a key or a body.
pub fn log_call(r: &CallRecord) {
    tracing::debug!(
        call_id = %r.call_id,
        call_type = r.call_type,
        model_group = %r.model_group,
        deployment = %r.deployment_id,
        status = r.status,
        stream = r.stream,
        prompt_tokens = r.usage.map(|u| u.prompt_tokens),
        completion_tokens = r.usage.map(|u| u.completion_tokens),
        client_disconnected = r.client_disconnected,
        upstream_failed = r.upstream_failed,
        duration_ms = r.ended.duration_since(r.started).as_secs_f64() * 1e3,
        "call finished"
    );
}

#[cfg(test)]
mod tests {
    use super::response_id;

    #[test]
    fn response_ids_of_each_dialect() {
        assert_eq!(
            response_id(
                br#"{"choices":[{"message":{"tool_calls":[{"id":"call_1"}]}}],"id":"chatcmpl-9"}"#
            )
            .as_deref(),
            Some("chatcmpl-9")
        );
        assert_eq!(
            response_id(br#"{"type":"message_start","message":{"id":"msg_1","usage":{}}}"#)
                .as_deref(),
            Some("msg_1")
        );
        assert_eq!(
            response_id(br#"{"type":"response.created","response":{"id":"resp_1"}}"#).as_deref(),
            Some("resp_1")
        );
        assert_eq!(response_id(b"[DONE]"), None);
        assert_eq!(response_id(br#"{"id":""}"#), None);
    }
}
