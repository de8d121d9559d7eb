//! The error JSON of every management route, in LiteLLM's / OpenAI's shape
//! (`ProxyException.to_dict`, litellm-surface §8):
//!
//! ```json
//! {"error": {"message": "...", "type": "not_found_error", "param": null, "code": "404"}}
//! ```
//!
//! `code` is the HTTP status as a string. Messages are scrubbed: anything that looks like a
//! virtual key (`sk-…`) is replaced by its masked form (`sk-...abcd`) before it leaves.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;
use tollgate_governance::admission::CounterStoreError;
use tollgate_governance::store::{StoreError, mask_key};

use crate::AuthFailure;

/// A refused or failed management call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// LiteLLM error `type` (`bad_request_error`, `not_found_error`, `auth_error`, ...).
    pub error_type: String,
    /// Human message (never a raw key).
    pub message: String,
}

/// Result of a management handler.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with a scrubbed message.
    pub fn new(status: StatusCode, error_type: &str, message: impl AsRef<str>) -> Self {
        Self {
            status,
            error_type: error_type.to_owned(),
            message: scrub(message.as_ref()),
        }
    }

    /// 400 `bad_request_error`: invalid JSON, a wrong field type, a bad duration, a key not
    /// starting with `sk-`, a reference to an entity that does not exist.
    pub fn bad_request(message: impl AsRef<str>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request_error", message)
    }

    /// 404 `not_found_error`: the key, team, user, customer or budget the route acts on.
    pub fn not_found(message: impl AsRef<str>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found_error", message)
    }

    /// 403 `auth_error`: the caller's role does not allow the route.
    pub fn forbidden(message: impl AsRef<str>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "auth_error", message)
    }

    /// The caller could not be authenticated (status and type from [`AuthFailure`]).
    pub fn auth(f: AuthFailure) -> Self {
        let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::UNAUTHORIZED);
        Self::new(status, f.error_type, f.message)
    }
}

impl From<StoreError> for ApiError {
    /// 500 `internal_server_error`. Store messages carry no raw key (rows hold hashes only).
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "management write/read failed in the governance store");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_server_error",
            format!("Internal Server Error, governance store: {e}"),
        )
    }
}

impl From<CounterStoreError> for ApiError {
    /// 503 `service_unavailable`: the shared spend counters (Redis) did not answer, so the
    /// management read or write did not happen (its message names no secret: the client's
    /// error carries no address or credentials).
    fn from(e: CounterStoreError) -> Self {
        tracing::error!(error = %e, "management call failed on the shared spend counters");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "The budget and rate-limit store is unavailable; retry later.",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message,
            "type": self.error_type,
            "param": null,
            "code": self.status.as_u16().to_string(),
        }});
        (self.status, Json(body)).into_response()
    }
}

/// Replaces every `sk-<chars>` run in `msg` by its masked form (`sk-...` + last 4).
pub(crate) fn scrub(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find("sk-") {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let body_len = tail[3..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(tail.len() - 3);
        if body_len == 0 {
            out.push_str("sk-");
        } else {
            out.push_str(&mask_key(&tail[..3 + body_len]));
        }
        rest = &tail[3 + body_len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_masks_keys_and_leaves_masked_ones() {
        assert_eq!(
            scrub("invalid type: string \"sk-test-CANARY2\", expected f64"),
            "invalid type: string \"sk-...ARY2\", expected f64"
        );
        assert_eq!(scrub("key sk-...abcd"), "key sk-...abcd");
        assert_eq!(scrub("a sk-1 b sk-22222"), "a sk-... b sk-...2222");
        assert_eq!(scrub("no key"), "no key");
    }

    #[test]
    fn error_json_shape() {
        let e = ApiError::not_found("Team not found, passed team_id=t1");
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        assert_eq!(e.error_type, "not_found_error");
    }
}
