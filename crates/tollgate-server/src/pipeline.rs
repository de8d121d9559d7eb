//! The request pipeline: every inference request crosses these stages, in this order.
//!
//! 1. **authenticate**: credential header → identity ([`crate::auth`]); 401 otherwise.
//! 2. **parse once**: `model`, `stream`, `stream_options`, `timeout` read from the top level;
//!    everything else stays raw JSON ([`crate::request`]); 400 on malformed bodies.
//! 3. **admit** ([`crate::gate`], when governance runs): key/team aliases resolved, then model
//!    access checked on the model group that will be called (403); per attempt, budgets and
//!    RPM/TPM/parallel limits of every scope reserved atomically (422 / 429) — a refused
//!    request never reaches the upstream.
//! 4. **route**: model group → an attempt plan ([`tollgate_router`]: strategy, cooldowns,
//!    retries, fallbacks); 404 `model_not_found`. Steps 5–6 run once per attempt; a stream is
//!    retried or falls back only before its first byte reached the client.
//! 5. **plan and build the upstream body** ([`crate::plan`]): same dialect → the raw body with
//!    `model` rewritten, gateway-only fields removed, deployment defaults added and stream usage
//!    requested; different dialects → translated ([`tollgate_translate`]).
//! 6. **send and relay** ([`crate::relay`]): passthrough bytes go through unchanged (a copy
//!    is scanned for usage) or are translated event by event; upstream errors keep their
//!    status and are reshaped only when dialects differ; unreachable → 502, timeouts → 504.
//! 7. **settle**: one [`CallRecord`] per attempt goes to the [`crate::relay::CallSink`], which
//!    settles its reservation with the actual usage and queues the spend-log row (written
//!    behind in batches, never awaited here).
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
use tollgate_governance::admission::{
    AdmitRequest, Estimate, RateLimitStatus, Rejection, ScopeKey, rate_limit_headers,
};
use tollgate_governance::runtime::{Charge, Principal, RequestFacts, needs_token_count};
use tollgate_governance::store::SpendLogRow;
use tollgate_protocol::ErrorEnvelope;
use tollgate_providers::UpstreamError;
use tollgate_providers::deployment::MockBehaviour;
use tollgate_providers::{Deployment, WireDialect};
use tollgate_router::{
    CallTiming, FailureClass, ModelGroup, Outcome, PlanEnd, RequestPolicy, RouteError, StreamSlot,
};
use tollgate_translate::codec::{
    Answer, Codec, EventFormat, RequestRule, StreamRule, TranslateRequest,
};
use tollgate_translate::responses_to_chat::ResponseContext;
use tollgate_translate::{RequestOptions, TranslateError};

use crate::errors::GatewayError;
use crate::gate::facts;
use crate::gate::unreported::Unreported;
use crate::headers::{
    CallHeaders, X_LITELLM_ATTEMPTED_FALLBACKS, X_LITELLM_ATTEMPTED_RETRIES, X_LITELLM_NUM_RETRIES,
    X_LITELLM_STREAM_TIMEOUT, X_LITELLM_TIMEOUT, forward_upstream,
};
use crate::mock_provider::{self, MockAnswer};
use crate::plan::{Plan, plan};
use crate::relay::first_event::{self, Peek, Primed};
use crate::relay::handlers::{
    AnthropicPassthrough, EventHandler, OpenAiPassthrough, ResponsesPassthrough, Translated,
};
use crate::relay::stream::StreamRelay;
use crate::relay::unary::{MAX_ERROR_BODY, relay_body};
use crate::relay::{CallRecord, Settled};
use crate::request::{Endpoint, ParsedRequest};
use crate::response_owner::{ResponseOwner, previous_not_found};
use crate::response_store::{remember_upstream_response, store_response};
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
        model_id: ids.model_id,
        model_group: ids.model_group,
    }
    .write(resp.headers_mut());
    resp
}

struct Ids<'a> {
    call_id: &'a str,
    /// The last attempt's deployment id and model group, as shared header values.
    model_id: Option<HeaderValue>,
    model_group: Option<HeaderValue>,
}

/// An upstream's answer, before relaying.
enum Reply {
    /// Complete body (any status).
    Full {
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
    },
    /// A 2xx event stream whose first event is not an error.
    Stream { headers: HeaderMap, body: Primed },
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
    let identity = state
        .auth
        .authenticate(headers, state.gov())
        .map_err(|e| GatewayError::from(e.envelope()))?;

    // 2. parse once; refuse a model name that could leave a provider's URL path
    let req = ParsedRequest::parse(body, endpoint)?;
    crate::model_names::check(&req.model, "model")?;
    let client_upstream = crate::clientside::ClientUpstream::from_request(&req)?;
    crate::response_owner::check_previous(state.responses.as_ref(), endpoint, &identity, &req)?;

