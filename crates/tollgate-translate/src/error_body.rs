//! What an upstream's error body says, in whichever shape its server writes it.
//!
//! - OpenAI `{"error":{"message","type","param","code"}}`, Anthropic
//!   `{"type":"error","error":{"type","message"}}`, Gemini `{"error":{"code","message","status"}}`:
//!   the error is an object under `error` ([`ErrorBody::nested`]).
//! - vLLM and SGLang (OpenAI-compatible servers built on FastAPI):
//!   `{"object":"error","message","type","param","code"}`, flat, `code` the HTTP status.
//! - Hugging Face TGI `{"error":"text","error_type":"validation"}`; Ollama `{"error":"text"}`.
//! - Bedrock and other AWS services `{"message":"text"}` (or `Message`).
//! - FastAPI's own errors `{"detail":"text"}` and validation errors
//!   `{"detail":[{"loc":[...],"msg":"text","type":"..."}]}`.

use serde_json::{Map, Value};

/// The parts of an upstream error body (see the module docs for the shapes read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorBody {
    /// The error is an object under a top-level `error` member: OpenAI's shape (Anthropic's and
    /// Gemini's too), which OpenAI's SDKs read.
    pub nested: bool,
    /// The upstream's message, when it gave one as text.
    pub message: Option<String>,
    /// The upstream's error type (`type`, TGI `error_type`), when given.
    pub kind: Option<String>,
    /// The upstream's error code, when given as text (`rate_limit_exceeded`). A numeric code
    /// (vLLM's, SGLang's: the HTTP status again) is not kept: the status says it.
    pub code: Option<String>,
    /// OpenAI `param`, when given as text.
    pub param: Option<String>,
}

/// Reads `body`; `None` when it is not a JSON object.
pub fn read_error_body(body: &[u8]) -> Option<ErrorBody> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let o = v.as_object()?;
    Some(match o.get("error") {
        Some(Value::Object(e)) => ErrorBody {
            nested: true,
            message: text(e.get("message")),
            kind: text(e.get("type")),
            code: text(e.get("code")),
            param: text(e.get("param")),
        },
        Some(Value::String(message)) => ErrorBody {
            nested: false,
            message: Some(message.clone()).filter(|m| !m.is_empty()),
            kind: text(o.get("error_type")),
            code: text(o.get("code")),
            param: None,
        },
        _ => ErrorBody {
            nested: false,
            message: text(o.get("message"))
                .or_else(|| text(o.get("Message")))
                .or_else(|| detail(o)),
            // `"type": "error"` names the envelope, not the error.
            kind: text(o.get("type")).filter(|t| t != "error"),
            code: text(o.get("code")),
            param: text(o.get("param")),
        },
    })
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// FastAPI's `detail`: a string, or the `msg` of each validation error joined with `; `.
fn detail(o: &Map<String, Value>) -> Option<String> {
    match o.get("detail")? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Array(items) => {
            let msgs: Vec<&str> = items
                .iter()
                .filter_map(|i| i.get("msg").and_then(Value::as_str))
                .collect();
            (!msgs.is_empty()).then(|| msgs.join("; "))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> ErrorBody {
        read_error_body(s.as_bytes()).unwrap()
    }

    #[test]
    fn every_servers_shape() {
        let b = read(
            r#"{"object": "error", "message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "param": null, "code": 400}"#,
        );
        assert_eq!(
            b,
            ErrorBody {
                nested: false,
                message: Some("This model's maximum context length is 4096 tokens.".into()),
                kind: Some("BadRequestError".into()),
                code: None,
                param: None,
            }
        );
        let b = read(
            r#"{"error":"Input validation error: `inputs` must have less than 4096 tokens","error_type":"validation"}"#,
        );
        assert_eq!(
            (b.nested, b.message.as_deref(), b.kind.as_deref()),
            (
                false,
                Some("Input validation error: `inputs` must have less than 4096 tokens"),
                Some("validation")
            )
        );
        let b = read(r#"{"error":"model \"llama9\" not found, try pulling it first"}"#);
        assert_eq!(
            b.message.as_deref(),
            Some("model \"llama9\" not found, try pulling it first")
        );
        let b = read(
            r#"{"error":{"message":"m","type":"invalid_request_error","param":"model","code":"model_not_found"}}"#,
        );
        assert_eq!(
            b,
            ErrorBody {
                nested: true,
                message: Some("m".into()),
                kind: Some("invalid_request_error".into()),
                code: Some("model_not_found".into()),
                param: Some("model".into()),
            }
        );
        let b =
            read(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert_eq!(
            (b.nested, b.kind.as_deref()),
            (true, Some("overloaded_error"))
        );
        assert_eq!(
            read(r#"{"message":"The security token included in the request is invalid."}"#)
                .message
                .as_deref(),
            Some("The security token included in the request is invalid.")
        );
        assert_eq!(
            read(r#"{"detail":[{"loc":["body","messages"],"msg":"Field required","type":"missing"}]}"#)
                .message
                .as_deref(),
            Some("Field required")
        );
        assert_eq!(read(r#"{"status":"down"}"#), ErrorBody::default());
        assert_eq!(read_error_body(b"<html>bad gateway</html>"), None);
        assert_eq!(read_error_body(b"[1]"), None);
    }
}
