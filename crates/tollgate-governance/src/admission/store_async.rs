//! [`AsyncCounterStore`]: the async twin of [`CounterStore`], for counters that live behind a
//! network (Redis, `super::redis`), and [`SyncCounterStore`], the adapter that serves any
//! in-process [`CounterStore`] through it, so a server can hold one
//! `Arc<dyn AsyncCounterStore>` whichever store it was configured with.
//!
//! Same operations, same request and response types, same rules as [`CounterStore`]; two
//! differences:
//!
//! - **No `now` argument.** The store's own clock decides: the Redis server's (`TIME`) for the
//!   Redis store, so replicas whose clocks drift still share one window; the adapter's injected
//!   [`Clock`] for an in-process store.
//! - **Every call can fail** with a [`CounterStoreError`] (connection refused or lost, timeout,
//!   a reply the client cannot read). A denial is not an error: `reserve` answers
//!   `Ok(Err(Denial))`. What to do when the store is unreachable (fail closed for budgets,
//!   local fallback for rate limits) is the caller's decision.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::scope::ScopeKey;
use super::store::{
    Actual, CounterStore, Denial, RateLimitStatus, ReserveRequest, ScopeSpend, SpendSnapshot,
    Ticket,
};
use crate::duration::{BudgetDuration, Clock, SystemClock};

/// Why a counter store call failed (not a denial: the store could not answer).
#[derive(Debug, thiserror::Error)]
pub enum CounterStoreError {
    /// The store could not be reached or did not answer in time; nothing can be assumed about
    /// whether a write took effect (a reservation that did is released when its lease ends).
    #[error("counter store unavailable: {0}")]
    Unavailable(String),
    /// The store answered something this client does not understand (a different library
    /// version, a key written by something else).
    #[error("counter store sent an unexpected reply to {operation}: {detail}")]
    BadReply {
        /// The operation (`reserve`, `settle`, ...).
        operation: &'static str,
        /// What was wrong with the reply.
        detail: String,
    },
}

/// A granted reservation as [`AsyncCounterStore::reserve`] returns it: the ticket and the
/// `x-ratelimit-*` status of each scope with an RPM or TPM limit.
pub type Reserved = (Ticket, Vec<RateLimitStatus>);

/// The async counter store seam. Rules and check order: [`CounterStore`] and the
/// [`crate::admission`] module docs.
#[async_trait]
pub trait AsyncCounterStore: Send + Sync + 'static {
    /// [`CounterStore::reserve`]: all or nothing on every scope of `req`, on the store's clock.
    /// `Ok(Err(denial))` when a limit refuses (nothing reserved).
    async fn reserve(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError>;

    /// [`CounterStore::settle`]: exactly once per (request id, attempt); `Ok(None)` when the
    /// ticket was already settled or released, else each scope's spend after, USD, in ticket
    /// order.
    async fn settle(
        &self,
        ticket: &Ticket,
        actual: Actual,
    ) -> Result<Option<Vec<f64>>, CounterStoreError>;

    /// [`CounterStore::release`]: `Ok(false)` when already settled or released.
    async fn release(&self, ticket: &Ticket) -> Result<bool, CounterStoreError>;

    /// [`CounterStore::set_spend`].
    async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError>;

    /// [`CounterStore::seed`].
    async fn seed(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError>;

    /// [`CounterStore::reset_spend`], the next reset computed on the store's clock.
    async fn reset_spend(
        &self,
        scope: &ScopeKey,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError>;

    /// [`CounterStore::set_window`].
    async fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    ) -> Result<(), CounterStoreError>;

    /// [`CounterStore::spend`]: `Ok(None)` when the store has never seen the scope.
    async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError>;

    /// [`CounterStore::drain_dirty`]. With many replicas on one shared store, each changed scope
    /// is handed to exactly one of the replicas that drain.
    async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError>;
}

/// Serves an in-process [`CounterStore`] as an [`AsyncCounterStore`]: each call runs the sync
/// operation inline (it never blocks for long, see [`CounterStore`]) at the clock's time, and
/// never fails.
pub struct SyncCounterStore<S: ?Sized> {
    store: Arc<S>,
    clock: Arc<dyn Clock>,
}

impl<S: CounterStore + ?Sized> SyncCounterStore<S> {
    /// The adapter over `store`, on the system clock.
    pub fn new(store: Arc<S>) -> Self {
        Self::with_clock(store, Arc::new(SystemClock))
    }

    /// The adapter over `store`, on `clock` (tests, simulations).
    pub fn with_clock(store: Arc<S>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &Arc<S> {
        &self.store
    }
}

impl<S: ?Sized> std::fmt::Debug for SyncCounterStore<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncCounterStore").finish_non_exhaustive()
    }
}

