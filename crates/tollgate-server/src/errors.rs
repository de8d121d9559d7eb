//! Gateway errors and how they become HTTP responses in the client's dialect.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use tollgate_protocol::{BodyError, Dialect, ErrorEnvelope};
use tollgate_providers::UpstreamError;
use tollgate_providers::client::TimeoutPhase;

/// An error answered by the gateway itself (upstream error bodies are relayed, not rebuilt).
#[derive(Debug)]
pub struct GatewayError {
    /// The envelope (status, type, message, param, code).
    pub envelope: ErrorEnvelope,
    /// Extra response headers (e.g. `retry-after`).
    pub headers: Vec<(http::HeaderName, HeaderValue)>,
}

impl From<ErrorEnvelope> for GatewayError {
    fn from(envelope: ErrorEnvelope) -> Self {
        Self {
            envelope,
            headers: Vec::new(),
        }
    }
}

impl From<BodyError> for GatewayError {
    fn from(e: BodyError) -> Self {
        let mut env = match &e {
            // Anthropic's wording for its one required scalar (Messages API errors).
            BodyError::Missing("max_tokens") => {
                ErrorEnvelope::bad_request("max_tokens: Field required")
            }
            _ => ErrorEnvelope::bad_request(e.to_string()),
        };
        match &e {
            BodyError::Missing(f) => {
                env = env.with_param(*f).with_code("missing_required_parameter");
            }
            BodyError::WrongType { field, .. } => {
                env = env.with_param(*field).with_code("invalid_type");
            }
            BodyError::EmptyArray(field) => {
                env = env.with_param(*field).with_code("empty_array");
            }
            BodyError::InvalidJson(_) | BodyError::NotAnObject => {}
        }
        env.into()
    }
}

impl From<&UpstreamError> for GatewayError {
    fn from(e: &UpstreamError) -> Self {
        Self::from_upstream(e, false)
    }
}

impl GatewayError {
    /// The client-facing error for a transport-level upstream failure: 504 `upstream_timeout`
    /// for a timeout (naming whose limit it was: the request's own, when
    /// `request_limit` says the client set one shorter than the deployment's), 502 otherwise.
    pub fn from_upstream(e: &UpstreamError, request_limit: bool) -> Self {
        let env = match e {
            UpstreamError::Timeout { phase, limit_ms } => {
                let what = match phase {
                    TimeoutPhase::FirstByte => "did not start answering within",
                    TimeoutPhase::Total => "did not finish answering within",
                    TimeoutPhase::Idle => "sent nothing for",
                };
                ErrorEnvelope::new(
                    504,
                    "timeout",
                    format!(
                        "The upstream {what} {limit_ms} ms ({}).",
                        if request_limit {
                            "the request's timeout"
                        } else {
                            "the deployment's timeout"
                        }
                    ),
                )
                .with_code("upstream_timeout")
            }
            UpstreamError::TooLarge { .. } => {
                ErrorEnvelope::new(502, "server_error", e.to_string())
                    .with_code("upstream_response_too_large")
            }
            UpstreamError::Connect(_) | UpstreamError::Read(_) | UpstreamError::Build(_) => {
                ErrorEnvelope::new(502, "server_error", e.to_string())
                    .with_code("upstream_unreachable")
            }
        };
        env.into()
    }
}

impl GatewayError {
    /// The HTTP response in `dialect`.
    pub fn into_response_in(self, dialect: Dialect) -> Response {
        let status =
            StatusCode::from_u16(self.envelope.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (status, Bytes::from(self.envelope.to_json(dialect))).into_response();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (k, v) in self.headers {
            h.insert(k, v);
        }
        resp
    }
}

/// Builds a `GatewayError` response in the OpenAI dialect (used by routes that only speak it).
impl IntoResponse for GatewayError {
    fn into_response(self) -> Response {
        self.into_response_in(Dialect::OpenAi)
    }
}
