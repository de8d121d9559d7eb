//! Request handling common to every route: path prefixes, recording, behaviour resolution,
//! failures on demand, fixture replay, then the route's generator.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::Request;
use hyper::body::Incoming;
use serde_json::Value;

use crate::behavior::Behavior;
use crate::body::{MockBody, split_at_offsets, split_every};
use crate::errors::{Dialect, error_body, openai_error_body};
use crate::observe::{Observation, RequestGuard, now_ms};
use crate::routes::{self, Ctx, Reply};
use crate::server::ConnKill;
use crate::state::State;

/// Route after stripping the `/d/{deployment}`, Azure `/openai/deployments/{d}` and `/v1` prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Health,
    Models,
    Model,
    ChatCompletions,
    Completions,
    Embeddings,
    Messages,
    CountTokens,
    Responses,
    Unknown,
}

impl Route {
    fn is_inference(self) -> bool {
        matches!(
            self,
            Route::ChatCompletions
                | Route::Completions
                | Route::Embeddings
                | Route::Messages
                | Route::Responses
                | Route::Unknown
        )
    }

    fn dialect(self) -> Dialect {
        match self {
            Route::Messages | Route::CountTokens => Dialect::Anthropic,
            _ => Dialect::OpenAi,
        }
    }
}

/// Result of splitting a request path into deployment and route.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ParsedPath<'a> {
    pub deployment: Option<&'a str>,
    /// Path after the prefixes, starting with `/` (e.g. `/chat/completions`).
    pub rest: &'a str,
}

/// Strip `/d/{deployment}` (or Azure `/openai/deployments/{deployment}`, or `/openai`) and `/v1`.
pub(crate) fn parse_path(path: &str) -> ParsedPath<'_> {
    let mut deployment = None;
    let mut rest = path;
    let take_segment = |s: &'static str, p: &'_ str| -> Option<(usize, usize)> {
        let after = p.strip_prefix(s)?;
        let end = after.find('/').unwrap_or(after.len());
        (end > 0).then_some((s.len(), s.len() + end))
    };
    if let Some((a, b)) = take_segment("/d/", rest) {
        deployment = Some(&rest[a..b]);
        rest = &rest[b..];
    } else if let Some((a, b)) = take_segment("/openai/deployments/", rest) {
        deployment = Some(&rest[a..b]);
        rest = &rest[b..];
    } else if rest.starts_with("/openai/v1/") {
        rest = &rest["/openai".len()..];
    }
    if rest == "/v1" {
        rest = "/";
    } else if rest.starts_with("/v1/") {
        rest = &rest[3..];
    }
    if rest.is_empty() {
        rest = "/";
    }
    ParsedPath { deployment, rest }
}

fn route_of(method: &Method, rest: &str) -> Route {
    let rest = rest.trim_end_matches('/');
    match (method.as_str(), rest) {
        ("GET", "/health" | "/health/liveliness" | "/health/readiness" | "") => Route::Health,
        ("GET", "/models") => Route::Models,
        ("GET", r) if r.starts_with("/models/") => Route::Model,
        ("POST", "/chat/completions") => Route::ChatCompletions,
        ("POST", "/completions") => Route::Completions,
        ("POST", "/embeddings") => Route::Embeddings,
        ("POST", "/messages") => Route::Messages,
        ("POST", "/messages/count_tokens") => Route::CountTokens,
        ("POST", "/responses") => Route::Responses,
        _ => Route::Unknown,
    }
}

fn header_map(h: &HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in h {
        let v = String::from_utf8_lossy(v.as_bytes());
        out.entry(k.as_str().to_owned())
            .and_modify(|e| {
                e.push_str(", ");
                e.push_str(&v);
            })
            .or_insert_with(|| v.into_owned());
    }
    out
}

fn key_ok(h: &HeaderMap, key: &str) -> bool {
    let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok());
    get("authorization")
        .and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
        })
        .is_some_and(|k| k.trim() == key)
        || get("x-api-key").is_some_and(|k| k == key)
        || get("api-key").is_some_and(|k| k == key)
}

/// Everything needed to build the final response.
struct Out<'a> {
    seq: u64,
    dialect: Dialect,
    behavior: &'a Behavior,
}

