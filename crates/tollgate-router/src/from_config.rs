//! Mapping of the typed LiteLLM config (`tollgate-config`) into [`RouterConfig`] and
//! [`DeploymentLimits`].
//!
//! Precedence (LiteLLM proxy): `router_settings` over `litellm_settings` for `num_retries`
//! and each fallback list; unset values keep the defaults of [`RouterConfig::default`].

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tollgate_config::{Fallbacks, LitellmSettings, ModelEntry, RouterSettings};

use crate::config::{ConfigError, RetryPolicy, RouterConfig};
use crate::group::DeploymentLimits;

fn fallback_map(primary: &Fallbacks, secondary: &Fallbacks) -> HashMap<String, Vec<String>> {
    let rules = if primary.is_empty() {
        secondary
    } else {
        primary
    };
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for rule in rules {
        for (group, targets) in rule {
            map.entry(group.clone())
                .or_default()
                .extend(targets.iter().cloned());
        }
    }
    map
}

fn secs(v: f64) -> Option<Duration> {
    (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64(v))
}

fn retry_policy(v: &serde_json::Map<String, Value>) -> Result<RetryPolicy, ConfigError> {
    let mut p = RetryPolicy::default();
    for (k, n) in v {
        if let Some(n) = n.as_u64() {
            p.set(k, u32::try_from(n).unwrap_or(u32::MAX))?;
        }
    }
    Ok(p)
}

impl RouterConfig {
    /// Builds the router settings from `router_settings` and `litellm_settings`.
    ///
    /// Reads `routing_strategy`, `routing_strategy_args.{ttl, lowest_latency_buffer}`,
    /// `enable_pre_call_checks`, `allowed_fails`, `cooldown_time` (s), `disable_cooldowns`,
    /// `num_retries`, `retry_after` (s), `retry_policy`, and from the other keys
    /// `model_group_retry_policy` and `max_fallbacks`; the four fallback lists.
    ///
    /// Errors: an unknown strategy name or `retry_policy` key.
    pub fn from_settings(
        router: &RouterSettings,
        litellm: &LitellmSettings,
    ) -> Result<RouterConfig, ConfigError> {
        let mut c = RouterConfig::default();
        if let Some(s) = &router.routing_strategy {
            c.strategy = s.parse()?;
        }
        if let Some(args) = &router.routing_strategy_args {
            if let Some(t) = args.get("ttl").and_then(Value::as_f64).and_then(secs) {
                c.latency_ttl = t;
            }
            if let Some(b) = args.get("lowest_latency_buffer").and_then(Value::as_f64) {
                c.lowest_latency_buffer = b.max(0.0);
            }
        }
        c.enable_pre_call_checks = router.enable_pre_call_checks.unwrap_or(false);
        if let Some(n) = router.allowed_fails {
            c.allowed_fails = n;
            c.allowed_fails_configured = true;
        }
        if let Some(t) = router.cooldown_time.and_then(secs) {
            c.cooldown_time = t;
        }
        c.disable_cooldowns = router.disable_cooldowns.unwrap_or(false);
        if let Some(n) = router.num_retries.or(litellm.num_retries) {
            c.num_retries = n;
        }
        if let Some(t) = router.retry_after.and_then(secs) {
            c.retry_after = t;
        }
        if let Some(p) = &router.retry_policy {
            c.retry_policy = retry_policy(p)?;
        }
        if let Some(Value::Object(p)) = router.extra.get("allowed_fails_policy") {
            for (k, n) in p {
                if let Some(n) = n.as_u64() {
                    c.allowed_fails_policy
                        .set_allowed_fails(k, u32::try_from(n).unwrap_or(u32::MAX))?;
                }
            }
        }
        if let Some(Value::Object(groups)) = router.extra.get("model_group_retry_policy") {
            for (group, p) in groups {
                if let Value::Object(p) = p {
                    c.model_group_retry_policy
                        .insert(group.clone(), retry_policy(p)?);
                }
            }
        }
        if let Some(n) = router.extra.get("max_fallbacks").and_then(Value::as_u64) {
            c.max_fallbacks = usize::try_from(n).unwrap_or(usize::MAX);
        }
        c.fallbacks = fallback_map(&router.fallbacks, &litellm.fallbacks);
        c.context_window_fallbacks = fallback_map(
            &router.context_window_fallbacks,
            &litellm.context_window_fallbacks,
        );
        c.content_policy_fallbacks = fallback_map(
            &router.content_policy_fallbacks,
            &litellm.content_policy_fallbacks,
        );
        c.default_fallbacks = if router.default_fallbacks.is_empty() {
            litellm.default_fallbacks.clone()
        } else {
            router.default_fallbacks.clone()
        };
        Ok(c)
    }
}

