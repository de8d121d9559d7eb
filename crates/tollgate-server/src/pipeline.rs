//! The request pipeline: every inference request crosses these stages, in this order.
//!
//! 1. **authenticate**: credential header → identity ([`crate::auth`]); 401 otherwise.
//! 2. **parse once**: `model`, `stream`, `stream_options`, `timeout` read from the top level;
//!    everything else stays raw JSON ([`crate::request`]); 400 on malformed bodies.
//! 3. **admit**: (governance, a later stage) model access, budgets and limits.
//! 4. **route**: model group → an attempt plan ([`tollgate_router`]: strategy, cooldowns,
//!    retries, fallbacks); 404 `model_not_found`. Steps 5–6 run once per attempt; a stream is
//!    retried or falls back only before its first byte reached the client.
//! 5. **plan and build the upstream body** ([`crate::plan`]): same dialect → the raw body with
//!    `model` rewritten, gateway-only fields removed, deployment defaults added and stream usage
//!    requested; different dialects → translated ([`tollgate_translate`]).
//! 6. **send and relay** ([`crate::relay`]): passthrough bytes go through unchanged (a copy
//!    is scanned for usage) or are translated event by event; upstream errors keep their
//!    status and are reshaped only when dialects differ; unreachable → 502, timeouts → 504.
//! 7. **settle**: one [`CallRecord`] per call goes to the [`crate::relay::CallSink`], off the
//!    client's critical path.
//!
//! Everything up to step 6 is the gateway's overhead: no lock is held across an await, nothing
//! blocks, and nothing waits on a write.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use serde_json::Value;
use tollgate_protocol::ErrorEnvelope;
use tollgate_protocol::usage::{anthropic_response_usage, openai_response_usage};
use tollgate_providers::Deployment;
use tollgate_providers::UpstreamError;
use tollgate_router::{FailureClass, Outcome, PlanEnd, RequestPolicy, RouteError};
use tollgate_translate::responses_to_chat::ResponseContext;
use tollgate_translate::{
    RequestOptions, TranslateError, anthropic_to_chat, chat_to_anthropic, completions_to_anthropic,
    responses_to_anthropic, responses_to_chat,
};

use crate::errors::GatewayError;
use crate::headers::{CallHeaders, forward_upstream};
use crate::mock_provider::{self, MockAnswer};
use crate::plan::{Pair, Passthrough, Plan, plan};
use crate::relay::CallRecord;
use crate::relay::handlers::{
    AnthropicPassthrough, EventHandler, OpenAiPassthrough, ResponsesPassthrough, Translated,
    responses_usage,
};
use crate::relay::stream::{StreamRelay, UpstreamBytes};
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

/// How the answer is relayed, once the request is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relay {
    /// Same dialect.
    Pass(Passthrough),
    /// Dialects differ.
    Translate(Pair),
}

/// An upstream's answer, before relaying.
enum Reply {
    /// Complete body (any status).
    Full {
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
    },
    /// A 2xx event stream.
    Stream {
        headers: HeaderMap,
        body: UpstreamBytes,
    },
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

