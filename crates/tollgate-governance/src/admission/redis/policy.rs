//! [`FailurePolicy`]: what a replica does when Redis cannot answer a reservation (see the
//! module docs of [`super`], "When Redis fails").

use std::time::Duration;

/// Requests with a finite budget on any scope, while Redis is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetsOnFailure {
    /// Refuse them (the server answers 503): a replica cannot know what the fleet spent.
    Closed,
    /// Admit them without a budget check; their usage is charged to Redis when it is back.
    Open,
}

/// RPM/TPM/parallel limits, while Redis is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitsOnFailure {
    /// Count them on the replica's own counters, each limit divided by the replica count
    /// (rounded down, at least 1), so the fleet as a whole stays near the limit.
    Local,
    /// Refuse requests on a scope with any such limit.
    Closed,
    /// Admit without counting.
    Open,
}

/// What a replica does when a reservation on Redis errors or times out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailurePolicy {
    /// `TOLLGATE_REDIS_ON_FAILURE_BUDGETS`: `closed` (default) or `open`.
    pub budgets: BudgetsOnFailure,
    /// `TOLLGATE_REDIS_ON_FAILURE_LIMITS`: `local` (default), `closed` or `open`.
    pub limits: LimitsOnFailure,
    /// `TOLLGATE_REPLICAS`: how many replicas share the fleet's limits (default 1, at least 1).
    pub replicas: u64,
    /// `TOLLGATE_REDIS_TIMEOUT_MS`: longest wait for a reservation, ms (default 250).
    pub timeout: Duration,
    /// How long after a failure reservations skip Redis and go straight to the fallback
    /// (default 1 s), so a Redis that is down is not called once per request.
    pub backoff: Duration,
}

impl Default for FailurePolicy {
    fn default() -> Self {
        Self {
            budgets: BudgetsOnFailure::Closed,
            limits: LimitsOnFailure::Local,
            replicas: 1,
            timeout: Duration::from_millis(250),
            backoff: Duration::from_secs(1),
        }
    }
}

/// An environment value [`FailurePolicy::from_env`] cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?}: expected {expected}")]
pub struct PolicyError {
    /// The variable.
    pub var: &'static str,
    /// What it held.
    pub value: String,
    /// What it may hold.
    pub expected: &'static str,
}

impl FailurePolicy {
    /// The policy from the environment, read through `env` (`|k| std::env::var(k).ok()` in the
    /// server); unset or empty variables take their defaults. Values are case-insensitive.
    ///
    /// # Errors
    /// [`PolicyError`] naming the variable whose value is not one of its choices, or a
    /// replica count or timeout that is not a positive integer.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, PolicyError> {
        let mut p = Self::default();
        let get = |var: &str| {
            env(var)
                .map(|v| v.trim().to_ascii_lowercase())
                .filter(|v| !v.is_empty())
        };
        const BUDGETS: &str = "TOLLGATE_REDIS_ON_FAILURE_BUDGETS";
        const LIMITS: &str = "TOLLGATE_REDIS_ON_FAILURE_LIMITS";
        const REPLICAS: &str = "TOLLGATE_REPLICAS";
        const TIMEOUT: &str = "TOLLGATE_REDIS_TIMEOUT_MS";
        let err = |var, value: String, expected| PolicyError {
            var,
            value,
            expected,
        };
        if let Some(v) = get(BUDGETS) {
            p.budgets = match v.as_str() {
                "closed" => BudgetsOnFailure::Closed,
                "open" => BudgetsOnFailure::Open,
                _ => return Err(err(BUDGETS, v, "closed or open")),
            };
        }
        if let Some(v) = get(LIMITS) {
            p.limits = match v.as_str() {
                "local" => LimitsOnFailure::Local,
                "closed" => LimitsOnFailure::Closed,
                "open" => LimitsOnFailure::Open,
                _ => return Err(err(LIMITS, v, "local, closed or open")),
            };
        }
        if let Some(v) = get(REPLICAS) {
            p.replicas = match v.parse::<u64>() {
                Ok(n) if n >= 1 => n,
                _ => return Err(err(REPLICAS, v, "a whole number of at least 1")),
            };
        }
        if let Some(v) = get(TIMEOUT) {
            p.timeout = match v.parse::<u64>() {
                Ok(n) if n >= 1 => Duration::from_millis(n),
                _ => return Err(err(TIMEOUT, v, "milliseconds, at least 1")),
            };
        }
        Ok(p)
    }

    /// `limit` shared by [`Self::replicas`] replicas: divided, rounded down, at least 1 (a
    /// limit of 0, which refuses everything, stays 0).
    pub fn local_share(&self, limit: u64) -> u64 {
        if limit == 0 {
            return 0;
        }
        (limit / self.replicas.max(1)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn defaults_fail_budgets_closed_and_limits_local() {
        let p = FailurePolicy::from_env(&env(&[])).unwrap();
        assert_eq!(p, FailurePolicy::default());
        assert_eq!(p.budgets, BudgetsOnFailure::Closed);
        assert_eq!(p.limits, LimitsOnFailure::Local);
        assert_eq!((p.replicas, p.timeout), (1, Duration::from_millis(250)));
    }

    #[test]
    fn every_variable_is_read_and_a_bad_value_names_its_variable() {
        let p = FailurePolicy::from_env(&env(&[
            ("TOLLGATE_REDIS_ON_FAILURE_BUDGETS", "Open"),
            ("TOLLGATE_REDIS_ON_FAILURE_LIMITS", " closed "),
            ("TOLLGATE_REPLICAS", "4"),
            ("TOLLGATE_REDIS_TIMEOUT_MS", "80"),
        ]))
        .unwrap();
        assert_eq!(p.budgets, BudgetsOnFailure::Open);
        assert_eq!(p.limits, LimitsOnFailure::Closed);
        assert_eq!((p.replicas, p.timeout), (4, Duration::from_millis(80)));
        let e = FailurePolicy::from_env(&env(&[("TOLLGATE_REDIS_ON_FAILURE_LIMITS", "maybe")]))
            .unwrap_err();
        assert_eq!(e.var, "TOLLGATE_REDIS_ON_FAILURE_LIMITS");
        assert_eq!(
            e.to_string(),
            "TOLLGATE_REDIS_ON_FAILURE_LIMITS=\"maybe\": expected local, closed or open"
        );
        let e = FailurePolicy::from_env(&env(&[("TOLLGATE_REPLICAS", "0")])).unwrap_err();
        assert_eq!(e.var, "TOLLGATE_REPLICAS");
        let e = FailurePolicy::from_env(&env(&[("TOLLGATE_REDIS_TIMEOUT_MS", "-5")])).unwrap_err();
        assert_eq!(e.var, "TOLLGATE_REDIS_TIMEOUT_MS");
    }

    #[test]
    fn a_local_share_is_the_limit_over_the_replicas_rounded_down_at_least_one() {
        let p = FailurePolicy {
            replicas: 3,
            ..FailurePolicy::default()
        };
        assert_eq!(p.local_share(10), 3);
        assert_eq!(p.local_share(2), 1);
        assert_eq!(p.local_share(0), 0);
        assert_eq!(FailurePolicy::default().local_share(7), 7);
    }
}
