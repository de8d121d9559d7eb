//! URL → handler. Every inference route exists with and without the `/v1` prefix, as in
//! LiteLLM (`reference/litellm-surface.md` §3).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::json;

use crate::auth::Identity;
use crate::errors::{GatewayError, GatewayFailure};
use crate::pipeline;
use crate::request::Endpoint;
use crate::response_owner::response_not_found;
use crate::state::AppState;

/// `created` timestamp LiteLLM reports for every model in `/v1/models`.
const MODEL_CREATED: u64 = 1_677_610_602;

/// The inference routes: `POST` on each goes into [`pipeline::handle`] (served directly by
/// [`crate::service`], and through the router for the other methods' 405).
pub const INFERENCE_ROUTES: &[(&str, Endpoint)] = &[
    ("/v1/chat/completions", Endpoint::ChatCompletions),
    ("/chat/completions", Endpoint::ChatCompletions),
    ("/v1/completions", Endpoint::Completions),
    ("/completions", Endpoint::Completions),
    ("/v1/embeddings", Endpoint::Embeddings),
    ("/embeddings", Endpoint::Embeddings),
    ("/v1/messages", Endpoint::Messages),
    ("/anthropic/v1/messages", Endpoint::Messages),
    ("/v1/messages/count_tokens", Endpoint::CountTokens),
    ("/anthropic/v1/messages/count_tokens", Endpoint::CountTokens),
    ("/v1/responses", Endpoint::Responses),
    ("/responses", Endpoint::Responses),
];

/// The endpoint an inference route's path names (exact match, as the router matches it).
pub fn inference_endpoint(path: &str) -> Option<Endpoint> {
    INFERENCE_ROUTES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|&(_, e)| e)
}

/// Why a request body could not be read: the status to answer and what went wrong.
#[derive(Debug)]
pub struct BodyError {
    /// 413 over the limit, 400 otherwise.
    pub status: StatusCode,
    /// The reader's own message (used for a 400).
    pub detail: String,
}

impl From<BytesRejection> for BodyError {
    fn from(rej: BytesRejection) -> Self {
        BodyError {
            status: rej.status(),
            detail: rej.body_text(),
        }
    }
}

/// Builds the router.
pub fn router(state: Arc<AppState>) -> Router {
    let limit = state.max_request_bytes;
    let admin = state.admin.as_ref().map(|a| Arc::clone(&a.0));
    let ui = state.ui.clone();
    let admin_mounted = admin.is_some();
    let mut app = Router::new();
    for &(path, endpoint) in INFERENCE_ROUTES {
        app = app.route(path, infer(endpoint));
    }
    let app = app
        .route("/v1/responses/{id}", get(get_response))
        .route("/responses/{id}", get(get_response))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/models/{id}", get(model))
        .route("/health", get(crate::health::health))
        .route("/health/liveliness", get(liveliness))
        .route("/health/liveness", get(liveliness))
        .route("/health/readiness", get(readiness))
        .fallback(move |uri: http::Uri| not_found(uri, admin_mounted))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state);
    // The management API (`/key/*`, `/team/*`, ...) when governance runs, with the admin UI
    // (`/ui/`) whose session cookie it accepts behind the CSRF check.
    match (admin, ui) {
        (Some(ctx), Some(ui)) => app
            .merge(tollgate_ui::protect(tollgate_admin::router(ctx), ui.csrf))
            .merge(tollgate_ui::router(ui.ui)),
        (Some(ctx), None) => app.merge(tollgate_admin::router(ctx)),
        (None, _) => app,
    }
}

/// A POST route into the pipeline for `endpoint`.
fn infer(endpoint: Endpoint) -> MethodRouter<Arc<AppState>> {
    post(
        move |State(s): State<Arc<AppState>>, req: Request| async move {
            // The headers are moved out rather than cloned by a `HeaderMap` extractor; the body
            // is read by axum's `Bytes` extractor, which enforces `DefaultBodyLimit`.
            let (mut parts, body) = req.into_parts();
            let headers = std::mem::take(&mut parts.headers);
            let body = Bytes::from_request(Request::from_parts(parts, body), &())
                .await
                .map_err(BodyError::from);
            inference(s, endpoint, headers, body).await
        },
    )
}

/// Runs one inference request whose body has been read (or answers why it could not be, in
/// the endpoint's dialect).
pub async fn inference(
    state: Arc<AppState>,
    endpoint: Endpoint,
    headers: HeaderMap,
    body: Result<Bytes, BodyError>,
) -> Response {
    match body {
        // Boxed: the pipeline's state (~8 KB at its largest suspension point) is built once on
        // the heap instead of being copied into each enclosing future (hyper's dispatcher, the
        // service's `Either`, this function's own state) as it is moved.
        Ok(b) => Box::pin(pipeline::handle(state, endpoint, headers, b)).await,
        Err(rej) => GatewayError::from(GatewayFailure::UnreadableBody {
            status: rej.status,
            detail: &rej.detail,
            limit_bytes: state.max_request_bytes,
        })
        .into_response_in(endpoint.dialect()),
    }
}

