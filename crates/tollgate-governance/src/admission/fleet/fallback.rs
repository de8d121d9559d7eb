//! [`Fallback`]: what admits requests while Redis cannot, per [`FailurePolicy`]: refuse, or
//! count on this replica's own [`InMemoryCounterStore`] with each RPM/TPM/parallel limit
//! divided by the replica count, and remember each ticket admitted that way as local.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::Utc;

use crate::admission::redis::{BudgetsOnFailure, FailurePolicy, LimitsOnFailure};
use crate::admission::{
    Actual, CounterStore, CounterStoreError, Denial, InMemoryCounterStore, Limits, ReserveRequest,
    Reserved, ScopeRequest, Ticket,
};

/// The limits a scope is counted against locally while Redis is unreachable, or `None` when
/// the policy refuses the request. Budgets are never checked locally (a replica cannot know
/// what the fleet spent): with budgets `closed` a finite budget refuses; with `open` it is
/// admitted and its usage charged to Redis later.
pub(super) fn local_limits(l: &Limits, policy: &FailurePolicy) -> Option<Limits> {
    if l.finite_budget().is_some() && policy.budgets == BudgetsOnFailure::Closed {
        return None;
    }
    let limited =
        l.rpm_limit.is_some() || l.tpm_limit.is_some() || l.max_parallel_requests.is_some();
    let share = |v: Option<u64>| v.map(|n| policy.local_share(n));
    match policy.limits {
        LimitsOnFailure::Closed if limited => None,
        LimitsOnFailure::Local => Some(Limits {
            rpm_limit: share(l.rpm_limit),
            tpm_limit: share(l.tpm_limit),
            max_parallel_requests: share(l.max_parallel_requests),
            ..Limits::default()
        }),
        LimitsOnFailure::Closed | LimitsOnFailure::Open => Some(Limits::default()),
    }
}

/// This replica's counters for requests admitted while Redis failed.
pub(super) struct Fallback {
    store: InMemoryCounterStore,
    /// (request id, attempt) of tickets admitted locally and not yet settled or released.
    local: Mutex<HashSet<(Arc<str>, u32)>>,
    /// `local.len()`, read without the lock on every settlement.
    count: AtomicUsize,
}

