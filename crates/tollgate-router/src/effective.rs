//! The routing settings in effect and where each came from, for `tollgate check-config`.
//!
//! Values are read back from the [`RouterConfig`] that [`RouterConfig::from_settings`] builds
//! (the router runs on exactly these); each source follows the same precedence as that
//! function: `router_settings` over `litellm_settings` for `num_retries` and the four fallback
//! lists, `router_settings` alone for the rest, else the default (LiteLLM's). The deployment
//! timeouts fall back from a deployment's own `timeout` / `stream_timeout` to
//! `router_settings`, then `litellm_settings.request_timeout` (tollgate-server `state.rs`).

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use serde_json::Value;
use tollgate_config::{LitellmSettings, ModelGroupAlias, RouterSettings};
use tollgate_providers::deployment::DEFAULT_TOTAL_TIMEOUT;

use crate::config::{
    ConfigError, DEFAULT_FAILURE_RATE, DEFAULT_FAILURE_RATE_MIN_CALLS, RetryPolicy, RouterConfig,
    RoutingStrategy,
};

/// Where a setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingSource {
    /// The `router_settings` key of the same name.
    RouterSettings,
    /// A `litellm_settings` key (named when it differs from the setting's name, as
    /// `request_timeout` for `timeout`).
    LitellmSettings(&'static str),
    /// Not in the file: the default (LiteLLM's unless said otherwise).
    Default,
}

impl fmt::Display for SettingSource {
    /// `router_settings`, `litellm_settings` (or `litellm_settings.request_timeout`), `default`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingSource::RouterSettings => f.write_str("router_settings"),
            SettingSource::LitellmSettings("") => f.write_str("litellm_settings"),
            SettingSource::LitellmSettings(key) => write!(f, "litellm_settings.{key}"),
            SettingSource::Default => f.write_str("default"),
        }
    }
}

/// One routing setting in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveSetting {
    /// The `router_settings` key (`num_retries`, `routing_strategy_args.ttl`, ...).
    pub name: &'static str,
    /// The value as the router uses it: durations in s (`5 s`), maps as `{group: [a, b]}`,
    /// `none` for an empty list or map.
    pub value: String,
    /// Where the value came from.
    pub source: SettingSource,
}

impl fmt::Display for EffectiveSetting {
    /// `num_retries: 1 (router_settings)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.name, self.value, self.source)
    }
}

