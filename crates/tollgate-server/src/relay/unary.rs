//! Non-streamed relay.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use tollgate_protocol::ErrorEnvelope;
use tollgate_protocol::error::openai_type_for_status;
use tollgate_translate::errors::{ErrorBody, read_error_body};

use crate::headers::forward_upstream;

/// Longest upstream error body relayed, bytes. Provider error bodies are small; a huge one
/// is cut (and wrapped in an OpenAI-shaped error) rather than buffered without bound.
pub const MAX_ERROR_BODY: usize = 1 << 20;

/// Builds the client response from an upstream status, headers and body.
///
/// A 2xx body is relayed byte-for-byte. An error body keeps its status and is:
/// - relayed as sent when its error is an object under `error` (OpenAI's shape, which the
///   OpenAI SDKs read, and Anthropic's), or when it is other JSON the gateway cannot read a
///   message from;
/// - reshaped into the client's dialect (`{"error":{"message","type","param","code"}}` for
///   OpenAI clients) with the upstream's own message, type, param and code when a server wrote
///   it in another shape: vLLM and SGLang `{"object":"error","message","type","param","code"}`,
///   TGI `{"error":"...","error_type"}`, Ollama `{"error":"..."}`, FastAPI `{"detail"}`
///   ([`tollgate_translate::errors::read_error_body`]). OpenAI's Node SDK reads the message
///   only from `error.message`, so a flat body would reach its users as "(no body)";
/// - quoted in an error of the client's shape when it is not JSON (HTML from a load balancer,
///   plain text, empty), so the client never gets an empty or non-JSON error, and never a 2xx
///   for an upstream failure.
///
/// `dialect` is the client's (the upstream speaks it too: this is the passthrough path).
pub fn relay_body(
    status: StatusCode,
    upstream_headers: &HeaderMap,
    body: Bytes,
    dialect: tollgate_protocol::Dialect,
) -> Response {
    let body = if status.is_success() {
        body
    } else {
        error_body(status.as_u16(), body, dialect)
    };
    let mut resp = super::new_response(Body::from(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    let ct = upstream_headers
        .get(header::CONTENT_TYPE)
        .filter(|_| status.is_success())
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/json"));
    h.insert(header::CONTENT_TYPE, ct);
    forward_upstream(upstream_headers, h);
    resp
}

/// The client's body for an upstream error answer (see [`relay_body`]).
fn error_body(status: u16, body: Bytes, dialect: tollgate_protocol::Dialect) -> Bytes {
    match read_error_body(&body) {
        Some(b) if b.nested || b.message.is_none() => body,
        Some(b) => {
            let ErrorBody {
                message,
                kind,
                code,
                param,
                ..
            } = b;
            let kind = kind.unwrap_or_else(|| openai_type_for_status(status).to_owned());
            let mut env = ErrorEnvelope::new(status, kind, message.unwrap_or_default());
            env.code = code;
            env.param = param;
            Bytes::from(env.to_json(dialect))
        }
        None => {
            let text = String::from_utf8_lossy(&body[..body.len().min(2000)]);
            let message = if text.trim().is_empty() {
                format!("Upstream returned HTTP {status} with an empty body")
            } else {
                format!("Upstream returned HTTP {status}: {}", text.trim())
            };
            let env = ErrorEnvelope::new(status, openai_type_for_status(status), message);
            Bytes::from(env.to_json(dialect))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body_of(r: Response) -> Vec<u8> {
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn success_relayed_as_bytes() {
        let mut up = HeaderMap::new();
        up.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        let b = Bytes::from_static(b"{\"id\":\"x\",  \"odd_spacing\":true}");
        let r = relay_body(
            StatusCode::OK,
            &up,
            b.clone(),
            tollgate_protocol::Dialect::OpenAi,
        );
        assert_eq!(r.status(), 200);
        assert_eq!(body_of(r).await, b.to_vec());
    }

    #[tokio::test]
    async fn upstream_error_json_kept_and_non_json_wrapped() {
        let up = HeaderMap::new();
        let e = Bytes::from_static(br#"{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}"#);
        let r = relay_body(
            StatusCode::UNPROCESSABLE_ENTITY,
            &up,
            e.clone(),
            tollgate_protocol::Dialect::OpenAi,
        );
        assert_eq!(r.status(), 422);
        assert_eq!(body_of(r).await, e.to_vec());
        let r = relay_body(
            StatusCode::BAD_GATEWAY,
            &up,
            Bytes::from_static(b"<html>bad gateway</html>"),
            tollgate_protocol::Dialect::OpenAi,
        );
        assert_eq!(r.status(), 502);
        let v: serde_json::Value = serde_json::from_slice(&body_of(r).await).unwrap();
        assert_eq!(v["error"]["type"], "server_error");
        assert_eq!(
            v["error"]["message"],
            "Upstream returned HTTP 502: <html>bad gateway</html>"
        );
        let r = relay_body(
            StatusCode::SERVICE_UNAVAILABLE,
            &up,
            Bytes::new(),
            tollgate_protocol::Dialect::OpenAi,
        );
        let v: serde_json::Value = serde_json::from_slice(&body_of(r).await).unwrap();
        assert_eq!(
            v["error"]["message"],
            "Upstream returned HTTP 503 with an empty body"
        );
    }

    /// vLLM's flat body and Ollama's string error become OpenAI's shape with the upstream's
    /// own words; JSON without a message is relayed as sent.
    #[tokio::test]
    async fn other_servers_error_bodies_are_reshaped_not_quoted() {
        let relay = |status: u16, body: &'static str| async move {
            let r = relay_body(
                StatusCode::from_u16(status).unwrap(),
                &HeaderMap::new(),
                Bytes::from_static(body.as_bytes()),
                tollgate_protocol::Dialect::OpenAi,
            );
            assert_eq!(r.status(), status);
            String::from_utf8(body_of(r).await).unwrap()
        };
        assert_eq!(
            relay(
                400,
                r#"{"object": "error", "message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "param": null, "code": 400}"#
            )
            .await,
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":null}}"#
        );
        assert_eq!(
            relay(404, r#"{"error":"model 'llama9' not found"}"#).await,
            r#"{"error":{"message":"model 'llama9' not found","type":"invalid_request_error","param":null,"code":null}}"#
        );
        assert_eq!(
            relay(500, r#"{"status": "down"}"#).await,
            r#"{"status": "down"}"#
        );
    }
}