impl DeploymentLimits {
    /// Limits and prices of one `model_list` entry: `litellm_params.{rpm, tpm, max_retries}`,
    /// `model_info.max_input_tokens`, and prices from `litellm_params`, else `model_info`.
    pub fn from_entry(entry: &ModelEntry) -> DeploymentLimits {
        let p = &entry.litellm_params;
        let i = &entry.model_info;
        DeploymentLimits {
            rpm: p.rpm,
            tpm: p.tpm,
            max_input_tokens: i.max_input_tokens,
            input_cost_per_token: p.input_cost_per_token.or(i.input_cost_per_token),
            output_cost_per_token: p.output_cost_per_token.or(i.output_cost_per_token),
            max_retries: p.max_retries,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RoutingStrategy;

    #[test]
    fn maps_litellm_yaml() {
        let yaml = r#"
model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o, api_key: x, rpm: 60, max_retries: 1, input_cost_per_token: 0.000001}
    model_info: {max_input_tokens: 128000, output_cost_per_token: 0.000004}
litellm_settings:
  num_retries: 7
  fallbacks: [{a: [c]}]
  context_window_fallbacks: [{a: [big]}]
router_settings:
  routing_strategy: usage-based-routing-v2
  routing_strategy_args: {ttl: 30, lowest_latency_buffer: 0.2}
  allowed_fails: 2
  cooldown_time: 30
  retry_after: 1.5
  enable_pre_call_checks: true
  fallbacks: [{a: [b]}, {b: [c]}]
  default_fallbacks: [d]
  max_fallbacks: 2
  retry_policy: {RateLimitErrorRetries: 4, BadRequestErrorRetries: 0}
  model_group_retry_policy: {a: {TimeoutErrorRetries: 9}}
  allowed_fails_policy: {RateLimitErrorAllowedFails: 10, AuthenticationErrorAllowedFails: 1}
"#;
        let loaded = tollgate_config::load_str(yaml, "config.yaml", &|_| None).unwrap();
        let cfg = &loaded.config;
        let c = RouterConfig::from_settings(&cfg.router_settings, &cfg.litellm_settings).unwrap();
        assert_eq!(c.strategy, RoutingStrategy::UsageBased);
        assert_eq!(c.latency_ttl, Duration::from_secs(30));
        assert!((c.lowest_latency_buffer - 0.2).abs() < 1e-12);
        assert_eq!(c.allowed_fails, 2);
        assert!(c.allowed_fails_configured);
        assert_eq!(c.cooldown_time, Duration::from_secs(30));
        assert_eq!(c.retry_after, Duration::from_millis(1500));
        assert!(c.enable_pre_call_checks);
        assert_eq!(c.num_retries, 7);
        assert_eq!(c.fallbacks["a"], vec!["b"]);
        assert_eq!(c.fallbacks["b"], vec!["c"]);
        assert_eq!(c.context_window_fallbacks["a"], vec!["big"]);
        assert_eq!(c.default_fallbacks, vec!["d"]);
        assert_eq!(c.max_fallbacks, 2);
        assert_eq!(c.retry_policy.rate_limit, Some(4));
        assert_eq!(c.retry_policy.bad_request, Some(0));
        assert_eq!(c.model_group_retry_policy["a"].timeout, Some(9));
        assert_eq!(c.allowed_fails_policy.rate_limit, Some(10));
        assert_eq!(c.allowed_fails_policy.authentication, Some(1));
        assert_eq!(c.allowed_fails_policy.timeout, None);
        let l = DeploymentLimits::from_entry(&cfg.model_list[0]);
        assert_eq!(l.rpm, Some(60));
        assert_eq!(l.max_retries, Some(1));
        assert_eq!(l.max_input_tokens, Some(128_000));
        assert_eq!(l.input_cost_per_token, Some(0.000001));
        assert_eq!(l.output_cost_per_token, Some(0.000004));
    }

    #[test]
    fn defaults_and_errors() {
        let c = RouterConfig::from_settings(&Default::default(), &Default::default()).unwrap();
        assert_eq!(c.allowed_fails, 3);
        assert!(!c.allowed_fails_configured);
        assert_eq!(c.cooldown_time, Duration::from_secs(5));
        assert_eq!(c.num_retries, 2);
        assert_eq!(c.max_fallbacks, 5);
        let bad = RouterSettings {
            routing_strategy: Some("fastest".into()),
            ..Default::default()
        };
        assert_eq!(
            RouterConfig::from_settings(&bad, &Default::default()).unwrap_err(),
            ConfigError::UnknownStrategy("fastest".into())
        );
        let yaml = "router_settings:\n  allowed_fails_policy: {RateLimitErrorRetries: 1}\n";
        let loaded = tollgate_config::load_str(yaml, "config.yaml", &|_| None).unwrap();
        let cfg = &loaded.config;
        assert_eq!(
            RouterConfig::from_settings(&cfg.router_settings, &cfg.litellm_settings).unwrap_err(),
            ConfigError::UnknownAllowedFailsPolicyKey("RateLimitErrorRetries".into())
        );
    }
}