    // 3. admit (model access now; budgets and limits per attempt below)
    let principal = identity.principal();
    let alias = principal.and_then(|p| p.alias(&req.model));
    let routed: &str = alias.as_deref().unwrap_or(&req.model);
    let mut governed = match &state.gate {
        Some(gate) if endpoint != Endpoint::CountTokens => Some(Governed {
            gate,
            principal,
            end_user: facts::end_user(headers, &req, gate.end_user_header.as_ref()),
            tags: facts::tags(headers, &req),
            prompt_tokens: None,
            max_output: facts::max_output_tokens(&req, endpoint),
            started_at: chrono::Utc::now(),
        }),
        _ => None,
    };
    // One router snapshot for the whole request (an atomic load; `/model/new` may swap in a
    // new router meanwhile): resolution, access and every attempt below use it.
    let router = state.router.load();
    if let (Some(p), Some(gate)) = (principal, &state.gate)
        && let Ok((group, _)) = router.resolve(routed)
    {
        check_access(gate, p, access_name(group, routed, 0), &req.model)?;
    }

    // 4. route: an attempt plan (strategy, cooldowns, retries, fallbacks)
    let num_retries = match req.num_retries()? {
        Some(n) => Some(n),
        None => header_count(headers, &X_LITELLM_NUM_RETRIES).map_err(invalid_header)?,
    };
    let policy = RequestPolicy {
        num_retries,
        fallbacks: crate::model_names::checked_fallbacks(req.fallbacks()?)?,
        prompt_tokens: (body.len() / 4) as u64,
        stream: req.stream,
    };
    let mut attempts = router
        .plan(routed, policy)
        .map_err(|e| route_error(state, e, &identity))?;
    let timeout_override = ClientTimeouts {
        total: req
            .timeout_s
            .or_else(|| header_num(headers, &X_LITELLM_TIMEOUT)),
        stream: req
            .stream_timeout_s
            .or_else(|| header_num(headers, &X_LITELLM_STREAM_TIMEOUT))
            .filter(|_| req.stream),
    };
    let mut last: Option<Result<Response, GatewayError>> = None;
    let mut seq: u32 = 0;
    let mut rate_limits: Vec<RateLimitStatus> = Vec::new();
    let mut settled: Option<Settled> = None;
    while let Some(mut attempt) = attempts.next_attempt(Instant::now()) {
        // Only a retry backoff sleeps: tokio's timer has 1 ms granularity, so even a deadline
        // already passed would cost the first attempt up to a millisecond.
        if attempt.not_before > Instant::now() {
            tokio::time::sleep_until(attempt.not_before.into()).await;
        }
        let dep: &Deployment = &attempt.deployment.deployment;
        ids.model_id.clone_from(&dep.id_header);
        ids.model_group.clone_from(&attempt.group.name_header);
        // 3. admit this attempt (a fallback group is checked for access too)
        let charge = match &mut governed {
            Some(g) => match g.admit(
                state,
                &req,
                endpoint,
                AttemptInfo {
                    group: attempt.group,
                    fallback_index: attempt.fallback_index,
                    routed,
                    dep,
                    upstream_model: &attempt.upstream_model,
                    call_id: ids.call_id,
                    seq,
                },
            ) {
                Ok(c) => Some(c),
                Err(e) if seq == 0 => {
                    // refused before any upstream call: still LiteLLM's spend headers
                    let mut refused = Err(e);
                    spend_headers(&mut refused, g, None, &[]);
                    return refused;
                }
                Err(e) => {
                    attempts.report(
                        &attempt,
                        Outcome::Failure {
                            class: FailureClass::BadRequest,
                            retry_after: None,
                        },
                        Instant::now(),
                    );
                    last = Some(Err(e));
                    break;
                }
            },
            None => None,
        };
        // LiteLLM's fallback tests: the requested group fails at once (no upstream call, no
        // retry, no cooldown, nothing charged) and its fallbacks for that failure are tried.
        if attempt.fallback_index == 0
            && let Some(class) = req.mock_failure
        {
            drop(charge);
            attempts.report(&attempt, Outcome::Simulated { class }, Instant::now());
            last = Some(Err(simulated_failure(class, &attempt.group.name)));
            continue;
        }
        if let Some(c) = &charge {
            rate_limits.clear();
            rate_limits.extend_from_slice(c.reservation.rate_limits());
        }
        seq += 1;
        let sent = Instant::now();
        // A stream stays in flight on its deployment until its last event.
        let stream_slot = req
            .stream
            .then(|| attempt.hold_in_flight(Arc::clone(&router), sent));
        let mut report = AttemptReport::default();
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
                charge,
                started_at: governed
                    .as_ref()
                    .map_or_else(chrono::Utc::now, |g| g.started_at),
                stream_slot,
                client: client_upstream.as_ref(),
                identity: &identity,
            },
            &mut report,
        )
        .await;
        settled = report.settled;
        let now = Instant::now();
        let outcome = match (&result, report.failure) {
            (_, Some((class, retry_after))) => Outcome::Failure { class, retry_after },
            // A gateway-side refusal (e.g. an untranslatable field): ends the plan.
            (Err(_), None) => Outcome::Failure {
                class: FailureClass::BadRequest,
                retry_after: None,
            },
            // A relayed stream's times are recorded at its end, through its slot.
            (Ok(_), None) if report.timed_by_stream => Outcome::Success {
                timing: CallTiming::default(),
                prompt_tokens: None,
                completion_tokens: 0,
            },
            // A streamed request answered whole: its head is its first token.
            (Ok(_), None) => Outcome::Success {
                timing: CallTiming {
                    latency: Some(now - sent),
                    ttft: req.stream.then(|| now - sent),
                },
                prompt_tokens: report.prompt_tokens,
                completion_tokens: report.completion_tokens,
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
        (X_LITELLM_ATTEMPTED_RETRIES, summary.attempted_retries),
        (X_LITELLM_ATTEMPTED_FALLBACKS, summary.attempted_fallbacks),
    ];
    for (name, n) in counts {
        let v = count_header(n);
        match &mut result {
            Ok(r) => {
                r.headers_mut().insert(name, v);
            }
            Err(e) => e.headers.push((name, v)),
        }
    }
    if let Some(g) = &governed {
        spend_headers(&mut result, g, settled.as_ref(), &rate_limits);
    }
    result
}

