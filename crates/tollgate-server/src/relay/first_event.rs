//! The first event with content of a 2xx stream decides whether the attempt succeeded.
//!
//! An upstream may answer `200 text/event-stream` and then report a failure as its first event
//! (OpenAI-compatible servers: `data: {"error": {...}}`, compact or Python-spaced; Anthropic:
//! `event: error` with `overloaded_error` / `api_error`; Responses: `response.failed` or
//! `error`), or right after events that carry nothing a client shows (an OpenAI role chunk,
//! Anthropic's `message_start` and `ping`: Anthropic's own overload errors arrive that way;
//! Responses' `response.created` / `response.in_progress`; see [`super::preamble`]). Before the
//! client's response head is committed, [`peek`] reads the stream up to its first event with
//! content, holding the comment-only and content-free events before it (at most
//! [`MAX_PREAMBLE_EVENTS`], and none that arrives after one idle limit, the deployment's
//! `stream_timeout`, from the head: such an event commits the stream). A healthy first content
//! event is handed to the relay untouched, with the held events, the framer, the idle timer and
//! the rest of the read ([`Primed`]): the held events and that event are relayed at once, in
//! order, so the client's first token comes when it would have. An error event fails the
//! attempt as a non-2xx answer would: it is classified ([`StreamError::class`]) so retries,
//! fallbacks and cooldowns apply, nothing was billed, and if nothing else succeeds the client
//! gets an HTTP error in its own dialect carrying the upstream's message
//! ([`StreamError::envelope`]). A read error, an upstream EOF or an idle gap before the first
//! content event fail the attempt the same way (502 / 504). LiteLLM's proxy does the same for
//! its own streams (`create_streaming_response` awaits the first chunk before the head and
//! answers an error there with its `code` as the status).
//!
//! The status of a reported error comes from its type or code: 429 for rate-limit and
//! overload types (Anthropic's `overloaded_error`, its HTTP 529 outside a stream, included: a
//! retryable failure that, in a group of several deployments, cools the deployment at once as
//! LiteLLM's default cooldown rule does for a 429; note LiteLLM's own exception mapping raises
//! it as an `InternalServerError`), a numeric `code` in 400–599 as given (vLLM), a known
//! client-error type its documented status (Anthropic API "Errors"; OpenAI "Error codes"), 500
//! otherwise. The client's error is the one an upstream HTTP error of that status and body
//! would give ([`tollgate_translate::errors::map_upstream_error`]): so a `code: 503` reaches an
//! OpenAI client as 503 and an Anthropic client as 529 `overloaded_error`, the status Anthropic
//! documents for a temporarily unavailable API (its API never answers 503).

use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::Poll;
use std::time::Duration;

use http::HeaderMap;
use memchr::memmem;
use serde::Deserialize;
use serde_json::Value;
use tokio::time::Sleep;
use tollgate_protocol::{Dialect, ErrorEnvelope, RawEvent, SseFramer};
use tollgate_providers::UpstreamError;
use tollgate_providers::client::TimeoutPhase;
use tollgate_router::FailureClass;

use super::handlers::data_payload;
use super::preamble::is_content_free;
use super::stream::{MAX_EVENT_BYTES, UpstreamBytes};
use crate::errors::GatewayError;
use crate::headers::forward_upstream;

/// Events held before the first event with content at most (comments and content-free
/// events); past that the stream is committed and relayed as it is.
pub const MAX_PREAMBLE_EVENTS: usize = 16;

/// An upstream stream ready for the relay: its first event with content read (and found
/// healthy) with the events held before it, the framer holding whatever arrived after it, and
/// the idle timer running since the last read.
pub struct Primed {
    pub(super) upstream: UpstreamBytes,
    pub(super) framer: SseFramer,
    pub(super) sleep: Pin<Box<Sleep>>,
    /// Comments and content-free events that came before `first`, relayed first.
    pub(super) preamble: Vec<RawEvent>,
    /// The event that committed the stream: the first with content, or the one past the hold's
    /// bounds (`None` only for a stream nothing was read from, [`Primed::unread`]).
    pub(super) first: Option<RawEvent>,
}

impl std::fmt::Debug for Primed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Primed")
            .field("preamble", &self.preamble.len())
            .field("first", &self.first.is_some())
            .finish_non_exhaustive()
    }
}

