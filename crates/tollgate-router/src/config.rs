//! Router settings as plain values (the server maps `router_settings` / `litellm_settings`
//! into them).

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use crate::failure::FailureClass;

/// LiteLLM's `DEFAULT_ALLOWED_FAILS` (`litellm/constants.py`).
pub const DEFAULT_ALLOWED_FAILS: u32 = 3;
/// LiteLLM's `DEFAULT_FAILURE_THRESHOLD_PERCENT` (as a fraction): without `allowed_fails`, a
/// deployment whose calls failed more than this share of the minute cools down.
pub const DEFAULT_FAILURE_RATE: f64 = 0.5;
/// LiteLLM's `DEFAULT_FAILURE_THRESHOLD_MINIMUM_REQUESTS`: finished calls in the minute before
/// [`DEFAULT_FAILURE_RATE`] counts.
pub const DEFAULT_FAILURE_RATE_MIN_CALLS: u32 = 5;
/// LiteLLM's `DEFAULT_COOLDOWN_TIME_SECONDS` (`litellm/constants.py`): 5 s.
pub const DEFAULT_COOLDOWN_TIME: Duration = Duration::from_secs(5);
/// LiteLLM Router's default `num_retries` when none is set (`openai.DEFAULT_MAX_RETRIES`).
pub const DEFAULT_NUM_RETRIES: u32 = 2;
/// LiteLLM's default `max_fallbacks`.
pub const DEFAULT_MAX_FALLBACKS: usize = 5;
/// Longest upstream `retry-after` the router waits for before retrying the same group;
/// a longer one skips the group's remaining retries (LiteLLM honours 0 < retry-after ≤ 60 s).
pub const DEFAULT_MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// LiteLLM latency routing's default `ttl` for latency samples: 1 hour.
pub const DEFAULT_LATENCY_TTL: Duration = Duration::from_secs(3600);

/// `router_settings.routing_strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RoutingStrategy {
    /// `simple-shuffle` (default): random, weighted by `weight`, else `rpm`, else `tpm`.
    #[default]
    SimpleShuffle,
    /// `least-busy`: fewest requests in flight.
    LeastBusy,
    /// `usage-based-routing` / `usage-based-routing-v2`: lowest TPM used this minute, among
    /// deployments still under their own `tpm`/`rpm`.
    UsageBased,
    /// `latency-based-routing`: lowest moving-average latency (TTFT for streams).
    LatencyBased,
    /// `cost-based-routing`: cheapest input + output price per token.
    CostBased,
}

/// An unknown setting value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// `routing_strategy` is not one the router knows.
    #[error(
        "unknown routing_strategy '{0}' (expected simple-shuffle, least-busy, usage-based-routing-v2, latency-based-routing or cost-based-routing)"
    )]
    UnknownStrategy(String),
    /// A `retry_policy` key is not one of LiteLLM's.
    #[error("unknown retry_policy key '{0}'")]
    UnknownRetryPolicyKey(String),
    /// An `allowed_fails_policy` key is not one of LiteLLM's.
    #[error("unknown allowed_fails_policy key '{0}'")]
    UnknownAllowedFailsPolicyKey(String),
}

impl FromStr for RoutingStrategy {
    type Err = ConfigError;

    /// Parses LiteLLM's strategy names.
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        Ok(match s {
            "simple-shuffle" => RoutingStrategy::SimpleShuffle,
            "least-busy" => RoutingStrategy::LeastBusy,
            "usage-based-routing" | "usage-based-routing-v2" => RoutingStrategy::UsageBased,
            "latency-based-routing" => RoutingStrategy::LatencyBased,
            "cost-based-routing" => RoutingStrategy::CostBased,
            other => return Err(ConfigError::UnknownStrategy(other.to_owned())),
        })
    }
}