impl Out<'_> {
    /// Generated JSON is written Python-style (`json_style: "python"`).
    fn python(&self) -> bool {
        self.behavior.json_style.as_deref() == Some(crate::python_json::PYTHON)
    }

    fn request_id(&self) -> String {
        format!("req_mock_{}", self.seq)
    }

    /// Build a response from body pieces. `streamed`: pieces are separate events (chunked, with
    /// the chunk delay between them); otherwise one piece with a content-length.
    fn build(
        &self,
        status: u16,
        content_type: &str,
        pieces: Vec<Bytes>,
        streamed: bool,
        fixture_splits: Option<&[usize]>,
        guard: RequestGuard,
    ) -> Response<MockBody> {
        let b = self.behavior;
        let body = if let Some(n) = b.split_every.filter(|n| *n > 0) {
            let all = Bytes::from(pieces.concat());
            let gap = Duration::from_millis(b.split_delay_ms.unwrap_or(1));
            MockBody::pieces(split_every(&all, n), gap, guard)
        } else if let Some(offsets) = fixture_splits {
            let all = Bytes::from(pieces.concat());
            let gap = Duration::from_millis(b.split_delay_ms.unwrap_or(5));
            MockBody::pieces(split_at_offsets(&all, offsets), gap, guard)
        } else if streamed {
            let gap = Duration::from_millis(b.chunk_delay_ms.unwrap_or(0));
            let body = MockBody::pieces(pieces, gap, guard);
            match b.first_event_delay_ms.filter(|ms| *ms > 0) {
                Some(ms) => body.first_piece_after(Duration::from_millis(ms)),
                None => body,
            }
        } else {
            let all = if pieces.len() == 1 {
                pieces.into_iter().next().unwrap_or_default()
            } else {
                Bytes::from(pieces.concat())
            };
            MockBody::full(all, guard)
        };
        let body = match b.drop_after_chunks {
            Some(n) => body.abort_after(n),
            None => body,
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        body.guard().response_started(status.as_u16());
        let mut resp = Response::new(body);
        *resp.status_mut() = status;
        let h = resp.headers_mut();
        if let Ok(v) = HeaderValue::from_str(content_type) {
            h.insert(header::CONTENT_TYPE, v);
        }
        if content_type.starts_with("text/event-stream") {
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        }
        if let Ok(v) = HeaderValue::from_str(&self.request_id()) {
            let name = match self.dialect {
                Dialect::OpenAi => "x-request-id",
                Dialect::Anthropic => "request-id",
            };
            h.insert(name, v);
        }
        h.insert("x-mock-seq", HeaderValue::from(self.seq));
        if status.as_u16() >= 400 {
            if let Some(ra) = b
                .retry_after
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                h.insert(header::RETRY_AFTER, ra);
            }
            if let Some(ms) = b.retry_after_ms {
                h.insert("retry-after-ms", HeaderValue::from(ms));
            }
        }
        if status.as_u16() == 429 {
            match self.dialect {
                Dialect::OpenAi => {
                    h.insert("x-ratelimit-limit-requests", HeaderValue::from_static("3"));
                    h.insert(
                        "x-ratelimit-remaining-requests",
                        HeaderValue::from_static("0"),
                    );
                    h.insert(
                        "x-ratelimit-reset-requests",
                        HeaderValue::from_static("20ms"),
                    );
                    h.insert(
                        "x-ratelimit-limit-tokens",
                        HeaderValue::from_static("10000"),
                    );
                    h.insert(
                        "x-ratelimit-remaining-tokens",
                        HeaderValue::from_static("0"),
                    );
                    h.insert("x-ratelimit-reset-tokens", HeaderValue::from_static("6s"));
                }
                Dialect::Anthropic => {
                    h.insert(
                        "anthropic-ratelimit-requests-limit",
                        HeaderValue::from_static("3"),
                    );
                    h.insert(
                        "anthropic-ratelimit-requests-remaining",
                        HeaderValue::from_static("0"),
                    );
                    h.insert(
                        "anthropic-ratelimit-requests-reset",
                        HeaderValue::from_static("2026-01-01T00:00:01Z"),
                    );
                    h.insert(
                        "anthropic-ratelimit-tokens-limit",
                        HeaderValue::from_static("10000"),
                    );
                    h.insert(
                        "anthropic-ratelimit-tokens-remaining",
                        HeaderValue::from_static("0"),
                    );
                    h.insert(
                        "anthropic-ratelimit-tokens-reset",
                        HeaderValue::from_static("2026-01-01T00:00:06Z"),
                    );
                }
            }
        }
        if let Some(extra) = &b.headers {
            for (k, v) in extra {
                if let (Ok(k), Ok(v)) = (
                    http::HeaderName::from_bytes(k.as_bytes()),
                    HeaderValue::from_str(v),
                ) {
                    h.insert(k, v);
                }
            }
        }
        resp
    }

    fn json(&self, status: u16, v: &Value, guard: RequestGuard) -> Response<MockBody> {
        let bytes = if self.python() {
            Bytes::from(crate::python_json::to_python(v))
        } else {
            Bytes::from(serde_json::to_vec(v).unwrap_or_default())
        };
        self.build(status, "application/json", vec![bytes], false, None, guard)
    }

    fn error(&self, status: u16, model: &str, guard: RequestGuard) -> Response<MockBody> {
        let body = error_body(self.dialect, status, model, &self.request_id());
        self.json(status, &body, guard)
    }
}

