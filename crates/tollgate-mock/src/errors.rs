//! Provider error bodies per dialect and status (wire-formats.md §1.4 and §2.4).

use serde_json::{Value, json};

/// Which provider's wire format a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI (`/chat/completions`, `/completions`, `/embeddings`, `/responses`, `/models`).
    OpenAi,
    /// Anthropic (`/messages`).
    Anthropic,
}

/// OpenAI `(type, code, message)` for a status, following what the API sends:
/// 400 `invalid_request_error`; 401 `invalid_api_key`; 403 `permission_denied`;
/// 404 `model_not_found`; 429 type `requests`, code `rate_limit_exceeded`;
/// 500 `server_error`; 503 `server_error`/`overloaded`; other 5xx `server_error`.
pub fn openai_error_parts(
    status: u16,
    model: &str,
) -> (&'static str, Option<&'static str>, String) {
    match status {
        400 => ("invalid_request_error", None, "Invalid request (mock).".to_owned()),
        401 => (
            "invalid_request_error",
            Some("invalid_api_key"),
            "Incorrect API key provided: sk-***. You can find your API key in your account settings."
                .to_owned(),
        ),
        403 => (
            "invalid_request_error",
            Some("permission_denied"),
            "You are not allowed to sample from this model.".to_owned(),
        ),
        404 => (
            "invalid_request_error",
            Some("model_not_found"),
            format!("The model `{model}` does not exist or you do not have access to it."),
        ),
        408 => ("timeout_error", Some("timeout"), "Request timed out.".to_owned()),
        409 => ("conflict_error", None, "Conflict (mock).".to_owned()),
        422 => (
            "invalid_request_error",
            None,
            "Failed to deserialize the JSON body into the target type.".to_owned(),
        ),
        429 => (
            "requests",
            Some("rate_limit_exceeded"),
            format!(
                "Rate limit reached for {model} on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms."
            ),
        ),
        500 => (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!".to_owned(),
        ),
        502 => ("server_error", Some("bad_gateway"), "Bad gateway.".to_owned()),
        503 => (
            "server_error",
            Some("overloaded"),
            "The engine is currently overloaded, please try again later.".to_owned(),
        ),
        504 => ("server_error", Some("timeout"), "Gateway timeout.".to_owned()),
        s if s >= 500 => ("server_error", None, format!("Server error {s} (mock).")),
        s => ("invalid_request_error", None, format!("Request failed with status {s} (mock).")),
    }
}

/// Anthropic `(error.type, message)` for a status (wire-formats.md §2.4).
pub fn anthropic_error_parts(status: u16) -> (&'static str, &'static str) {
    match status {
        400 => ("invalid_request_error", "Invalid request (mock)."),
        401 => ("authentication_error", "invalid x-api-key"),
        402 => ("billing_error", "Your credit balance is too low."),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => (
            "not_found_error",
            "The requested resource could not be found.",
        ),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        ),
        429 => (
            "rate_limit_error",
            "Number of requests has exceeded your per-minute rate limit.",
        ),
        500 => ("api_error", "Internal server error"),
        504 => ("timeout_error", "Request timed out"),
        529 => ("overloaded_error", "Overloaded"),
        s if s >= 500 => ("api_error", "Internal server error"),
        _ => ("invalid_request_error", "Invalid request (mock)."),
    }
}

/// OpenAI error envelope `{"error":{"message","type","param","code"}}`.
pub fn openai_error_body(
    message: &str,
    ty: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Value {
    json!({"error": {"message": message, "type": ty, "param": param, "code": code}})
}

/// Anthropic error envelope `{"type":"error","error":{"type","message"},"request_id"}`.
pub fn anthropic_error_body(ty: &str, message: &str, request_id: &str) -> Value {
    json!({"type": "error", "error": {"type": ty, "message": message}, "request_id": request_id})
}

/// The error body a provider of `dialect` sends for `status`.
pub fn error_body(dialect: Dialect, status: u16, model: &str, request_id: &str) -> Value {
    match dialect {
        Dialect::OpenAi => {
            let (ty, code, msg) = openai_error_parts(status, model);
            let param = if status == 429 {
                Some("requests")
            } else {
                None
            };
            openai_error_body(&msg, ty, param, code)
        }
        Dialect::Anthropic => {
            let (ty, msg) = anthropic_error_parts(status);
            anthropic_error_body(ty, msg, request_id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_shapes() {
        let b = error_body(Dialect::OpenAi, 429, "m", "req_1");
        assert_eq!(b["error"]["code"], "rate_limit_exceeded");
        assert_eq!(b["error"]["param"], "requests");
        let b = error_body(Dialect::OpenAi, 404, "gpt-x", "req_1");
        assert_eq!(b["error"]["code"], "model_not_found");
        assert!(b["error"]["message"].as_str().unwrap().contains("gpt-x"));
        assert_eq!(
            error_body(Dialect::OpenAi, 500, "m", "r")["error"]["type"],
            "server_error"
        );
        assert_eq!(
            error_body(Dialect::OpenAi, 401, "m", "r")["error"]["code"],
            "invalid_api_key"
        );
    }

    #[test]
    fn anthropic_shapes() {
        let b = error_body(Dialect::Anthropic, 529, "m", "req_9");
        assert_eq!(b["type"], "error");
        assert_eq!(b["error"]["type"], "overloaded_error");
        assert_eq!(b["request_id"], "req_9");
        assert_eq!(
            error_body(Dialect::Anthropic, 401, "m", "r")["error"]["type"],
            "authentication_error"
        );
        assert_eq!(
            error_body(Dialect::Anthropic, 503, "m", "r")["error"]["type"],
            "api_error"
        );
    }
}
