//! The ONE place that says which config keys Tollgate acts on. Edit the lists here as features
//! land; [`crate::Config::unimplemented_keys`] reports every key present in a file that is not
//! listed (the binary prints them as a warning at boot). Unknown keys never fail a load.

use serde::Serialize;

use crate::config::Config;

/// Top-level sections Tollgate reads. Any other top-level key (`guardrails`, `mcp_servers`,
/// `credential_list`...) is reported whole.
pub const TOP_LEVEL_SECTIONS: &[&str] = &[
    "model_list",
    "litellm_settings",
    "general_settings",
    "router_settings",
    "environment_variables",
];

/// Keys of a `model_list` item, beside `litellm_params` / `model_info`.
pub const MODEL_ENTRY_IMPLEMENTED: &[&str] = &["model_name", "litellm_params", "model_info"];

/// `model_info` keys acted on.
pub const MODEL_INFO_IMPLEMENTED: &[&str] = &[
    "id",
    "max_input_tokens",
    "base_model",
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "output_cost_per_reasoning_token",
    "input_cost_per_request",
    "access_groups",
    // What `GET /health` sends (an embedding for `embedding`, else a chat request).
    "mode",
];

/// `litellm_settings` keys acted on.
pub const LITELLM_SETTINGS_IMPLEMENTED: &[&str] = &[
    "request_timeout",
    "num_retries",
    "fallbacks",
    "context_window_fallbacks",
    "content_policy_fallbacks",
    "default_fallbacks",
    "max_budget",
    "budget_duration",
    "budget_exceeded_status_code",
    "max_end_user_budget",
    "max_end_user_budget_id",
    // its Redis server holds the fleet's shared counters (`redis.rs`; tollgate-server
    // `gate/shared.rs`); the response cache itself (`cache: true`) is still reported
    "cache_params",
];

/// `general_settings` keys acted on (`litellm_key_header_name`: tollgate-server auth;
/// `user_header_name`: the end user, tollgate-server `gate/facts.rs`).
pub const GENERAL_SETTINGS_IMPLEMENTED: &[&str] = &[
    "master_key",
    "user_header_name",
    "max_request_size_mb",
    "max_response_size_mb",
    "litellm_key_header_name",
    "database_url",
    // the Postgres pool: tollgate-governance `store/pg_connect.rs`
    "database_connection_pool_limit",
    "database_connection_timeout",
    "disable_spend_logs",
    "store_model_in_db",
];

/// `router_settings` keys acted on (tollgate-server `state.rs`: timeouts fall back from the
/// deployment to these; aliases feed the router).
pub const ROUTER_SETTINGS_IMPLEMENTED: &[&str] = &[
    "timeout",
    "stream_timeout",
    "model_group_alias",
    "routing_strategy",
    "routing_strategy_args",
    "enable_pre_call_checks",
    "allowed_fails",
    "cooldown_time",
    "disable_cooldowns",
    "num_retries",
    "retry_after",
    "retry_policy",
    "model_group_retry_policy",
    "allowed_fails_policy",
    "max_fallbacks",
    "fallbacks",
    "context_window_fallbacks",
    "content_policy_fallbacks",
    "default_fallbacks",
    "max_budget",
    "budget_duration",
    "budget_exceeded_status_code",
    // the Redis server of the fleet's shared counters (`redis.rs`; tollgate-server
    // `gate/shared.rs`)
    "redis_url",
    "redis_host",
    "redis_port",
    "redis_password",
];

/// LiteLLM-internal `litellm_params` keys (class `LiteLLM_Params` in `litellm/types/router.py`)
/// that are neither typed fields of [`crate::LitellmParams`] nor request parameters: they are
/// not forwarded upstream and, until Tollgate acts on them, reported as unimplemented.
/// Besides these, every key containing `cost_per` or ending in `_cost` is internal pricing.
pub const LITELLM_PARAMS_INTERNAL: &[&str] = &[
    "litellm_credential_name",
    "max_budget",
    "budget_duration",
    "itpm",
    "otpm",
    "max_parallel_requests",
    "use_in_pass_through",
    "use_litellm_proxy",
    "merge_reasoning_content_in_choices",
    "drop_params",
    "additional_drop_params",
    "num_retries",
    "region_name",
    "model_info",
    "litellm_trace_id",
    "auto_router_config",
    "auto_router_config_path",
    "auto_router_default_model",
    "auto_router_embedding_model",
    "health_check_model",
    "headers",
    "mock_timeout",
    "s3_bucket_name",
    "s3_region_name",
    "s3_access_key_id",
    "s3_secret_access_key",
    "aws_batch_role_arn",
];

