//! [`BatchedRedis`]: the [`SharedCounters`] of a fleet on Redis. One awaited round trip per
//! request before its call (the reservation, with the fleet marker checked and each scope's
//! spend returned in the same call); settlements, releases and charges queued without waiting
//! and sent by the batcher, many requests per round trip; the [`FailurePolicy`] when Redis
//! fails.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::counts::RoundTrips;
use super::fallback::Fallback;
use super::health::Health;
use super::queue::OpQueue;
use super::reseed::{self, ReseedError, ReseedSource, Seed};
use crate::admission::redis::{
    BatchOp, BatchOptions, FailurePolicy, RedisCounterStore, ReserveOutcome,
};
use crate::admission::{
    Actual, AsyncCounterStore, CounterStoreError, Denial, ReserveRequest, Reserved, ScopeKey,
    ScopeSpend, SharedCounters, SpendSnapshot, Ticket,
};
use crate::duration::BudgetDuration;

/// How a [`BatchedRedis`] batches.
#[derive(Debug, Clone)]
pub struct BatchedOptions {
    /// Longest linger after the first operation of an empty queue before sending (default
    /// 5 ms).
    pub interval: Duration,
    /// Operations per batch: a batch leaves as soon as this many are queued (default 256).
    pub max_batch: usize,
    /// Operations the queue holds; one more is dropped and counted (default 262 144, about
    /// 30 MB, half a minute of a Redis outage at 8 000 requests per second).
    pub queue_capacity: usize,
    /// Delivery deadline from queueing, under normal operation (default 1 s); later deliveries
    /// are counted in [`RoundTrips::late_ops`].
    pub deadline: Duration,
    /// Longest wait for one batch's round trip before it is sent again (default 1 s).
    pub send_timeout: Duration,
    /// How a batch is cut into calls.
    pub batch: BatchOptions,
    /// Longest wait for another replica's reseed (default 2 s); the requests that found Redis
    /// empty wait this long at most, then fall back.
    pub reseed_wait: Duration,
    /// Lifetime of the fleet's reseed lock, should its holder die (default 30 s).
    pub reseed_lock_ttl: Duration,
}

impl Default for BatchedOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(5),
            max_batch: 256,
            queue_capacity: 1 << 18,
            deadline: Duration::from_secs(1),
            send_timeout: Duration::from_secs(1),
            batch: BatchOptions::default(),
            reseed_wait: Duration::from_secs(2),
            reseed_lock_ttl: Duration::from_secs(30),
        }
    }
}

/// What the request path, the batcher and the reseed share.
pub(super) struct Core {
    pub(super) store: RedisCounterStore,
    pub(super) queue: OpQueue,
    pub(super) counts: RoundTrips,
    pub(super) opts: BatchedOptions,
    pub(super) policy: FailurePolicy,
    pub(super) health: Health,
    pub(super) fallback: Fallback,
    pub(super) source: Arc<dyn ReseedSource>,
    /// One reseed at a time in this replica (held across the reseed's awaits; only taken when
    /// Redis reported its data lost, never on a normal request).
    pub(super) reseeding: tokio::sync::Mutex<()>,
}

/// [`SharedCounters`] on a [`RedisCounterStore`], batching everything after the call.
/// Needs a Tokio runtime (the batcher is a task); call [`SharedCounters::flush`] before
/// dropping it, which stops the batcher.
pub struct BatchedRedis {
    core: Arc<Core>,
    batcher: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for BatchedRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchedRedis")
            .field("store", &self.core.store)
            .field("queued", &self.core.queue.len())
            .finish_non_exhaustive()
    }
}

impl Drop for BatchedRedis {
    fn drop(&mut self) {
        self.batcher.abort();
    }
}

impl BatchedRedis {
    /// Starts the batcher over `store`; `source` seeds Redis again when it has lost its data;
    /// `policy` says what to do when Redis fails.
    pub fn start(
        store: RedisCounterStore,
        source: Arc<dyn ReseedSource>,
        policy: FailurePolicy,
        opts: BatchedOptions,
    ) -> Self {
        let core = Arc::new(Core {
            fallback: Fallback::new(store.rate_window_ms()),
            queue: OpQueue::new(opts.queue_capacity, opts.max_batch),
            health: Health::new(policy.backoff),
            counts: RoundTrips::default(),
            store,
            opts,
            policy,
            source,
            reseeding: tokio::sync::Mutex::new(()),
        });
        let batcher = tokio::spawn(super::batcher::run(Arc::clone(&core)));
        Self { core, batcher }
    }

    /// The round-trip and queue counters.
    pub fn round_trips(&self) -> &RoundTrips {
        &self.core.counts
    }

    /// False when the last reservation sent to Redis failed (timed out, connection refused)
    /// and none succeeded since: requests then meet the Redis-down policy.
    pub fn redis_answering(&self) -> bool {
        !self.core.health.last_call_failed()
    }

    /// The store underneath.
    pub fn store(&self) -> &RedisCounterStore {
        &self.core.store
    }

    /// Seeds Redis from the source unless the fleet marker says it is seeded (start-up; a
    /// reservation that finds the marker missing does the same by itself).
    ///
    /// # Errors
    /// [`ReseedError`] from the source or Redis, or when another replica's reseed did not end
    /// within [`BatchedOptions::reseed_wait`].
    pub async fn ensure_seeded(&self) -> Result<(), ReseedError> {
        reseed::reseed(&self.core).await
    }

    fn enqueue(&self, op: BatchOp) {
        if !self.core.queue.push(op) {
            let before = self.core.counts.dropped.fetch_add(1, Ordering::Relaxed);
            // the 1st, 2nd, 4th, 8th... drop: a full queue is told, not logged per request
            if (before + 1).is_power_of_two() {
                tracing::warn!(
                    dropped = before + 1,
                    "counter queue full: operations dropped"
                );
            }
        }
    }