/// The failure a `mock_response` names, as LiteLLM's `mock_completion` raises it:
/// `litellm.RateLimitError` (429), `litellm.InternalServerError` (500),
/// `litellm.ContextWindowExceededError` (400 `context_length_exceeded`); `None` for any other
/// text, which is the mocked answer itself.
fn mock_error(reply: &str) -> Option<(FailureClass, ErrorEnvelope)> {
    Some(match reply {
        "litellm.RateLimitError" => (
            FailureClass::RateLimit,
            ErrorEnvelope::new(
                429,
                "rate_limit_error",
                "litellm.RateLimitError: this is a mock rate limit error",
            ),
        ),
        "litellm.InternalServerError" => (
            FailureClass::ServerError,
            ErrorEnvelope::new(
                500,
                "server_error",
                "litellm.InternalServerError: this is a mock internal server error",
            ),
        ),
        "litellm.ContextWindowExceededError" => (
            FailureClass::ContextWindowExceeded,
            ErrorEnvelope::bad_request(
                "litellm.ContextWindowExceededError: this is a mock context window exceeded error",
            )
            .with_code("context_length_exceeded"),
        ),
        _ => return None,
    })
}

/// The error a simulated failure (`mock_testing_*fallbacks`) answers with when no fallback
/// takes over, in LiteLLM's words: a 500 for `mock_testing_fallbacks`, a 400
/// `context_length_exceeded` or `content_policy_violation` for the other two.
fn simulated_failure(class: FailureClass, group: &str) -> GatewayError {
    let message = |kind: &str| {
        format!(
            "litellm.{kind}: This is a mock exception for model={group}, to trigger a fallback."
        )
    };
    let envelope = match class {
        FailureClass::ContextWindowExceeded => {
            ErrorEnvelope::bad_request(message("ContextWindowExceededError"))
                .with_code("context_length_exceeded")
        }
        FailureClass::ContentPolicy => {
            ErrorEnvelope::bad_request(message("ContentPolicyViolationError"))
                .with_code("content_policy_violation")
        }
        _ => ErrorEnvelope::new(500, "server_error", message("InternalServerError")),
    };
    GatewayError::from(envelope)
}

/// Governance state of one request.
struct Governed<'a> {
    gate: &'a crate::gate::Gate,
    principal: Option<&'a Principal>,
    end_user: Option<String>,
    tags: Vec<String>,
    /// Counted once, at the first attempt that needs it.
    prompt_tokens: Option<u64>,
    max_output: Option<u64>,
    started_at: chrono::DateTime<chrono::Utc>,
}

/// The attempt being admitted.
struct AttemptInfo<'a> {
    group: &'a Arc<ModelGroup>,
    fallback_index: u32,
    routed: &'a str,
    dep: &'a Deployment,
    upstream_model: &'a str,
    call_id: &'a str,
    seq: u32,
}

