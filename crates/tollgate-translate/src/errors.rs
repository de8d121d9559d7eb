//! Upstream errors reshaped for the client's dialect (wire-formats.md §7.6), and mid-stream
//! error events.
//!
//! The HTTP status is kept, except where the client's SDK does not know it: Anthropic's 529
//! `overloaded_error` becomes 503 `server_error` (code `overloaded`) for OpenAI-dialect clients,
//! and an upstream 503 becomes 529 `overloaded_error` for Anthropic clients (the SDK raises
//! `OverloadedError` and retries it like any 5xx). The body is rebuilt in the client's shape
//! ([`tollgate_protocol::ErrorEnvelope`]) carrying the upstream's message.

use bytes::BytesMut;
use serde_json::{Value, json};
use tollgate_protocol::{Dialect, ErrorEnvelope};

pub use crate::error_body::{ErrorBody, read_error_body};
use crate::sse_out;

/// The message of the terminal error a translated stream ends with when its upstream closed it
/// before its final event ([`crate::chat_to_anthropic::StreamTranslator::finish`] and the
/// others); the gateway's relay writes the same words for streams it passes through.
pub const STREAM_CUT_SHORT: &str = "Upstream closed the stream before it finished";

/// Upper bound on the upstream message copied into the client's error, in bytes.
const MAX_MESSAGE_BYTES: usize = 2048;

/// Reshapes an upstream error response (status + raw body in any server's shape, read by
/// [`read_error_body`]: OpenAI `{"error":{"message",...}}`, Anthropic
/// `{"type":"error","error":{...}}`, Gemini, vLLM / SGLang `{"object":"error","message",...}`,
/// TGI and Ollama `{"error":"text"}`, Bedrock `{"message"}`, FastAPI `{"detail"}`, or plain
/// text) for a client speaking `client`, with the upstream's message. Render the result with
/// [`ErrorEnvelope::to_json`] in the same dialect. A JSON body without a message is never
/// quoted as the message: the message then says the status.
pub fn map_upstream_error(status: u16, body: &[u8], client: Dialect) -> ErrorEnvelope {
    let parsed = read_error_body(body);
    let message = match &parsed {
        Some(b) => b
            .message
            .clone()
            .unwrap_or_else(|| format!("upstream returned HTTP {status}")),
        None => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                format!("upstream returned HTTP {status}")
            } else {
                text.to_owned()
            }
        }
    };
    let message = truncate(message);
    let parsed = parsed.unwrap_or_default();
    let upstream_type = parsed.kind.as_deref();
    let upstream_code = parsed.code.as_deref();
    let upstream_param = parsed.param.as_deref();
    match client {
        Dialect::OpenAi => {
            let overloaded = status == 529 || upstream_type == Some("overloaded_error");
            let status = if status == 529 { 503 } else { status };
            let (kind, code) = openai_kind(status, upstream_type);
            // An OpenAI-compatible server's own type (vLLM `BadRequestError`, TGI `validation`)
            // is kept, as the passthrough keeps it; Anthropic's types become OpenAI's.
            let kind = match upstream_type {
                Some(t) if !ANTHROPIC_TYPES.contains(&t) => t,
                _ => kind,
            };
            // Anthropic reports an unknown model as 404 `not_found_error` "model: <name>".
            let model_not_found = status == 404 && message.starts_with("model:");
            let mut env = ErrorEnvelope::new(status, kind, message);
            let code = if overloaded {
                Some("overloaded")
            } else if model_not_found {
                Some("model_not_found")
            } else {
                upstream_code.or(code)
            };
            if let Some(c) = code {
                env = env.with_code(c);
            }
            if let Some(p) = upstream_param {
                env = env.with_param(p);
            }
            env
        }
        Dialect::Anthropic => {
            let status = if status == 503 { 529 } else { status };
            // `ErrorEnvelope` derives Anthropic's type from the status.
            ErrorEnvelope::new(status, openai_kind(status, None).0, message)
        }
    }
}

/// Anthropic's error types (Anthropic API reference, "Errors").
const ANTHROPIC_TYPES: [&str; 10] = [
    "invalid_request_error",
    "authentication_error",
    "billing_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "timeout_error",
    "overloaded_error",
];

