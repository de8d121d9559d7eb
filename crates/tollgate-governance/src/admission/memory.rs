//! [`InMemoryCounterStore`]: the in-process [`CounterStore`].
//!
//! Layout: a sharded map `ScopeKey → Arc<Mutex<ScopeState>>` (32 shards behind `RwLock`s, read
//! locks on the hot path once a scope exists) and a sharded set of in-flight
//! (request id, attempt) pairs that makes settlement exactly-once. A reservation locks its
//! scopes' mutexes **in `ScopeKey` order** (no deadlock between requests touching overlapping
//! scopes), checks all, applies all, and unlocks: all or nothing. Settlement locks one scope at
//! a time (each scope's invariant is its own). Nothing here awaits.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use chrono::{DateTime, Utc};

use super::money::{units_to_usd, usd_to_units};
use super::scope::ScopeKey;
use super::store::{
    Actual, CounterStore, Denial, RateLimitStatus, ReserveRequest, ScopeSpend, SpendSnapshot,
    Ticket,
};
use crate::duration::BudgetDuration;

mod reserve;

use reserve::{check_all, commit_all, lock_in_order, lock_order, ticket};

const SHARDS: usize = 32;

/// LiteLLM's `LITELLM_RATE_LIMIT_WINDOW_SIZE`: 60 s.
pub const DEFAULT_RATE_WINDOW_MS: i64 = 60_000;

#[derive(Debug, Default)]
struct ScopeState {
    spend: i64,
    reserved: i64,
    budget_duration: Option<BudgetDuration>,
    budget_reset_at: Option<DateTime<Utc>>,
    /// Start of the current fixed rate window, ms; `None` until the first request.
    window_start_ms: Option<i64>,
    window_requests: u64,
    /// Settled tokens in the current window.
    window_tokens: u64,
    /// Tokens reserved by requests in flight (count in every window until they settle).
    reserved_tokens: u64,
    in_flight: u64,
    dirty: bool,
    added_since_drain: i64,
    reset_since_drain: bool,
}

impl ScopeState {
    /// Applies the budget window: a passed `budget_reset_at` zeroes spend and moves on; a window
    /// scope without a reset time gets one. Returns true when the state changed.
    fn roll_budget(&mut self, duration: Option<BudgetDuration>, now: DateTime<Utc>) -> bool {
        self.budget_duration = duration;
        let Some(d) = duration else { return false };
        match self.budget_reset_at {
            None => {
                self.budget_reset_at = Some(d.next_reset(now));
                true
            }
            Some(at) if at <= now => {
                self.spend = 0;
                self.budget_reset_at = Some(d.next_reset(now));
                self.reset_since_drain = true;
                true
            }
            Some(_) => false,
        }
    }

    /// Fixed rate window of `window_ms`, started by the first request after the previous one ended.
    fn roll_window(&mut self, now_ms: i64, window_ms: i64) -> i64 {
        match self.window_start_ms {
            Some(start) if now_ms < start + window_ms => start + window_ms,
            _ => {
                self.window_start_ms = Some(now_ms);
                self.window_requests = 0;
                self.window_tokens = 0;
                now_ms + window_ms
            }
        }
    }

    fn tokens_used(&self) -> u64 {
        self.window_tokens.saturating_add(self.reserved_tokens)
    }
}

type Shard = RwLock<HashMap<ScopeKey, Arc<Mutex<ScopeState>>>>;
/// (request id, attempt) of a reservation in flight.
type InflightKey = (Arc<str>, u32);
type InflightShard = Mutex<HashSet<InflightKey>>;
/// The lock held on one scope during a reservation (`None` for a scope listed twice).
type ScopeGuard<'a> = Option<MutexGuard<'a, ScopeState>>;

/// The in-process counter store (single replica). Create one per gateway process and share it
/// through an `Arc`.
pub struct InMemoryCounterStore {
    shards: Box<[Shard]>,
    inflight: Box<[InflightShard]>,
    dirty: Mutex<Vec<ScopeKey>>,
    window_ms: i64,
}

impl Default for InMemoryCounterStore {
    fn default() -> Self {
        Self::new(DEFAULT_RATE_WINDOW_MS)
    }
}

