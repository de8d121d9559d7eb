//! `GET /health`: LiteLLM's active health check. Every concrete deployment (or those of one
//! model group, `?model=NAME`) is sent one minimal request in its own dialect, all at once,
//! and the answer sorts them into healthy and unhealthy endpoints:
//!
//! ```json
//! {"healthy_endpoints": [{"model": "openai/gpt-4o", "model_name": "gpt-4o",
//!                         "model_id": "…", "api_base": "https://…/v1"}],
//!  "unhealthy_endpoints": [{…, "error": "upstream answered 500: …"}],
//!  "healthy_count": 1, "unhealthy_count": 1}
//! ```
//!
//! Only the master key may ask (each call costs an upstream request per deployment); without
//! a master key configured anyone may, as every route. `?model=` takes what a request's
//! `model` takes: a group, an alias, or a name a wildcard group matches (its wildcard
//! deployments are then asked for that name). Without it, wildcard deployments are skipped:
//! there is no model to ask for. The probes go around the router: they neither count towards
//! a deployment's usage nor cool it down. An entry never carries a key or a header, and its
//! `api_base` is masked as `check-config` masks it.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_config::redact::redact_url_userinfo;
use tollgate_protocol::Dialect;
use tollgate_providers::{Deployment, WireDialect};
use tollgate_router::upstream_for;

use crate::auth::Identity;
use crate::errors::{GatewayError, GatewayFailure};
use crate::state::AppState;

/// Response bodies read from a probe: enough for any error, never a large answer.
const MAX_PROBE_BODY: usize = 64 * 1024;

/// Longest wait for one probe, connection to last byte (LiteLLM's
/// `HEALTH_CHECK_TIMEOUT_SECONDS`, 60 s); a deployment's own shorter `timeout` ends it sooner,
/// with the chat route's wording.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// `GET /health` query: `model` selects one model group.
#[derive(Debug, Deserialize)]
pub struct HealthQuery {
    model: Option<String>,
}

/// The handler. Errors: 401 without a valid key, 403 for a key other than the master key,
/// 400 `invalid_model_name` for a `model` the gate refuses (`a/../b`), 404 `model_not_found`
/// for a `model` that routes to no deployment.
pub async fn health(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(q): Query<HealthQuery>,
) -> Response {
    match s.auth.authenticate(&headers, s.gov()) {
        Ok(Identity::Master | Identity::Open) => {}
        Ok(Identity::Key(_)) => {
            return GatewayFailure::HealthNeedsMasterKey.into_response();
        }
        Err(e) => return GatewayError::from(e).into_response(),
    }
    if let Some(m) = &q.model
        && let Err(e) = crate::model_names::check(m, "model")
    {
        return e.into_response();
    }
    let router = s.router.load_full();
    // (model group, deployment, upstream model to ask for)
    let mut targets: Vec<(String, Arc<Deployment>, String)> = Vec::new();
    match q.model.as_deref() {
        None => {
            for g in router.groups() {
                for d in g.deployments.iter().filter(|d| !d.deployment.is_wildcard()) {
                    let dep = Arc::clone(&d.deployment);
                    let model = dep.upstream_model.clone();
                    targets.push((g.name.clone(), dep, model));
                }
            }
        }
        Some(m) => {
            if let Ok((g, matched)) = router.resolve(m) {
                for d in &g.deployments {
                    let model = upstream_for(&d.deployment.upstream_model, &m.into(), matched);
                    targets.push((
                        g.name.clone(),
                        Arc::clone(&d.deployment),
                        model.into_owned(),
                    ));
                }
            }
        }
    }
    if let Some(m) = &q.model
        && targets.is_empty()
    {
        return GatewayFailure::NoHealthTarget { model: m }.into_response();
    }
    let results =
        futures_util::future::join_all(targets.iter().map(|(_, dep, model)| probe(&s, dep, model)))
            .await;
    let (mut healthy, mut unhealthy) = (Vec::new(), Vec::new());
    for ((group, dep, model), result) in targets.iter().zip(results) {
        let mut entry = json!({
            "model": format!("{}/{model}", dep.provider.name),
            "model_name": group,
            "model_id": dep.id,
            "api_base": redact_url_userinfo(&dep.base_url),
        });
        match result {
            Ok(()) => healthy.push(entry),
            Err(error) => {
                tracing::warn!(deployment = %dep.id, %error, "health check failed");
                entry["error"] = Value::String(error);
                unhealthy.push(entry);
            }
        }
    }
    axum::Json(json!({
        "healthy_count": healthy.len(),
        "unhealthy_count": unhealthy.len(),
        "healthy_endpoints": healthy,
        "unhealthy_endpoints": unhealthy,
    }))
    .into_response()
}

