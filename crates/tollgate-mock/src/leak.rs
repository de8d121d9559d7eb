//! Detection of gateway-internal fields that must never reach an upstream provider.
//!
//! The list follows LiteLLM's integration upstream, which rejects requests that leak proxy
//! bookkeeping (`litellm_params`, `proxy_server_request`, `rpm`, `tpm`, `timeout`, ...), and
//! the fields litellm-surface.md says a gateway strips before forwarding (`fallbacks`, `mock_*`,
//! `num_retries`, `api_key`, `api_base`, ...).

use serde_json::Value;

/// Top-level body keys a gateway must strip before forwarding.
pub const INTERNAL_FIELDS: &[&str] = &[
    "proxy_server_request",
    "model_info",
    "mock_response",
    "mock_testing_fallbacks",
    "mock_testing_context_fallbacks",
    "mock_testing_content_policy_fallbacks",
    "mock_timeout",
    "fallbacks",
    "context_window_fallbacks",
    "num_retries",
    "api_key",
    "api_base",
    "api_version",
    "rpm",
    "tpm",
    "timeout",
    "secret_fields",
];

/// Key prefixes a gateway must strip (`litellm_params`, `litellm_metadata`, `user_api_key_*`...).
pub const INTERNAL_PREFIXES: &[&str] = &["litellm_", "user_api_key"];

/// The internal keys present at the top level of `body`, in body order.
pub fn leaked_fields(body: &Value) -> Vec<&str> {
    match body {
        Value::Object(m) => m
            .keys()
            .map(String::as_str)
            .filter(|k| {
                INTERNAL_FIELDS.contains(k) || INTERNAL_PREFIXES.iter().any(|p| k.starts_with(p))
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_internal_keys_only() {
        let body = json!({"model": "m", "messages": [], "metadata": {"a": 1}, "user": "u",
                          "litellm_params": {}, "timeout": 3, "user_api_key_alias": "x", "tpm": 1});
        assert_eq!(
            leaked_fields(&body),
            vec!["litellm_params", "timeout", "user_api_key_alias", "tpm"]
        );
        assert!(leaked_fields(&json!({"model": "m", "stream": true})).is_empty());
    }
}