/// OpenAI `type` (and default `code`) for a status, or for an Anthropic error type.
fn openai_kind(status: u16, anthropic_type: Option<&str>) -> (&'static str, Option<&'static str>) {
    match anthropic_type {
        Some("authentication_error") => return ("invalid_request_error", Some("invalid_api_key")),
        Some("permission_error") => return ("permission_error", None),
        Some("rate_limit_error") => return ("rate_limit_error", Some("rate_limit_exceeded")),
        Some("overloaded_error" | "api_error") => return ("server_error", None),
        _ => {}
    }
    match status {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => ("permission_error", None),
        404 => ("invalid_request_error", None),
        429 => ("rate_limit_error", Some("rate_limit_exceeded")),
        s if s >= 500 => ("server_error", None),
        _ => ("invalid_request_error", None),
    }
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_MESSAGE_BYTES {
        let mut cut = MAX_MESSAGE_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// OpenAI Chat mid-stream error: `data: {"error":{"message","type","param":null,"code"}}\n\n`
/// (the OpenAI SDK raises `APIError` on any data object with an `error` key). `anthropic_type`
/// is the upstream's Anthropic error type, if the error came from Anthropic.
pub fn write_openai_stream_error(out: &mut BytesMut, message: &str, anthropic_type: Option<&str>) {
    let (kind, _) = openai_kind(500, anthropic_type);
    let code = if anthropic_type == Some("overloaded_error") {
        Value::from("overloaded")
    } else {
        Value::Null
    };
    sse_out::data(
        out,
        &json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    );
}

/// Anthropic mid-stream error: `event: error` with
/// `{"type":"error","error":{"type","message"}}` (Anthropic streaming docs).
pub fn write_anthropic_stream_error(out: &mut BytesMut, error_type: &str, message: &str) {
    sse_out::event(
        out,
        "error",
        &json!({"type": "error", "error": {"type": error_type, "message": message}}),
    );
}

/// OpenAI Responses terminal failure event: `event: response.failed` with
/// `{"type":"response.failed","response","sequence_number"}`, `response` being the stream's
/// response object with `status: "failed"` and `error: {code, message}` (Responses streaming
/// reference: the event that follows an `error` event and ends a failed stream).
pub fn write_responses_failed(out: &mut BytesMut, response: &Value, sequence_number: u64) {
    sse_out::event(
        out,
        "response.failed",
        &json!({"type": "response.failed", "response": response,
                "sequence_number": sequence_number}),
    );
}

/// Anthropic error type for an OpenAI error object seen mid-stream: `rate_limit_*` →
/// `rate_limit_error`, code/type mentioning overload → `overloaded_error`, else `api_error`.
pub fn anthropic_type_for_openai_error(error: &Value) -> &'static str {
    let ty = error.get("type").and_then(Value::as_str).unwrap_or("");
    let code = error.get("code").and_then(Value::as_str).unwrap_or("");
    if ty.contains("rate_limit") || code.contains("rate_limit") {
        "rate_limit_error"
    } else if code.contains("overload") || ty.contains("overload") {
        "overloaded_error"
    } else if ty == "invalid_request_error" {
        "invalid_request_error"
    } else {
        "api_error"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(env: &ErrorEnvelope, d: Dialect) -> Value {
        serde_json::from_slice(&env.to_json(d)).unwrap()
    }

    fn body_of(env: &ErrorEnvelope, d: Dialect) -> Value {
        body(env, d)
    }

    #[test]
    fn anthropic_529_becomes_openai_503() {
        let up = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#;
        let env = map_upstream_error(529, up, Dialect::OpenAi);
        assert_eq!(env.status, 503);
        assert_eq!(
            body(&env, Dialect::OpenAi),
            json!({"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded"}})
        );
    }

    #[test]
    fn openai_503_becomes_anthropic_529_overloaded() {
        let up = br#"{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":"overloaded"}}"#;
        let env = map_upstream_error(503, up, Dialect::Anthropic);
        assert_eq!(env.status, 529);
        assert_eq!(
            body(&env, Dialect::Anthropic),
            json!({"type":"error","error":{"type":"overloaded_error","message":"The engine is currently overloaded, please try again later."}})
        );
    }

    #[test]
    fn statuses_keep_meaning_across_dialects() {
        let cases: [(u16, &str, u16, &str); 6] = [
            (400, "invalid_request_error", 400, "invalid_request_error"),
            (401, "authentication_error", 401, "invalid_request_error"),
            (403, "permission_error", 403, "permission_error"),
            (404, "not_found_error", 404, "invalid_request_error"),
            (429, "rate_limit_error", 429, "rate_limit_error"),
            (500, "api_error", 500, "server_error"),
        ];
        for (status, anth, want_status, want_type) in cases {
            let up = json!({"type":"error","error":{"type":anth,"message":"m"}}).to_string();
            let env = map_upstream_error(status, up.as_bytes(), Dialect::OpenAi);
            assert_eq!(
                (env.status, env.kind.as_str()),
                (want_status, want_type),
                "{status}"
            );
            let back = map_upstream_error(status, up.as_bytes(), Dialect::Anthropic);
            assert_eq!(
                body(&back, Dialect::Anthropic)["error"]["type"],
                anth,
                "{status}"
            );
        }
        let env = map_upstream_error(413, b"too big", Dialect::Anthropic);
        assert_eq!(
            body(&env, Dialect::Anthropic)["error"]["type"],
            "request_too_large"
        );
        assert_eq!(env.message, "too big");
    }

    #[test]
    fn stream_error_events() {
        let mut out = BytesMut::new();
        write_anthropic_stream_error(&mut out, "overloaded_error", "Overloaded");
        assert_eq!(
            &out[..],
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
        );
        out.clear();
        write_openai_stream_error(&mut out, "boom", Some("api_error"));
        assert_eq!(
            &out[..],
            b"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"
        );
        out.clear();
        write_responses_failed(
            &mut out,
            &json!({"id": "resp_1", "status": "failed", "error": {"code": "server_error", "message": "boom"}}),
            7,
        );
        assert_eq!(
            &out[..],
            b"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}},\"sequence_number\":7}\n\n"
        );
    }

    /// vLLM, TGI, Ollama and FastAPI bodies give their own message to an Anthropic client,
    /// never their JSON quoted as the message.
    #[test]
    fn every_servers_message_reaches_an_anthropic_client() {
        for (status, body, want_status, want) in [
            (
                400,
                &br#"{"object": "error", "message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "param": null, "code": 400}"#[..],
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "This model's maximum context length is 4096 tokens."}}),
            ),
            (
                422,
                br#"{"error":"Input validation error: `inputs` must have less than 4096 tokens","error_type":"validation"}"#,
                422,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "Input validation error: `inputs` must have less than 4096 tokens"}}),
            ),
            (
                404,
                br#"{"error":"model 'llama9' not found"}"#,
                404,
                json!({"type": "error", "error": {"type": "not_found_error", "message": "model 'llama9' not found"}}),
            ),
            (
                503,
                br#"{"object":"error","message":"vllm failure","type":"InternalServerError","param":null,"code":503}"#,
                529,
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "vllm failure"}}),
            ),
            (
                500,
                br#"{"status":"down"}"#,
                500,
                json!({"type": "error", "error": {"type": "api_error", "message": "upstream returned HTTP 500"}}),
            ),
        ] {
            let env = map_upstream_error(status, body, Dialect::Anthropic);
            assert_eq!(env.status, want_status);
            assert_eq!(body_of(&env, Dialect::Anthropic), want);
        }
        let env = map_upstream_error(
            400,
            br#"{"object":"error","message":"bad","type":"BadRequestError","param":"n","code":400}"#,
            Dialect::OpenAi,
        );
        assert_eq!(
            body_of(&env, Dialect::OpenAi),
            json!({"error": {"message": "bad", "type": "BadRequestError", "param": "n", "code": null}})
        );
    }

    #[test]
    fn openai_code_and_param_survive() {
        let up = br#"{"error":{"message":"Rate limit reached","type":"requests","param":"requests","code":"rate_limit_exceeded"}}"#;
        let env = map_upstream_error(429, up, Dialect::OpenAi);
        assert_eq!(env.code.as_deref(), Some("rate_limit_exceeded"));
        assert_eq!(env.param.as_deref(), Some("requests"));
        let env = map_upstream_error(502, b"", Dialect::OpenAi);
        assert_eq!(env.message, "upstream returned HTTP 502");
    }
}