impl Governed<'_> {
    /// Admits one attempt: access to its group (fallbacks), then every scope's budget and
    /// limits, atomically. Errors: 403, 400 (blocked end user), 422 / 429 rejections.
    #[allow(clippy::result_large_err)] // the refusal path is cold
    fn admit(
        &mut self,
        state: &AppState,
        req: &ParsedRequest<'_>,
        endpoint: Endpoint,
        a: AttemptInfo<'_>,
    ) -> Result<Charge, GatewayError> {
        let gov = &self.gate.gov;
        if let Some(p) = self.principal
            && a.fallback_index > 0
        {
            check_access(
                self.gate,
                p,
                access_name(a.group, a.routed, a.fallback_index),
                &req.model,
            )?;
        }
        let scopes = gov
            .scopes(
                self.principal,
                RequestFacts {
                    end_user: self.end_user.as_deref(),
                    tags: &self.tags,
                    model_group: &a.group.name,
                    requested: (a.fallback_index == 0).then_some(req.model.as_str()),
                    routed: (a.fallback_index == 0).then_some(a.routed),
                },
            )
            .map_err(|e| GatewayError::from(ErrorEnvelope::bad_request(e.to_string())))?;
        let price = self.gate.price_for(a.dep, a.upstream_model);
        let prompt = if needs_token_count(&scopes) {
            *self
                .prompt_tokens
                .get_or_insert_with(|| facts::prompt_tokens(req, endpoint, a.upstream_model))
        } else {
            0
        };
        let estimate = Estimate::new(
            gov.admission().config(),
            price.as_ref(),
            prompt,
            self.max_output,
        );
        let key = self.principal.map(|p| &p.key);
        let log = SpendLogRow {
            request_id: tollgate_governance::store::attempt_id(a.call_id, a.seq),
            call_type: endpoint.call_type().to_owned(),
            api_key: key.map_or_else(
                || {
                    if state.auth.requires_key() {
                        MASTER_KEY_ALIAS.to_owned()
                    } else {
                        String::new()
                    }
                },
                |k| k.token.clone(),
            ),
            start_time: self.started_at,
            end_time: self.started_at,
            model: a.upstream_model.to_owned(),
            model_id: Some(a.dep.id.clone()),
            model_group: Some(a.group.name.clone()),
            custom_llm_provider: Some(a.dep.provider.name.to_owned()),
            api_base: Some(a.dep.base_url.clone()),
            user: key.and_then(|k| k.user_id.clone()),
            team_id: key.and_then(|k| k.team_id.clone()),
            organization_id: key.and_then(|k| k.organization_id.clone()),
            end_user: self.end_user.clone(),
            request_tags: serde_json::json!(self.tags),
            metadata: serde_json::json!({
                "user_api_key_alias": key.and_then(|k| k.key_alias.clone()),
                "user_api_key_team_id": key.and_then(|k| k.team_id.clone()),
                "user_api_key_user_id": key.and_then(|k| k.user_id.clone()),
                "attempt": a.seq,
            }),
            litellm_call_id: Some(a.call_id.to_owned()),
            ..SpendLogRow::default()
        };
        gov.admit(
            AdmitRequest {
                request_id: Arc::from(a.call_id),
                attempt: a.seq,
                scopes,
                estimate,
            },
            price,
            log,
        )
        .map_err(rejection_error)
    }
}

/// How spend-log rows name calls made with the master key (LiteLLM's alias, never the key).
pub const MASTER_KEY_ALIAS: &str = "litellm-proxy-master-key";

/// The name access is checked on: the model group, or for a wildcard group the concrete model
/// the client named (B35, B36).
fn access_name<'a>(group: &'a ModelGroup, routed: &'a str, fallback_index: u32) -> &'a str {
    if group.wildcard && fallback_index == 0 {
        routed
    } else {
        &group.name
    }
}

/// 403 when the key may not call `name` (LiteLLM's wording and error types).
#[allow(clippy::result_large_err)] // the refusal path is cold
fn check_access(
    gate: &crate::gate::Gate,
    p: &Principal,
    name: &str,
    requested: &str,
) -> Result<(), GatewayError> {
    match p.model_denial(name, &gate.gov.access_groups()) {
        None => Ok(()),
        Some(by) => Err(ErrorEnvelope::new(
            403,
            by.error_type(),
            format!(
                "The requested model '{requested}' is not available for this API key, or the model name is invalid. Call `/v1/models` to view the models available to your key."
            ),
        )
        .with_param("model")
        .with_code("403")
        .into()),
    }
}

/// A refused admission as an error response (status, type, message, `retry-after`,
/// `x-ratelimit-*`).
fn rejection_error(r: Rejection) -> GatewayError {
    let mut e: GatewayError = ErrorEnvelope::new(r.status, r.error_type, r.message)
        .with_code(r.status.to_string())
        .into();
    for (k, v) in r.headers {
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
            e.headers.push((k, v));
        }
    }
    e
}

