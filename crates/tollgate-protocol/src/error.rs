//! Error envelopes in each client dialect.
//!
//! - OpenAI: `{"error":{"message","type","param","code"}}` (OpenAI API reference, "Error codes";
//!   the Python SDK reads `type`, `param` and `code` from the inner object).
//! - Anthropic: `{"type":"error","error":{"type","message"}}` (Anthropic API reference, "Errors").
//!
//! Mid-stream errors are SSE events: OpenAI `data: {"error":{...}}` (the SDK raises on any data
//! object carrying `error`), Anthropic `event: error` with the same envelope as a non-stream error.

use serde::Serialize;

/// The API dialect a client speaks; errors go back in that dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Chat Completions, Completions, Embeddings, Responses.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// A gateway-generated error, renderable in either dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorEnvelope {
    /// HTTP status code.
    pub status: u16,
    /// Human-readable message. Never contains a secret.
    pub message: String,
    /// OpenAI `type`, e.g. `invalid_request_error`.
    pub kind: String,
    /// OpenAI `param`, e.g. `model`.
    pub param: Option<String>,
    /// OpenAI `code`, e.g. `model_not_found`.
    pub code: Option<String>,
}

#[derive(Serialize)]
struct OpenAiInner<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

#[derive(Serialize)]
struct OpenAiOuter<'a> {
    error: OpenAiInner<'a>,
}

#[derive(Serialize)]
struct AnthropicInner<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
struct AnthropicOuter<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    error: AnthropicInner<'a>,
}

impl ErrorEnvelope {
    /// An error with the given status, OpenAI type and message.
    pub fn new(status: u16, kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            kind: kind.into(),
            param: None,
            code: None,
        }
    }

    /// Sets `param`.
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Sets `code`.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// 400 `invalid_request_error`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "invalid_request_error", message)
    }

    /// The JSON body in `dialect`.
    pub fn to_json(&self, dialect: Dialect) -> Vec<u8> {
        let out = match dialect {
            Dialect::OpenAi => serde_json::to_vec(&OpenAiOuter {
                error: OpenAiInner {
                    message: &self.message,
                    kind: &self.kind,
                    param: self.param.as_deref(),
                    code: self.code.as_deref(),
                },
            }),
            Dialect::Anthropic => serde_json::to_vec(&AnthropicOuter {
                kind: "error",
                error: AnthropicInner {
                    kind: anthropic_type(self.status, &self.kind),
                    message: &self.message,
                },
            }),
        };
        // Serialising plain strings into a Vec cannot fail.
        out.unwrap_or_default()
    }

    /// The SSE event that reports this error after a stream has started.
    pub fn to_sse_event(&self, dialect: Dialect) -> Vec<u8> {
        let json = self.to_json(dialect);
        let mut out = Vec::with_capacity(json.len() + 24);
        if dialect == Dialect::Anthropic {
            out.extend_from_slice(b"event: error\n");
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&json);
        out.extend_from_slice(b"\n\n");
        out
    }
}

/// Anthropic's error `type` for a status (Anthropic API reference, "HTTP errors").
pub fn anthropic_type(status: u16, openai_kind: &str) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        s if s >= 500 => "api_error",
        _ if openai_kind == "authentication_error" => "authentication_error",
        _ => "invalid_request_error",
    }
}

/// The OpenAI error `type` LiteLLM derives from a status when the upstream gave none.
pub fn openai_type_for_status(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        s if s >= 500 => "server_error",
        _ => "invalid_request_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_shape() {
        let e = ErrorEnvelope::new(404, "invalid_request_error", "The model `x` does not exist")
            .with_param("model")
            .with_code("model_not_found");
        let v: serde_json::Value = serde_json::from_slice(&e.to_json(Dialect::OpenAi)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"error":{"message":"The model `x` does not exist","type":"invalid_request_error","param":"model","code":"model_not_found"}})
        );
    }

    #[test]
    fn anthropic_shape_and_types() {
        let e = ErrorEnvelope::new(401, "authentication_error", "bad key");
        let v: serde_json::Value = serde_json::from_slice(&e.to_json(Dialect::Anthropic)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type":"error","error":{"type":"authentication_error","message":"bad key"}})
        );
        assert_eq!(anthropic_type(529, "x"), "overloaded_error");
        assert_eq!(anthropic_type(404, "x"), "not_found_error");
    }

    #[test]
    fn sse_events() {
        let e = ErrorEnvelope::new(502, "server_error", "upstream closed");
        let o = e.to_sse_event(Dialect::OpenAi);
        assert!(o.starts_with(b"data: {\"error\":{"));
        assert!(o.ends_with(b"\n\n"));
        let a = e.to_sse_event(Dialect::Anthropic);
        assert!(a.starts_with(b"event: error\ndata: {\"type\":\"error\""));
    }
}