impl Primed {
    /// A stream nothing has been read from; its idle timer (`idle`, the gap allowed before the
    /// first read and between reads) starts now.
    pub fn unread(upstream: UpstreamBytes, idle: Duration) -> Self {
        Self {
            upstream,
            framer: SseFramer::new(MAX_EVENT_BYTES),
            sleep: Box::pin(tokio::time::sleep(idle)),
            preamble: Vec::new(),
            first: None,
        }
    }
}

/// The limits and dialect one [`peek`] runs under.
#[derive(Debug, Clone, Copy)]
pub struct Peek {
    /// Longest gap before the first read and between reads (the stream's idle limit).
    pub idle: Duration,
    /// The client's dialect, for the error it gets.
    pub client: Dialect,
    /// The limit is the client's own, shorter than the deployment's (a timeout then never
    /// counts against the deployment).
    pub client_shortened: bool,
}

/// Reads `upstream` up to its first event with content. `Ok`: the stream is healthy so far,
/// relay it.
/// `Err`: the attempt failed before anything reached the client; the error (in the client's
/// dialect, with the upstream's forwardable headers from `head`) and its class.
pub async fn peek(
    upstream: UpstreamBytes,
    head: &HeaderMap,
    p: Peek,
) -> Result<Primed, (GatewayError, FailureClass)> {
    let mut primed = Primed::unread(upstream, p.idle);
    // Content-free events are held until this instant at most (checked as events arrive, so
    // a silent upstream still meets the idle limit and fails the attempt).
    let hold_until = tokio::time::Instant::now() + p.idle;
    let mut holding = true;
    loop {
        match primed.framer.next_event() {
            Ok(Some(ev)) if holding && primed.preamble.len() < MAX_PREAMBLE_EVENTS && held(&ev) => {
                primed.preamble.push(ev);
                continue;
            }
            Ok(Some(ev)) => return decide(primed, ev, head, p),
            Ok(None) => {}
            Err(e) => return Err(broken(super::stream::unreadable_message(&e))),
        }
        let read = std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = primed.upstream.as_mut().poll_next(cx) {
                return Poll::Ready(Some(r));
            }
            primed.sleep.as_mut().poll(cx).map(|()| None)
        })
        .await;
        match read {
            Some(Some(Ok(chunk))) => {
                let now = tokio::time::Instant::now();
                primed.sleep.as_mut().reset(now + p.idle);
                primed.framer.push(&chunk);
                holding = now < hold_until;
            }
            Some(Some(Err(e))) => return Err(transport(&e, p.client_shortened)),
            Some(None) => {
                return match primed.framer.finish() {
                    Ok(Some(ev)) if has_data(&ev.raw) && !held(&ev) => decide(primed, ev, head, p),
                    _ => Err(broken(
                        "Upstream closed the stream before its first event with content".to_owned(),
                    )),
                };
            }
            None => {
                let e = UpstreamError::Timeout {
                    phase: TimeoutPhase::Idle,
                    limit_ms: p.idle.as_millis(),
                };
                return Err(transport(&e, p.client_shortened));
            }
        }
    }
}

#[expect(clippy::result_large_err, reason = "the failure path is cold")]
fn decide(
    mut primed: Primed,
    ev: RawEvent,
    head: &HeaderMap,
    p: Peek,
) -> Result<Primed, (GatewayError, FailureClass)> {
    let Some(err) = StreamError::from_event(&ev.raw) else {
        primed.first = Some(ev);
        return Ok(primed);
    };
    tracing::debug!(
        status = err.status,
        "upstream stream began with an error event"
    );
    let class = err.class();
    let mut e = GatewayError::from(err.envelope(p.client));
    let mut fwd = HeaderMap::new();
    forward_upstream(head, &mut fwd);
    e.headers
        .extend(fwd.into_iter().filter_map(|(k, v)| k.map(|k| (k, v))));
    Err((e, class))
}

/// A stream that broke before its first event: 502, a connection-class failure.
fn broken(message: String) -> (GatewayError, FailureClass) {
    let env = ErrorEnvelope::new(502, "server_error", message).with_code("upstream_stream_error");
    (GatewayError::from(env), FailureClass::Connection)
}

