//! The counter store seam: where budgets and rate-limit counters live.
//!
//! Operations are deliberately coarse so that a shared store (Redis, a later issue) can run each
//! as one atomic script: **one call reserves every bucket of a request, all or nothing**; one call
//! settles it; one call releases it. The in-process implementation is
//! [`crate::admission::InMemoryCounterStore`].
//!
//! The trait is synchronous: the in-process store never blocks for long (a few `std::sync::Mutex`
//! sections, none held across an await). A networked store needs an async twin of this trait;
//! the request/response types below are already what such a script would take and return.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::scope::{Limits, ScopeKey};
use crate::duration::BudgetDuration;

/// One scope a request is counted against, with its limits for this request.
#[derive(Debug, Clone)]
pub struct ScopeRequest {
    /// Which counter.
    pub key: ScopeKey,
    /// Limits in force (from the identity cache).
    pub limits: Limits,
    /// How the scope is named in a budget message: `my-alias (sk-...abcd)` for a key, the team
    /// id for a team, `u1 in Team=t1` for a team member. Never a raw key.
    pub display: Arc<str>,
}

impl ScopeRequest {
    /// A scope request whose display name is the scope id.
    pub fn new(key: ScopeKey, limits: Limits) -> Self {
        let display = key.id.clone();
        Self {
            key,
            limits,
            display,
        }
    }

    /// Sets the display name.
    pub fn with_display(mut self, display: impl Into<Arc<str>>) -> Self {
        self.display = display.into();
        self
    }
}

/// What one admission asks the store to reserve.
#[derive(Debug, Clone, Copy)]
pub struct ReserveRequest<'a> {
    /// The gateway's request id (`x-litellm-call-id`).
    pub request_id: &'a str,
    /// Attempt number within the request (0 = first; retries and fallbacks count up).
    pub attempt: u32,
    /// Scopes in check order (key, team, team member, user, end user, org, tags, per-model, global).
    pub scopes: &'a [ScopeRequest],
    /// Estimated cost, money units (see [`super::money`]).
    pub cost_units: i64,
    /// Prompt tokens (what the TPM check compares against the remaining tokens).
    pub prompt_tokens: u64,
    /// Tokens to reserve against TPM: prompt + output estimate.
    pub reserve_tokens: u64,
}

/// Handle of a granted reservation, enough for any store to settle or release it.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// The request id.
    pub request_id: Arc<str>,
    /// The attempt.
    pub attempt: u32,
    /// Scopes reserved, in request order.
    pub scopes: Arc<[ScopeKey]>,
    /// Reserved cost, money units.
    pub cost_units: i64,
    /// Reserved tokens.
    pub tokens: u64,
    /// Each scope's settled spend at admission, money units, in `scopes` order, when the store
    /// reports it (a shared store does, so the response's spend headers need no second round
    /// trip); `None` from the in-process store, whose settlement returns the spend after.
    pub spend_units: Option<Arc<[i64]>>,
}

/// Remaining-limit values of one scope after an admission (for `x-ratelimit-*` headers).
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitStatus {
    /// The scope.
    pub scope: ScopeKey,
    /// `rpm_limit`, if set.
    pub limit_requests: Option<u64>,
    /// Requests left in the current window (after this one).
    pub remaining_requests: Option<u64>,
    /// `tpm_limit`, if set.
    pub limit_tokens: Option<u64>,
    /// Tokens left in the current window (after this request's reservation; never negative).
    pub remaining_tokens: Option<u64>,
    /// When the current 60 s window ends, ms since the Unix epoch.
    pub window_reset_ms: i64,
}

/// Why a store refused a reservation. `scope` indexes [`ReserveRequest::scopes`].
#[derive(Debug, Clone, PartialEq)]
pub enum Denial {
    /// `spend + reserved >= max_budget`.
    Budget {
        /// Index of the scope.
        scope: usize,
        /// Settled spend + in-flight reservations, money units.
        current_units: i64,
        /// The in-flight reservations alone, money units.
        reserved_units: i64,
        /// The cap, money units.
        max_units: i64,
    },
    /// RPM window full.
    Requests {
        /// Index of the scope.
        scope: usize,
        /// `rpm_limit`.
        limit: u64,
        /// Window end, ms since the Unix epoch.
        window_reset_ms: i64,
    },
    /// TPM window cannot take this prompt.
    Tokens {
        /// Index of the scope.
        scope: usize,
        /// `tpm_limit`.
        limit: u64,
        /// Tokens counted in the window (settled + reserved).
        used: u64,
        /// Window end, ms since the Unix epoch.
        window_reset_ms: i64,
    },
    /// `max_parallel_requests` in flight.
    Parallel {
        /// Index of the scope.
        scope: usize,
        /// `max_parallel_requests`.
        limit: u64,
    },
    /// The same (request id, attempt) is already in flight.
    DuplicateAttempt,
}