    // 4. route: an attempt plan (strategy, cooldowns, retries, fallbacks)
    let policy = RequestPolicy {
        num_retries: req
            .body
            .typed_field::<u32>("num_retries", "a non-negative integer")
            .ok()
            .flatten()
            .or_else(|| header_num(headers, "x-litellm-num-retries")),
        fallbacks: req
            .body
            .typed_field::<Vec<String>>("fallbacks", "a list of model names")
            .ok()
            .flatten(),
        prompt_tokens: (body.len() / 4) as u64,
        stream: req.stream,
    };
    let mut attempts = state
        .router
        .plan(&req.model, policy)
        .map_err(|e| route_error(state, e))?;
    let timeout_override = req
        .timeout_s
        .or_else(|| header_num(headers, "x-litellm-timeout"));
    let mut last: Option<Result<Response, GatewayError>> = None;
    while let Some(attempt) = attempts.next_attempt(Instant::now()) {
        tokio::time::sleep_until(attempt.not_before.into()).await;
        let dep: &Deployment = &attempt.deployment.deployment;
        ids.model_id = Some(dep.id.clone());
        ids.model_group = Some(attempt.group.name.clone());
        let sent = Instant::now();
        let mut failure = None;
        let result = attempt_once(
            state,
            Call {
                endpoint,
                headers,
                body,
                req: &req,
                dep,
                upstream_model: &attempt.upstream_model,
                group: &attempt.group.name,
                timeout_override,
                call_id: ids.call_id,
                started,
            },
            &mut failure,
        )
        .await;
        let now = Instant::now();
        let outcome = match (&result, failure) {
            (_, Some((class, retry_after))) => Outcome::Failure { class, retry_after },
            // A gateway-side refusal (e.g. an untranslatable field): ends the plan.
            (Err(_), None) => Outcome::Failure {
                class: FailureClass::BadRequest,
                retry_after: None,
            },
            (Ok(_), None) => Outcome::Success {
                latency: now - sent,
                ttft: req.stream.then(|| now - sent),
                completion_tokens: 0,
            },
        };
        attempts.report(&attempt, outcome, now);
        last = Some(result);
    }
    let summary = attempts.summary();
    let mut result = match (last, summary.end) {
        (Some(r), _) => r,
        (None, end @ PlanEnd::NoDeployments { group, .. }) => Err(no_deployments(
            group,
            end.retry_after_header_secs().unwrap_or(1),
        )),
        (None, _) => Err(no_deployments(&req.model, 1)),
    };
    let counts = [
        ("x-litellm-attempted-retries", summary.attempted_retries),
        ("x-litellm-attempted-fallbacks", summary.attempted_fallbacks),
    ];
    for (name, n) in counts {
        let v = HeaderValue::from(n);
        match &mut result {
            Ok(r) => {
                r.headers_mut().insert(name, v);
            }
            Err(e) => e.headers.push((HeaderName::from_static(name), v)),
        }
    }
    result
}

/// One upstream attempt's inputs.
struct Call<'a> {
    endpoint: Endpoint,
    headers: &'a HeaderMap,
    body: &'a Bytes,
    req: &'a ParsedRequest<'a>,
    dep: &'a Deployment,
    upstream_model: &'a str,
    group: &'a str,
    timeout_override: Option<f64>,
    call_id: &'a str,
    started: Instant,
}

