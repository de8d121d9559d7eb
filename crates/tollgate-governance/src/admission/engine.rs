//! [`Admission`]: admit → [`Reservation`] → settle.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::money::{units_to_usd, usd_to_units};
use super::rejection::{Rejection, rate_limit_headers};
use super::scope::{ScopeKey, ScopeKind};
use super::store::{
    Actual, CounterStore, RateLimitStatus, ReserveRequest, ScopeRequest, ScopeSpend, SpendSnapshot,
    Ticket,
};
use super::window::WindowPlan;
use crate::duration::{BudgetDuration, Clock, SystemClock};
use crate::pricing::{ModelPrice, Usage, cost};

/// Admission settings (from `litellm_settings` / `general_settings`).
#[derive(Debug, Clone)]
pub struct AdmissionConfig {
    /// Status of a budget rejection: `litellm_settings.budget_exceeded_status_code`, default 422
    /// (LiteLLM ≥ 1.104; 429 and 400 are the legacy values).
    pub budget_exceeded_status: u16,
    /// Status of a per-model (`model_max_budget`) budget rejection: 429 as in LiteLLM.
    pub model_budget_exceeded_status: u16,
    /// Output tokens assumed when a request sets no `max_tokens`: 4096, capped by the model's
    /// `max_output_tokens` when the price table knows it.
    pub default_max_output_tokens: u64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            budget_exceeded_status: 422,
            model_budget_exceeded_status: 429,
            default_max_output_tokens: 4096,
        }
    }
}

/// A request's worst-case estimate, reserved at admission.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Prompt tokens (counted with [`crate::tokens`]).
    pub prompt_tokens: u64,
    /// Output tokens bound: `max_tokens`, else [`AdmissionConfig::default_max_output_tokens`]
    /// capped by the model's `max_output_tokens`.
    pub output_tokens: u64,
    /// `cost(prompt_tokens, output_tokens)` at the deployment's prices (no cache discount), USD;
    /// 0 for an unpriced model.
    pub cost_usd: f64,
}

impl Estimate {
    /// The estimate for a request: `prompt_tokens × input + output bound × output + per request`.
    pub fn new(
        config: &AdmissionConfig,
        price: Option<&ModelPrice>,
        prompt_tokens: u64,
        max_tokens: Option<u64>,
    ) -> Self {
        let output_tokens = max_tokens.unwrap_or_else(|| {
            let cap = price.and_then(|p| p.max_output_tokens).unwrap_or(u64::MAX);
            config.default_max_output_tokens.min(cap)
        });
        let cost_usd = price
            .map(|p| cost(&Usage::new(prompt_tokens, output_tokens), p))
            .unwrap_or(0.0);
        Self {
            prompt_tokens,
            output_tokens,
            cost_usd,
        }
    }

    /// Tokens reserved against TPM: prompt + output bound.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.output_tokens)
    }
}

/// One admission request.
#[derive(Debug, Clone)]
pub struct AdmitRequest {
    /// The gateway's request id (`x-litellm-call-id`); with `attempt`, the settlement identity.
    pub request_id: Arc<str>,
    /// Attempt number (0 first; each retry or fallback that reaches an upstream is its own attempt).
    pub attempt: u32,
    /// Every scope the request touches, in LiteLLM's check order (key, team, team member, user,
    /// end user, organization, tags, per-model-per-key, global). Scopes without limits are still
    /// listed: their spend is tracked.
    pub scopes: Vec<ScopeRequest>,
    /// The estimate to reserve.
    pub estimate: Estimate,
}

/// The result of [`Reservation::settle`].
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// Cost charged, USD.
    pub cost_usd: f64,
    /// Each reserved scope's spend after this request, USD.
    pub spend_after: Vec<(ScopeKey, f64)>,
}

impl Settlement {
    /// Spend after this request of the first scope of `kind` (e.g. the key, for `x-litellm-key-spend`).
    pub fn spend_of(&self, kind: ScopeKind) -> Option<f64> {
        self.spend_after
            .iter()
            .find(|(k, _)| k.kind == kind)
            .map(|(_, s)| *s)
    }
}

/// Error of [`Reservation::settle`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettleError {
    /// This (request id, attempt) was settled or released before; nothing was charged.
    #[error("request attempt already settled")]
    AlreadySettled,
}