/// Actual usage of a settled request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Actual {
    /// Actual cost, money units.
    pub cost_units: i64,
    /// Actual input + output tokens (what TPM counts).
    pub tokens: u64,
}

/// Current counters of one scope (for `/key/info`, `x-litellm-key-spend`, persistence).
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeSpend {
    /// Settled spend in the current budget window, USD.
    pub spend: f64,
    /// Cost reserved by requests in flight, USD.
    pub reserved: f64,
    /// Next budget reset, when the scope has a budget window.
    pub budget_reset_at: Option<DateTime<Utc>>,
    /// The window's period as the counter knows it (from the last admission, window change or
    /// start-up seed); `None` before any of them, or without a window.
    pub budget_duration: Option<BudgetDuration>,
    /// Requests in flight.
    pub in_flight: u64,
    /// Tokens counted in the current rate window: settled plus reserved by requests in flight
    /// (as of the window's last use).
    pub window_tokens: u64,
}

/// A scope whose spend changed since the last [`CounterStore::drain_dirty`]; written behind to
/// the database (`spend`, `budget_reset_at` columns).
#[derive(Debug, Clone, PartialEq)]
pub struct SpendSnapshot {
    /// The scope.
    pub scope: ScopeKey,
    /// Spend in the current window, USD (absolute value to store).
    pub spend: f64,
    /// Spend added since the previous drain, USD (for lifetime totals and daily roll-ups).
    pub added: f64,
    /// Next budget reset.
    pub budget_reset_at: Option<DateTime<Utc>>,
    /// True when the window was reset since the previous drain.
    pub was_reset: bool,
}

/// The seam between the admission engine and where counters live.
pub trait CounterStore: Send + Sync + 'static {
    /// Atomically checks every scope of `req` and, only if all pass, reserves the cost, the
    /// tokens, one request and one parallel slot on each. Budget windows whose
    /// `budget_reset_at` has passed are reset first. Check order: every scope's budget, then
    /// every scope's RPM, TPM and parallel limits.
    fn reserve(
        &self,
        req: &ReserveRequest<'_>,
        now: DateTime<Utc>,
    ) -> Result<(Ticket, Vec<RateLimitStatus>), Denial>;

    /// Replaces the ticket's reservation by `actual` on every scope and frees its parallel slot.
    /// Exactly once per (request id, attempt): returns `None` (and changes nothing) when the
    /// ticket was already settled or released. Otherwise returns each scope's spend after, USD,
    /// in ticket order.
    fn settle(&self, ticket: &Ticket, actual: Actual, now: DateTime<Utc>) -> Option<Vec<f64>>;

    /// Drops the ticket's reservation without charging anything (request never sent). Returns
    /// false when it was already settled or released.
    fn release(&self, ticket: &Ticket, now: DateTime<Utc>) -> bool;

    /// Sets a scope's spend and next reset (seeding from the database at start, `/key/update`
    /// with `spend`). `budget_reset_at: None` keeps a window scope's schedule to be computed on
    /// the next request.
    fn set_spend(&self, scope: &ScopeKey, spend_usd: f64, budget_reset_at: Option<DateTime<Utc>>);

    /// [`Self::set_spend`] for the start-up seed, also recording the window's period
    /// (`duration`, kept when `None`) so reads before the scope's next request can tell when
    /// the window in force ends.
    fn seed(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    );

    /// Resets a scope's spend to 0 now (manual reset, in force for the next request); the next reset is computed from
    /// `duration` when given. In force for the very next request.
    fn reset_spend(&self, scope: &ScopeKey, duration: Option<BudgetDuration>, now: DateTime<Utc>);

    /// Arms or reschedules a scope's budget window for a management write
    /// ([`super::WindowPlan`]): from now on the window lasts `duration` and ends at `reset_at`;
    /// `restart` sets the window's spend to 0 (cost reserved by requests in flight is kept and
    /// settles into the new window). In force for the very next request.
    fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    );

    /// Current counters of a scope, `None` if the store has never seen it.
    fn spend(&self, scope: &ScopeKey) -> Option<ScopeSpend>;

    /// Scopes whose spend or schedule changed since the last call (write-behind).
    fn drain_dirty(&self) -> Vec<SpendSnapshot>;
}
