//! Which cooldown rule a failure brings on its deployment.

use crate::config::{DEFAULT_FAILURE_RATE, DEFAULT_FAILURE_RATE_MIN_CALLS};
use crate::failure::FailureClass;
use crate::resolve::Router;
use crate::state::{CooldownRule, CooldownTrigger};

impl Router {
    /// The cooldown rule for a failure of `class` on a deployment of a group of
    /// `group_size`, or `None` when the failure is not held against the deployment.
    ///
    /// With `allowed_fails` or an `allowed_fails_policy` in the config, a failure that counts
    /// (retryable classes, and any class the policy lists) cools the deployment after that
    /// many within a minute. Without either, LiteLLM's default rule applies
    /// (`litellm/router_utils/cooldown_handlers.py`, `_should_cooldown_deployment`): in a
    /// group of several deployments a 429, 401/403 or 404 cools the deployment at once, and
    /// a timeout, connection error or 5xx when more than half of the minute's calls (at least
    /// [`DEFAULT_FAILURE_RATE_MIN_CALLS`]) failed. The only deployment of a group is never
    /// cooled by the default rule: that would only turn its error into a 429 "No deployments
    /// available" (Tollgate keeps LiteLLM's single-deployment exemption for every class).
    pub(super) fn cooldown_rule(
        &self,
        class: FailureClass,
        group_size: usize,
    ) -> Option<CooldownRule> {
        let cfg = &self.config;
        let trigger = if cfg.allowed_fails_configured || !cfg.allowed_fails_policy.is_empty() {
            match cfg.allowed_fails_policy.for_class(class) {
                Some(n) => CooldownTrigger::FailCount(n),
                None if class.counts_for_cooldown() => {
                    CooldownTrigger::FailCount(cfg.allowed_fails)
                }
                None => return None,
            }
        } else if group_size <= 1 {
            return None;
        } else {
            match class {
                FailureClass::RateLimit | FailureClass::Auth | FailureClass::NotFound => {
                    CooldownTrigger::Immediately
                }
                c if c.counts_for_cooldown() => CooldownTrigger::FailureRate {
                    over: DEFAULT_FAILURE_RATE,
                    min_calls: DEFAULT_FAILURE_RATE_MIN_CALLS,
                },
                _ => return None,
            }
        };
        Some(CooldownRule {
            trigger,
            cooldown_time: cfg.cooldown_time,
            disabled: cfg.disable_cooldowns,
        })
    }
}
