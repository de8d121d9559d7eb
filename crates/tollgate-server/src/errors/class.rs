//! How a failed attempt counts for the router ([`FailureClass`]: retries, cooldowns,
//! fallbacks), decided next to what the client is answered.

use std::time::Duration;

use http::{HeaderMap, StatusCode};
use serde_json::Value;
use tollgate_providers::UpstreamError;
use tollgate_router::FailureClass;

use super::{GatewayError, GatewayFailure};

/// The failure class of a transport-level error. A timeout counts against the deployment only
/// when it is the deployment's own limit, not a shorter one the client asked for
/// (`client_shortened`).
pub fn upstream_error_class(e: &UpstreamError, client_shortened: bool) -> FailureClass {
    match e {
        UpstreamError::Timeout { .. } if client_shortened => FailureClass::ClientTimeout,
        UpstreamError::Timeout { .. } => FailureClass::Timeout,
        UpstreamError::Connect(_) | UpstreamError::Read(_) => FailureClass::Connection,
        UpstreamError::TooLarge { .. } | UpstreamError::Build(_) => FailureClass::ServerError,
    }
}

/// A transport failure calling `deployment`: the client's error ([`GatewayFailure::Upstream`],
/// logged once) and the router's class ([`upstream_error_class`]).
pub fn upstream_failure(
    e: &UpstreamError,
    deployment: &str,
    client_shortened: bool,
) -> (GatewayError, FailureClass) {
    let failure = GatewayFailure::Upstream {
        error: e,
        request_limit: client_shortened,
        deployment: Some(deployment),
    };
    (failure.into(), upstream_error_class(e, client_shortened))
}

/// Class and `retry-after` of an upstream error response (any dialect's error body): the
/// `code` (else `type`) and message of `error` (or of the body itself; TGI and Ollama write
/// the message as the `error` string), and `retry-after-ms` (else `retry-after`, seconds).
pub fn classify(
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
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| err.as_str());
    let message = message.unwrap_or("");
    let retry_after = seconds(headers, "retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0))
        .or_else(|| seconds(headers, "retry-after").map(|s| Duration::from_secs_f64(s.max(0.0))));
    (
        FailureClass::from_upstream(status.as_u16(), code, message),
        retry_after,
    )
}

/// A numeric header, if present and valid.
fn seconds(headers: &HeaderMap, name: &str) -> Option<f64> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
}
