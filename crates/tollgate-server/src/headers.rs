//! Response headers: which upstream headers reach the client, and the gateway's own.
//!
//! Forwarded unprefixed (SDK back-off reads them; B13): `retry-after`, `retry-after-ms`,
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
            out.append(HeaderName::from_static(prefixed), value.clone());
        }
    }
}

/// LiteLLM's `llm_provider-` copy of a provider header the gateway relays that way.
fn provider_copy(name: &str) -> Option<&'static str> {
    match name {
        "x-request-id" => Some("llm_provider-x-request-id"),
        "request-id" => Some("llm_provider-request-id"),
        "openai-processing-ms" => Some("llm_provider-openai-processing-ms"),
        _ => None,
    }
}

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
        put(out, "x-litellm-call-id", self.call_id);
        if let Some(id) = self.model_id {
            out.insert(HeaderName::from_static("x-litellm-model-id"), id);
        }
        if let Some(g) = self.model_group {
            out.insert(HeaderName::from_static("x-litellm-model-group"), g);
        }
        out.insert(
            HeaderName::from_static("x-litellm-version"),
            HeaderValue::from_static(crate::VERSION),
        );
    }
}

fn put(out: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        out.insert(HeaderName::from_static(name), v);
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