/// `retry_policy`: retries per error class, overriding `num_retries` for that class
/// (LiteLLM `RetryPolicy`). `None` = use `num_retries` (retryable classes) or 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryPolicy {
    /// `BadRequestErrorRetries` (also context-window errors, as in LiteLLM).
    pub bad_request: Option<u32>,
    /// `AuthenticationErrorRetries`.
    pub authentication: Option<u32>,
    /// `TimeoutErrorRetries` (also connection errors).
    pub timeout: Option<u32>,
    /// `RateLimitErrorRetries`.
    pub rate_limit: Option<u32>,
    /// `ContentPolicyViolationErrorRetries`.
    pub content_policy: Option<u32>,
    /// `InternalServerErrorRetries`.
    pub internal_server: Option<u32>,
}

/// `allowed_fails_policy`: failures per minute, by error class, that put a deployment in
/// cooldown, overriding `allowed_fails` for that class (LiteLLM `AllowedFailsPolicy`, keys
/// `RateLimitErrorAllowedFails`, `AuthenticationErrorAllowedFails`, ...). A class listed here
/// counts towards cooldown even when it normally does not (LiteLLM lets 401s cool a
/// deployment this way). Same per-class shape as [`RetryPolicy`].
pub type AllowedFailsPolicy = RetryPolicy;

impl RetryPolicy {
    /// The slot for LiteLLM's error-class name (`RateLimitError`, ...).
    fn slot(&mut self, class: &str) -> Option<&mut Option<u32>> {
        Some(match class {
            "BadRequestError" => &mut self.bad_request,
            "AuthenticationError" => &mut self.authentication,
            "TimeoutError" => &mut self.timeout,
            "RateLimitError" => &mut self.rate_limit,
            "ContentPolicyViolationError" => &mut self.content_policy,
            "InternalServerError" => &mut self.internal_server,
            _ => return None,
        })
    }

    /// Sets one entry by LiteLLM's `retry_policy` key name, e.g. `RateLimitErrorRetries`.
    pub fn set(&mut self, key: &str, retries: u32) -> Result<(), ConfigError> {
        let slot = key
            .strip_suffix("Retries")
            .and_then(|c| self.slot(c))
            .ok_or_else(|| ConfigError::UnknownRetryPolicyKey(key.to_owned()))?;
        *slot = Some(retries);
        Ok(())
    }

    /// Sets one entry by LiteLLM's `allowed_fails_policy` key name, e.g.
    /// `RateLimitErrorAllowedFails`.
    pub fn set_allowed_fails(&mut self, key: &str, fails: u32) -> Result<(), ConfigError> {
        let slot = key
            .strip_suffix("AllowedFails")
            .and_then(|c| self.slot(c))
            .ok_or_else(|| ConfigError::UnknownAllowedFailsPolicyKey(key.to_owned()))?;
        *slot = Some(fails);
        Ok(())
    }

    /// Whether no entry is set.
    pub fn is_empty(&self) -> bool {
        *self == RetryPolicy::default()
    }

    /// The entry for a class, if set.
    pub fn for_class(&self, class: FailureClass) -> Option<u32> {
        match class {
            FailureClass::BadRequest | FailureClass::ContextWindowExceeded => self.bad_request,
            FailureClass::Auth => self.authentication,
            FailureClass::Timeout | FailureClass::Connection => self.timeout,
            FailureClass::RateLimit => self.rate_limit,
            FailureClass::ContentPolicy => self.content_policy,
            FailureClass::ServerError => self.internal_server,
            FailureClass::NotFound
            | FailureClass::ClientCancelled
            | FailureClass::ClientTimeout => None,
        }
    }
}