/// Plans, sends and relays one attempt. `failure` is set when the upstream failed (the
/// class decides retries, fallbacks and cooldowns); a response is returned either way.
async fn attempt_once(
    state: &Arc<AppState>,
    call: Call<'_>,
    failure: &mut Option<(FailureClass, Option<Duration>)>,
) -> Result<Response, GatewayError> {
    let Call {
        endpoint,
        headers,
        body,
        req,
        dep,
        upstream_model,
        group,
        timeout_override,
        call_id,
        started,
    } = call;
    let dialect = endpoint.dialect();
    let timeouts = dep.timeouts.for_request(timeout_override);
    let mut record = CallRecord {
        call_id: call_id.to_owned(),
        call_type: endpoint.call_type(),
        model_group: req.model.clone(),
        deployment_id: dep.id.clone(),
        upstream_model: upstream_model.to_owned(),
        stream: req.stream,
        status: 200,
        usage: None,
        client_disconnected: false,
        upstream_failed: false,
        started,
        first_byte: None,
        ended: started,
    };

    // 5. plan and build the upstream body
    let plan = plan(endpoint, dep).map_err(GatewayError::from)?;
    let created = unix_now();
    // Only Responses API answers carry a gateway-minted id.
    let response_id = if endpoint == Endpoint::Responses {
        format!("resp_{}", call_id.replace('-', ""))
    } else {
        String::new()
    };
    let mut client_request: Option<Value> = None;
    let mut history: Vec<Value> = Vec::new();
    let (path, upstream_body, relay) = match plan {
        Plan::LocalTokenCount => {
            let n = estimate_input_tokens(req);
            finish(state, record);
            return Ok(json_response(
                StatusCode::OK,
                Bytes::from(format!("{{\"input_tokens\":{n}}}")),
            ));
        }
        Plan::Passthrough { path, kind } => {
            let mut out = Vec::new();
            req.upstream_body(
                upstream_model,
                &dep.defaults,
                dep.provider.unsupported_fields,
                kind == Passthrough::OpenAi,
                &mut out,
            );
            (path, Bytes::from(out), Relay::Pass(kind))
        }
        Plan::Translate(pair) => {
            let value: Value = serde_json::from_slice(body).map_err(|e| {
                GatewayError::from(ErrorEnvelope::bad_request(format!("Invalid JSON: {e}")))
            })?;
            let opts = RequestOptions {
                upstream_model: Some(upstream_model.to_owned()),
                ..RequestOptions::default()
            };
            if let Some(prev) = value.get("previous_response_id").and_then(Value::as_str) {
                history = state
                    .responses
                    .get(prev)
                    .ok_or_else(|| previous_not_found(prev))?
                    .history;
            }
            let translated =
                translate_request(pair, &value, &opts, &history).map_err(translate_error)?;
            client_request = Some(value);
            (
                pair.upstream_path(),
                Bytes::from(with_defaults(translated, &dep.defaults).to_string()),
                Relay::Translate(pair),
            )
        }
    };

    // 6. send
    let extra = per_request_headers(headers, dep);
    let client_shortened = timeout_override
        .is_some_and(|t| Duration::from_secs_f64(t.max(0.0)) < dep.timeouts.first_byte);
    let outgoing = Outgoing {
        path,
        body: upstream_body,
        timeouts,
        extra: &extra,
        call_id,
        client_shortened,
    };
    let reply = match send(state, dep, outgoing).await {
        Ok(r) => r,
        Err((err, class)) => {
            *failure = Some((class, None));
            record.status = err.envelope.status;
            finish(state, record);
            return Err(err);
        }
    };
    if let Reply::Full {
        status,
        headers: up,
        body,
    } = &reply
        && !status.is_success()
    {
        *failure = Some(classify(*status, up, body));
    }
    let ctx_request = client_request.as_ref().unwrap_or(&Value::Null);
    let ctx = ResponseContext {
        response_id: &response_id,
        created_at: created,
        completed_at: created,
        request: ctx_request,
    };

    // 6. relay
    match reply {
        Reply::Stream { headers: up, body } => {
            let handler: Box<dyn EventHandler> = match relay {
                Relay::Pass(Passthrough::OpenAi) => {
                    Box::new(OpenAiPassthrough::new(!req.include_usage))
                }
                Relay::Pass(Passthrough::Anthropic) => Box::<AnthropicPassthrough>::default(),
                Relay::Pass(Passthrough::Responses) => {
                    let store = Arc::clone(&state.responses);
                    let (dep_id, group) = (dep.id.clone(), group.to_owned());
                    Box::new(ResponsesPassthrough::on_id(Box::new(move |id| {
                        remember_upstream_response(store.as_ref(), id, dep_id, group);
                    })))
                }
                Relay::Translate(pair) => {
                    let t = stream_translator(pair, req, created, &ctx);
                    match (pair, client_request) {
                        (Pair::ResponsesToChat | Pair::ResponsesToAnthropic, Some(cr)) => {
                            let store = Arc::clone(&state.responses);
                            let group = group.to_owned();
                            Box::new(t.on_response(Box::new(move |resp| {
                                store_response(store.as_ref(), &history, &cr, resp, group);
                            })))
                        }
                        _ => Box::new(t),
                    }
                }
            };
            let stream = StreamRelay::new(
                body,
                timeouts.idle,
                handler,
                record,
                Arc::clone(&state.sink),
            );
            let mut resp = sse_response(stream);
            forward_upstream(&up, resp.headers_mut());
            Ok(resp)
        }
        Reply::Full {
            status,
            headers: up,
            body,
        } => {
            record.status = status.as_u16();
            let upstream_anthropic = matches!(relay, Relay::Pass(Passthrough::Anthropic))
                || matches!(relay, Relay::Translate(p) if p.upstream_is_anthropic());
            if status.is_success() {
                record.usage = if upstream_anthropic {
                    anthropic_response_usage(&body)
                } else if matches!(relay, Relay::Pass(Passthrough::Responses)) {
                    responses_usage(&body)
                } else {
                    openai_response_usage(&body)
                };
            }
            if status.is_success()
                && let Relay::Pass(Passthrough::Responses) = relay
                && let Some(id) = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned))
            {
                remember_upstream_response(
                    state.responses.as_ref(),
                    &id,
                    dep.id.clone(),
                    group.to_owned(),
                );
            }
            let resp = match relay {
                Relay::Pass(_) => Ok(relay_body(status, &up, body, dialect)),
                Relay::Translate(pair) if status.is_success() => {
                    translate_response(pair, &body, created, &ctx)
                        .map(|v| {
                            if matches!(pair, Pair::ResponsesToChat | Pair::ResponsesToAnthropic) {
                                store_response(
                                    state.responses.as_ref(),
                                    &history,
                                    ctx.request,
                                    &v,
                                    group.to_owned(),
                                );
                            }
                            json_response(StatusCode::OK, Bytes::from(v.to_string()))
                        })
                        .map_err(translate_error)
                }
                Relay::Translate(_) => {
                    let env = tollgate_translate::errors::map_upstream_error(
                        status.as_u16(),
                        &body,
                        dialect,
                    );
                    let mut e = GatewayError::from(env);
                    let mut fwd = HeaderMap::new();
                    forward_upstream(&up, &mut fwd);
                    e.headers
                        .extend(fwd.into_iter().filter_map(|(k, v)| k.map(|k| (k, v))));
                    Err(e)
                }
            };
            if let Err(e) = &resp {
                record.status = e.envelope.status;
            }
            finish(state, record);
            resp
        }
    }
}