/// Every routing setting Tollgate acts on, with its effective value and source. `timeout` and
/// `stream_timeout` (s) apply to deployments without their own; `stream_timeout` unset means
/// a stream has the whole `timeout` too. The `timeout` default is Tollgate's 600 s (the OpenAI
/// SDK's; LiteLLM's is 6000 s).
///
/// Errors: as [`RouterConfig::from_settings`] (an unknown strategy or policy key).
pub fn settings_in_effect(
    router: &RouterSettings,
    litellm: &LitellmSettings,
) -> Result<Vec<EffectiveSetting>, ConfigError> {
    use SettingSource::{Default, LitellmSettings as Litellm, RouterSettings as Router};
    let c = RouterConfig::from_settings(router, litellm)?;
    let mut out = Vec::new();
    let mut push = |name: &'static str, value: String, source: SettingSource| {
        out.push(EffectiveSetting {
            name,
            value,
            source,
        })
    };
    let from_router = |set: bool| if set { Router } else { Default };
    let args = router.routing_strategy_args.as_ref();
    let arg = |k: &str| args.and_then(|a| a.get(k)).and_then(Value::as_f64);

    push(
        "routing_strategy",
        strategy_name(c.strategy).to_owned(),
        from_router(router.routing_strategy.is_some()),
    );
    push(
        "routing_strategy_args.ttl",
        seconds(c.latency_ttl),
        from_router(arg("ttl").is_some_and(|t| t.is_finite() && t >= 0.0)),
    );
    push(
        "routing_strategy_args.lowest_latency_buffer",
        c.lowest_latency_buffer.to_string(),
        from_router(arg("lowest_latency_buffer").is_some()),
    );
    push(
        "num_retries",
        c.num_retries.to_string(),
        match (router.num_retries, litellm.num_retries) {
            (Some(_), _) => Router,
            (None, Some(_)) => Litellm(""),
            (None, None) => Default,
        },
    );
    let (timeout, timeout_source) = match (router.timeout, litellm.request_timeout) {
        (Some(t), _) => (t, Router),
        (None, Some(t)) => (t, Litellm("request_timeout")),
        (None, None) => (DEFAULT_TOTAL_TIMEOUT.as_secs_f64(), Default),
    };
    push("timeout", format!("{timeout} s"), timeout_source);
    push(
        "stream_timeout",
        match router.stream_timeout {
            Some(t) => format!("{t} s"),
            None => "the timeout".to_owned(),
        },
        from_router(router.stream_timeout.is_some()),
    );
    push(
        "allowed_fails",
        allowed_fails(&c),
        from_router(c.allowed_fails_configured),
    );
    push(
        "allowed_fails_policy",
        policy(&c.allowed_fails_policy, "AllowedFails"),
        from_router(matches!(
            router.extra.get("allowed_fails_policy"),
            Some(Value::Object(_))
        )),
    );
    push(
        "cooldown_time",
        seconds(c.cooldown_time),
        from_router(
            router
                .cooldown_time
                .is_some_and(|t| t.is_finite() && t >= 0.0),
        ),
    );
    push(
        "disable_cooldowns",
        c.disable_cooldowns.to_string(),
        from_router(router.disable_cooldowns.is_some()),
    );
    push(
        "retry_after",
        seconds(c.retry_after),
        from_router(
            router
                .retry_after
                .is_some_and(|t| t.is_finite() && t >= 0.0),
        ),
    );
    push(
        "retry_policy",
        policy(&c.retry_policy, "Retries"),
        from_router(router.retry_policy.is_some()),
    );
    push(
        "model_group_retry_policy",
        group_policies(&c.model_group_retry_policy),
        from_router(matches!(
            router.extra.get("model_group_retry_policy"),
            Some(Value::Object(_))
        )),
    );
    let list_source = |r: bool, l: bool| match (r, l) {
        (true, _) => Router,
        (false, true) => Litellm(""),
        (false, false) => Default,
    };
    push(
        "fallbacks",
        rules(&c.fallbacks),
        list_source(!router.fallbacks.is_empty(), !litellm.fallbacks.is_empty()),
    );
    push(
        "context_window_fallbacks",
        rules(&c.context_window_fallbacks),
        list_source(
            !router.context_window_fallbacks.is_empty(),
            !litellm.context_window_fallbacks.is_empty(),
        ),
    );
    push(
        "content_policy_fallbacks",
        rules(&c.content_policy_fallbacks),
        list_source(
            !router.content_policy_fallbacks.is_empty(),
            !litellm.content_policy_fallbacks.is_empty(),
        ),
    );
    push(
        "default_fallbacks",
        list(&c.default_fallbacks),
        list_source(
            !router.default_fallbacks.is_empty(),
            !litellm.default_fallbacks.is_empty(),
        ),
    );
    push(
        "max_fallbacks",
        c.max_fallbacks.to_string(),
        from_router(router.extra.get("max_fallbacks").is_some_and(Value::is_u64)),
    );
    push(
        "enable_pre_call_checks",
        c.enable_pre_call_checks.to_string(),
        from_router(router.enable_pre_call_checks.is_some()),
    );
    push(
        "model_group_alias",
        aliases(&router.model_group_alias),
        from_router(!router.model_group_alias.is_empty()),
    );
    Ok(out)
}

/// The cooldown rule `allowed_fails` stands for, as the router applies it
/// (`AttemptPlan::cooldown_rule`): the count when set; LiteLLM's default count for the classes
/// an `allowed_fails_policy` leaves out when only the policy is set; else LiteLLM's default
/// rule, which has no count.
fn allowed_fails(c: &RouterConfig) -> String {
    if c.allowed_fails_configured {
        c.allowed_fails.to_string()
    } else if !c.allowed_fails_policy.is_empty() {
        format!(
            "{} for the failures allowed_fails_policy does not list",
            c.allowed_fails
        )
    } else {
        format!(
            "not set: LiteLLM's default rule applies: in a group of several deployments a 429, 401/403 or 404 cools the deployment at once, and timeouts, connection errors and 5xx once more than {} % of its calls in the minute failed (from {} calls on); a group's only deployment is never cooled down",
            DEFAULT_FAILURE_RATE * 100.0,
            DEFAULT_FAILURE_RATE_MIN_CALLS
        )
    }
}

