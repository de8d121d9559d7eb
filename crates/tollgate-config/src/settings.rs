//! `litellm_settings`, `general_settings` and `router_settings` sections.
//!
//! Durations are seconds, money is USD. Keys not named here land in each struct's `extra`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::extra::Extra;
use crate::lenient;
use crate::secret::Secret;

/// Fallback rules as LiteLLM writes them: `[{"gpt-4o": ["claude-sonnet", "gpt-4o-mini"]}]`, a list
/// of one-key maps from a model group to the groups tried, in order, after it fails.
pub type Fallbacks = Vec<BTreeMap<String, Vec<String>>>;

/// The fallback groups configured for `group` in `rules` (empty if none), in order.
pub fn fallbacks_for<'a>(rules: &'a Fallbacks, group: &str) -> Vec<&'a str> {
    rules
        .iter()
        .filter_map(|r| r.get(group))
        .flatten()
        .map(String::as_str)
        .collect()
}

/// `litellm_settings`: module-level settings (`setattr` on the `litellm` module in LiteLLM).
#[serde_with::skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, Default, Debug)]
pub struct LitellmSettings {
    /// Drop OpenAI params the provider does not support instead of failing with 400.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub drop_params: Option<bool>,
    /// Global request timeout, seconds (LiteLLM default 6000).
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub request_timeout: Option<f64>,
    /// Retries per request across the model group.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub num_retries: Option<u32>,
    /// Logging integrations (`prometheus`, `langfuse`, `otel`...).
    #[serde(default, deserialize_with = "lenient::string_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callbacks: Vec<String>,
    /// Integrations called on success.
    #[serde(default, deserialize_with = "lenient::string_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub success_callback: Vec<String>,
    /// Integrations called on failure.
    #[serde(default, deserialize_with = "lenient::string_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failure_callback: Vec<String>,
    /// Model-group fallbacks on any error after retries.
    #[serde(default, deserialize_with = "lenient::fallbacks")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Fallbacks,
    /// Fallbacks used only on context-window errors.
    #[serde(default, deserialize_with = "lenient::fallbacks")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context_window_fallbacks: Fallbacks,
    /// Fallbacks used only on content-policy errors.
    #[serde(default, deserialize_with = "lenient::fallbacks")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content_policy_fallbacks: Fallbacks,
    /// Fallback groups for every group.
    #[serde(default, deserialize_with = "lenient::string_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub default_fallbacks: Vec<String>,
    /// HTTP status for over-budget requests (LiteLLM ≥ 1.104 default: 422).
    #[serde(default, deserialize_with = "lenient::opt_u16")]
    pub budget_exceeded_status_code: Option<u16>,
    /// Global proxy budget, USD.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub max_budget: Option<f64>,
    /// Budget reset period, e.g. `30d`, `1h`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub budget_duration: Option<String>,
    /// Budget of each end user without its own budget tier, USD.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub max_end_user_budget: Option<f64>,
    /// Budget tier (`"LiteLLM_BudgetTable".budget_id`, created with `/budget/new`) applied to
    /// each end user without its own.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub max_end_user_budget_id: Option<String>,
    /// Response cache on/off.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub cache: Option<bool>,
    /// Cache settings (`type`, `host`, `port`, `password`, `ttl`, ...).
    #[serde(default)]
    pub cache_params: Option<Extra>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The request and response body limit, MB (MiB), when `general_settings.max_request_size_mb` /
/// `max_response_size_mb` are unset: bounded rather than unlimited, so one oversized body cannot
/// exhaust the gateway's memory.
pub const DEFAULT_BODY_LIMIT_MB: usize = 64;

/// `general_settings`: proxy-server settings.
#[serde_with::skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, Default, Debug)]
pub struct GeneralSettings {
    /// Admin key; wins over env `LITELLM_MASTER_KEY` (see [`crate::LoadedConfig::master_key`]).
    #[serde(default)]
    pub master_key: Option<Secret>,
    /// Postgres URL (wins over env `DATABASE_URL`).
    #[serde(default)]
    pub database_url: Option<Secret>,
    /// Most Postgres connections the gateway opens (LiteLLM: per worker process, default 10;
    /// Tollgate: per process, its serving threads share one pool). Wins over the URL's
    /// `connection_limit`; must be > 0.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub database_connection_pool_limit: Option<u32>,
    /// Longest wait for a free Postgres connection from the pool, seconds (LiteLLM default 60;
    /// Prisma's `pool_timeout`). Wins over the URL's `pool_timeout`; must be >= 0.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub database_connection_timeout: Option<f64>,
    /// Custom header carrying the virtual key, instead of `Authorization`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub litellm_key_header_name: Option<String>,
    /// Header naming the end user (LiteLLM's `user_header_name`, e.g. Open WebUI's
    /// `X-OpenWebUI-User-Id`): read after `x-litellm-customer-id` / `x-litellm-end-user-id` and
    /// before the body's `user`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub user_header_name: Option<String>,
    /// Spend flush interval, seconds (default 10).
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub proxy_batch_write_at: Option<f64>,
    /// Do not write `LiteLLM_SpendLogs` rows.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub disable_spend_logs: Option<bool>,
    /// Request body limit, MB ([`DEFAULT_BODY_LIMIT_MB`] when unset).
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub max_request_size_mb: Option<f64>,
    /// Response body limit, MB ([`DEFAULT_BODY_LIMIT_MB`] when unset).
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub max_response_size_mb: Option<f64>,
    /// Other keys (`alerting`, `allowed_routes`, `pass_through_endpoints`...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// An entry of `router_settings.model_group_alias`: `"alias": "group"` or
/// `"alias": {"model": "group", "hidden": true}`.
#[derive(Clone, PartialEq, Serialize, Debug)]
#[serde(untagged)]
pub enum ModelGroupAlias {
    /// Alias to a group, listed in `/models`.
    Group(String),
    /// Alias with options.
    Detailed {
        /// Target model group.
        model: String,
        /// Hide the alias from `/models`.
        #[serde(default)]
        hidden: bool,
    },
}

impl<'de> Deserialize<'de> for ModelGroupAlias {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(g) => Ok(ModelGroupAlias::Group(g)),
            serde_json::Value::Object(m) => {
                let model = match m.get("model") {
                    Some(serde_json::Value::String(g)) => g.clone(),
                    _ => {
                        return Err(D::Error::custom(
                            "expected {model: <group>, hidden: <bool>}: missing string `model`",
                        ));
                    }
                };
                let hidden = match m.get("hidden") {
                    None | Some(serde_json::Value::Null) => false,
                    Some(serde_json::Value::Bool(b)) => *b,
                    Some(_) => return Err(D::Error::custom("`hidden` must be a boolean")),
                };
                Ok(ModelGroupAlias::Detailed { model, hidden })
            }
            _ => Err(D::Error::custom(
                "expected a model group name or {model: <group>, hidden: <bool>}",
            )),
        }
    }
}