/// `GET /v1/responses/{id}`: a Response the gateway produced by translation, or one a
/// passthrough upstream stores (fetched from the deployment that produced it), kept for the
/// store's TTL. Only for callers [`crate::response_owner`] admits: anyone else gets the 404 of
/// an unknown id, and nothing is fetched.
async fn get_response(
    State(s): State<Arc<AppState>>,
    h: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let identity = match s.auth.authenticate(&h, s.gov()) {
        Ok(i) => i,
        Err(e) => return GatewayError::from(e).into_response(),
    };
    match s.responses.get_for(&id, &identity) {
        Some(e) if !e.response.is_null() => axum::Json(e.response).into_response(),
        Some(e) => match deployment_of(&s, &e.model_group, &e.deployment_id) {
            Some(dep) => fetch_upstream_response(&s, &dep, &id).await,
            None => response_not_found(&id).into_response(),
        },
        None => response_not_found(&id).into_response(),
    }
}

/// The deployment `id` of group `group` in the current router (the snapshot is released
/// before any await).
fn deployment_of(
    s: &AppState,
    group: &str,
    id: &str,
) -> Option<Arc<tollgate_providers::Deployment>> {
    let router = s.router.load();
    let (g, _) = router.resolve(group).ok()?;
    g.deployments
        .iter()
        .find(|d| d.deployment.id == id)
        .map(|d| Arc::clone(&d.deployment))
}

/// Relays `GET {base}/responses/{id}` from the deployment that stores the response.
async fn fetch_upstream_response(
    s: &AppState,
    dep: &tollgate_providers::Deployment,
    id: &str,
) -> Response {
    let path = format!("/responses/{id}");
    match s.client.get(dep, &path, dep.timeouts).await {
        Ok(up) => {
            let (status, headers) = (up.status, up.headers.clone());
            match up
                .read_body(crate::relay::unary::MAX_ERROR_BODY.max(dep.max_response_bytes))
                .await
            {
                Ok(b) => crate::relay::unary::relay_body(
                    status,
                    &headers,
                    b,
                    tollgate_protocol::Dialect::OpenAi,
                ),
                Err(e) => upstream_failure(&e, dep).into_response(),
            }
        }
        Err(e) => upstream_failure(&e, dep).into_response(),
    }
}

/// A transport failure fetching from `dep` (its timeouts are the deployment's own).
fn upstream_failure<'a>(
    error: &'a tollgate_providers::UpstreamError,
    dep: &'a tollgate_providers::Deployment,
) -> GatewayFailure<'a> {
    GatewayFailure::Upstream {
        error,
        request_limit: false,
        deployment: Some(&dep.id),
    }
}

fn model_object(id: &str) -> serde_json::Value {
    json!({"id": id, "object": "model", "created": MODEL_CREATED, "owned_by": "openai"})
}