/// LiteLLM's name of a strategy.
fn strategy_name(s: RoutingStrategy) -> &'static str {
    match s {
        RoutingStrategy::SimpleShuffle => "simple-shuffle",
        RoutingStrategy::LeastBusy => "least-busy",
        RoutingStrategy::UsageBased => "usage-based-routing-v2",
        RoutingStrategy::LatencyBased => "latency-based-routing",
        RoutingStrategy::CostBased => "cost-based-routing",
    }
}

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        format!("[{}]", items.join(", "))
    }
}

/// `{a: [b, c], x: [y]}`, groups sorted; `none` when empty.
fn rules(map: &HashMap<String, Vec<String>>) -> String {
    let mut groups: Vec<_> = map.iter().collect();
    if groups.is_empty() {
        return "none".to_owned();
    }
    groups.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(g, targets)| format!("{g}: {}", list(targets)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// `{RateLimitError<suffix>: 4, ...}` in LiteLLM's key names; `none` when no entry is set.
fn policy(p: &RetryPolicy, suffix: &str) -> String {
    let entries = [
        ("BadRequestError", p.bad_request),
        ("AuthenticationError", p.authentication),
        ("TimeoutError", p.timeout),
        ("RateLimitError", p.rate_limit),
        ("ContentPolicyViolationError", p.content_policy),
        ("InternalServerError", p.internal_server),
    ];
    let parts: Vec<String> = entries
        .iter()
        .filter_map(|(k, v)| v.map(|n| format!("{k}{suffix}: {n}")))
        .collect();
    if parts.is_empty() {
        "none".to_owned()
    } else {
        format!("{{{}}}", parts.join(", "))
    }
}

fn group_policies(map: &HashMap<String, RetryPolicy>) -> String {
    let mut groups: Vec<_> = map.iter().collect();
    if groups.is_empty() {
        return "none".to_owned();
    }
    groups.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(g, p)| format!("{g}: {}", policy(p, "Retries")))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

fn aliases(map: &std::collections::BTreeMap<String, ModelGroupAlias>) -> String {
    if map.is_empty() {
        return "none".to_owned();
    }
    let parts: Vec<String> = map
        .iter()
        .map(|(alias, target)| match target {
            ModelGroupAlias::Detailed { hidden: true, .. } => {
                format!("{alias}: {} (hidden)", target.group())
            }
            _ => format!("{alias}: {}", target.group()),
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effective(yaml: &str) -> Vec<String> {
        let loaded = tollgate_config::load_str(yaml, "c.yaml", &|_| None).unwrap();
        let c = &loaded.config;
        settings_in_effect(&c.router_settings, &c.litellm_settings)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn an_empty_config_shows_every_default() {
        assert_eq!(
            effective("model_list: []\n"),
            [
                "routing_strategy: simple-shuffle (default)",
                "routing_strategy_args.ttl: 3600 s (default)",
                "routing_strategy_args.lowest_latency_buffer: 0 (default)",
                "num_retries: 2 (default)",
                "timeout: 600 s (default)",
                "stream_timeout: the timeout (default)",
                "allowed_fails: not set: LiteLLM's default rule applies: in a group of several deployments a 429, 401/403 or 404 cools the deployment at once, and timeouts, connection errors and 5xx once more than 50 % of its calls in the minute failed (from 5 calls on); a group's only deployment is never cooled down (default)",
                "allowed_fails_policy: none (default)",
                "cooldown_time: 5 s (default)",
                "disable_cooldowns: false (default)",
                "retry_after: 0 s (default)",
                "retry_policy: none (default)",
                "model_group_retry_policy: none (default)",
                "fallbacks: none (default)",
                "context_window_fallbacks: none (default)",
                "content_policy_fallbacks: none (default)",
                "default_fallbacks: none (default)",
                "max_fallbacks: 5 (default)",
                "enable_pre_call_checks: false (default)",
                "model_group_alias: none (default)",
            ]
        );
    }

    #[test]
    fn each_value_names_the_section_it_came_from() {
        let got = effective(
            "litellm_settings:\n  num_retries: 7\n  request_timeout: 30\n  fallbacks: [{a: [c]}]\n  context_window_fallbacks: [{a: [big]}]\nrouter_settings:\n  routing_strategy: latency-based-routing\n  routing_strategy_args: {ttl: 30, lowest_latency_buffer: 0.2}\n  num_retries: 1\n  stream_timeout: 4.5\n  allowed_fails: 2\n  allowed_fails_policy: {RateLimitErrorAllowedFails: 10}\n  cooldown_time: 1.5\n  disable_cooldowns: true\n  retry_after: 2\n  retry_policy: {RateLimitErrorRetries: 4, BadRequestErrorRetries: 0}\n  model_group_retry_policy: {a: {TimeoutErrorRetries: 9}}\n  fallbacks: [{b: [c]}, {a: [b, c]}]\n  default_fallbacks: [d]\n  max_fallbacks: 2\n  enable_pre_call_checks: true\n  model_group_alias: {gpt-4: a, old: {model: b, hidden: true}}\n",
        );
        assert_eq!(
            got,
            [
                "routing_strategy: latency-based-routing (router_settings)",
                "routing_strategy_args.ttl: 30 s (router_settings)",
                "routing_strategy_args.lowest_latency_buffer: 0.2 (router_settings)",
                "num_retries: 1 (router_settings)",
                "timeout: 30 s (litellm_settings.request_timeout)",
                "stream_timeout: 4.5 s (router_settings)",
                "allowed_fails: 2 (router_settings)",
                "allowed_fails_policy: {RateLimitErrorAllowedFails: 10} (router_settings)",
                "cooldown_time: 1.5 s (router_settings)",
                "disable_cooldowns: true (router_settings)",
                "retry_after: 2 s (router_settings)",
                "retry_policy: {BadRequestErrorRetries: 0, RateLimitErrorRetries: 4} (router_settings)",
                "model_group_retry_policy: {a: {TimeoutErrorRetries: 9}} (router_settings)",
                "fallbacks: {a: [b, c], b: [c]} (router_settings)",
                "context_window_fallbacks: {a: [big]} (litellm_settings)",
                "content_policy_fallbacks: none (default)",
                "default_fallbacks: [d] (router_settings)",
                "max_fallbacks: 2 (router_settings)",
                "enable_pre_call_checks: true (router_settings)",
                "model_group_alias: {gpt-4: a, old: b (hidden)} (router_settings)",
            ]
        );
    }

    /// With a policy alone, the default count covers the classes it leaves out.
    #[test]
    fn allowed_fails_with_a_policy_alone_shows_the_count_it_falls_back_to() {
        let got = effective(
            "router_settings:\n  allowed_fails_policy: {RateLimitErrorAllowedFails: 10}\n",
        );
        assert!(
            got.contains(
                &"allowed_fails: 3 for the failures allowed_fails_policy does not list (default)"
                    .to_owned()
            ),
            "{got:?}"
        );
    }

    #[test]
    fn litellm_settings_fill_in_what_router_settings_leave_unset() {
        let got = effective("litellm_settings:\n  num_retries: 7\n  default_fallbacks: [z]\n");
        assert!(
            got.contains(&"num_retries: 7 (litellm_settings)".to_owned()),
            "{got:?}"
        );
        assert!(
            got.contains(&"default_fallbacks: [z] (litellm_settings)".to_owned()),
            "{got:?}"
        );
        let got =
            effective("router_settings:\n  timeout: 7\nlitellm_settings:\n  request_timeout: 30\n");
        assert!(
            got.contains(&"timeout: 7 s (router_settings)".to_owned()),
            "{got:?}"
        );
    }

    /// Every `router_settings` key Tollgate acts on is shown, except the budget keys and the
    /// fleet's Redis server (`redis_*`: where counters and shared routing state live, named in
    /// the start-up log), which are not routing settings.
    #[test]
    fn every_implemented_routing_key_is_shown() {
        let names: Vec<&str> = settings_in_effect(&Default::default(), &Default::default())
            .unwrap()
            .iter()
            .map(|s| s.name.split('.').next().unwrap_or(s.name))
            .collect();
        for k in tollgate_config::implemented::ROUTER_SETTINGS_IMPLEMENTED {
            if k.contains("budget") || k.starts_with("redis_") {
                continue;
            }
            assert!(names.contains(k), "{k} is not shown");
        }
    }
}