impl ModelGroupAlias {
    /// The target model group.
    pub fn group(&self) -> &str {
        match self {
            ModelGroupAlias::Group(g) => g,
            ModelGroupAlias::Detailed { model, .. } => model,
        }
    }
}

/// `router_settings`: load balancing, retries, cooldowns, fallbacks.
#[serde_with::skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, Default, Debug)]
pub struct RouterSettings {
    /// `simple-shuffle` (default), `least-busy`, `usage-based-routing(-v2)`,
    /// `latency-based-routing`, `cost-based-routing`...
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub routing_strategy: Option<String>,
    /// Retries per request across the group.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub num_retries: Option<u32>,
    /// Per-call timeout, seconds.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub timeout: Option<f64>,
    /// Streaming timeout, seconds.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub stream_timeout: Option<f64>,
    /// Failures per minute before a deployment cools down (LiteLLM default 3).
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub allowed_fails: Option<u32>,
    /// Cooldown length, seconds (LiteLLM source default 5).
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub cooldown_time: Option<f64>,
    /// Never cool deployments down.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub disable_cooldowns: Option<bool>,
    /// Minimum seconds between retries.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub retry_after: Option<f64>,
    /// Extra names for model groups.
    #[serde(default, deserialize_with = "lenient::null_default")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub model_group_alias: BTreeMap<String, ModelGroupAlias>,
    /// Model-group fallbacks.
    #[serde(default, deserialize_with = "lenient::fallbacks")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Fallbacks,
    /// Context-window fallbacks.
    #[serde(default, deserialize_with = "lenient::fallbacks")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context_window_fallbacks: Fallbacks,
    /// Content-policy fallbacks.
    #[serde(default, deserialize_with = "lenient::fallbacks")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content_policy_fallbacks: Fallbacks,
    /// Fallback groups for every group.
    #[serde(default, deserialize_with = "lenient::string_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub default_fallbacks: Vec<String>,
    /// Drop deployments whose context window or rpm/tpm cannot take the request.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enable_pre_call_checks: Option<bool>,
    /// Strategy options (`ttl`, `lowest_latency_buffer`...).
    #[serde(default)]
    pub routing_strategy_args: Option<Extra>,
    /// Retries per error type (`RateLimitErrorRetries`, `TimeoutErrorRetries`...).
    #[serde(default)]
    pub retry_policy: Option<Extra>,
    /// Redis host for shared router state.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub redis_host: Option<String>,
    /// Redis port.
    #[serde(default, deserialize_with = "lenient::opt_u16")]
    pub redis_port: Option<u16>,
    /// Redis password.
    #[serde(default)]
    pub redis_password: Option<Secret>,
    /// Redis URL (may carry a password).
    #[serde(default)]
    pub redis_url: Option<Secret>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallbacks_for_group() {
        let rules: Fallbacks = vec![
            BTreeMap::from([("a".to_string(), vec!["b".to_string(), "c".to_string()])]),
            BTreeMap::from([("x".to_string(), vec!["y".to_string()])]),
        ];
        assert_eq!(fallbacks_for(&rules, "a"), vec!["b", "c"]);
        assert!(fallbacks_for(&rules, "zzz").is_empty());
    }

    #[test]
    fn model_group_alias_forms() {
        let r: RouterSettings = serde_yaml_ng::from_str(
            "model_group_alias: {gpt-4: gpt-4o, old: {model: gpt-4o-mini, hidden: true}}",
        )
        .unwrap();
        assert_eq!(r.model_group_alias["gpt-4"].group(), "gpt-4o");
        assert_eq!(r.model_group_alias["old"].group(), "gpt-4o-mini");
        assert_eq!(
            r.model_group_alias["old"],
            ModelGroupAlias::Detailed {
                model: "gpt-4o-mini".into(),
                hidden: true
            }
        );
        let e = serde_yaml_ng::from_str::<RouterSettings>("model_group_alias: {a: [1]}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a model group name"), "{e}");
    }
}