/// `x-litellm-response-cost`, `x-litellm-key-spend` and the rate-limit headers.
fn spend_headers(
    result: &mut Result<Response, GatewayError>,
    g: &Governed<'_>,
    settled: Option<&Settled>,
    rate: &[RateLimitStatus],
) {
    // Unary answers: limits as settled (actual tokens); streams: as admitted.
    let rate = rate_limit_headers(settled.map_or(rate, |s| s.rate_limits.as_slice()));
    let mut out: Vec<(HeaderName, HeaderValue)> = Vec::with_capacity(rate.len() + 5);
    match settled {
        Some(s) => out.push((
            HeaderName::from_static("x-litellm-response-cost"),
            float_header(s.cost_usd),
        )),
        // LiteLLM: `0` on errors
        None if result.is_err() => out.push((
            HeaderName::from_static("x-litellm-response-cost"),
            HeaderValue::from_static("0"),
        )),
        None => {}
    }
    let key_spend = settled.and_then(|s| s.key_spend).or_else(|| {
        g.principal
            .map(|p| g.gate.gov.spend_of(&ScopeKey::key(&p.key.token)))
    });
    if let Some(k) = key_spend {
        out.push((
            HeaderName::from_static("x-litellm-key-spend"),
            float_header(k),
        ));
    }
    if let Some(k) = g.principal.map(|p| &p.key) {
        if let Some(b) = k.max_budget {
            out.push((
                HeaderName::from_static("x-litellm-key-max-budget"),
                float_header(b),
            ));
        }
        for (name, v) in [
            ("x-litellm-key-tpm-limit", k.tpm_limit),
            ("x-litellm-key-rpm-limit", k.rpm_limit),
        ] {
            if let Some(v) = v {
                out.push((HeaderName::from_static(name), HeaderValue::from(v)));
            }
        }
    }
    for (k, v) in &rate {
        if let (Ok(k), Ok(v)) = (
            HeaderName::try_from(k.as_str()),
            HeaderValue::try_from(v.as_str()),
        ) {
            out.push((k, v));
        }
    }
    match result {
        Ok(r) => {
            for (k, v) in out {
                r.headers_mut().insert(k, v);
            }
        }
        Err(e) => {
            for (k, v) in out {
                if !e.headers.iter().any(|(n, _)| *n == k) {
                    e.headers.push((k, v));
                }
            }
        }
    }
}

/// A small count as a header value: `0`–`9` without an allocation (every response carries
/// two such counts), larger ones formatted.
fn count_header(n: u32) -> HeaderValue {
    const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    match DIGITS.get(n as usize) {
        Some(d) => HeaderValue::from_static(d),
        None => HeaderValue::from(n),
    }
}

fn float_header(v: f64) -> HeaderValue {
    HeaderValue::try_from(format!("{v}")).unwrap_or(HeaderValue::from_static("0"))
}

/// Limits a client set for its own request, seconds: `timeout` / `x-litellm-timeout` (every
/// phase) and, for streams, `stream_timeout` / `x-litellm-stream-timeout` (first byte and the
/// gap between events). They only ever shorten the deployment's limits.
#[derive(Debug, Clone, Copy, Default)]
struct ClientTimeouts {
    total: Option<f64>,
    stream: Option<f64>,
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
    timeout_override: ClientTimeouts,
    call_id: &'a str,
    started: Instant,
    /// The admitted attempt (governance on), settled when the call ends.
    charge: Option<Charge>,
    started_at: chrono::DateTime<chrono::Utc>,
    /// A stream's hold on its deployment (in flight until the stream ends; its completion
    /// tokens counted then).
    stream_slot: Option<StreamSlot>,
    /// Credentials the client sent in the body ([`crate::clientside`]).
    client: Option<&'a crate::clientside::ClientUpstream>,
    /// The caller: a stored Response's owner, and who may continue one.
    identity: &'a crate::auth::Identity,
}

/// What an attempt reports besides its response.
#[derive(Debug, Default)]
struct AttemptReport {
    /// Set when the upstream failed, with its `retry-after`: the class decides retries,
    /// fallbacks and cooldowns.
    failure: Option<(FailureClass, Option<Duration>)>,
    /// The settlement of a governed call.
    settled: Option<Settled>,
    /// Prompt tokens of a successful non-streamed answer, from its usage (the router swaps
    /// its prompt estimate for them in the deployment's TPM for this minute).
    prompt_tokens: Option<u64>,
    /// Completion tokens of a successful non-streamed answer, from its usage (the router
    /// adds them to the deployment's TPM for this minute).
    completion_tokens: u64,
    /// The answer is a stream relayed with the attempt's [`StreamSlot`], which records the
    /// stream's times and tokens at its end.
    timed_by_stream: bool,
}

