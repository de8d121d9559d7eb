//! [`SharedCounters`]: counters shared by every replica of a fleet (Redis, Redis Cluster), as
//! the admission engine uses them on a request's path.
//!
//! A request waits on the shared store once, for its reservation ([`SharedCounters::reserve`]):
//! that is the one round trip before the upstream call. Everything after the call leaves
//! without being waited on: [`SharedCounters::settle`] and [`SharedCounters::release`] only
//! queue the operation (a batcher sends queued operations of many requests as one pipeline),
//! so they are synchronous and never fail; what they cannot deliver is the implementation's to
//! retry, exactly once per (request id, attempt), and to account for.
//!
//! Management operations (spend reset, window changes, reads for `/key/info`) are rare and
//! awaited, so that a change is in force for the next request of every replica.
//!
//! The server's implementation is [`super::fleet::BatchedRedis`] (settlements batched into one
//! pipeline, the Redis-down policy, reseeding). [`Unbatched`] is the plain one over any
//! [`AsyncCounterStore`], one task per settlement and no failure policy: what the engine's own
//! tests run the shared arm on, over the in-process store.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::scope::ScopeKey;
use super::store::{Actual, Denial, ReserveRequest, ScopeSpend, SpendSnapshot, Ticket};
use super::store_async::{AsyncCounterStore, CounterStoreError, Reserved};
use crate::duration::BudgetDuration;

/// Shared counters as the admission engine calls them. Rules: [`crate::admission`] and
/// [`super::CounterStore`]; the clock is the store's.
#[async_trait]
pub trait SharedCounters: Send + Sync + 'static {
    /// All or nothing on every scope of `req`: the request's one round trip before its call.
    /// `Ok(Err(denial))` when a limit refuses; `Err` when the store cannot answer in time
    /// (the caller fails closed or falls back, see the implementation).
    async fn reserve(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError>;

    /// Queues the settlement of `ticket` with `actual` usage; never waits on the store.
    /// Exactly once per (request id, attempt), also when the queue retries.
    fn settle(&self, ticket: Ticket, actual: Actual);

    /// Queues the release of `ticket` (nothing charged); never waits on the store.
    fn release(&self, ticket: Ticket);

    /// Sends what is queued, waiting at most `deadline` (graceful shutdown). Returns how many
    /// queued operations could not be delivered.
    async fn flush(&self, deadline: Duration) -> usize;

    /// [`AsyncCounterStore::set_spend`].
    async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError>;

    /// Seeds a scope from the database at start **only if the shared store does not hold it
    /// yet**: another replica (or this one before a restart) may already have counted on it,
    /// and the shared store is the live truth.
    async fn seed_absent(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError>;

    /// [`AsyncCounterStore::reset_spend`].
    async fn reset_spend(
        &self,
        scope: &ScopeKey,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError>;

    /// [`AsyncCounterStore::set_window`].
    async fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    ) -> Result<(), CounterStoreError>;

    /// [`AsyncCounterStore::spend`].
    async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError>;

    /// [`AsyncCounterStore::drain_dirty`]: each changed scope to exactly one draining replica.
    async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError>;
}

/// [`SharedCounters`] over any [`AsyncCounterStore`], without batching: each settlement and
/// release is its own spawned call (one round trip each), retried never. Needs a Tokio
/// runtime. `seed_absent` reads the scope first (two calls; start-up only).
pub struct Unbatched<S: ?Sized> {
    store: Arc<S>,
}

impl<S: AsyncCounterStore + ?Sized> Unbatched<S> {
    /// Wraps `store`.
    pub fn new(store: Arc<S>) -> Self {
        Self { store }
    }
}

impl<S: ?Sized> std::fmt::Debug for Unbatched<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unbatched").finish_non_exhaustive()
    }
}

#[async_trait]
impl<S: AsyncCounterStore + ?Sized> SharedCounters for Unbatched<S> {
    async fn reserve(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError> {
        self.store.reserve(req).await
    }

    fn settle(&self, ticket: Ticket, actual: Actual) {
        let store = Arc::clone(&self.store);
        tokio::spawn(async move {
            if let Err(e) = store.settle(&ticket, actual).await {
                tracing::warn!(request_id = %ticket.request_id, error = %e, "settlement not delivered");
            }
        });
    }

    fn release(&self, ticket: Ticket) {
        let store = Arc::clone(&self.store);
        tokio::spawn(async move {
            if let Err(e) = store.release(&ticket).await {
                tracing::warn!(request_id = %ticket.request_id, error = %e, "release not delivered");
            }
        });
    }

    async fn flush(&self, _deadline: Duration) -> usize {
        0
    }

    async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError> {
        self.store
            .set_spend(scope, spend_usd, budget_reset_at)
            .await
    }

    async fn seed_absent(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        if self.store.spend(scope).await?.is_some() {
            return Ok(());
        }
        self.store
            .seed(scope, spend_usd, budget_reset_at, duration)
            .await
    }

    async fn reset_spend(
        &self,
        scope: &ScopeKey,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        self.store.reset_spend(scope, duration).await
    }

    async fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    ) -> Result<(), CounterStoreError> {
        self.store
            .set_window(scope, duration, reset_at, restart)
            .await
    }

    async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError> {
        self.store.spend(scope).await
    }

    async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError> {
        self.store.drain_dirty().await
    }
}