/// Sends the request upstream (or to the in-process mock) and waits for the response head.
/// One upstream request, ready to send.
struct Outgoing<'a> {
    path: &'static str,
    body: Bytes,
    timeouts: tollgate_providers::Timeouts,
    /// Per-request headers (e.g. the client's `anthropic-beta`).
    extra: &'a [(HeaderName, HeaderValue)],
    call_id: &'a str,
    /// The client asked for a shorter timeout than the deployment's (B31).
    client_shortened: bool,
}

async fn send(
    state: &AppState,
    dep: &Deployment,
    out: Outgoing<'_>,
) -> Result<Reply, (GatewayError, FailureClass)> {
    let Outgoing {
        path,
        body,
        timeouts,
        extra,
        call_id,
        client_shortened,
    } = out;
    if let Some(mock) = &dep.mock {
        let endpoint = match path {
            "/completions" => Endpoint::Completions,
            "/embeddings" => Endpoint::Embeddings,
            _ => Endpoint::ChatCompletions,
        };
        let req = ParsedRequest::parse(&body, endpoint)
            .map_err(|e| (GatewayError::from(e), FailureClass::BadRequest))?;
        let model = req.model.clone();
        return Ok(
            match mock_provider::answer(endpoint, &req, &model, mock, call_id).await {
                MockAnswer::Body(b) => Reply::Full {
                    status: StatusCode::OK,
                    headers: HeaderMap::new(),
                    body: b,
                },
                MockAnswer::Stream(s) => Reply::Stream {
                    headers: HeaderMap::new(),
                    body: s,
                },
            },
        );
    }
    let mut upstream = state
        .client
        .post_json(dep, path, body, timeouts, extra)
        .await
        .map_err(|e| {
            tracing::warn!(deployment = %dep.id, error = %e, "upstream call failed");
            (
                GatewayError::from(&e),
                upstream_error_class(&e, client_shortened),
            )
        })?;
    let status = upstream.status;
    // The headers are moved out, not cloned: the body readers below do not need them.
    let headers = std::mem::take(&mut upstream.headers);
    if status.is_success() && is_event_stream(&headers) {
        return Ok(Reply::Stream {
            headers,
            body: Box::pin(upstream.into_stream()),
        });
    }
    let limit = if status.is_success() {
        dep.max_response_bytes
    } else {
        MAX_ERROR_BODY
    };
    let body = upstream.read_body(limit).await.map_err(|e| {
        tracing::warn!(deployment = %dep.id, error = %e, "upstream response failed");
        (
            GatewayError::from(&e),
            upstream_error_class(&e, client_shortened),
        )
    })?;
    if !status.is_success() {
        tracing::debug!(deployment = %dep.id, status = status.as_u16(), "upstream returned an error");
    }
    Ok(Reply::Full {
        status,
        headers,
        body,
    })
}

