//! The admission engine: exact budgets and RPM/TPM/parallel limits under concurrency.
//!
//! # Flow
//!
//! 1. The server builds an [`AdmitRequest`]: every [`ScopeRequest`] the request touches (key,
//!    team, team member, user, end user, organization, tags, per-model-per-key, global), each with
//!    its [`Limits`] from the identity cache, and an [`Estimate`] (prompt tokens counted with
//!    [`crate::tokens`], output bounded by `max_tokens` or [`AdmissionConfig::default_max_output_tokens`],
//!    priced with the deployment's [`crate::pricing::ModelPrice`]).
//! 2. [`Admission::admit`] checks and reserves on every scope **atomically, all or nothing**, and
//!    returns a [`Reservation`] (or a [`Rejection`] ready to be sent).
//! 3. After the upstream answers (or the stream ends, or the client hangs up),
//!    [`Reservation::settle`] replaces the estimate by the actual cost and tokens, exactly once.
//!    A dropped, unsettled reservation releases everything (nothing charged).
//!
//! # Rules
//!
//! - **Budget** (every scope, one rule): refuse when `spend + reserved >= max_budget`, where
//!   `spend` is the settled spend of the current budget window and `reserved` the sum of the
//!   estimates of the scope's requests in flight. With nothing in flight this is exactly LiteLLM's
//!   `spend >= max_budget`; `max_budget: 0` refuses the first request. Money is counted in
//!   integer units of 1e-10 USD, so sums are exact.
//! - **Overshoot bound**: a request is admitted only while `spend + reserved < max_budget`,
//!   and the reservation is the worst-case estimate. Hence, for any interleaving of concurrent
//!   requests:
//!
//!   `final spend < max_budget + max_i(estimate_i) + Σ_i max(0, actual_i − estimate_i)`
//!
//!   When every estimate bounds its actual cost (prompt counted with the model's own BPE and
//!   output capped by `max_tokens`), the last term is 0: **the budget is overshot by less than
//!   one request's estimate**, however many requests run at once. Where estimates can be low
//!   (byte-estimated prompts, default output bound exceeded), each admitted request can add its
//!   own estimate error on top.
//! - **RPM**: a fixed window of 60 s started by the first request (LiteLLM v3 limiter, §5.4), not
//!   aligned to clock minutes; each admission counts 1; refused when the window's count has
//!   reached `rpm_limit`.
//! - **TPM**: counts input + output tokens. Admission reserves `prompt + output bound`; settlement
//!   removes the reservation and adds the actual total to the window current at settlement. The
//!   window's usage is `settled tokens + reserved tokens of requests in flight`; a request is
//!   refused when that usage already reaches `tpm_limit` or its prompt alone would exceed what is
//!   left (the first request of a window with a small limit is admitted and charged its real
//!   150 tokens; the next one is refused).
//! - **Parallel**: each admission takes a slot on each scope, freed by settle, release or drop
//!   (client hang-up, error, panic unwinding).
//! - **Budget windows**: at `budget_reset_at` (checked on every admission and settlement, no
//!   background job needed for enforcement), spend returns to 0 and the next standardised reset
//!   is computed ([`crate::duration`]); a window scope without a reset time gets one on first use
//!   (keys inheriting a tier's `budget_duration` through [`Limits::tighter`]).
//!   [`Admission::reset_spend`] is in force for the next request. Cost settled after a reset
//!   counts in the new window. A management write that gives a scope a window, or changes it,
//!   goes through [`WindowPlan`] and [`Admission::arm_window`]: a first window starts at 0, the
//!   same window again changes nothing, a new duration keeps the spend and moves the reset.
//! - **Rejections**: budget → `budget_exceeded`, status [`AdmissionConfig::budget_exceeded_status`]
//!   (default 422; per-model budgets 429), message `Budget has been exceeded! Key=<display>
//!   Current cost: X, Max budget: Y`; limits → 429 `rate_limit_error` with `retry-after` and
//!   `x-ratelimit-*` headers.

mod engine;
pub mod fleet;
mod memory;
pub mod money;
pub mod redis;
mod rejection;
mod reservation;
mod scope;
mod shared;
mod store;
mod store_async;
mod window;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_concurrency;
#[cfg(test)]
mod tests_shared;
#[cfg(test)]
mod tests_windows;

pub use engine::{Admission, AdmissionConfig, AdmitRequest, Estimate};
pub use memory::{DEFAULT_RATE_WINDOW_MS, InMemoryCounterStore};
pub use rejection::{RejectReason, Rejection, rate_limit_headers};
pub use reservation::{Reservation, SettleError, Settlement};
pub use scope::{Limits, ScopeKey, ScopeKind};
pub use shared::{SharedCounters, Unbatched};
pub use store::{
    Actual, CounterStore, Denial, RateLimitStatus, ReserveRequest, ScopeRequest, ScopeSpend,
    SpendSnapshot, Ticket,
};
pub use store_async::{AsyncCounterStore, CounterStoreError, Reserved, SyncCounterStore};
pub use window::WindowPlan;