/// Plans, sends and relays one attempt, reporting into `report`; a response is returned
/// either way.
async fn attempt_once(
    state: &Arc<AppState>,
    call: Call<'_>,
    report: &mut AttemptReport,
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
        charge,
        started_at,
        stream_slot,
        client,
        identity,
    } = call;
    let dialect = endpoint.dialect();
    let timeouts =
        dep.timeouts
            .for_request(req.stream, timeout_override.total, timeout_override.stream);
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
        started_at,
        events_out: 0,
        unreported: Unreported::new(charge.is_some(), body, endpoint),
        charge,
        response_id: None,
    };

    // LiteLLM's error mocks: a `mock_response` (the request's own, else the deployment's)
    // naming one of its exceptions fails this attempt as that upstream error would (retries,
    // cooldowns and fallbacks apply; nothing is billed).
    let dep_mock = dep.mock.as_ref().and_then(|m| m.reply.as_deref());
    let mock_text = req.mock_response.as_deref().or(dep_mock);
    if let Some((class, envelope)) = mock_text.and_then(mock_error) {
        report.failure = Some((class, None));
        record.status = envelope.status;
        report.settled = finish(state, record);
        return Err(GatewayError::from(envelope));
    }

    // 5. plan and build the upstream body; a request's own `mock_response` is answered in
    // process, as by a `mock/` deployment (LiteLLM answers it without calling the provider)
    let request_mock = req.mock_response.as_ref().map(|reply| MockBehaviour {
        reply: Some(reply.clone()),
        ..MockBehaviour::default()
    });
    let mock = request_mock.as_ref().or(dep.mock.as_ref());
    let upstream_dialect = if request_mock.is_some() {
        WireDialect::InProcessMock
    } else {
        dep.dialect()
    };
    let plan = plan(endpoint, dep, upstream_dialect).map_err(GatewayError::from)?;
    let created = unix_now();
    // Only Responses API answers carry a gateway-minted id.
    let response_id = if endpoint == Endpoint::Responses {
        format!("resp_{}", call_id.replace('-', ""))
    } else {
        String::new()
    };
    let mut client_request: Option<Arc<Value>> = None;
    let mut history: Vec<Value> = Vec::new();
    let codec = match plan {
        Plan::LocalTokenCount => {
            let n = estimate_input_tokens(req);
            report.settled = finish(state, record);
            return Ok(json_response(
                StatusCode::OK,
                Bytes::from(format!("{{\"input_tokens\":{n}}}")),
            ));
        }
        Plan::Call(codec) => codec,
    };
    let path = codec.upstream_path();
    let upstream_body = match codec.request() {
        RequestRule::Forward(rewrite) => {
            let mut out = Vec::new();
            req.upstream_body(
                upstream_model,
                &dep.defaults,
                dep.provider.unsupported_fields,
                rewrite.force_stream_usage,
                rewrite.anthropic_metadata,
                &mut out,
            );
            Bytes::from(out)
        }
        RequestRule::Translate(translate) => {
            // parsed once per request, whichever attempt translates first
            let value = req.json().map_err(GatewayError::from)?;
            let opts = RequestOptions {
                upstream_model: Some(upstream_model.to_owned()),
                ..RequestOptions::default()
            };
            if let Some(prev) = value.get("previous_response_id").and_then(Value::as_str) {
                history = state
                    .responses
                    .get_for(prev, identity)
                    .ok_or_else(|| previous_not_found(prev))?
                    .history;
            }
            let translated =
                translate_request(translate, &value, &opts, &history).map_err(translate_error)?;
            client_request = Some(value);
            Bytes::from(with_defaults(translated, &dep.defaults).to_string())
        }
    };

    // 6. send
    let extra = per_request_headers(headers, dep);
    // B31: a limit the client set below the deployment's own never counts against it
    let client_shortened = timeouts != dep.timeouts.for_request(req.stream, None, None);
    let outgoing = Outgoing {
        path,
        mock,
        body: upstream_body,
        timeouts,
        extra: &extra,
        call_id,
        client_shortened,
        client_dialect: dialect,
        client_upstream: client,
    };
    let reply = match send(state, dep, outgoing).await {
        Ok(r) => r,
        Err((err, class)) => {
            report.failure = Some((class, None));
            record.status = err.envelope.status;
            report.settled = finish(state, record);
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
        report.failure = Some(classify(*status, up, body));
    }
    let ctx_request = client_request.as_deref().unwrap_or(&Value::Null);
    let answer = Answer {
        call_id,
        include_usage: req.include_usage,
        context: ResponseContext {
            response_id: &response_id,
            created_at: created,
            completed_at: created,
            request: ctx_request,
        },
    };

    // 6. relay
    match reply {
        Reply::Stream { headers: up, body } => {
            let handler: Box<dyn EventHandler> = match stream_translator(codec, &answer) {
                StreamRule::Relay(EventFormat::OpenAiChunks) => {
                    Box::new(OpenAiPassthrough::new(!req.include_usage))
                }
                StreamRule::Relay(EventFormat::AnthropicEvents) => {
                    Box::<AnthropicPassthrough>::default()
                }
                StreamRule::Relay(EventFormat::ResponsesEvents) => {
                    let store = Arc::clone(&state.responses);
                    let (dep_id, group) = (dep.id.clone(), group.to_owned());
                    let owner = ResponseOwner::of(identity);
                    Box::new(ResponsesPassthrough::on_id(Box::new(move |id| {
                        remember_upstream_response(store.as_ref(), id, dep_id, group, owner);
                    })))
                }
                StreamRule::Translate(t) => {
                    let t = Translated::new(t);
                    match client_request {
                        // a translated Responses answer is stored for `previous_response_id`
                        Some(cr) if endpoint == Endpoint::Responses => {
                            let store = Arc::clone(&state.responses);
                            let (group, owner) = (group.to_owned(), ResponseOwner::of(identity));
                            Box::new(t.on_response(Box::new(move |resp| {
                                store_response(store.as_ref(), &history, &cr, resp, group, owner);
                            })))
                        }
                        _ => Box::new(t),
                    }
                }
            };
            report.timed_by_stream = stream_slot.is_some();
            let stream = StreamRelay::new(
                body,
                timeouts.idle,
                handler,
                record,
                Arc::clone(&state.sink),
                stream_slot,
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
            let forwarded = matches!(codec.request(), RequestRule::Forward(_));
            if status.is_success() {
                if record.charge.is_some() {
                    record.response_id = crate::relay::response_id(&body);
                }
                record.usage = codec.usage(&body);
                record.unreported.answer(&body, record.usage);
            }
            // OpenAI's own Responses answer: its id is remembered for `previous_response_id`
            if status.is_success()
                && forwarded
                && endpoint == Endpoint::Responses
                && let Some(id) = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned))
            {
                remember_upstream_response(
                    state.responses.as_ref(),
                    &id,
                    dep.id.clone(),
                    group.to_owned(),
                    ResponseOwner::of(identity),
                );
            }
            let resp = if status.is_success() {
                match translate_response(codec, &body, &answer) {
                    Ok(None) => Ok(relay_body(status, &up, body, dialect)),
                    Ok(Some(v)) => {
                        // The spend log keys the call by the id the client saw.
                        if record.charge.is_some() {
                            record.response_id = v["id"].as_str().map(str::to_owned);
                        }
                        // a translated Responses answer is stored for `previous_response_id`
                        if endpoint == Endpoint::Responses {
                            store_response(
                                state.responses.as_ref(),
                                &history,
                                answer.context.request,
                                &v,
                                group.to_owned(),
                                ResponseOwner::of(identity),
                            );
                        }
                        Ok(json_response(StatusCode::OK, Bytes::from(v.to_string())))
                    }
                    Err(e) => Err(translate_error(e)),
                }
            } else {
                match codec.upstream_error(status.as_u16(), &body) {
                    None => Ok(relay_body(status, &up, body, dialect)),
                    Some(env) => {
                        let mut e = GatewayError::from(env);
                        let mut fwd = HeaderMap::new();
                        forward_upstream(&up, &mut fwd);
                        e.headers
                            .extend(fwd.into_iter().filter_map(|(k, v)| k.map(|k| (k, v))));
                        Err(e)
                    }
                }
            };
            if let Err(e) = &resp {
                record.status = e.envelope.status;
            }
            report.prompt_tokens = record.usage.and_then(|u| u.reported_prompt_tokens());
            report.completion_tokens = record.usage.map_or(0, |u| u.completion_tokens);
            report.settled = finish(state, record);
            resp
        }
    }
}

