//! Non-streamed relay.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use tollgate_protocol::ErrorEnvelope;
use tollgate_protocol::error::openai_type_for_status;

use crate::headers::forward_upstream;

/// Longest upstream error body relayed, bytes. Provider error bodies are small; a huge one
/// is cut (and wrapped in an OpenAI-shaped error) rather than buffered without bound.
pub const MAX_ERROR_BODY: usize = 1 << 20;

/// Builds the client response from an upstream status, headers and body.
///
/// A 2xx body is relayed byte-for-byte. An error body is relayed as-is when it is a JSON
/// object with an `error` member (OpenAI and Anthropic both are); otherwise (HTML from a load
/// balancer, plain text, empty) it is wrapped in an OpenAI error envelope that quotes it, so
/// the client never gets an empty or non-JSON error, and never a 2xx for an upstream failure.
/// `dialect` is the client's (the upstream speaks it too: this is the passthrough path).
pub fn relay_body(
    status: StatusCode,
    upstream_headers: &HeaderMap,
    body: Bytes,
    dialect: tollgate_protocol::Dialect,
) -> Response {
    let body = if status.is_success() || is_error_json(&body) {
        body
    } else {
        let text = String::from_utf8_lossy(&body[..body.len().min(2000)]);
        let message = if text.trim().is_empty() {
            format!(
                "Upstream returned HTTP {} with an empty body",
                status.as_u16()
            )
        } else {
            format!(
                "Upstream returned HTTP {}: {}",
                status.as_u16(),
                text.trim()
            )
        };
        let env = ErrorEnvelope::new(
            status.as_u16(),
            openai_type_for_status(status.as_u16()),
            message,
        );
        Bytes::from(env.to_json(dialect))
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

fn is_error_json(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct E {
        #[serde(rename = "error")]
        _error: serde::de::IgnoredAny,
    }
    serde_json::from_slice::<E>(body).is_ok()
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
}