/// Everything the router needs from `router_settings` / `litellm_settings`.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// `routing_strategy`.
    pub strategy: RoutingStrategy,
    /// `routing_strategy_args.lowest_latency_buffer`: deployments within
    /// `lowest × (1 + buffer)` of the lowest latency are picked at random (0 = lowest only).
    pub lowest_latency_buffer: f64,
    /// `routing_strategy_args.ttl`: latency samples older than this are forgotten.
    pub latency_ttl: Duration,
    /// `enable_pre_call_checks`: skip deployments whose `max_input_tokens` the prompt
    /// estimate exceeds, and those at their own `rpm`/`tpm` this minute.
    pub enable_pre_call_checks: bool,
    /// `allowed_fails_policy`: `allowed_fails` per error class.
    pub allowed_fails_policy: AllowedFailsPolicy,
    /// `allowed_fails`: counted failures within one minute that put a deployment in cooldown.
    pub allowed_fails: u32,
    /// Whether `allowed_fails` was set in the config. When it was not (and no
    /// `allowed_fails_policy` entry covers the failure), the only deployment of a group is
    /// never cooled down: that would only turn the upstream's error into a 429 "No deployments
    /// available" for `cooldown_time` (LiteLLM `cooldown_handlers.py`: single-deployment groups
    /// are exempt from the default cooldown rule).
    pub allowed_fails_configured: bool,
    /// `cooldown_time`.
    pub cooldown_time: Duration,
    /// `disable_cooldowns`.
    pub disable_cooldowns: bool,
    /// `num_retries` (router_settings, else litellm_settings).
    pub num_retries: u32,
    /// `retry_after`: minimum wait before any retry.
    pub retry_after: Duration,
    /// Longest upstream `retry-after` worth waiting for within a group.
    pub max_retry_wait: Duration,
    /// `retry_policy`.
    pub retry_policy: RetryPolicy,
    /// `model_group_retry_policy`: per group, replaces `retry_policy`.
    pub model_group_retry_policy: HashMap<String, RetryPolicy>,
    /// `fallbacks`: group → ordered fallback groups, on retryable failures.
    pub fallbacks: HashMap<String, Vec<String>>,
    /// `context_window_fallbacks`: group → groups, on context-window errors.
    pub context_window_fallbacks: HashMap<String, Vec<String>>,
    /// `content_policy_fallbacks`: group → groups, on content-policy errors.
    pub content_policy_fallbacks: HashMap<String, Vec<String>>,
    /// `default_fallbacks`: for groups without their own `fallbacks` entry.
    pub default_fallbacks: Vec<String>,
    /// `max_fallbacks`: most fallback groups one request enters.
    pub max_fallbacks: usize,
    /// Seed of the routing random source (`None`: from the process's random source).
    pub rng_seed: Option<u64>,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            strategy: RoutingStrategy::SimpleShuffle,
            lowest_latency_buffer: 0.0,
            latency_ttl: DEFAULT_LATENCY_TTL,
            enable_pre_call_checks: false,
            allowed_fails_policy: AllowedFailsPolicy::default(),
            allowed_fails: DEFAULT_ALLOWED_FAILS,
            allowed_fails_configured: false,
            cooldown_time: DEFAULT_COOLDOWN_TIME,
            disable_cooldowns: false,
            num_retries: DEFAULT_NUM_RETRIES,
            retry_after: Duration::ZERO,
            max_retry_wait: DEFAULT_MAX_RETRY_WAIT,
            retry_policy: RetryPolicy::default(),
            model_group_retry_policy: HashMap::new(),
            fallbacks: HashMap::new(),
            context_window_fallbacks: HashMap::new(),
            content_policy_fallbacks: HashMap::new(),
            default_fallbacks: Vec::new(),
            max_fallbacks: DEFAULT_MAX_FALLBACKS,
            rng_seed: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_names() {
        assert_eq!(
            "usage-based-routing-v2".parse::<RoutingStrategy>().unwrap(),
            RoutingStrategy::UsageBased
        );
        assert_eq!(
            "latency-based-routing".parse::<RoutingStrategy>().unwrap(),
            RoutingStrategy::LatencyBased
        );
        assert_eq!(
            "nope".parse::<RoutingStrategy>().unwrap_err(),
            ConfigError::UnknownStrategy("nope".into())
        );
    }

    #[test]
    fn retry_policy_keys() {
        let mut p = RetryPolicy::default();
        p.set("RateLimitErrorRetries", 4).unwrap();
        p.set("BadRequestErrorRetries", 1).unwrap();
        assert_eq!(p.for_class(FailureClass::RateLimit), Some(4));
        assert_eq!(p.for_class(FailureClass::ContextWindowExceeded), Some(1));
        assert_eq!(p.for_class(FailureClass::ServerError), None);
        assert!(p.set("Bogus", 1).is_err());
    }
}
