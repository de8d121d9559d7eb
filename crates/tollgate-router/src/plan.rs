//! The attempt plan: retries within a group, then fallback groups, driven by the server.
//!
//! ```text
//! let mut plan = router.plan(requested, policy)?;
//! while let Some(attempt) = plan.next_attempt(now) {
//!     // sleep until attempt.not_before, call attempt.deployment, then:
//!     plan.report(&attempt, outcome, now);
//! }
//! let summary = plan.summary();
//! ```
//!
//! Rules (LiteLLM `router_settings`):
//! - A failure is retried in the same group while the group's retry budget for its class
//!   lasts: `retry_policy` entry for the class, else (retryable classes only: 429, 408,
//!   timeouts, connection errors, 5xx) the request's `num_retries`, else the failed
//!   deployment's `max_retries`, else the global `num_retries`. Other 4xx are never retried
//!   by default.
//! - A retry goes to a deployment of the group not yet tried by this plan when one is
//!   available (no wait beyond `retry_after`), else to the same one after the upstream's
//!   `retry-after` (≤ `max_retry_wait`; a longer one skips the group's retries) or an
//!   exponential backoff (0.5 s × 2ⁿ, ≤ 8 s, jittered), never sooner than `retry_after`.
//! - When a group is exhausted by a failure that allows fallback (retryable,
//!   context-window, content-policy), the plan enters the fallback chain, built once from
//!   the requested group: `context_window_fallbacks` / `content_policy_fallbacks` for those
//!   errors (when the group has an entry), else the request's `fallbacks`, else the group's
//!   `fallbacks`, else `default_fallbacks`; in each map a rule keyed `*` stands for every
//!   group without its own. Each group is entered at most once, at most `max_fallbacks` of
//!   them, each with its own retries; then the plan ends: the fallbacks of a fallback group
//!   are not followed (LiteLLM re-enters its whole fallback handling for each fallback
//!   group, up to `max_fallbacks` deep).
//! - A group with no available deployment (all cooling down, or filtered by pre-call
//!   checks) counts as exhausted by a rate limit.
//! - A client cancellation or client timeout ends the plan and is not held against the
//!   deployment.
//! - Streams: the server stops driving the plan once the first byte reached the client
//!   (a later failure is reported, then the plan is dropped), so streams fall back only
//!   before their first byte.

mod attempt;
mod chain;
mod cooldown;
mod drive;

pub use attempt::{Attempt, StreamSlot};

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::failure::FailureClass;
use crate::group::ModelGroup;
use crate::resolve::{RouteError, Router};

/// First exponential backoff step (LiteLLM `INITIAL_RETRY_DELAY`): 0.5 s.
pub const INITIAL_RETRY_DELAY: Duration = Duration::from_millis(500);
/// Longest exponential backoff step (LiteLLM `MAX_RETRY_DELAY`): 8 s.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(8);

/// Per-request routing inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestPolicy {
    /// Request `num_retries` (body or `x-litellm-num-retries`); overrides deployment and
    /// global values (not `retry_policy`).
    pub num_retries: Option<u32>,
    /// Request `fallbacks`: model names, replacing the group's `fallbacks`.
    pub fallbacks: Option<Vec<String>>,
    /// Prompt estimate, tokens: pre-call context check and TPM accounting.
    pub prompt_tokens: u64,
    /// Streamed request: latency routing compares time to first token.
    pub stream: bool,
}

/// How a plan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanEnd<'a> {
    /// Not finished yet.
    Pending,
    /// The last attempt succeeded.
    Success,
    /// The last upstream failure (the server returns that upstream's error to the client).
    Failed {
        /// Its class.
        class: FailureClass,
        /// Its `retry-after`, if the upstream sent one.
        retry_after: Option<Duration>,
    },
    /// No upstream call could be made: every deployment of every group in the chain was
    /// unavailable. The server answers 429 "No deployments available" with `retry-after` =
    /// `retry_after` rounded up to ≥ 1 s.
    NoDeployments {
        /// The requested model group.
        group: &'a str,
        /// Time until the first deployment returns: the end of its cooldown, or of the
        /// minute whose `rpm`/`tpm` it used up (1 s when none will by itself, e.g. every
        /// deployment's context window is too small for the prompt).
        retry_after: Duration,
    },
    /// The client cancelled.
    ClientCancelled,
}

