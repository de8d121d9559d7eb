//! The request pipeline: every inference request crosses these stages, in this order.
//!
//! 1. **authenticate**: credential header → identity ([`crate::auth`]); 401 otherwise.
//! 2. **parse once**: `model`, `stream`, `stream_options`, `timeout` read from the top level;
//!    everything else stays raw JSON ([`crate::request`]); 400 on malformed bodies.
//! 3. **admit**: (governance, a later stage) model access, budgets and limits.
//! 4. **route**: model group → deployment ([`tollgate_router`]); 404 `model_not_found`.
//! 5. **build the upstream body**: `model` rewritten, gateway-only fields removed, deployment
//!    defaults added, stream usage requested.
//! 6. **send and relay**: bytes pass through; a copy is scanned for usage
//!    ([`crate::relay`]); upstream errors keep their status and body; unreachable → 502,
//!    timeouts → 504.
//! 7. **settle**: one [`CallRecord`] per call goes to the [`crate::relay::CallSink`], off the
//!    client's critical path.
//!
//! Everything up to step 6 is the gateway's overhead: no lock is held across an await, nothing
//! blocks, and nothing waits on a write.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use tollgate_protocol::ErrorEnvelope;
use tollgate_protocol::usage::openai_response_usage;
use tollgate_router::RouteError;

use crate::errors::GatewayError;
use crate::headers::CallHeaders;
use crate::mock_provider::{self, MockAnswer};
use crate::relay::CallRecord;
use crate::relay::stream::StreamRelay;
use crate::relay::unary::{MAX_ERROR_BODY, relay_body};
use crate::request::{Endpoint, ParsedRequest};
use crate::state::AppState;

/// Handles one inference request end to end.
pub async fn handle(
    state: Arc<AppState>,
    endpoint: Endpoint,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let call_id = uuid::Uuid::new_v4().to_string();
    let mut ids = Ids {
        call_id: &call_id,
        model_id: None,
        model_group: None,
    };
    let mut resp = match run(&state, endpoint, &headers, &body, &mut ids, started).await {
        Ok(r) => r,
        Err(e) => e.into_response_in(endpoint.dialect()),
    };
    CallHeaders {
        call_id: ids.call_id,
        model_id: ids.model_id.as_deref(),
        model_group: ids.model_group.as_deref(),
    }
    .write(resp.headers_mut());
    resp
}

struct Ids<'a> {
    call_id: &'a str,
    model_id: Option<String>,
    model_group: Option<String>,
}

