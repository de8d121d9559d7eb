//! [`Admission`]: admit → [`Reservation`] → settle, over either counter store:
//!
//! - **in-process** ([`CounterStore`], the embedded default): every operation runs inline;
//!   [`Admission::admit`] is `async` but never awaits on this path (its future is ready at
//!   the first poll), and nothing is boxed or allocated for it beyond what the store does;
//! - **shared** ([`SharedCounters`], Redis for a fleet): [`Admission::admit`] awaits the
//!   store's one reservation round trip; settlement and release stay synchronous and only
//!   queue ([`SharedCounters::settle`], [`SharedCounters::release`]); management operations
//!   are awaited.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::money::usd_to_units;
use super::rejection::Rejection;
use super::reservation::Reservation;
use super::scope::ScopeKey;
use super::shared::SharedCounters;
use super::store::{CounterStore, ReserveRequest, ScopeRequest, ScopeSpend, SpendSnapshot, Ticket};
use super::store_async::CounterStoreError;
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

/// Where an engine's counters live. Cloning clones one `Arc`.
#[derive(Clone)]
pub(super) enum Counters {
    /// In this process: every call inline, never failing.
    Local(Arc<dyn CounterStore>),
    /// Shared by the fleet: reservations awaited, settlements queued.
    Shared(Arc<dyn SharedCounters>),
}

/// The admission engine. Cheap to clone (shares its counters and clock).
#[derive(Clone)]
pub struct Admission {
    counters: Counters,
    clock: Arc<dyn Clock>,
    config: AdmissionConfig,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("config", &self.config)
            .field("shared", &self.is_shared())
            .finish_non_exhaustive()
    }
}

impl Admission {
    /// An engine over the in-process `store` with the system clock.
    pub fn new(store: Arc<dyn CounterStore>, config: AdmissionConfig) -> Self {
        Self::with_clock(store, Arc::new(SystemClock), config)
    }

    /// An engine over the in-process `store` with an injected clock (tests).
    pub fn with_clock(
        store: Arc<dyn CounterStore>,
        clock: Arc<dyn Clock>,
        config: AdmissionConfig,
    ) -> Self {
        Self {
            counters: Counters::Local(store),
            clock,
            config,
        }
    }

    /// An engine over counters shared by a fleet (Redis). The store's clock decides windows
    /// and resets; the system clock only dates rejections (`retry-after`) and [`Self::now`].
    pub fn shared(counters: Arc<dyn SharedCounters>, config: AdmissionConfig) -> Self {
        Self {
            counters: Counters::Shared(counters),
            clock: Arc::new(SystemClock),
            config,
        }
    }