/// The upstream path and body of a deployment's probe: the smallest request its dialect and
/// `model_info.mode` accept (one output token; an embedding of one word).
fn probe_request(dep: &Deployment, model: &str) -> (&'static str, Value) {
    let ping = json!([{"role": "user", "content": "ping"}]);
    match dep.dialect() {
        WireDialect::Anthropic => (
            "/v1/messages",
            json!({"model": model, "max_tokens": 1, "messages": ping}),
        ),
        _ if dep.mode.as_deref() == Some("embedding") => {
            ("/embeddings", json!({"model": model, "input": ["ping"]}))
        }
        _ => (
            "/chat/completions",
            json!({"model": model, "max_tokens": 1, "messages": ping}),
        ),
    }
}

/// Sends the probe; `Err` carries what an operator needs to see (status and the upstream's
/// error text, or the transport error), never a secret.
async fn probe(s: &AppState, dep: &Deployment, model: &str) -> Result<(), String> {
    tokio::time::timeout(PROBE_TIMEOUT, probe_once(s, dep, model))
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())))
}

/// The chat route's message for a transport failure of a probe (reported in the health
/// answer and logged there, not as a request's failure).
fn probe_failure(error: &tollgate_providers::UpstreamError, dep: &Deployment) -> String {
    GatewayFailure::Upstream {
        error,
        request_limit: false,
        deployment: Some(&dep.id),
    }
    .message()
}

async fn probe_once(s: &AppState, dep: &Deployment, model: &str) -> Result<(), String> {
    if dep.mock.is_some() {
        return Ok(()); // answered in process: nothing upstream to check
    }
    let (path, body) = probe_request(dep, model);
    let body = Bytes::from(body.to_string());
    let resp = s
        .client
        .post_json(
            dep,
            path,
            body,
            dep.timeouts.for_request(false, None, None),
            &[],
        )
        .await
        .map_err(|e| probe_failure(&e, dep))?;
    let status = resp.status;
    let text = resp
        .read_body(MAX_PROBE_BODY)
        .await
        .map_err(|e| probe_failure(&e, dep))?;
    if status.is_success() {
        // A 200 from something that is not the API (a proxy's HTML page) is no answer.
        return serde_json::from_slice::<serde::de::IgnoredAny>(&text)
            .map(drop)
            .map_err(|_| {
                format!(
                    "upstream answered {} with a body that is not JSON: {}",
                    status.as_u16(),
                    error_text(status.as_u16(), &text)
                )
            });
    }
    Err(format!(
        "upstream answered {}: {}",
        status.as_u16(),
        error_text(status.as_u16(), &text)
    ))
}

/// The upstream's error message, read as the chat route reads it
/// ([`tollgate_translate::errors::map_upstream_error`]: `error.message` in OpenAI's, Anthropic's
/// and Gemini's shape, Bedrock's `message`, else the body's text; at most 2 KiB).
fn error_text(status: u16, body: &[u8]) -> String {
    tollgate_translate::errors::map_upstream_error(status, body, Dialect::OpenAi).message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text_takes_the_message_else_the_body() {
        let openai =
            br#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
        assert_eq!(error_text(401, openai), "Incorrect API key provided");
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(error_text(529, anthropic), "Overloaded");
        assert_eq!(error_text(502, b"Bad Gateway"), "Bad Gateway");
        // Cut at 2 KiB on a character boundary (1,024 two-byte characters).
        let long = "é".repeat(3_000);
        let cut = error_text(500, long.as_bytes());
        assert_eq!(cut.chars().count(), 1_024);
        assert!(long.starts_with(&cut));
    }
}