impl PlanEnd<'_> {
    /// For [`PlanEnd::NoDeployments`]: the `retry-after` header value in whole seconds,
    /// rounded up, at least 1. `None` for other endings.
    pub fn retry_after_header_secs(&self) -> Option<u64> {
        match self {
            PlanEnd::NoDeployments { retry_after, .. } => {
                let s = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                Some(s.max(1))
            }
            _ => None,
        }
    }
}

/// Counts for `x-litellm-attempted-retries` / `x-litellm-attempted-fallbacks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanSummary<'a> {
    /// Upstream calls made.
    pub attempts: u32,
    /// Retries made (over all groups).
    pub attempted_retries: u32,
    /// Fallback groups entered.
    pub attempted_fallbacks: u32,
    /// Class of the last failure, if any.
    pub last_failure: Option<FailureClass>,
    /// How the plan ended.
    pub end: PlanEnd<'a>,
}

#[derive(Debug)]
struct ChainEntry<'a> {
    group: &'a Arc<ModelGroup>,
    requested: Cow<'a, str>,
    matched: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Ready,
    Awaiting,
    Done,
}

#[derive(Debug, Clone, Copy)]
struct PendingRetry {
    class: FailureClass,
    retry_after: Option<Duration>,
    failed_at: Instant,
    last_index: usize,
}

/// Retries and fallbacks for one request. See the module docs for the rules.
#[derive(Debug)]
pub struct AttemptPlan<'a> {
    router: &'a Router,
    num_retries: Option<u32>,
    request_fallbacks: Option<Vec<String>>,
    prompt_tokens: u64,
    stream: bool,
    chain: Vec<ChainEntry<'a>>,
    chain_built: bool,
    cur: usize,
    attempts_in_group: u32,
    retries_in_group: u32,
    tried: u64,
    pending: Option<PendingRetry>,
    phase: Phase,
    seq: u32,
    attempts: u32,
    attempted_retries: u32,
    attempted_fallbacks: u32,
    last_failure: Option<(FailureClass, Option<Duration>)>,
    unavailable_for: Option<Duration>,
    end: PlanEnd<'a>,
}

impl Router {
    /// Starts the attempt plan for a request to `requested` (a group name, alias or a name
    /// matching a wildcard group).
    ///
    /// Errors: [`RouteError::ModelNotFound`] when no group matches. An empty or fully
    /// cooled-down group is not an error here: the plan yields no attempt (or falls back)
    /// and ends with [`PlanEnd::NoDeployments`].
    pub fn plan<'a>(
        &'a self,
        requested: &'a str,
        policy: RequestPolicy,
    ) -> Result<AttemptPlan<'a>, RouteError> {
        let (group, matched) = self
            .resolve(requested)
            .map_err(|_| RouteError::ModelNotFound(requested.to_owned()))?;
        let chain = vec![ChainEntry {
            group,
            requested: Cow::Borrowed(requested),
            matched: matched.map(str::to_owned),
        }];
        Ok(AttemptPlan {
            router: self,
            num_retries: policy.num_retries,
            request_fallbacks: policy.fallbacks,
            prompt_tokens: policy.prompt_tokens,
            stream: policy.stream,
            chain,
            chain_built: false,
            cur: 0,
            attempts_in_group: 0,
            retries_in_group: 0,
            tried: 0,
            pending: None,
            phase: Phase::Ready,
            seq: 0,
            attempts: 0,
            attempted_retries: 0,
            attempted_fallbacks: 0,
            last_failure: None,
            unavailable_for: None,
            end: PlanEnd::Pending,
        })
    }
}

#[cfg(test)]
mod tests;