    /// One checked reservation on Redis within the policy's timeout.
    async fn try_redis(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<ReserveOutcome, CounterStoreError> {
        RoundTrips::bump(&self.core.counts.before_call);
        let timeout = self.core.policy.timeout;
        match tokio::time::timeout(timeout, self.core.store.reserve_checked(req)).await {
            Ok(r) => r,
            Err(_) => Err(CounterStoreError::Unavailable(format!(
                "no reservation reply within {} ms",
                timeout.as_millis()
            ))),
        }
    }

    /// Redis could not admit `req` (`cause`): admit or refuse per the policy; after `failure`
    /// (not while already backing off) back off, and after a reservation call that failed,
    /// `undo` what it may still have reserved.
    fn fall_back(
        &self,
        req: &ReserveRequest<'_>,
        cause: CounterStoreError,
        failure: Failure,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError> {
        if failure != Failure::BackingOff {
            self.core.health.failed();
        }
        if failure == Failure::Call {
            // a call that timed out may still reserve once Redis reads it; the release,
            // sent behind it, frees that reservation (or finds nothing)
            self.enqueue(BatchOp::Release(redis_ticket(req)));
        }
        let granted = self.core.fallback.reserve(req, &self.core.policy, cause);
        let c = &self.core.counts;
        match &granted {
            Err(_) => RoundTrips::bump(&c.refused),
            Ok(Ok(_)) => RoundTrips::bump(&c.local_reserves),
            Ok(Err(_)) => {}
        }
        granted
    }
}

/// Why a reservation falls back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// A failure's back-off is running: Redis was not called.
    BackingOff,
    /// The reservation call failed or timed out (it may still take effect).
    Call,
    /// Redis lost its data and could not be seeded again (nothing was reserved).
    Unseeded,
}

/// The ticket Redis would have written for `req` (each distinct scope once, in order).
fn redis_ticket(req: &ReserveRequest<'_>) -> Ticket {
    let mut scopes: Vec<ScopeKey> = Vec::with_capacity(req.scopes.len());
    for s in req.scopes {
        if !scopes.contains(&s.key) {
            scopes.push(s.key.clone());
        }
    }
    Ticket {
        request_id: Arc::from(req.request_id),
        attempt: req.attempt,
        scopes: Arc::from(scopes),
        cost_units: req.cost_units,
        tokens: req.reserve_tokens,
        spend_units: None,
    }
}

#[async_trait]
impl SharedCounters for BatchedRedis {
    /// One round trip to Redis; when it errors or exceeds [`FailurePolicy::timeout`] (and for
    /// [`FailurePolicy::backoff`] after), the policy's fallback. A Redis that lost its data is
    /// seeded again from the source first (once per fleet), then asked again.
    async fn reserve(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError> {
        if self.core.health.backing_off() {
            let cause = CounterStoreError::Unavailable("Redis failed recently; backing off".into());
            return self.fall_back(req, cause, Failure::BackingOff);
        }
        let mut reseeded = false;
        loop {
            match self.try_redis(req).await {
                Ok(ReserveOutcome::Granted(r)) => return Ok(Ok(r)),
                Ok(ReserveOutcome::Denied(d)) => return Ok(Err(d)),
                Ok(ReserveOutcome::Unseeded) if !reseeded => {
                    reseeded = true;
                    if let Err(e) = reseed::reseed(&self.core).await {
                        tracing::warn!(error = %e, "reseed failed");
                        let cause = CounterStoreError::Unavailable(e.to_string());
                        return self.fall_back(req, cause, Failure::Unseeded);
                    }
                }
                Ok(ReserveOutcome::Unseeded) => {
                    let cause = CounterStoreError::Unavailable("Redis lost its counters".into());
                    return self.fall_back(req, cause, Failure::Unseeded);
                }
                Err(e) => return self.fall_back(req, e, Failure::Call),
            }
        }
    }

    fn settle(&self, ticket: Ticket, actual: Actual) {
        if self.core.fallback.settle(&ticket, actual) {
            self.enqueue(BatchOp::Charge(ticket, actual));
        } else {
            self.enqueue(BatchOp::Settle(ticket, actual));
        }
    }

    fn release(&self, ticket: Ticket) {
        if !self.core.fallback.release(&ticket) {
            self.enqueue(BatchOp::Release(ticket));
        }
    }

    async fn flush(&self, deadline: Duration) -> usize {
        let q = &self.core.queue;
        let until = Instant::now() + deadline;
        q.flushing.store(true, Ordering::Release);
        q.wake.notify_one();
        loop {
            let left = q.outstanding.load(Ordering::Acquire);
            let now = Instant::now();
            if left == 0 || now >= until {
                q.flushing.store(false, Ordering::Release);
                return left;
            }
            let wait = (until - now).min(Duration::from_millis(10));
            let _ = tokio::time::timeout(wait, q.progress.notified()).await;
        }
    }

    async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError> {
        self.core
            .store
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
        let seed = Seed {
            scope: scope.clone(),
            spend_usd,
            budget_reset_at,
            duration,
        };
        self.core.store.seed_absent(&seed).await.map(|_| ())
    }

    async fn reset_spend(
        &self,
        scope: &ScopeKey,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        self.core.store.reset_spend(scope, duration).await
    }

    async fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    ) -> Result<(), CounterStoreError> {
        self.core
            .store
            .set_window(scope, duration, reset_at, restart)
            .await
    }

    async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError> {
        self.core.store.spend(scope).await
    }

    async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError> {
        self.core.store.drain_dirty().await
    }
}