/// `GET /v1/models`: OpenAI's list shape, with the model groups, aliases and wildcard groups
/// the caller may use ([`visible_models`]).
async fn models(State(s): State<Arc<AppState>>, h: HeaderMap) -> Response {
    let identity = match s.auth.authenticate(&h, s.gov()) {
        Ok(i) => i,
        Err(e) => return GatewayError::from(e).into_response(),
    };
    let data: Vec<_> = visible_models(&s, &identity)
        .iter()
        .map(|n| model_object(n))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// The model names the caller may call: every configured group and router alias, the
/// wildcard groups by their pattern (`bedrock/*`, as LiteLLM lists them; never the catch-all
/// `*`, which names no model), plus the key's and its team's aliases and the key's own names
/// and patterns that a wildcard group serves (`openai/gpt-4o-mini`, `bedrock/anthropic.*`),
/// keeping only those whose target the key may use — the same check the inference routes make.
/// Never a sentinel (`all-team-models`) or an access-group name.
pub fn visible_models(s: &AppState, identity: &Identity) -> Vec<String> {
    let router = s.router.load();
    let mut names: Vec<String> = router.public_names().map(str::to_owned).collect();
    for g in router.wildcard_groups() {
        if g.name != "*" && !names.contains(&g.name) {
            names.push(g.name.clone());
        }
    }
    let (Some(p), Some(gov)) = (identity.principal(), s.gov()) else {
        return names;
    };
    let aliases = [
        p.key.aliases.as_object(),
        p.team
            .as_ref()
            .and_then(|t| t.metadata.get("model_aliases"))
            .and_then(|v| v.as_object()),
    ];
    for m in aliases.into_iter().flatten() {
        for a in m.keys() {
            if !names.contains(a) {
                names.push(a.clone());
            }
        }
    }
    let groups = gov.access_groups();
    // Names and patterns the key lists that only a wildcard group serves (`openai/gpt-4o-mini`
    // or `openai/gpt-*` under `openai/*`); sentinels and access-group names are never listed.
    for n in &p.key.models {
        if !matches!(
            n.as_str(),
            "*" | "all-proxy-models" | "all-team-models" | "no-default-models"
        ) && groups.get(n).is_none()
            && !names.contains(n)
            && router.resolve(n).is_ok_and(|(g, _)| g.wildcard)
        {
            names.push(n.clone());
        }
    }
    names.retain(|n| {
        let target = p.alias(n).unwrap_or_else(|| n.clone());
        match router.resolve(&target) {
            Ok((g, _)) => {
                let name = if g.wildcard {
                    target.as_str()
                } else {
                    g.name.as_str()
                };
                p.model_denial(name, &groups).is_none()
            }
            Err(_) => false,
        }
    });
    // The key's team's own deployments, under their public names (LiteLLM lists
    // `team_public_model_name` for the team's keys).
    if let Some(team) = p.key.team_id.as_deref() {
        for (public, _) in router.teams().of_team(team) {
            if !names.iter().any(|n| n == public) && p.team_model_denial(public, &groups).is_none()
            {
                names.push(public.to_owned());
            }
        }
    }
    names
}

/// `GET /v1/models/{id}`. The id comes percent-decoded from the path: a name the gate refuses
/// (`a%2F..%2Fb`) is a 400, as in a request body.
async fn model(State(s): State<Arc<AppState>>, h: HeaderMap, Path(id): Path<String>) -> Response {
    let identity = match s.auth.authenticate(&h, s.gov()) {
        Ok(i) => i,
        Err(e) => return GatewayError::from(e).into_response(),
    };
    if let Err(e) = crate::model_names::check(&id, "model") {
        return e.into_response();
    }
    if visible_models(&s, &identity).contains(&id) {
        return axum::Json(model_object(&id)).into_response();
    }
    GatewayFailure::UnknownModelId { id: &id }.into_response()
}

async fn liveliness() -> Response {
    axum::Json("I'm alive!").into_response()
}

async fn readiness(State(s): State<Arc<AppState>>) -> Response {
    if s.shutting_down.load(Ordering::Relaxed) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "shutting_down"})),
        )
            .into_response();
    }
    let db = if s.gate.is_some() {
        "connected"
    } else {
        "Not connected"
    };
    let mut body = json!({"status": "healthy", "db": db, "litellm_version": crate::VERSION});
    if let Some(b) = s.gate.as_ref().and_then(|g| g.batched.as_ref()) {
        body["redis_counters"] = redis_counters(&b.round_trips().snapshot());
        // Still 200: with Redis down a replica serves what the Redis-down policy allows
        // (limits locally, budgets refused), and taking every replica out would serve nothing.
        body["redis_counters"]["status"] = json!(if b.redis_answering() {
            "connected"
        } else {
            "unreachable: the last reservation failed; the Redis-down policy is in force"
        });
    }
    axum::Json(body).into_response()
}

/// The shared counters' Redis traffic since start (Tollgate's addition to LiteLLM's
/// readiness answer): round trips before the upstream call (one reservation per admitted or
/// refused attempt) and after it (settlement batches), and what the batcher did. Counts, no
/// secrets.
fn redis_counters(c: &tollgate_governance::admission::fleet::RoundTripCounts) -> serde_json::Value {
    let per = |n: u64| {
        if c.before_call == 0 {
            0.0
        } else {
            n as f64 / c.before_call as f64
        }
    };
    json!({
        "round_trips_before_call": c.before_call,
        "round_trips_after_call": c.after_call,
        "after_call_per_reservation": per(c.after_call),
        "settled_ops": c.settled_ops,
        "batches": c.batches,
        "dropped_ops": c.dropped,
        "failed_ops": c.failed_ops,
        "late_ops": c.late_ops,
        "max_delivery_ms": c.max_delivery_ms,
        "local_reservations": c.local_reserves,
        "refused_reservations": c.refused,
        "reseeds": c.reseeds,
    })
}

async fn method_not_allowed(method: http::Method, uri: http::Uri) -> Response {
    GatewayFailure::MethodNotAllowed {
        method: &method,
        path: uri.path(),
    }
    .into_response()
}

/// 404 for an unknown path. A management API path while governance is off gets a 400 that
/// says how to turn it on instead: LiteLLM answers a management call it cannot serve (no
/// database) with a 400 too (`no_db_connection`).
async fn not_found(uri: http::Uri, admin_mounted: bool) -> Response {
    let path = uri.path();
    if !admin_mounted && tollgate_admin::is_management_path(path) {
        return GatewayFailure::ManagementApiOff { path }.into_response();
    }
    GatewayFailure::UnknownRoute { path }.into_response()
}