async fn run(
    state: &Arc<AppState>,
    endpoint: Endpoint,
    headers: &HeaderMap,
    body: &Bytes,
    ids: &mut Ids<'_>,
    started: Instant,
) -> Result<Response, GatewayError> {
    // 1. authenticate
    let _identity = state
        .auth
        .authenticate(headers)
        .map_err(|e| GatewayError::from(e.envelope()))?;

    // 2. parse once
    let req = ParsedRequest::parse(body, endpoint)?;

    // 3. admit: governance (virtual keys, budgets, limits) plugs in here.

    // 4. route
    let route = state
        .router
        .route(&req.model)
        .map_err(|e| route_error(state, e))?;
    let dep = &route.deployment.deployment;
    ids.model_id = Some(dep.id.clone());
    ids.model_group = Some(route.group.name.clone());
    let timeout_override = req.timeout_s.or_else(|| {
        headers
            .get("x-litellm-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(|s| s.trim().parse().ok())
    });
    let timeouts = dep.timeouts.for_request(timeout_override);
    let mut record = CallRecord {
        call_id: ids.call_id.to_owned(),
        call_type: endpoint.call_type(),
        model_group: req.model.clone(),
        deployment_id: dep.id.clone(),
        upstream_model: route.upstream_model.to_string(),
        stream: req.stream,
        status: 200,
        usage: None,
        client_disconnected: false,
        upstream_failed: false,
        started,
        first_byte: None,
        ended: started,
    };

    // 5 + 6, in process: the mock provider.
    if let Some(mock) = &dep.mock {
        return Ok(
            match mock_provider::answer(endpoint, &req, &route.upstream_model, mock, ids.call_id)
                .await
            {
                MockAnswer::Body(b) => {
                    record.usage = openai_response_usage(&b);
                    finish(state, record);
                    json_response(StatusCode::OK, b)
                }
                MockAnswer::Stream(s) => sse_response(StreamRelay::new(
                    s,
                    timeouts.idle,
                    !req.include_usage,
                    record,
                    Arc::clone(&state.sink),
                )),
            },
        );
    }

    // 5. build the upstream body
    let mut out = Vec::new();
    req.upstream_body(
        &route.upstream_model,
        &dep.defaults,
        dep.provider.unsupported_fields,
        true,
        &mut out,
    );

    // 6. send and relay
    let upstream = match state
        .client
        .post_json(dep, endpoint.upstream_path(), Bytes::from(out), timeouts)
        .await
    {
        Ok(r) => r,
        Err(e) => {
            let err = GatewayError::from(&e);
            tracing::warn!(deployment = %dep.id, error = %e, "upstream call failed");
            record.status = err.envelope.status;
            finish(state, record);
            return Err(err);
        }
    };
    let status = upstream.status;
    if req.stream && status.is_success() && is_event_stream(&upstream.headers) {
        let up_headers = upstream.headers.clone();
        let relay = StreamRelay::new(
            Box::pin(upstream.into_stream()),
            timeouts.idle,
            !req.include_usage,
            record,
            Arc::clone(&state.sink),
        );
        let mut resp = sse_response(relay);
        crate::headers::forward_upstream(&up_headers, resp.headers_mut());
        return Ok(resp);
    }
    let up_headers = upstream.headers.clone();
    let limit = if status.is_success() {
        dep.max_response_bytes
    } else {
        MAX_ERROR_BODY
    };
    let bytes = match upstream.read_body(limit).await {
        Ok(b) => b,
        Err(e) => {
            let err = GatewayError::from(&e);
            tracing::warn!(deployment = %dep.id, error = %e, "upstream response failed");
            record.status = err.envelope.status;
            finish(state, record);
            return Err(err);
        }
    };
    record.status = status.as_u16();
    if status.is_success() {
        record.usage = openai_response_usage(&bytes);
    } else {
        tracing::debug!(deployment = %dep.id, status = status.as_u16(), "upstream returned an error");
    }
    finish(state, record);
    Ok(relay_body(status, &up_headers, bytes))
}

fn finish(state: &AppState, mut record: CallRecord) {
    record.ended = Instant::now();
    if record.first_byte.is_none() {
        record.first_byte = Some(record.ended);
    }
    state.sink.record(record);
}

/// 404 for an unknown model (OpenAI's status and code; the SDKs raise `NotFoundError`), naming
/// the model and the models the caller may use.
fn route_error(state: &AppState, e: RouteError) -> GatewayError {
    match e {
        RouteError::ModelNotFound(model) => {
            let available: Vec<&str> = state.router.public_names().collect();
            let list = if available.is_empty() {
                "none are configured".to_owned()
            } else {
                available.join(", ")
            };
            ErrorEnvelope::new(
                404,
                "invalid_request_error",
                format!(
                    "The model `{model}` does not exist or you do not have access to it. Models available: {list}."
                ),
            )
            .with_param("model")
            .with_code("model_not_found")
            .into()
        }
        RouteError::NoDeployments(model) => {
            let mut e: GatewayError = ErrorEnvelope::new(
                429,
                "rate_limit_error",
                format!("No deployments available for selected model={model}."),
            )
            .into();
            e.headers
                .push((header::RETRY_AFTER, HeaderValue::from_static("1")));
            e
        }
    }
}

fn is_event_stream(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn sse_response(relay: StreamRelay) -> Response {
    let mut r = Response::new(Body::from_stream(relay));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}
