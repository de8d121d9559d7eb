//! Response headers: which upstream headers reach the client, and the gateway's own.
//!
//! Forwarded unprefixed (SDK back-off reads them): `retry-after`, `retry-after-ms`,
//! `x-should-retry`, every `x-ratelimit-*` and `anthropic-ratelimit-*`. The provider's request
//! id is forwarded as is (the SDKs read it) and as `llm_provider-<name>` (LiteLLM's convention, §7). Hop-by-hop, cookie and
//! CORS headers are never forwarded.

use http::{HeaderMap, HeaderName, HeaderValue};

/// Copies the forwardable upstream headers into `out`.
pub fn forward_upstream(upstream: &HeaderMap, out: &mut HeaderMap) {
    for (name, value) in upstream {
        let n = name.as_str();
        if n == "retry-after"
            || n == "retry-after-ms"
            || n == "x-should-retry"
            || n.starts_with("x-ratelimit-")
            || n.starts_with("anthropic-ratelimit-")
        {
            out.append(name.clone(), value.clone());
        } else if let Some(prefixed) = provider_copy(n) {
            // The SDKs expose the provider's request id (`response.request_id`) from the
            // unprefixed header; LiteLLM also sends the prefixed copy.
            if n != "openai-processing-ms" {
                out.append(name.clone(), value.clone());
            }
            out.append(prefixed, value.clone());
        }
    }
}

/// LiteLLM's `llm_provider-` copy of a provider header the gateway relays that way.
fn provider_copy(name: &str) -> Option<HeaderName> {
    const X_REQUEST_ID: HeaderName = HeaderName::from_static("llm_provider-x-request-id");
    const REQUEST_ID: HeaderName = HeaderName::from_static("llm_provider-request-id");
    const PROCESSING_MS: HeaderName = HeaderName::from_static("llm_provider-openai-processing-ms");
    match name {
        "x-request-id" => Some(X_REQUEST_ID),
        "request-id" => Some(REQUEST_ID),
        "openai-processing-ms" => Some(PROCESSING_MS),
        _ => None,
    }
}

/// `x-litellm-call-id`. The gateway's own names are built at compile time: `from_static`
/// called at run time checks every byte again, per response.
pub const X_LITELLM_CALL_ID: HeaderName = HeaderName::from_static("x-litellm-call-id");
/// `x-litellm-model-id`.
pub const X_LITELLM_MODEL_ID: HeaderName = HeaderName::from_static("x-litellm-model-id");
/// `x-litellm-model-group`.
pub const X_LITELLM_MODEL_GROUP: HeaderName = HeaderName::from_static("x-litellm-model-group");
/// `x-litellm-version`.
pub const X_LITELLM_VERSION: HeaderName = HeaderName::from_static("x-litellm-version");
/// `x-litellm-attempted-retries`.
pub const X_LITELLM_ATTEMPTED_RETRIES: HeaderName =
    HeaderName::from_static("x-litellm-attempted-retries");
/// `x-litellm-attempted-fallbacks`.
pub const X_LITELLM_ATTEMPTED_FALLBACKS: HeaderName =
    HeaderName::from_static("x-litellm-attempted-fallbacks");
/// `x-litellm-num-retries` (request): retries for this request.
pub const X_LITELLM_NUM_RETRIES: HeaderName = HeaderName::from_static("x-litellm-num-retries");
/// `x-litellm-timeout` (request): this request's limit, seconds.
pub const X_LITELLM_TIMEOUT: HeaderName = HeaderName::from_static("x-litellm-timeout");
/// `x-litellm-stream-timeout` (request): a stream's first-byte and idle limit, seconds.
pub const X_LITELLM_STREAM_TIMEOUT: HeaderName =
    HeaderName::from_static("x-litellm-stream-timeout");

/// Identifiers of one call, sent back as LiteLLM's `x-litellm-*` headers (§7).
#[derive(Debug, Clone)]
pub struct CallHeaders<'a> {
    /// `x-litellm-call-id`: a UUID per request.
    pub call_id: &'a str,
    /// `x-litellm-model-id`: the deployment id.
    pub model_id: Option<HeaderValue>,
    /// `x-litellm-model-group`: the public model group.
    pub model_group: Option<HeaderValue>,
}

impl CallHeaders<'_> {
    /// Writes the headers into `out`.
    pub fn write(self, out: &mut HeaderMap) {
        if let Ok(v) = HeaderValue::from_str(self.call_id) {
            out.insert(X_LITELLM_CALL_ID, v);
        }
        if let Some(id) = self.model_id {
            out.insert(X_LITELLM_MODEL_ID, id);
        }
        if let Some(g) = self.model_group {
            out.insert(X_LITELLM_MODEL_GROUP, g);
        }
        out.insert(X_LITELLM_VERSION, HeaderValue::from_static(crate::VERSION));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_retry_and_rate_limit_headers_only() {
        let mut up = HeaderMap::new();
        up.insert("retry-after", "7".parse().unwrap());
        up.insert("retry-after-ms", "6500".parse().unwrap());
        up.insert("x-ratelimit-remaining-requests", "0".parse().unwrap());
        up.insert(
            "anthropic-ratelimit-unified-status",
            "rejected".parse().unwrap(),
        );
        up.insert("x-request-id", "req_1".parse().unwrap());
        up.insert("set-cookie", "a=b".parse().unwrap());
        up.insert("connection", "keep-alive".parse().unwrap());
        up.insert("access-control-allow-origin", "*".parse().unwrap());
        let mut out = HeaderMap::new();
        forward_upstream(&up, &mut out);
        assert_eq!(out["retry-after"], "7");
        assert_eq!(out["retry-after-ms"], "6500");
        assert_eq!(out["x-ratelimit-remaining-requests"], "0");
        assert_eq!(out["anthropic-ratelimit-unified-status"], "rejected");
        assert_eq!(out["llm_provider-x-request-id"], "req_1");
        assert_eq!(out["x-request-id"], "req_1");
        assert_eq!(out.len(), 6);
    }
}