/// Cut an SSE body after each event terminator (`\n\n` or `\r\n\r\n`); the pieces rejoin to
/// the original bytes.
pub(crate) fn split_events(body: &Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < body.len() {
        let end = if body[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if body[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        };
        match end {
            Some(e) => {
                out.push(body.slice(start..e));
                start = e;
                i = e;
            }
            None => i += 1,
        }
    }
    if start < body.len() {
        out.push(body.slice(start..));
    }
    out
}

/// Handle one request (never fails: every problem becomes an HTTP response).
pub(crate) async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<MockBody> {
    let (parts, body) = req.into_parts();
    let received_at = now_ms();
    let raw = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let path = parts.uri.path();
    if path.starts_with("/__") {
        return crate::routes::admin::handle(&state, &parts, &raw);
    }
    let seq = state.next_seq();
    let parsed = parse_path(path);
    let route = route_of(&parts.method, parsed.rest);
    let dialect = route.dialect();
    let json: Option<Value> = if raw.is_empty() {
        None
    } else {
        serde_json::from_slice(&raw).ok()
    };
    let model: Option<&str> = json
        .as_ref()
        .and_then(|j| j.get("model"))
        .and_then(Value::as_str);

    let mut guard = if state.recorder.enabled() {
        state.recorder.begin(Observation {
            seq,
            received_at,
            method: parts.method.as_str().to_owned(),
            path: path.to_owned(),
            route: (route != Route::Unknown).then(|| parsed.rest.to_owned()),
            deployment: parsed.deployment.map(str::to_owned),
            query: parts.uri.query().map(str::to_owned),
            headers: header_map(&parts.headers),
            body: match &json {
                Some(j) => j.clone(),
                None if raw.is_empty() => Value::Null,
                None => Value::String(String::from_utf8_lossy(&raw).into_owned()),
            },
            model: model.map(str::to_owned),
            status: None,
            bytes_sent: 0,
            response_started_at: None,
            finished_at: None,
            client_disconnected: false,
            client_disconnected_at: None,
            dropped_by_mock: false,
        })
    } else {
        RequestGuard::disabled()
    };

    let from_model = model
        .map(|m| Behavior::from_model(m, dialect == Dialect::Anthropic, || state.flaky_count(m)))
        .unwrap_or_default();
    let scripted = state
        .scripts
        .next(parsed.deployment, model)
        .unwrap_or_default();
    let behavior = from_model
        .overlay(scripted)
        .overlay(Behavior::from_headers(&parts.headers));
    let out = Out {
        seq,
        dialect,
        behavior: &behavior,
    };
    let model_name = model.unwrap_or("");

    if let Some(key) = state.config.require_key.as_deref()
        && !key_ok(&parts.headers, key)
    {
        return out.error(401, model_name, guard);
    }
    if behavior.drop_connection == Some(true) {
        guard.dropped_by_mock();
        if let Some(k) = parts.extensions.get::<ConnKill>() {
            k.0.notify_one();
        }
        std::future::pending::<()>().await;
    }
    if behavior.hang == Some(true) {
        std::future::pending::<()>().await;
    }
    let base_delay = if route.is_inference() {
        state.config.delay_ms
    } else {
        0
    };
    let delay = behavior.delay_ms.unwrap_or(base_delay) + behavior.first_byte_delay_ms.unwrap_or(0);
    if delay > 0 {
        crate::timer::sleep(Duration::from_millis(delay)).await;
    }

    if let Some(body) = &behavior.body {
        return out.json(behavior.status.unwrap_or(200), body, guard);
    }
    if let Some(status) = behavior.status.filter(|s| *s >= 400) {
        return out.error(status, model_name, guard);
    }
    if let Some(name) = behavior.fixture.as_deref() {
        return match state.fixtures.get(name) {
            // With a chunk delay (and no explicit split), an SSE fixture is sent event by event
            // (cut after each blank line) with that pause between events.
            Some(fx)
                if behavior.chunk_delay_ms.is_some() && fx.content_type == "text/event-stream" =>
            {
                out.build(
                    fx.status,
                    fx.content_type,
                    split_events(&fx.bytes),
                    true,
                    None,
                    guard,
                )
            }
            Some(fx) => out.build(
                fx.status,
                fx.content_type,
                vec![fx.bytes.clone()],
                false,
                fx.splits.as_deref(),
                guard,
            ),
            None => {
                let msg = format!("tollgate-mock: no fixture named '{name}' is loaded");
                let body = match dialect {
                    Dialect::OpenAi => openai_error_body(
                        &msg,
                        "invalid_request_error",
                        None,
                        Some("mock_fixture_not_found"),
                    ),
                    Dialect::Anthropic => crate::errors::anthropic_error_body(
                        "not_found_error",
                        &msg,
                        &out.request_id(),
                    ),
                };
                out.json(404, &body, guard)
            }
        };
    }

    if route.is_inference()
        && behavior
            .reject_internal_fields
            .unwrap_or(state.config.reject_internal_fields)
        && let Some(j) = &json
    {
        let leaked = crate::leak::leaked_fields(j);
        if !leaked.is_empty() {
            let msg = format!(
                "tollgate-mock: gateway-internal field(s) leaked upstream: {}",
                leaked.join(", ")
            );
            let body = match dialect {
                Dialect::OpenAi => openai_error_body(
                    &msg,
                    "invalid_request_error",
                    leaked.first().copied(),
                    Some("leaked_internal_field"),
                ),
                Dialect::Anthropic => crate::errors::anthropic_error_body(
                    "invalid_request_error",
                    &msg,
                    &out.request_id(),
                ),
            };
            return out.json(400, &body, guard);
        }
    }
    let reply = match route {
        Route::Health => Reply::Json(200, serde_json::json!({"status": "ok"})),
        Route::Models => routes::models::list(&state.fixtures),
        Route::Model => routes::models::one(parsed.rest.trim_end_matches('/')),
        Route::Unknown => {
            let msg = format!("Invalid URL ({} {})", parts.method, path);
            Reply::Json(
                404,
                openai_error_body(&msg, "invalid_request_error", None, None),
            )
        }
        _ => match &json {
            None => Reply::Error(
                400,
                match dialect {
                    Dialect::OpenAi => openai_error_body(
                        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
                        "invalid_request_error",
                        None,
                        None,
                    ),
                    Dialect::Anthropic => crate::errors::anthropic_error_body(
                        "invalid_request_error",
                        "There was an issue with the format or content of your request: invalid JSON body.",
                        &out.request_id(),
                    ),
                },
            ),
            Some(j) => {
                let ctx = Ctx {
                    seq,
                    body: j,
                    model: model_name,
                    behavior: &behavior,
                    default_chunks: state.config.default_chunks,
                    request_id: out.request_id(),
                };
                match route {
                    Route::ChatCompletions => routes::chat::handle(&ctx),
                    Route::Completions => routes::completions::handle(&ctx),
                    Route::Embeddings => routes::embeddings::handle(&ctx),
                    Route::Messages => routes::messages::handle(&ctx),
                    Route::CountTokens => routes::messages::count_tokens(&ctx),
                    Route::Responses => routes::responses::handle(&ctx),
                    _ => Reply::Json(404, Value::Null),
                }
            }
        },
    };
    match reply {
        Reply::Json(status, v) | Reply::Error(status, v) => out.json(status, &v, guard),
        Reply::Sse(mut events) => {
            if out.python() {
                for e in &mut events {
                    *e = crate::python_json::event_to_python(e);
                }
            }
            out.build(
                200,
                "text/event-stream; charset=utf-8",
                events,
                true,
                None,
                guard,
            )
        }
    }
}

#[cfg(test)]
mod tests;
