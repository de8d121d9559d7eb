//! The one error type of this crate.

/// Why a translation could not be done.
///
/// Request-side variants ([`TranslateError::Unsupported`], [`TranslateError::InvalidRequest`])
/// are the client's fault and map to HTTP 400 `invalid_request_error` in the client's dialect
/// ([`TranslateError::status`]). Response-side variants mean the upstream sent something that
/// cannot be read; they map to 502.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// The request uses a field the target dialect cannot express (e.g. `n > 1` toward
    /// Anthropic). `field` names it the way the client wrote it.
    #[error("`{field}` is not supported by this deployment's API: {reason}")]
    Unsupported {
        /// The client's field, e.g. `n` or `messages[2].content[0].input_audio`.
        field: String,
        /// What cannot be done.
        reason: String,
    },
    /// The request is malformed (missing required field, wrong type, tool-call arguments that
    /// are not JSON, ...).
    #[error("invalid `{field}`: {reason}")]
    InvalidRequest {
        /// The client's field.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The upstream's non-stream response body is not the shape its dialect defines.
    #[error("upstream response cannot be translated: {0}")]
    InvalidResponse(String),
    /// An upstream stream event could not be read (bad JSON). The translator has already written
    /// a mid-stream error event in the client's dialect and will ignore further input.
    #[error("upstream stream event cannot be translated: {0}")]
    InvalidStreamEvent(String),
}

impl TranslateError {
    /// HTTP status for the client: 400 for request errors, 502 for upstream errors.
    pub fn status(&self) -> u16 {
        match self {
            Self::Unsupported { .. } | Self::InvalidRequest { .. } => 400,
            Self::InvalidResponse(_) | Self::InvalidStreamEvent(_) => 502,
        }
    }

    /// The offending request field, if the error names one (OpenAI `param`).
    pub fn param(&self) -> Option<&str> {
        match self {
            Self::Unsupported { field, .. } | Self::InvalidRequest { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The error as a gateway error envelope (render it with
    /// [`tollgate_protocol::ErrorEnvelope::to_json`] in the client's dialect).
    pub fn to_envelope(&self) -> tollgate_protocol::ErrorEnvelope {
        let status = self.status();
        let kind = if status == 400 {
            "invalid_request_error"
        } else {
            "server_error"
        };
        let env = tollgate_protocol::ErrorEnvelope::new(status, kind, self.to_string());
        match self.param() {
            Some(p) => env.with_param(p),
            None => env,
        }
    }

    pub(crate) fn unsupported(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Unsupported {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidRequest {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