/// The admission engine. Cheap to clone (shares its store and clock).
#[derive(Clone)]
pub struct Admission {
    store: Arc<dyn CounterStore>,
    clock: Arc<dyn Clock>,
    config: AdmissionConfig,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Admission {
    /// An engine over `store` with the system clock.
    pub fn new(store: Arc<dyn CounterStore>, config: AdmissionConfig) -> Self {
        Self::with_clock(store, Arc::new(SystemClock), config)
    }

    /// An engine with an injected clock (tests).
    pub fn with_clock(
        store: Arc<dyn CounterStore>,
        clock: Arc<dyn Clock>,
        config: AdmissionConfig,
    ) -> Self {
        Self {
            store,
            clock,
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &AdmissionConfig {
        &self.config
    }

    /// The current time of the engine's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Admits a request or refuses it, atomically across every scope (see the module docs for the
    /// rules). On success the estimate is reserved until the [`Reservation`] is settled or dropped.
    ///
    /// Errors: a [`Rejection`] naming the first refusing scope (budgets of every scope are checked
    /// before any rate limit).
    #[expect(
        clippy::result_large_err,
        reason = "the refusal path is cold; callers match on it directly"
    )]
    pub fn admit(&self, req: AdmitRequest) -> Result<Reservation, Rejection> {
        let now = self.clock.now();
        let rr = ReserveRequest {
            request_id: &req.request_id,
            attempt: req.attempt,
            scopes: &req.scopes,
            cost_units: usd_to_units(req.estimate.cost_usd),
            prompt_tokens: req.estimate.prompt_tokens,
            reserve_tokens: req.estimate.tokens(),
        };
        match self.store.reserve(&rr, now) {
            Ok((ticket, rate)) => Ok(Reservation {
                store: self.store.clone(),
                clock: self.clock.clone(),
                ticket,
                rate,
                estimate: req.estimate,
                done: false,
            }),
            Err(d) => Err(Rejection::from_denial(
                d,
                &req.scopes,
                now.timestamp_millis(),
                self.config.budget_exceeded_status,
                self.config.model_budget_exceeded_status,
            )),
        }
    }

    /// Manual spend reset (`/key/{key}/reset_spend`, `/global/spend/reset`): spend 0 now, next
    /// reset from `duration` (or the scope's known window). In force for the very next request.
    pub fn reset_spend(&self, scope: &ScopeKey, duration: Option<BudgetDuration>) {
        self.store.reset_spend(scope, duration, self.clock.now());
    }

    /// Applies a management write's budget window to a scope's counters ([`WindowPlan`]: a
    /// new window at 0, or the same spend with a new reset time). In force for the very next
    /// request.
    pub fn arm_window(&self, scope: &ScopeKey, plan: &WindowPlan) {
        self.store
            .set_window(scope, plan.duration, plan.reset_at, plan.restart);
    }

    /// Sets a scope's spend (database seed at start; `/key/update` with `spend`).
    pub fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) {
        self.store.set_spend(scope, spend_usd, budget_reset_at);
    }

    /// Seeds a scope from the database at start: its window's spend, end (`None` = computed on
    /// the next request) and period (so a read before that request knows when the window in
    /// force ends).
    pub fn seed(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) {
        self.store.seed(scope, spend_usd, budget_reset_at, duration);
    }

    /// Current counters of a scope.
    pub fn spend(&self, scope: &ScopeKey) -> Option<ScopeSpend> {
        self.store.spend(scope)
    }

    /// Scopes whose spend changed since the last call (write-behind).
    pub fn drain_dirty(&self) -> Vec<SpendSnapshot> {
        self.store.drain_dirty()
    }
}

/// A granted admission. Holds the reserved estimate, one request in each RPM window and one
/// parallel slot on every scope until [`Reservation::settle`] replaces it with the actual usage.
/// Dropped unsettled (request never sent, task cancelled), it releases everything and charges
/// nothing; to bill a stream cut off by the client, settle with the partial usage first.
pub struct Reservation {
    store: Arc<dyn CounterStore>,
    clock: Arc<dyn Clock>,
    ticket: Ticket,
    rate: Vec<RateLimitStatus>,
    estimate: Estimate,
    done: bool,
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reservation")
            .field("request_id", &self.ticket.request_id)
            .field("attempt", &self.ticket.attempt)
            .field("scopes", &self.ticket.scopes)
            .field("estimate", &self.estimate)
            .field("done", &self.done)
            .finish()
    }
}

impl Reservation {
    /// The request id.
    pub fn request_id(&self) -> &str {
        &self.ticket.request_id
    }

    /// The attempt.
    pub fn attempt(&self) -> u32 {
        self.ticket.attempt
    }

    /// The reserved estimate.
    pub fn estimate(&self) -> &Estimate {
        &self.estimate
    }

    /// Remaining-limit values after this admission, per limited scope.
    pub fn rate_limits(&self) -> &[RateLimitStatus] {
        &self.rate
    }

    /// `x-ratelimit-*` response headers for this admission (see [`rate_limit_headers`]).
    pub fn rate_limit_headers(&self) -> Vec<(String, String)> {
        rate_limit_headers(&self.rate)
    }

    /// True once settled (or released).
    pub fn is_settled(&self) -> bool {
        self.done
    }

    /// Replaces the reservation by the actual usage: `cost_usd` is added to every scope's spend,
    /// `usage.total_tokens()` to every TPM window (the current one), the parallel slot is freed.
    /// Use the provider's final cumulative usage, or the usage produced so far when the
    /// stream ended early (client hang-up, upstream error).
    ///
    /// Errors: [`SettleError::AlreadySettled`] on a second call (or if the store already settled
    /// this request id and attempt); nothing is charged twice.
    pub fn settle(&mut self, usage: &Usage, cost_usd: f64) -> Result<Settlement, SettleError> {
        if self.done {
            return Err(SettleError::AlreadySettled);
        }
        self.done = true;
        let actual = Actual {
            cost_units: usd_to_units(cost_usd),
            tokens: usage.total_tokens(),
        };
        let spends = self
            .store
            .settle(&self.ticket, actual, self.clock.now())
            .ok_or(SettleError::AlreadySettled)?;
        Ok(Settlement {
            cost_usd: units_to_usd(actual.cost_units),
            spend_after: self.ticket.scopes.iter().cloned().zip(spends).collect(),
        })
    }

    /// Releases the reservation without charging (the request was never sent upstream).
    /// Same as dropping it; returns false when already settled.
    pub fn release(mut self) -> bool {
        self.release_inner()
    }

    fn release_inner(&mut self) -> bool {
        if self.done {
            return false;
        }
        self.done = true;
        self.store.release(&self.ticket, self.clock.now())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.release_inner();
    }
}