impl std::fmt::Debug for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("local_tickets", &self.count.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Fallback {
    /// Local counters with RPM/TPM windows of `window_ms`.
    pub(super) fn new(window_ms: i64) -> Self {
        Self {
            store: InMemoryCounterStore::new(window_ms),
            local: Mutex::new(HashSet::new()),
            count: AtomicUsize::new(0),
        }
    }

    fn set(&self) -> std::sync::MutexGuard<'_, HashSet<(Arc<str>, u32)>> {
        self.local.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits `req` locally under `policy`, after Redis failed with `cause`.
    ///
    /// # Errors
    /// `cause` when the policy refuses (a finite budget with budgets `closed`, a limit with
    /// limits `closed`).
    pub(super) fn reserve(
        &self,
        req: &ReserveRequest<'_>,
        policy: &FailurePolicy,
        cause: CounterStoreError,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError> {
        let mut scopes = Vec::with_capacity(req.scopes.len());
        for s in req.scopes {
            let Some(limits) = local_limits(&s.limits, policy) else {
                return Err(cause);
            };
            scopes.push(ScopeRequest {
                key: s.key.clone(),
                limits,
                display: s.display.clone(),
            });
        }
        let local = ReserveRequest {
            scopes: &scopes,
            ..*req
        };
        let granted = self.store.reserve(&local, Utc::now());
        if let Ok((t, _)) = &granted {
            self.set().insert((t.request_id.clone(), t.attempt));
            self.count.fetch_add(1, Ordering::AcqRel);
        }
        Ok(granted)
    }

    /// True (and forgotten) when `ticket` was admitted locally.
    fn take(&self, ticket: &Ticket) -> bool {
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let removed = self
            .set()
            .remove(&(ticket.request_id.clone(), ticket.attempt));
        if removed {
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
        removed
    }

    /// Settles `ticket` on the local counters when it is local; true then (its usage is still
    /// to be charged to Redis).
    pub(super) fn settle(&self, ticket: &Ticket, actual: Actual) -> bool {
        if !self.take(ticket) {
            return false;
        }
        self.store.settle(ticket, actual, Utc::now());
        true
    }

    /// Releases `ticket` on the local counters when it is local; true then.
    pub(super) fn release(&self, ticket: &Ticket) -> bool {
        if !self.take(ticket) {
            return false;
        }
        self.store.release(ticket, Utc::now());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::ScopeKey;

    fn policy(budgets: BudgetsOnFailure, limits: LimitsOnFailure) -> FailurePolicy {
        FailurePolicy {
            budgets,
            limits,
            replicas: 4,
            ..FailurePolicy::default()
        }
    }

    #[test]
    fn budgets_refuse_when_closed_and_limits_are_shared_by_the_replicas() {
        let rated = Limits {
            rpm_limit: Some(10),
            tpm_limit: Some(1000),
            max_parallel_requests: Some(3),
            ..Limits::default()
        };
        let budget = Limits {
            max_budget: Some(5.0),
            ..Limits::default()
        };
        let p = policy(BudgetsOnFailure::Closed, LimitsOnFailure::Local);
        assert_eq!(local_limits(&budget, &p), None);
        let local = local_limits(&rated, &p).unwrap();
        assert_eq!(
            (
                local.rpm_limit,
                local.tpm_limit,
                local.max_parallel_requests
            ),
            (Some(2), Some(250), Some(1))
        );
        let p = policy(BudgetsOnFailure::Open, LimitsOnFailure::Local);
        assert_eq!(
            local_limits(&budget, &p),
            Some(Limits::default()),
            "no local budget"
        );
        let p = policy(BudgetsOnFailure::Open, LimitsOnFailure::Closed);
        assert_eq!(local_limits(&rated, &p), None);
        assert_eq!(local_limits(&budget, &p), Some(Limits::default()));
        let p = policy(BudgetsOnFailure::Open, LimitsOnFailure::Open);
        assert_eq!(local_limits(&rated, &p), Some(Limits::default()));
    }

    #[test]
    fn a_local_ticket_is_counted_at_the_share_and_settled_once() {
        let f = Fallback::new(60_000);
        let p = policy(BudgetsOnFailure::Closed, LimitsOnFailure::Local);
        let scopes = [ScopeRequest::new(
            ScopeKey::key("h"),
            Limits {
                rpm_limit: Some(9),
                ..Limits::default()
            },
        )];
        let req = |id| ReserveRequest {
            request_id: id,
            attempt: 0,
            scopes: &scopes,
            cost_units: 5,
            prompt_tokens: 1,
            reserve_tokens: 2,
        };
        let cause = || CounterStoreError::Unavailable("down".into());
        let a = f.reserve(&req("a"), &p, cause()).unwrap().unwrap().0;
        let b = f.reserve(&req("b"), &p, cause()).unwrap().unwrap().0;
        let denied = f.reserve(&req("c"), &p, cause()).unwrap().unwrap_err();
        assert!(
            matches!(denied, Denial::Requests { limit: 2, .. }),
            "{denied:?}"
        );
        let actual = Actual {
            cost_units: 7,
            tokens: 3,
        };
        assert!(f.settle(&a, actual));
        assert!(!f.settle(&a, actual), "once");
        assert!(f.release(&b));
        let s = f.store.spend(&ScopeKey::key("h")).unwrap();
        assert_eq!((s.in_flight, s.window_tokens), (0, 3));
        let budget = [ScopeRequest::new(
            ScopeKey::key("h"),
            Limits {
                max_budget: Some(1.0),
                ..Limits::default()
            },
        )];
        let r = ReserveRequest {
            scopes: &budget,
            ..req("d")
        };
        assert!(matches!(
            f.reserve(&r, &p, cause()),
            Err(CounterStoreError::Unavailable(_))
        ));
    }
}