#[async_trait]
impl<S: CounterStore + ?Sized> AsyncCounterStore for SyncCounterStore<S> {
    async fn reserve(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError> {
        Ok(self.store.reserve(req, self.clock.now()))
    }

    async fn settle(
        &self,
        ticket: &Ticket,
        actual: Actual,
    ) -> Result<Option<Vec<f64>>, CounterStoreError> {
        Ok(self.store.settle(ticket, actual, self.clock.now()))
    }

    async fn release(&self, ticket: &Ticket) -> Result<bool, CounterStoreError> {
        Ok(self.store.release(ticket, self.clock.now()))
    }

    async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError> {
        self.store.set_spend(scope, spend_usd, budget_reset_at);
        Ok(())
    }

    async fn seed(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        self.store.seed(scope, spend_usd, budget_reset_at, duration);
        Ok(())
    }

    async fn reset_spend(
        &self,
        scope: &ScopeKey,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        self.store.reset_spend(scope, duration, self.clock.now());
        Ok(())
    }

    async fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    ) -> Result<(), CounterStoreError> {
        self.store.set_window(scope, duration, reset_at, restart);
        Ok(())
    }

    async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError> {
        Ok(self.store.spend(scope))
    }

    async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError> {
        Ok(self.store.drain_dirty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{InMemoryCounterStore, Limits, ScopeRequest};
    use crate::duration::ManualClock;

    #[tokio::test]
    async fn the_adapter_serves_the_in_process_rules_at_its_clock() {
        let t0 = DateTime::parse_from_rfc3339("2026-03-14T10:17:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let clock = Arc::new(ManualClock::new(t0));
        let store: Arc<dyn AsyncCounterStore> = Arc::new(SyncCounterStore::with_clock(
            Arc::new(InMemoryCounterStore::default()),
            clock.clone(),
        ));
        let scopes = [ScopeRequest::new(
            ScopeKey::key("h"),
            Limits {
                rpm_limit: Some(1),
                max_budget: Some(1.0),
                budget_duration: Some(BudgetDuration::Days(1)),
                ..Limits::default()
            },
        )];
        let req = |id| ReserveRequest {
            request_id: id,
            attempt: 0,
            scopes: &scopes,
            cost_units: 10,
            prompt_tokens: 5,
            reserve_tokens: 20,
        };
        let (ticket, status) = store.reserve(&req("a")).await.unwrap().unwrap();
        assert_eq!(status[0].remaining_requests, Some(0));
        assert_eq!(
            status[0].window_reset_ms,
            t0.timestamp_millis() + 60_000,
            "the window starts at the adapter's clock"
        );
        let denied = store.reserve(&req("b")).await.unwrap().unwrap_err();
        assert!(matches!(
            denied,
            Denial::Requests {
                scope: 0,
                limit: 1,
                ..
            }
        ));
        let actual = Actual {
            cost_units: 5_000_000_000,
            tokens: 30,
        };
        assert_eq!(
            store.settle(&ticket, actual).await.unwrap(),
            Some(vec![0.5])
        );
        assert_eq!(store.settle(&ticket, actual).await.unwrap(), None);
        assert!(!store.release(&ticket).await.unwrap());
        clock.advance_ms(60_000);
        let (ticket, _) = store.reserve(&req("b")).await.unwrap().unwrap();
        assert!(store.release(&ticket).await.unwrap());
        let s = store.spend(&ScopeKey::key("h")).await.unwrap().unwrap();
        assert_eq!((s.spend, s.in_flight), (0.5, 0));
        assert_eq!(
            s.budget_reset_at.map(|t| t.to_rfc3339()),
            Some("2026-03-15T00:00:00+00:00".to_string())
        );
        store.reset_spend(&ScopeKey::key("h"), None).await.unwrap();
        assert_eq!(store.drain_dirty().await.unwrap()[0].spend, 0.0);
    }
}
