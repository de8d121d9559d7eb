//! The request pipeline: every inference request crosses these stages, in this order
//! ([`handle`] and `run` read as this list; each stage is a module returning a value).
//!
//! 1. **inbound** (`inbound`): authenticate (credential header → identity,
//!    [`crate::auth`]; 401 otherwise), then parse once (`model`, `stream`, `stream_options`,
//!    `timeout` read from the top level; everything else stays raw JSON, [`crate::request`];
//!    400 on malformed bodies).
//! 2. **admitted** ([`crate::gate::admit`], when governance runs): key/team aliases resolved,
//!    a team's own deployments (`/model/new` with `model_info.team_id`) mapped from their
//!    public name for that team's keys and unknown (404) to everyone else, then model access
//!    checked on the model group that will be called (403); a name the caller cannot route
//!    is first checked against its `models` lists (403 where one refuses it, as LiteLLM's
//!    auth checks run before its router).
//! 3. **route**: model group → an attempt plan ([`tollgate_router`]: strategy, cooldowns,
//!    retries, fallbacks); 404 `model_not_found`.
//! 4. **attempt loop** (`attempts`): per attempt, budgets and RPM/TPM/parallel limits of
//!    every scope reserved atomically (422 / 429; a refused request never reaches the
//!    upstream), then `attempt`:
//!    - **prepare** (`prepare`, [`crate::plan`]): same dialect → the raw body with `model`
//!      rewritten, gateway-only fields removed, deployment defaults added and stream usage
//!      requested; different dialects → translated ([`tollgate_translate`]);
//!    - **send** (`send`): through the [`tollgate_providers::Upstream`] seam (HTTP, or the
//!      in-process mock); unreachable → 502, timeouts → 504;
//!    - **relay** (`answer`, [`crate::relay`]): passthrough bytes go through unchanged (a
//!      copy is scanned for usage) or are translated event by event; upstream errors keep
//!      their status and are reshaped only when dialects differ.
//!
//!    The router learns each attempt's outcome; a stream is retried or falls back only
//!    before its first byte reached the client.
//! 5. **settled** (`settle`): each attempt's call record lives in a guard that delivers it
//!    exactly once to the [`crate::relay::CallSink`], which settles its reservation with the
//!    actual usage and queues the spend-log row (written behind in batches, never awaited
//!    here); the answer gets its spend and rate-limit headers ([`crate::gate::spend_headers`]).
//!
//! Everything up to the send is the gateway's overhead: no lock is held across an await,
//! nothing blocks, and nothing waits on a write.

mod answer;
mod attempt;
mod attempts;
mod inbound;
mod prepare;
mod send;
mod settle;

use std::sync::Arc;
use std::time::Instant;

use axum::response::Response;
use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;
use tollgate_router::Router;
use tollgate_translate::codec::{self, Codec, StreamRule, TranslateRequest};
use tollgate_translate::{RequestOptions, TranslateError};

use crate::errors::{GatewayError, GatewayFailure};
use crate::gate::admit::{Governed, access_name, check_access};
use crate::headers::CallHeaders;

use crate::request::Endpoint;
use crate::state::AppState;
use attempts::{Answer, AttemptIds, Routed};
use inbound::Inbound;

/// Handles one inference request end to end: the answer, or the error in the client's
/// dialect, with the `x-litellm-*` ids of the call and of its last attempt.
pub async fn handle(
    state: Arc<AppState>,
    endpoint: Endpoint,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let call_id = uuid::Uuid::new_v4().to_string();
    let (result, ids) = match run(&state, endpoint, &headers, &body, &call_id, started).await {
        Ok(answer) => (answer.result, answer.ids),
        Err(e) => (Err(e), AttemptIds::default()),
    };
    let mut resp = result.unwrap_or_else(|e| e.into_response_in(endpoint.dialect()));
    CallHeaders {
        call_id: &call_id,
        model_id: ids.model_id,
        model_group: ids.model_group,
    }
    .write(resp.headers_mut());
    resp
}