impl std::fmt::Debug for InMemoryCounterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryCounterStore")
            .field("window_ms", &self.window_ms)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn shard_of<K: Hash + ?Sized>(k: &K) -> usize {
    let mut h = DefaultHasher::new();
    k.hash(&mut h);
    (h.finish() as usize) % SHARDS
}

impl InMemoryCounterStore {
    /// A store whose RPM/TPM windows last `window_ms` milliseconds (LiteLLM: 60 000).
    pub fn new(window_ms: i64) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            inflight: (0..SHARDS).map(|_| Mutex::new(HashSet::new())).collect(),
            dirty: Mutex::new(Vec::new()),
            window_ms: window_ms.max(1),
        }
    }

    fn state(&self, key: &ScopeKey) -> Arc<Mutex<ScopeState>> {
        let shard = &self.shards[shard_of(key)];
        if let Some(s) = shard.read().unwrap_or_else(|e| e.into_inner()).get(key) {
            return s.clone();
        }
        shard
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.clone())
            .or_default()
            .clone()
    }

    fn existing(&self, key: &ScopeKey) -> Option<Arc<Mutex<ScopeState>>> {
        self.shards[shard_of(key)]
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()
    }

    fn mark_dirty(&self, key: &ScopeKey, st: &mut ScopeState) {
        if !st.dirty {
            st.dirty = true;
            lock(&self.dirty).push(key.clone());
        }
    }

    fn inflight_remove(&self, ticket: &Ticket) -> bool {
        self.inflight_remove_key(&(ticket.request_id.clone(), ticket.attempt))
    }

    /// Forgets the in-flight (request id, attempt) `k`; false when it was not in flight.
    fn inflight_remove_key(&self, k: &InflightKey) -> bool {
        lock(&self.inflight[shard_of(k)]).remove(k)
    }

    /// Records (request id, attempt) `k` as in flight; false when it already is.
    fn inflight_insert(&self, k: &InflightKey) -> bool {
        lock(&self.inflight[shard_of(k)]).insert(k.clone())
    }

    /// Rolls the budget and rate windows of every locked scope (each distinct scope once, in
    /// lock `order`) to `now`; returns each scope's rate-window end, Unix ms, by request index
    /// (0 for a duplicate listing, which has no guard).
    fn roll_all(
        &self,
        req: &ReserveRequest<'_>,
        order: &[usize],
        guards: &mut [ScopeGuard<'_>],
        now: DateTime<Utc>,
    ) -> Vec<i64> {
        let now_ms = now.timestamp_millis();
        let mut window_end = vec![0i64; req.scopes.len()];
        for &i in order {
            if let Some(st) = guards[i].as_deref_mut() {
                if st.roll_budget(req.scopes[i].limits.budget_duration, now) {
                    self.mark_dirty(&req.scopes[i].key, st);
                }
                window_end[i] = st.roll_window(now_ms, self.window_ms);
            }
        }
        window_end
    }

    fn settle_scope(
        &self,
        key: &ScopeKey,
        ticket: &Ticket,
        actual: Actual,
        now: DateTime<Utc>,
    ) -> f64 {
        let st = self.state(key);
        let mut st = lock(&st);
        let duration = st.budget_duration;
        st.roll_budget(duration, now);
        st.roll_window(now.timestamp_millis(), self.window_ms);
        st.reserved = st.reserved.saturating_sub(ticket.cost_units).max(0);
        st.reserved_tokens = st.reserved_tokens.saturating_sub(ticket.tokens);
        st.in_flight = st.in_flight.saturating_sub(1);
        if actual.cost_units != 0 || actual.tokens != 0 {
            st.spend = st.spend.saturating_add(actual.cost_units);
            st.added_since_drain = st.added_since_drain.saturating_add(actual.cost_units);
            st.window_tokens = st.window_tokens.saturating_add(actual.tokens);
            self.mark_dirty(key, &mut st);
        }
        units_to_usd(st.spend)
    }
}