/// Typed fields of [`crate::LitellmParams`]: keys Tollgate reads itself rather than passing
/// upstream as request defaults. A key not typed that is one or two edits from one of these
/// (`api_bse`) is warned about: it would otherwise be sent upstream silently.
pub const LITELLM_PARAMS_TYPED: &[&str] = &[
    "model",
    "api_base",
    "api_key",
    "api_version",
    "organization",
    "custom_llm_provider",
    "timeout",
    "stream_timeout",
    "max_retries",
    "rpm",
    "tpm",
    "extra_headers",
    "weight",
    "order",
    "input_cost_per_token",
    "output_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "mock_response",
    "tags",
    "configurable_clientside_auth_params",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "aws_region_name",
    "aws_role_name",
    "aws_session_name",
    "aws_profile_name",
    "aws_web_identity_token",
    "aws_bedrock_runtime_endpoint",
    "vertex_project",
    "vertex_location",
    "vertex_credentials",
    "tenant_id",
    "client_id",
    "client_secret",
    "azure_ad_token",
];

/// `litellm_params` keys that are typed but not acted on yet (the `*_cost*` price overrides
/// are acted on by tollgate-server's `gate`).
pub const LITELLM_PARAMS_TYPED_UNIMPLEMENTED: &[&str] = &["tags"];

/// True for a LiteLLM-internal `litellm_params` key (see [`LITELLM_PARAMS_INTERNAL`]).
pub fn is_internal_litellm_param(key: &str) -> bool {
    LITELLM_PARAMS_INTERNAL.contains(&key) || key.contains("cost_per") || key.ends_with("_cost")
}

/// Keys of the serialized form of `v` (only keys that are set are serialized).
fn present_keys<T: Serialize>(v: &T) -> Vec<String> {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

fn push_unlisted(out: &mut Vec<String>, prefix: &str, keys: Vec<String>, listed: &[&str]) {
    for k in keys {
        if !listed.contains(&k.as_str()) {
            let name = format!("{prefix}{k}");
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
}

/// See [`Config::unimplemented_keys`].
pub(crate) fn unimplemented_keys(c: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for k in c.extra.keys() {
        if !TOP_LEVEL_SECTIONS.contains(&k.as_str()) {
            out.push(k.clone());
        }
    }
    for e in &c.model_list {
        push_unlisted(
            &mut out,
            "model_list[].",
            e.extra.keys().cloned().collect(),
            MODEL_ENTRY_IMPLEMENTED,
        );
        let internal: Vec<String> = e
            .litellm_params
            .extra
            .keys()
            .filter(|k| is_internal_litellm_param(k))
            .cloned()
            .collect();
        push_unlisted(&mut out, "model_list[].litellm_params.", internal, &[]);
        let typed: Vec<String> = present_keys(&e.litellm_params)
            .into_iter()
            .filter(|k| LITELLM_PARAMS_TYPED_UNIMPLEMENTED.contains(&k.as_str()))
            .collect();
        push_unlisted(&mut out, "model_list[].litellm_params.", typed, &[]);
        push_unlisted(
            &mut out,
            "model_list[].model_info.",
            present_keys(&e.model_info),
            MODEL_INFO_IMPLEMENTED,
        );
    }
    push_unlisted(
        &mut out,
        "litellm_settings.",
        present_keys(&c.litellm_settings),
        LITELLM_SETTINGS_IMPLEMENTED,
    );
    push_unlisted(
        &mut out,
        "general_settings.",
        present_keys(&c.general_settings),
        GENERAL_SETTINGS_IMPLEMENTED,
    );
    push_unlisted(
        &mut out,
        "router_settings.",
        present_keys(&c.router_settings),
        ROUTER_SETTINGS_IMPLEMENTED,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_params() {
        assert!(is_internal_litellm_param("input_cost_per_second"));
        assert!(is_internal_litellm_param("litellm_credential_name"));
        assert!(!is_internal_litellm_param("temperature"));
        assert!(!is_internal_litellm_param("reasoning_effort"));
    }

    #[test]
    fn lists_only_unlisted_present_keys() {
        let mut c = Config::default();
        c.litellm_settings.drop_params = Some(true);
        c.litellm_settings.callbacks = vec!["prometheus".into()];
        c.router_settings.redis_host = Some("localhost".into()); // acted on: not listed
        c.general_settings.master_key = Some("sk-1234".into());
        c.general_settings
            .extra
            .insert("alerting".into(), serde_json::json!(["slack"]));
        c.extra.insert("guardrails".into(), serde_json::json!([]));
        let keys = unimplemented_keys(&c);
        assert_eq!(
            keys,
            vec![
                "guardrails",
                "litellm_settings.drop_params",
                "litellm_settings.callbacks",
                "general_settings.alerting"
            ]
        );
    }
}