/// The stages in order (see the module docs). Errors: a refusal before any attempt.
async fn run(
    state: &Arc<AppState>,
    endpoint: Endpoint,
    headers: &HeaderMap,
    body: &Bytes,
    call_id: &str,
    started: Instant,
) -> Result<Answer, GatewayError> {
    // 1. inbound: authenticate, parse once
    let mut inbound = Inbound::read(state, endpoint, headers, body).await?;
    // One router snapshot for the whole request (an atomic load; `/model/new` may swap in a
    // new router meanwhile): resolution, access and every attempt below use it.
    let router = state.router.load();
    // Team-owned groups (`/model/new` with `model_info.team_id`): one branch when none.
    if !router.teams().is_empty()
        && let Err(e) = inbound.scope_team(&router)
    {
        unroutable_access(state, &inbound)?;
        return Err(GatewayFailure::route(e, || {
            crate::routes::visible_models(state, &inbound.identity)
        })
        .into());
    }
    // 2. admitted: model access now; budgets and limits per attempt
    let governed = admitted(state, endpoint, headers, &inbound, &router)?;
    // 3. route: an attempt plan (strategy, cooldowns, retries, fallbacks)
    let mut policy = inbound.policy(headers, body.len())?;
    if !router.teams().is_empty()
        && let Some(names) = policy.fallbacks.as_mut()
    {
        inbound.scope_team_fallbacks(&router, names);
    }
    let attempts = router.plan(inbound.routed(), policy).map_err(|e| {
        GatewayFailure::route(e, || {
            crate::routes::visible_models(state, &inbound.identity)
        })
    })?;
    let routed = Routed {
        state,
        endpoint,
        headers,
        body,
        inbound: &inbound,
        call_id,
        started,
        timeouts: inbound.timeouts(headers),
        router: &router,
    };
    // 4. attempt loop (prepare, send, relay per attempt); 5. each attempt settled once
    Ok(attempts::run(&routed, governed, attempts).await)
}

/// The admitted stage: the request's governance state (governance on, and not a token
/// count), and the key's access to the model group the request resolves to.
///
/// Errors: 403 when the key may not call it.
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
fn admitted<'s>(
    state: &'s AppState,
    endpoint: Endpoint,
    headers: &HeaderMap,
    inbound: &'s Inbound<'_>,
    router: &Router,
) -> Result<Option<Governed<'s>>, GatewayError> {
    let principal = inbound.identity.principal();
    let governed = match &state.gate {
        Some(gate) if endpoint != Endpoint::CountTokens => Some(Governed::new(
            gate,
            principal,
            headers,
            &inbound.req,
            endpoint,
            state.auth.requires_key(),
        )),
        _ => None,
    };
    let end_user = governed.as_ref().and_then(Governed::end_user);
    if let Some(gate) = &state.gate
        && (principal.is_some() || end_user.is_some())
    {
        match router.resolve(inbound.routed()) {
            Ok((group, _)) => {
                let (name, owned) = match inbound.team_access_name() {
                    Some(name) => (name, true),
                    None => (access_name(group, inbound.routed(), 0), false),
                };
                check_access(gate, principal, end_user, name, owned, &inbound.req.model)?;
            }
            Err(_) => unroutable_access(state, inbound)?,
        }
    }
    Ok(governed)
}

/// A name this caller cannot route (no group serves it, or another team owns it), checked
/// against the key's, team's, user's and organization's `models` first, as LiteLLM checks
/// them before routing (`can_key_call_model` / `can_team_access_model`, auth_checks.py): a
/// list that does not admit the name is its 403 `*_model_access_denied`; a caller no list
/// restricts keeps the 404 `model_not_found`. Only on this refusal path: a request that
/// routes never calls it. Errors: that 403.
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
fn unroutable_access(state: &AppState, inbound: &Inbound<'_>) -> Result<(), GatewayError> {
    match (&state.gate, inbound.identity.principal()) {
        (Some(gate), Some(p)) => check_access(
            gate,
            Some(p),
            None,
            inbound.routed(),
            false,
            &inbound.req.model,
        ),
        _ => Ok(()),
    }
}

/// The codec's request translation (named, so the stages read the same for every pair).
fn translate_request(
    translate: TranslateRequest,
    v: &Value,
    opts: &RequestOptions,
    history: &[Value],
) -> Result<Value, TranslateError> {
    translate(v, opts, history)
}

/// A 2xx body in the client's dialect: `None` when it is relayed as it is.
fn translate_response(
    codec: &dyn Codec,
    body: &[u8],
    answer: &codec::Answer<'_>,
) -> Result<Option<Value>, TranslateError> {
    codec.response(body, answer)
}

/// How a 2xx stream reaches the client: relayed by event format, or translated.
fn stream_translator(codec: &dyn Codec, answer: &codec::Answer<'_>) -> StreamRule {
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