/// Sends the request upstream (or to the in-process mock) and waits for the response head.
/// One upstream request, ready to send.
struct Outgoing<'a> {
    path: &'static str,
    /// Answer in process instead (a `mock/` deployment or the request's `mock_response`).
    mock: Option<&'a MockBehaviour>,
    body: Bytes,
    timeouts: tollgate_providers::Timeouts,
    /// Per-request headers (e.g. the client's `anthropic-beta`).
    extra: &'a [(HeaderName, HeaderValue)],
    call_id: &'a str,
    /// The client asked for a shorter timeout than the deployment's (B31).
    client_shortened: bool,
    /// The client's dialect (an error in a stream's first event is answered in it).
    client_dialect: tollgate_protocol::Dialect,
    /// Credentials the client sent in the body ([`crate::clientside`]).
    client_upstream: Option<&'a crate::clientside::ClientUpstream>,
}

async fn send(
    state: &AppState,
    dep: &Deployment,
    out: Outgoing<'_>,
) -> Result<Reply, (GatewayError, FailureClass)> {
    let Outgoing {
        path,
        mock,
        body,
        timeouts,
        extra,
        call_id,
        client_shortened,
        client_dialect,
        client_upstream,
    } = out;
    let peek = Peek {
        idle: timeouts.idle,
        client: client_dialect,
        client_shortened,
    };
    let mut own = None;
    let dep = crate::clientside::for_attempt(client_upstream, dep, &mut own)
        .await
        .map_err(|e| (e, FailureClass::BadRequest))?;
    if let Some(mock) = mock {
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
                    body: Box::pin(first_event::peek(s, &HeaderMap::new(), peek)).await?,
                    headers: HeaderMap::new(),
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
                GatewayError::from_upstream(&e, client_shortened),
                upstream_error_class(&e, client_shortened),
            )
        })?;
    let status = upstream.status;
    // The headers are moved out, not cloned: the body readers below do not need them.
    let headers = std::mem::take(&mut upstream.headers);
    if status.is_success() && is_event_stream(&headers) {
        // The first event decides: an error there fails the attempt before the head is sent.
        // Boxed: the peek's state stays out of the future of every request (streams only).
        let stream = Box::pin(upstream.into_stream());
        let body = Box::pin(first_event::peek(stream, &headers, peek)).await?;
        return Ok(Reply::Stream { headers, body });
    }
    let limit = if status.is_success() {
        dep.max_response_bytes
    } else {
        MAX_ERROR_BODY
    };
    let body = upstream.read_body(limit).await.map_err(|e| {
        tracing::warn!(deployment = %dep.id, error = %e, "upstream response failed");
        (
            GatewayError::from_upstream(&e, client_shortened),
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
    // TGI and Ollama write the message as the `error` string itself.
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| err.as_str());
    let message = message.unwrap_or("");
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
fn header_num<T: std::str::FromStr>(
    headers: &HeaderMap,
    name: impl http::header::AsHeaderName,
) -> Option<T> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
}

/// A count header (`x-litellm-num-retries`): absent is `None`; anything but a non-negative
/// integer is an error naming the header (see [`invalid_header`]), not silently ignored.
fn header_count<'n>(
    headers: &HeaderMap,
    name: &'n HeaderName,
) -> Result<Option<u32>, &'n HeaderName> {
    let Some(v) = headers.get(name) else {
        return Ok(None);
    };
    match v.to_str().ok().and_then(|s| s.trim().parse().ok()) {
        Some(n) => Ok(Some(n)),
        None => Err(name),
    }
}