impl CounterStore for InMemoryCounterStore {
    fn reserve(
        &self,
        req: &ReserveRequest<'_>,
        now: DateTime<Utc>,
    ) -> Result<(Ticket, Vec<RateLimitStatus>), Denial> {
        let id_key: InflightKey = (Arc::from(req.request_id), req.attempt);
        if !self.inflight_insert(&id_key) {
            return Err(Denial::DuplicateAttempt);
        }
        let arcs: Vec<Arc<Mutex<ScopeState>>> =
            req.scopes.iter().map(|s| self.state(&s.key)).collect();
        // Lock in key order; a scope listed twice is locked once.
        let order = lock_order(req.scopes);
        let mut guards = lock_in_order(&arcs, &order);
        let window_end = self.roll_all(req, &order, &mut guards, now);
        if let Err(denial) = check_all(req, &guards, &window_end) {
            drop(guards);
            self.inflight_remove_key(&id_key);
            return Err(denial);
        }
        let statuses = commit_all(req, &mut guards, &window_end);
        drop(guards);
        Ok((ticket(req, id_key.0, order), statuses))
    }

    fn settle(&self, ticket: &Ticket, actual: Actual, now: DateTime<Utc>) -> Option<Vec<f64>> {
        if !self.inflight_remove(ticket) {
            return None;
        }
        Some(
            ticket
                .scopes
                .iter()
                .map(|k| self.settle_scope(k, ticket, actual, now))
                .collect(),
        )
    }

    fn release(&self, ticket: &Ticket, now: DateTime<Utc>) -> bool {
        if !self.inflight_remove(ticket) {
            return false;
        }
        for k in ticket.scopes.iter() {
            self.settle_scope(k, ticket, Actual::default(), now);
        }
        true
    }

    fn set_spend(&self, scope: &ScopeKey, spend_usd: f64, budget_reset_at: Option<DateTime<Utc>>) {
        let st = self.state(scope);
        let mut st = lock(&st);
        st.spend = usd_to_units(spend_usd);
        if budget_reset_at.is_some() {
            st.budget_reset_at = budget_reset_at;
        }
        self.mark_dirty(scope, &mut st);
    }

    fn seed(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) {
        let st = self.state(scope);
        let mut st = lock(&st);
        st.spend = usd_to_units(spend_usd);
        if budget_reset_at.is_some() {
            st.budget_reset_at = budget_reset_at;
        }
        if duration.is_some() {
            st.budget_duration = duration;
        }
        self.mark_dirty(scope, &mut st);
    }

    fn reset_spend(&self, scope: &ScopeKey, duration: Option<BudgetDuration>, now: DateTime<Utc>) {
        let st = self.state(scope);
        let mut st = lock(&st);
        st.spend = 0;
        st.reset_since_drain = true;
        let duration = duration.or(st.budget_duration);
        st.budget_duration = duration;
        st.budget_reset_at = duration.map(|d| d.next_reset(now));
        self.mark_dirty(scope, &mut st);
    }

    fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    ) {
        let st = self.state(scope);
        let mut st = lock(&st);
        if restart {
            st.spend = 0;
            st.reset_since_drain = true;
        }
        st.budget_duration = Some(duration);
        st.budget_reset_at = Some(reset_at);
        self.mark_dirty(scope, &mut st);
    }

    fn spend(&self, scope: &ScopeKey) -> Option<ScopeSpend> {
        let st = self.existing(scope)?;
        let st = lock(&st);
        Some(ScopeSpend {
            spend: units_to_usd(st.spend),
            reserved: units_to_usd(st.reserved),
            budget_reset_at: st.budget_reset_at,
            budget_duration: st.budget_duration,
            in_flight: st.in_flight,
            window_tokens: st.window_tokens.saturating_add(st.reserved_tokens),
        })
    }

    fn drain_dirty(&self) -> Vec<SpendSnapshot> {
        let keys = std::mem::take(&mut *lock(&self.dirty));
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let Some(st) = self.existing(&key) else {
                continue;
            };
            let mut st = lock(&st);
            out.push(SpendSnapshot {
                spend: units_to_usd(st.spend),
                added: units_to_usd(st.added_since_drain),
                budget_reset_at: st.budget_reset_at,
                was_reset: st.reset_since_drain,
                scope: key,
            });
            st.dirty = false;
            st.added_since_drain = 0;
            st.reset_since_drain = false;
        }
        out
    }
}