    /// True when the counters are shared by a fleet ([`Self::shared`]).
    pub fn is_shared(&self) -> bool {
        matches!(self.counters, Counters::Shared(_))
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
    /// In-process counters: never awaits. Shared counters: one round trip to the store, none
    /// for a request with no scope.
    ///
    /// Errors: a [`Rejection`] naming the first refusing scope (budgets of every scope are checked
    /// before any rate limit); with shared counters that cannot answer, the 503
    /// [`Rejection::unavailable`] (nothing reserved).
    pub async fn admit(&self, req: AdmitRequest) -> Result<Reservation, Rejection> {
        let rr = ReserveRequest {
            request_id: &req.request_id,
            attempt: req.attempt,
            scopes: &req.scopes,
            cost_units: usd_to_units(req.estimate.cost_usd),
            prompt_tokens: req.estimate.prompt_tokens,
            reserve_tokens: req.estimate.tokens(),
        };
        let now = self.clock.now();
        let granted = match &self.counters {
            Counters::Local(store) => store.reserve(&rr, now),
            // Nothing to count (a master-key request without a proxy-wide limit): no round trip.
            Counters::Shared(_) if rr.scopes.is_empty() => {
                Ok((unscoped_ticket(&req.request_id, &rr), Vec::new()))
            }
            Counters::Shared(shared) => match shared.reserve(&rr).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(request_id = %req.request_id, error = %e, "counter store unavailable: request refused");
                    return Err(Rejection::unavailable());
                }
            },
        };
        match granted {
            Ok((ticket, rate)) => Ok(Reservation::new(
                self.counters.clone(),
                self.clock.clone(),
                ticket,
                rate,
                req.estimate,
            )),
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
    /// reset from `duration` (or the scope's known window). In force for the very next request
    /// (of every replica, with shared counters).
    ///
    /// Errors: [`CounterStoreError`] when shared counters cannot answer (never in-process).
    pub async fn reset_spend(
        &self,
        scope: &ScopeKey,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        match &self.counters {
            Counters::Local(s) => {
                s.reset_spend(scope, duration, self.clock.now());
                Ok(())
            }
            Counters::Shared(s) => s.reset_spend(scope, duration).await,
        }
    }

    /// Applies a management write's budget window to a scope's counters ([`WindowPlan`]: a
    /// new window at 0, or the same spend with a new reset time). In force for the very next
    /// request.
    ///
    /// Errors: as [`Self::reset_spend`].
    pub async fn arm_window(
        &self,
        scope: &ScopeKey,
        plan: &WindowPlan,
    ) -> Result<(), CounterStoreError> {
        match &self.counters {
            Counters::Local(s) => {
                s.set_window(scope, plan.duration, plan.reset_at, plan.restart);
                Ok(())
            }
            Counters::Shared(s) => {
                s.set_window(scope, plan.duration, plan.reset_at, plan.restart)
                    .await
            }
        }
    }

    /// Sets a scope's spend, USD, and next reset (kept when `None`): `/key/update` with
    /// `spend`, a spend reset to a value.
    ///
    /// Errors: as [`Self::reset_spend`].
    pub async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError> {
        match &self.counters {
            Counters::Local(s) => {
                s.set_spend(scope, spend_usd, budget_reset_at);
                Ok(())
            }
            Counters::Shared(s) => s.set_spend(scope, spend_usd, budget_reset_at).await,
        }
    }

    /// Seeds a scope from the database at start: its window's spend, USD, end (`None` =
    /// computed on the next request) and period (so a read before that request knows when
    /// the window in force ends). With shared counters only a scope the shared store does
    /// not hold yet is seeded ([`SharedCounters::seed_absent`]): the shared store is the live
    /// truth, and a replica starting later must not overwrite what the others have counted.
    ///
    /// Errors: as [`Self::reset_spend`].
    pub async fn seed(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        match &self.counters {
            Counters::Local(s) => {
                s.seed(scope, spend_usd, budget_reset_at, duration);
                Ok(())
            }
            Counters::Shared(s) => {
                s.seed_absent(scope, spend_usd, budget_reset_at, duration)
                    .await
            }
        }
    }

    /// Current counters of a scope (`None`: never seen). With shared counters, one round trip:
    /// for management reads, never on a request's path (use [`Self::local_spend`] there).
    ///
    /// Errors: as [`Self::reset_spend`].
    pub async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError> {
        match &self.counters {
            Counters::Local(s) => Ok(s.spend(scope)),
            Counters::Shared(s) => s.spend(scope).await,
        }
    }

    /// Current counters of a scope when they live in this process (no I/O); `None` for a
    /// scope never seen, and always `None` with shared counters.
    pub fn local_spend(&self, scope: &ScopeKey) -> Option<ScopeSpend> {
        match &self.counters {
            Counters::Local(s) => s.spend(scope),
            Counters::Shared(_) => None,
        }
    }

    /// Scopes whose spend changed since the last call (write-behind). With shared counters,
    /// each changed scope goes to exactly one of the replicas that drain.
    ///
    /// Errors: as [`Self::reset_spend`].
    pub async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError> {
        match &self.counters {
            Counters::Local(s) => Ok(s.drain_dirty()),
            Counters::Shared(s) => s.drain_dirty().await,
        }
    }

    /// Sends what shared counters hold queued (settlements, releases), waiting at most
    /// `deadline` (graceful shutdown); returns how many operations could not be delivered.
    /// Nothing to do (0) in-process.
    pub async fn flush(&self, deadline: std::time::Duration) -> usize {
        match &self.counters {
            Counters::Local(_) => 0,
            Counters::Shared(s) => s.flush(deadline).await,
        }
    }
}

/// The ticket of a request that reserves on no scope: shared counters hold nothing for it,
/// so its settlement and release send nothing either ([`Reservation`]).
fn unscoped_ticket(request_id: &Arc<str>, rr: &ReserveRequest<'_>) -> Ticket {
    Ticket {
        request_id: Arc::clone(request_id),
        attempt: rr.attempt,
        scopes: Arc::from([]),
        cost_units: rr.cost_units,
        tokens: rr.reserve_tokens,
        spend_units: Some(Arc::from([])),
    }
}