/// The failure class of a transport-level error. A timeout counts against the deployment only
/// when it is the deployment's own limit, not a shorter one the client asked for (B31).
fn upstream_error_class(e: &UpstreamError, client_shortened: bool) -> FailureClass {
    match e {
        UpstreamError::Timeout { .. } if client_shortened => FailureClass::ClientTimeout,
        UpstreamError::Timeout { .. } => FailureClass::Timeout,
        UpstreamError::Connect(_) | UpstreamError::Read(_) => FailureClass::Connection,
        UpstreamError::TooLarge { .. } | UpstreamError::Build(_) => FailureClass::ServerError,
    }
}

/// Class and `retry-after` of an upstream error response (any dialect's error body).
fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> (FailureClass, Option<Duration>) {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let err = v.get("error").unwrap_or(&v);
    let code = err
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| err.get("type").and_then(Value::as_str));
    let message = err.get("message").and_then(Value::as_str).unwrap_or("");
    let retry_after = header_num::<f64>(headers, "retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
        .or_else(|| {
            header_num::<f64>(headers, "retry-after").map(|s| Duration::from_secs_f64(s.max(0.0)))
        });
    (
        FailureClass::from_upstream(status.as_u16(), code, message),
        retry_after,
    )
}

/// A numeric request or response header, if present and valid.
fn header_num<T: std::str::FromStr>(headers: &HeaderMap, name: &str) -> Option<T> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
}

/// 429 "No deployments available" with `retry-after` (whole seconds, ≥ 1) until the first
/// deployment returns from cooldown (B13).
fn no_deployments(group: &str, retry_after_secs: u64) -> GatewayError {
    let mut e: GatewayError = ErrorEnvelope::new(
        429,
        "rate_limit_error",
        format!("No deployments available for selected model={group}. Try again in {retry_after_secs} s."),
    )
    .into();
    e.headers
        .push((header::RETRY_AFTER, HeaderValue::from(retry_after_secs)));
    e
}

