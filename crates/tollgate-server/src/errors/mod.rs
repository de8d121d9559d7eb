//! The error catalogue: every failure the gateway answers itself, and how it becomes an HTTP
//! response in the client's dialect.
//!
//! - [`GatewayFailure`] (`failure.rs`, wording in `messages.rs`): one variant per cause; status,
//!   OpenAI `type`, `code`, `param`, message and log level are decided there and nowhere else.
//!   Converting a failure into a [`GatewayError`] logs it, once.
//! - [`GatewayError`]: the rendered envelope plus headers, as the pipeline carries it; also
//!   built from envelopes made elsewhere (an upstream error reshaped for another dialect, a
//!   translation refusal), which are relayed, not logged as the gateway's own.
//! - [`StartupError`] (`startup.rs`): why the binary could not start, with its exit code.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use tollgate_protocol::{BodyError, Dialect, ErrorEnvelope};
use tollgate_providers::UpstreamError;

use crate::auth::AuthError;

mod causes;
mod class;
mod failure;
mod messages;
mod startup;
#[cfg(test)]
mod tests;

pub use causes::{ClientsideRefusal, MockException};
pub use class::{classify, upstream_error_class, upstream_failure};
pub use failure::GatewayFailure;
pub use startup::StartupError;

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
        GatewayFailure::Body(e).into()
    }
}

impl From<AuthError> for GatewayError {
    fn from(e: AuthError) -> Self {
        GatewayFailure::Auth(e).into()
    }
}

impl From<&UpstreamError> for GatewayError {
    fn from(e: &UpstreamError) -> Self {
        Self::from_upstream(e, false)
    }
}

impl GatewayError {
    /// The client-facing error for a transport-level upstream failure
    /// ([`GatewayFailure::Upstream`]): 504 `upstream_timeout` for a timeout (naming whose limit
    /// it was: the request's own, when `request_limit` says the client set one shorter than the
    /// deployment's), 502 otherwise.
    pub fn from_upstream(e: &UpstreamError, request_limit: bool) -> Self {
        GatewayFailure::Upstream {
            error: e,
            request_limit,
            deployment: None,
        }
        .into()
    }

    /// The HTTP response in `dialect`: the envelope's status (500 if it is not one), its JSON
    /// in the dialect's shape ([`ErrorEnvelope::to_json`]), `content-type: application/json`
    /// and the extra headers.
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

/// A failure answered on a route that only speaks the OpenAI dialect.
impl IntoResponse for GatewayFailure<'_> {
    fn into_response(self) -> Response {
        GatewayError::from(self).into_response()
    }
}