/// A read error or timeout before the first event, as the same failure before the head is.
fn transport(e: &UpstreamError, client_shortened: bool) -> (GatewayError, FailureClass) {
    let class = match e {
        UpstreamError::Timeout { .. } if client_shortened => FailureClass::ClientTimeout,
        UpstreamError::Timeout { .. } => FailureClass::Timeout,
        _ => FailureClass::Connection,
    };
    (GatewayError::from_upstream(e, client_shortened), class)
}

/// Whether the event has a `data:` line (comments and bare `event:` lines do not count).
fn has_data(raw: &[u8]) -> bool {
    line_with(raw, b"data:").is_some()
}

/// The first line of `raw` that starts with `prefix`, from just after it to the line's end
/// (`\n` or `\r`; a `\r\n` pair leaves an empty line between, which no prefix matches),
/// found by a vectorised search for each line end.
fn line_with<'a>(raw: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let mut rest = raw;
    loop {
        if let Some(v) = rest.strip_prefix(prefix) {
            return Some(&v[..memchr::memchr2(b'\n', b'\r', v).unwrap_or(v.len())]);
        }
        rest = &rest[memchr::memchr2(b'\n', b'\r', rest)? + 1..];
    }
}

/// Whether [`peek`] holds the event back: a comment-only event, or one that carries nothing a
/// client shows ([`is_content_free`]; an error event never is).
fn held(ev: &RawEvent) -> bool {
    // Content events are told by `is_content_free` alone (mostly a byte search).
    !has_data(&ev.raw) || (is_content_free(&ev.raw) && !is_error_event(&ev.raw))
}

/// The value of the event's `event:` line, `b""` without one.
pub(super) fn event_field(raw: &[u8]) -> &[u8] {
    line_with(raw, b"event:").map_or(b"", |v| v.strip_prefix(b" ").unwrap_or(v))
}

/// Whether one SSE event reports an upstream error, by its bytes alone: an `event: error` or
/// `event: response.failed` line (Anthropic, Responses, some OpenAI-compatible servers), or
/// data that is a JSON object with a top-level non-null `error` member (OpenAI-compatible
/// servers, whatever the JSON whitespace; see [`is_error_data`]).
pub fn is_error_event(raw: &[u8]) -> bool {
    if matches!(event_field(raw), b"error" | b"response.failed") {
        return true;
    }
    is_error_data(data_payload(raw))
}

/// Whether `data` (one event's `data:` payload) is a JSON object whose top-level `error`
/// member is set (not `null`): `{"error":{...}}`, `{"error": {...}}` (Python's `json.dumps`),
/// `{ "error" : "text", ...}` (TGI), or a chunk carrying `error` beside its other members
/// (OpenRouter). A byte search decides every event without the key `"error"`; only one that
/// has it is parsed to tell a top-level member from a nested one.
pub fn is_error_data(data: &[u8]) -> bool {
    let d = data.trim_ascii_start();
    if d.first() != Some(&b'{') {
        return false;
    }
    let after_brace = d[1..].trim_ascii_start();
    if let Some(after) = after_brace.strip_prefix(b"\"error\"") {
        let after = after.trim_ascii_start();
        if let Some(v) = after.strip_prefix(b":") {
            let v = v.trim_ascii_start();
            return !v.is_empty() && !v.starts_with(b"null");
        }
        return false;
    }
    // Built once: this runs on every chunk an OpenAI passthrough relays.
    static ERROR_KEY: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\"error\""));
    if ERROR_KEY.find(d).is_none() {
        return false;
    }
    #[derive(Deserialize)]
    struct Probe {
        error: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(d).is_ok_and(|p| p.error.is_some())
}

/// An error an upstream reported inside its stream, read from the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError {
    /// The HTTP status it stands for (see the module docs).
    pub status: u16,
    /// The upstream's error type (`rate_limit_error`, `server_error`, ...), if it gave one.
    pub kind: Option<String>,
    /// The upstream's error code (`rate_limit_exceeded`, `overloaded`, ...), if a string.
    pub code: Option<String>,
    /// The upstream's message.
    pub message: String,
    /// OpenAI `param`, if given.
    pub param: Option<String>,
}