/// Client headers forwarded per request to Anthropic upstreams: `anthropic-beta`, and the
/// client's `anthropic-version` (replacing the deployment's default).
fn per_request_headers(headers: &HeaderMap, dep: &Deployment) -> Vec<(HeaderName, HeaderValue)> {
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

fn translate_request(
    pair: Pair,
    v: &Value,
    opts: &RequestOptions,
    history: &[Value],
) -> Result<Value, TranslateError> {
    match pair {
        Pair::ChatToAnthropic => chat_to_anthropic::request(v, opts),
        Pair::CompletionsToAnthropic => completions_to_anthropic::request(v, opts),
        Pair::MessagesToChat => anthropic_to_chat::request(v, opts),
        Pair::ResponsesToChat => responses_to_chat::request(v, opts, history),
        Pair::ResponsesToAnthropic => responses_to_anthropic::request(v, opts, history),
    }
}

/// 404 for an unknown `previous_response_id` (OpenAI's error for it).
fn previous_not_found(id: &str) -> GatewayError {
    ErrorEnvelope::new(
        404,
        "invalid_request_error",
        format!("Previous response with id '{id}' not found."),
    )
    .with_param("previous_response_id")
    .with_code("previous_response_not_found")
    .into()
}

/// Remembers which deployment stores a passthrough Response, for `GET /v1/responses/{id}`.
fn remember_upstream_response(
    store: &dyn crate::response_store::ResponseStore,
    id: &str,
    deployment_id: String,
    model_group: String,
) {
    store.put(
        id.to_owned(),
        crate::response_store::StoredResponse {
            response: Value::Null,
            deployment_id,
            history: Vec::new(),
            model_group,
        },
    );
}

/// Keeps a translated Response (and the conversation a follow-up continues from).
fn store_response(
    store: &dyn crate::response_store::ResponseStore,
    history: &[Value],
    request: &Value,
    response: &Value,
    model_group: String,
) {
    let Some(id) = response.get("id").and_then(Value::as_str) else {
        return;
    };
    match responses_to_chat::history_after(history, request, response) {
        Ok(h) => store.put(
            id.to_owned(),
            crate::response_store::StoredResponse {
                response: response.clone(),
                deployment_id: String::new(),
                history: h,
                model_group,
            },
        ),
        Err(e) => tracing::debug!(error = %e, "response not stored for follow-ups"),
    }
}

fn translate_response(
    pair: Pair,
    body: &[u8],
    created: u64,
    ctx: &ResponseContext<'_>,
) -> Result<Value, TranslateError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| TranslateError::InvalidResponse(format!("not JSON: {e}")))?;
    let out = match pair {
        Pair::ChatToAnthropic => chat_to_anthropic::response(&v, created)?,
        Pair::CompletionsToAnthropic => completions_to_anthropic::response(&v, created)?,
        Pair::MessagesToChat => anthropic_to_chat::response(&v)?,
        Pair::ResponsesToChat => responses_to_chat::response(&v, ctx)?,
        Pair::ResponsesToAnthropic => responses_to_anthropic::response(&v, ctx)?,
    };
    Ok(out)
}

fn stream_translator(
    pair: Pair,
    req: &ParsedRequest<'_>,
    created: u64,
    ctx: &ResponseContext<'_>,
) -> Translated {
    Translated::new(match pair {
        Pair::ChatToAnthropic => Box::new(chat_to_anthropic::StreamTranslator::new(
            chat_to_anthropic::StreamOptions {
                include_usage: req.include_usage,
                created,
                drop_reasoning: false,
            },
        )),
        Pair::CompletionsToAnthropic => Box::new(completions_to_anthropic::StreamTranslator::new(
            req.include_usage,
            created,
        )),
        Pair::MessagesToChat => Box::new(anthropic_to_chat::StreamTranslator::new()),
        Pair::ResponsesToChat => Box::new(responses_to_chat::StreamTranslator::new(ctx)),
        Pair::ResponsesToAnthropic => Box::new(responses_to_anthropic::StreamTranslator::new(ctx)),
    })
}

fn translate_error(e: TranslateError) -> GatewayError {
    let status = e.status();
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    ErrorEnvelope::new(status, kind, e.to_string()).into()
}

/// Adds deployment request defaults that the translated body lacks.
fn with_defaults(mut v: Value, defaults: &[(String, String)]) -> Value {
    if let Value::Object(map) = &mut v {
        for (k, raw) in defaults {
            if !map.contains_key(k)
                && let Ok(val) = serde_json::from_str(raw)
            {
                map.insert(k.clone(), val);
            }
        }
    }
    v
}

/// `count_tokens` for deployments that cannot count: ceil(bytes of `system`, `messages` and
/// `tools` JSON / 4), the same bytes/4 rule the gateway uses for non-OpenAI tokenizers.
fn estimate_input_tokens(req: &ParsedRequest<'_>) -> u64 {
    let bytes: usize = ["system", "messages", "tools"]
        .iter()
        .filter_map(|f| req.body.get(f))
        .map(|r| r.get().len())
        .sum();
    bytes.div_ceil(4) as u64
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
        RouteError::NoDeployments(model) => no_deployments(&model, 1),
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

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