/// 400 `invalid_header`: a count header that is not a non-negative integer.
fn invalid_header(name: &HeaderName) -> GatewayError {
    ErrorEnvelope::new(
        400,
        "invalid_request_error",
        format!("The {name} header must be a non-negative integer."),
    )
    .with_code("invalid_header")
    .into()
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

/// The upstream request of a translating pair, from the client's request parsed once.
fn translate_request(
    translate: TranslateRequest,
    v: &Value,
    opts: &RequestOptions,
    history: &[Value],
) -> Result<Value, TranslateError> {
    translate(v, opts, history)
}

/// A 2xx upstream body in the client's dialect; `None`: relayed as it is (same dialect).
fn translate_response(
    codec: &dyn Codec,
    body: &[u8],
    answer: &Answer<'_>,
) -> Result<Option<Value>, TranslateError> {
    codec.response(body, answer)
}

/// How a 2xx stream reaches the client: relayed in its event format, or translated.
fn stream_translator(codec: &dyn Codec, answer: &Answer<'_>) -> StreamRule {
    codec.stream(answer)
}

/// The refusal in the client's dialect, naming the field (`param`) where the error does.
fn translate_error(e: TranslateError) -> GatewayError {
    e.to_envelope().into()
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

fn finish(state: &AppState, mut record: CallRecord) -> Option<Settled> {
    record.ended = Instant::now();
    if record.first_byte.is_none() {
        record.first_byte = Some(record.ended);
    }
    state.sink.record(record)
}

/// 404 for an unknown model (OpenAI's status and code; the SDKs raise `NotFoundError`), naming
/// the model and the models the caller may use.
fn route_error(state: &AppState, e: RouteError, identity: &crate::auth::Identity) -> GatewayError {
    match e {
        RouteError::ModelNotFound(model) => {
            let available = crate::routes::visible_models(state, identity);
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
    let mut r = crate::relay::new_response(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn sse_response(relay: StreamRelay) -> Response {
    let mut r = crate::relay::new_response(Body::from_stream(relay));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    r
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod header_tests {
    use super::*;

    #[test]
    fn count_headers_are_the_decimal_count() {
        for n in [0u32, 1, 7, 9, 10, 42, 1000] {
            assert_eq!(count_header(n).to_str().unwrap(), n.to_string());
        }
    }
}