impl StreamError {
    /// The error `raw` reports, or `None` when it is not an error event ([`is_error_event`]).
    /// Shapes read: OpenAI `{"error":{"message","type","code","param"}}` (a numeric `code`
    /// is taken as the status), TGI `{"error":"text","error_type"}`, Anthropic
    /// `{"type":"error","error":{"type","message"}}`, Responses `response.failed`
    /// (`response.error {code, message}`) and `error` (`{code, message, param}`).
    pub fn from_event(raw: &[u8]) -> Option<StreamError> {
        if !is_error_event(raw) {
            return None;
        }
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Doc {
            error: Option<Value>,
            error_type: Option<String>,
            response: Option<Value>,
            code: Option<Value>,
            message: Option<String>,
            param: Option<Value>,
        }
        let data = tollgate_protocol::sse::parse_event(raw)
            .map(|e| e.data.into_owned())
            .unwrap_or_default();
        let doc: Doc = serde_json::from_str(&data).unwrap_or_default();
        let inner = doc
            .error
            .as_ref()
            .filter(|e| e.is_object())
            .or_else(|| doc.response.as_ref().and_then(|r| r.get("error")))
            .filter(|e| e.is_object());
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let (kind, code, message, param) = match inner {
            Some(e) => (
                text(e.get("type")),
                e.get("code"),
                text(e.get("message")),
                text(e.get("param")),
            ),
            None => (
                doc.error_type.clone(),
                doc.code.as_ref(),
                text(doc.error.as_ref()).or_else(|| doc.message.clone()),
                text(doc.param.as_ref()),
            ),
        };
        let numeric = code
            .and_then(|c| {
                c.as_u64()
                    .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
            })
            .and_then(|n| u16::try_from(n).ok());
        let code = text(code).filter(|c| c.parse::<u16>().is_err());
        Some(StreamError {
            status: status_for(kind.as_deref(), code.as_deref(), numeric),
            kind,
            code,
            message: message
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "The upstream reported an error in its stream.".to_owned()),
            param,
        })
    }

    /// The failure class for the router (retries, fallbacks, cooldowns), as for an HTTP error
    /// with [`StreamError::status`]: [`FailureClass::from_upstream`].
    pub fn class(&self) -> FailureClass {
        let code = self.code.as_deref().or(self.kind.as_deref());
        FailureClass::from_upstream(self.status, code, &self.message)
    }

    /// The client's error: the upstream's message, type and code reshaped for `client` by
    /// [`tollgate_translate::errors::map_upstream_error`] with [`StreamError::status`]; a 429
    /// is typed `rate_limit_error` (code `overloaded` kept for an overload).
    pub fn envelope(&self, client: Dialect) -> ErrorEnvelope {
        let body = serde_json::json!({"error": {
            "message": self.message, "type": self.kind, "code": self.code, "param": self.param,
        }});
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mut env = tollgate_translate::errors::map_upstream_error(self.status, &bytes, client);
        if env.status == 429 {
            env.kind = "rate_limit_error".to_owned();
        }
        env
    }
}

/// The HTTP status an in-stream error stands for (module docs).
fn status_for(kind: Option<&str>, code: Option<&str>, numeric: Option<u16>) -> u16 {
    let words: Vec<String> = [kind, code]
        .into_iter()
        .flatten()
        .map(str::to_ascii_lowercase)
        .collect();
    let too_many = |w: &String| {
        w.contains("rate_limit")
            || w.contains("insufficient_quota")
            || w.contains("overload")
            // OpenAI's 429 bodies type a rate limit by what ran out
            || w == "requests"
            || w == "tokens"
    };
    if words.iter().any(too_many) {
        return 429;
    }
    if let Some(n) = numeric.filter(|n| (400..=599).contains(n)) {
        return if n == 529 { 429 } else { n };
    }
    for w in &words {
        let s = match w.as_str() {
            "invalid_request_error" | "context_length_exceeded" | "invalid_prompt" => 400,
            "authentication_error" | "invalid_api_key" => 401,
            "billing_error" => 402,
            "permission_error" | "permission_denied" => 403,
            "not_found_error" | "model_not_found" => 404,
            "request_too_large" => 413,
            "timeout_error" => 504,
            _ => continue,
        };
        return s;
    }
    500
}

#[cfg(test)]
#[path = "first_event_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "first_event_preamble_tests.rs"]
mod preamble_tests;
