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
//! Rules (LiteLLM `router_settings`, field failures B28, B29, B31):
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
//!   are not followed (B29; LiteLLM re-enters its whole fallback handling for each fallback
//!   group, up to `max_fallbacks` deep).
//! - A group with no available deployment (all cooling down, or filtered by pre-call
//!   checks) counts as exhausted by a rate limit.
//! - A client cancellation or client timeout ends the plan and is not held against the
//!   deployment.
//! - Streams: the server stops driving the plan once the first byte reached the client
//!   (a later failure is reported, then the plan is dropped), so streams fall back only
//!   before their first byte.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{DEFAULT_FAILURE_RATE, DEFAULT_FAILURE_RATE_MIN_CALLS};
use crate::failure::{FailureClass, Outcome};
use crate::group::{ModelGroup, RoutedDeployment};
use crate::resolve::{RouteError, Router, upstream_for};
use crate::select::{SelectCtx, Selection};
use crate::state::{
    AttemptTokens, CallTiming, CooldownRule, CooldownTrigger, RouterState, SuccessSample,
};

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

/// One upstream call to make. Holds the deployment's in-flight count until dropped, so keep
/// it alive until the response (or stream) is finished.
#[derive(Debug)]
pub struct Attempt<'a> {
    /// The model group of this attempt (the fallback group for fallbacks).
    pub group: &'a Arc<ModelGroup>,
    /// The deployment to call.
    pub deployment: &'a RoutedDeployment,
    /// Model id to send upstream.
    pub upstream_model: Cow<'a, str>,
    /// 0 for the first attempt in this group, n for its n-th retry.
    pub retry_index: u32,
    /// 0 for the requested group, n for the n-th fallback group.
    pub fallback_index: u32,
    /// Do not send before this instant (retry backoff).
    pub not_before: Instant,
    index: usize,
    seq: u32,
    /// When the attempt's prompt estimate was counted.
    began: Instant,
    /// That estimate, tokens.
    prompt_estimate: u64,
    in_flight: InFlight<'a>,
}

/// Decrements the deployment's in-flight count on drop, unless handed to a [`StreamSlot`].
struct InFlight<'a> {
    state: &'a dyn RouterState,
    slot: usize,
    handed_over: bool,
}

impl std::fmt::Debug for InFlight<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight")
            .field("slot", &self.slot)
            .finish()
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.handed_over {
            self.state.end(self.slot);
        }
    }
}

impl Attempt<'_> {
    /// Hands this attempt's in-flight count to a guard that outlives the plan: a stream is
    /// in flight until its last event, not until its head (least-busy routing counts it, as
    /// LiteLLM's does until the stream's success or failure is logged). `router` must be the
    /// router this attempt's plan came from; `sent` is when the request goes upstream (the
    /// stream's times to first event and to its end count from it).
    pub fn hold_in_flight(&mut self, router: Arc<Router>, sent: Instant) -> StreamSlot {
        debug_assert!(std::ptr::addr_eq(
            router.state.as_ref(),
            self.in_flight.state
        ));
        self.in_flight.handed_over = true;
        StreamSlot {
            router,
            slot: self.in_flight.slot,
            began: self.began,
            prompt_estimate: self.prompt_estimate,
            sent,
        }
    }
}

/// A stream's hold on its deployment: the in-flight count ends when this is dropped, and what
/// is known only as the stream goes (its usage, its time to first event and to its end) is
/// recorded for the deployment through it.
pub struct StreamSlot {
    router: Arc<Router>,
    slot: usize,
    began: Instant,
    prompt_estimate: u64,
    /// When the request went upstream.
    sent: Instant,
}

impl std::fmt::Debug for StreamSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSlot")
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

impl StreamSlot {
    /// Settles the stream's usage at `now` (its end) in the deployment's TPM, as
    /// [`RouterState::settle_tokens`] does: `completion_tokens` are added, and
    /// `prompt_tokens` (when reported) replace the prompt estimate counted at the start.
    pub fn settle_usage(&self, now: Instant, prompt_tokens: Option<u64>, completion_tokens: u64) {
        let tokens = AttemptTokens {
            began: self.began,
            prompt_estimate: self.prompt_estimate,
            prompt_tokens,
            completion_tokens,
        };
        self.router.state.settle_tokens(self.slot, now, &tokens);
    }

    /// Records the stream's times for latency-based routing, as LiteLLM's `lowest_latency`
    /// handler does when a stream's success is logged: time to first token from
    /// `first_event` (the first event relayed to the client, if any) and whole-stream latency
    /// from `ended`, the latter only when the stream `completed` (reached its end event,
    /// neither failing nor losing its client, whose shorter read says nothing about the
    /// deployment).
    pub fn record_timing(&self, first_event: Option<Instant>, ended: Instant, completed: bool) {
        let since_sent = |t: Instant| t.saturating_duration_since(self.sent);
        let timing = CallTiming {
            latency: completed.then(|| since_sent(ended)),
            ttft: first_event.map(since_sent),
        };
        if timing != CallTiming::default() {
            self.router.state.record_timing(self.slot, ended, &timing);
        }
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.router.state.end(self.slot);
    }
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
    /// rounded up, at least 1 (field failure B13). `None` for other endings.
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

    /// The cooldown rule for a failure of `class` on a deployment of a group of
    /// `group_size`, or `None` when the failure is not held against the deployment.
    ///
    /// With `allowed_fails` or an `allowed_fails_policy` in the config, a failure that counts
    /// (retryable classes, and any class the policy lists) cools the deployment after that
    /// many within a minute. Without either, LiteLLM's default rule applies
    /// (`litellm/router_utils/cooldown_handlers.py`, `_should_cooldown_deployment`): in a
    /// group of several deployments a 429, 401/403 or 404 cools the deployment at once, and
    /// a timeout, connection error or 5xx when more than half of the minute's calls (at least
    /// [`DEFAULT_FAILURE_RATE_MIN_CALLS`]) failed. The only deployment of a group is never
    /// cooled by the default rule: that would only turn its error into a 429 "No deployments
    /// available" (Tollgate keeps LiteLLM's single-deployment exemption for every class).
    fn cooldown_rule(&self, class: FailureClass, group_size: usize) -> Option<CooldownRule> {
        let cfg = &self.config;
        let trigger = if cfg.allowed_fails_configured || !cfg.allowed_fails_policy.is_empty() {
            match cfg.allowed_fails_policy.for_class(class) {
                Some(n) => CooldownTrigger::FailCount(n),
                None if class.counts_for_cooldown() => {
                    CooldownTrigger::FailCount(cfg.allowed_fails)
                }
                None => return None,
            }
        } else if group_size <= 1 {
            return None;
        } else {
            match class {
                FailureClass::RateLimit | FailureClass::Auth | FailureClass::NotFound => {
                    CooldownTrigger::Immediately
                }
                c if c.counts_for_cooldown() => CooldownTrigger::FailureRate {
                    over: DEFAULT_FAILURE_RATE,
                    min_calls: DEFAULT_FAILURE_RATE_MIN_CALLS,
                },
                _ => return None,
            }
        };
        Some(CooldownRule {
            trigger,
            cooldown_time: cfg.cooldown_time,
            disabled: cfg.disable_cooldowns,
        })
    }
}

/// The source key of a fallback rule that applies to every group without its own rule.
const GENERIC_FALLBACK_KEY: &str = "*";

impl<'a> AttemptPlan<'a> {
    /// The next call to make, or `None` when the plan has ended (success, final failure,
    /// client cancellation, or nothing left to try). Calling it again without reporting
    /// the previous attempt ends the plan.
    pub fn next_attempt(&mut self, now: Instant) -> Option<Attempt<'a>> {
        loop {
            match self.phase {
                Phase::Done => return None,
                Phase::Awaiting => {
                    self.finish();
                    return None;
                }
                Phase::Ready => {}
            }
            let router = self.router;
            let entry = &self.chain[self.cur];
            let group = entry.group;
            let mut ctx = SelectCtx {
                prompt_tokens: self.prompt_tokens,
                stream: self.stream,
                exclude: self.tried,
            };
            let mut sel = router.select(group, now, &ctx);
            if matches!(sel, Selection::Unavailable { .. }) && self.tried != 0 {
                ctx.exclude = 0;
                sel = router.select(group, now, &ctx);
            }
            match sel {
                Selection::Picked(index) => {
                    let deployment = &group.deployments[index];
                    let not_before = match self.pending.take() {
                        None => now,
                        Some(p) => {
                            let cfg = &router.config;
                            let wait = if p.last_index == index {
                                p.retry_after
                                    .unwrap_or_else(|| self.backoff(self.retries_in_group))
                            } else {
                                Duration::ZERO
                            };
                            p.failed_at + wait.max(cfg.retry_after)
                        }
                    };
                    let upstream_model = upstream_for(
                        &deployment.deployment.upstream_model,
                        &entry.requested,
                        entry.matched.as_deref(),
                    );
                    let slot = group.slot_base + index;
                    router.state.begin(slot, now, self.prompt_tokens);
                    if index < 64 {
                        self.tried |= 1 << index;
                    }
                    if self.attempts_in_group > 0 {
                        self.attempted_retries += 1;
                    }
                    self.attempts_in_group += 1;
                    self.attempts += 1;
                    self.seq = self.seq.wrapping_add(1);
                    self.phase = Phase::Awaiting;
                    return Some(Attempt {
                        group,
                        deployment,
                        upstream_model,
                        retry_index: self.retries_in_group,
                        fallback_index: self.cur as u32,
                        not_before,
                        index,
                        seq: self.seq,
                        began: now,
                        prompt_estimate: self.prompt_tokens,
                        in_flight: InFlight {
                            state: router.state.as_ref(),
                            slot,
                            handed_over: false,
                        },
                    });
                }
                Selection::Unavailable { retry_after } => {
                    let wait = retry_after.unwrap_or(Duration::from_secs(1));
                    self.unavailable_for = Some(self.unavailable_for.map_or(wait, |w| w.min(wait)));
                    let class = self
                        .pending
                        .take()
                        .map_or(FailureClass::RateLimit, |p| p.class);
                    self.exhausted(class);
                }
            }
        }
    }

    /// Reports how `attempt` went; `now` is when it ended. Reports of stale attempts (not
    /// the latest one of this plan) are ignored.
    pub fn report(&mut self, attempt: &Attempt<'a>, outcome: Outcome, now: Instant) {
        if self.phase != Phase::Awaiting || attempt.seq != self.seq {
            return;
        }
        self.phase = Phase::Ready;
        let router = self.router;
        let slot = attempt.group.slot_base + attempt.index;
        let (class, retry_after) = match outcome {
            Outcome::Success {
                timing,
                prompt_tokens,
                completion_tokens,
            } => {
                router.state.record_success(
                    slot,
                    now,
                    &SuccessSample {
                        timing,
                        tokens: AttemptTokens {
                            began: attempt.began,
                            prompt_estimate: attempt.prompt_estimate,
                            prompt_tokens,
                            completion_tokens,
                        },
                    },
                );
                self.end = PlanEnd::Success;
                self.finish();
                return;
            }
            Outcome::ClientCancelled => {
                self.end = PlanEnd::ClientCancelled;
                self.finish();
                return;
            }
            Outcome::Failure { class, retry_after } => (class, retry_after),
            Outcome::Simulated { class } => {
                self.last_failure = Some((class, None));
                self.exhausted(class);
                return;
            }
        };
        self.last_failure = Some((class, retry_after));
        if class == FailureClass::ClientCancelled {
            self.end = PlanEnd::ClientCancelled;
            self.finish();
            return;
        }
        if class.is_client_side() {
            self.finish();
            return;
        }
        if let Some(mut rule) = router.cooldown_rule(class, attempt.group.deployments.len()) {
            // The upstream's own `retry-after` is how long it wants to be left alone: it
            // replaces `cooldown_time` (LiteLLM's `deployment_callback_on_failure`).
            if let Some(wait) = retry_after.filter(|w| !w.is_zero()) {
                rule.cooldown_time = wait;
            }
            router.state.record_failure(slot, now, &rule);
        }
        if class == FailureClass::Timeout {
            // A deployment that timed out took at least as long as it was given: that wait is
            // a latency sample, so latency-based routing moves off a hanging deployment even
            // with cooldowns off (LiteLLM records a timeout as a 1,000 s latency).
            let waited = now.saturating_duration_since(attempt.began.max(attempt.not_before));
            let timing = CallTiming {
                latency: Some(waited),
                ttft: self.stream.then_some(waited),
            };
            router.state.record_timing(slot, now, &timing);
        }
        let budget = self.retry_budget(attempt.group, attempt.index, class);
        let wait_ok = retry_after.is_none_or(|r| r <= router.config.max_retry_wait);
        if self.retries_in_group < budget && wait_ok {
            self.retries_in_group += 1;
            self.pending = Some(PendingRetry {
                class,
                retry_after,
                failed_at: now,
                last_index: attempt.index,
            });
            return;
        }
        self.exhausted(class);
    }

    /// Counts so far (final once `next_attempt` returned `None`).
    pub fn summary(&self) -> PlanSummary<'a> {
        PlanSummary {
            attempts: self.attempts,
            attempted_retries: self.attempted_retries,
            attempted_fallbacks: self.attempted_fallbacks,
            last_failure: self.last_failure.map(|(c, _)| c),
            end: self.end,
        }
    }

    /// Retries allowed in `group` after a failure of class `class` on deployment `index`.
    fn retry_budget(&self, group: &ModelGroup, index: usize, class: FailureClass) -> u32 {
        let cfg = &self.router.config;
        let policy = cfg
            .model_group_retry_policy
            .get(&group.name)
            .unwrap_or(&cfg.retry_policy);
        if let Some(n) = policy.for_class(class) {
            return n;
        }
        if !class.is_retryable() {
            return 0;
        }
        self.num_retries
            .or(group.limits(index).max_retries)
            .unwrap_or(cfg.num_retries)
    }

    /// Exponential backoff before the `n`-th retry (n ≥ 1) of the same deployment.
    fn backoff(&self, n: u32) -> Duration {
        let step = INITIAL_RETRY_DELAY
            .saturating_mul(1u32 << n.saturating_sub(1).min(16))
            .min(MAX_RETRY_DELAY);
        step.mul_f64(1.0 - 0.25 * self.router.rng.next_f64())
    }

    /// The current group is done after a failure of `class`: enter the next fallback group
    /// if the class allows one, else end.
    fn exhausted(&mut self, class: FailureClass) {
        if !class.allows_fallback() {
            self.finish();
            return;
        }
        if !self.chain_built {
            self.chain_built = true;
            self.build_chain(class);
        }
        self.cur += 1;
        if self.cur >= self.chain.len() {
            self.cur = self.chain.len() - 1;
            self.finish();
            return;
        }
        self.attempted_fallbacks += 1;
        self.attempts_in_group = 0;
        self.retries_in_group = 0;
        self.tried = 0;
        self.pending = None;
        self.phase = Phase::Ready;
    }

    /// Appends the fallback groups of the requested group for a failure of `class`.
    fn build_chain(&mut self, class: FailureClass) {
        let router = self.router;
        let cfg = &router.config;
        let primary = &self.chain[0];
        let keys = [primary.group.name.as_str(), primary.requested.as_ref()];
        // The group's own entry, else the generic one: a rule keyed `*` applies to every group
        // without its own (LiteLLM's `get_fallback_model_group`).
        let entry_of = |map: &'a std::collections::HashMap<String, Vec<String>>| {
            keys.iter()
                .find_map(|k| map.get(*k))
                .or_else(|| map.get(GENERIC_FALLBACK_KEY))
        };
        let special = match class {
            FailureClass::ContextWindowExceeded => entry_of(&cfg.context_window_fallbacks),
            FailureClass::ContentPolicy => entry_of(&cfg.content_policy_fallbacks),
            _ => None,
        };
        let request = self.request_fallbacks.take();
        let names: Vec<Cow<'a, str>> = match (special, request) {
            (Some(list), _) => list.iter().map(|s| Cow::Borrowed(s.as_str())).collect(),
            (None, Some(list)) => list.into_iter().map(Cow::Owned).collect(),
            // `default_fallbacks` is LiteLLM's `{"*": default_fallbacks}` appended to
            // `fallbacks`: it wins over an earlier `*` rule.
            (None, None) => keys
                .iter()
                .find_map(|k| cfg.fallbacks.get(*k))
                .or((!cfg.default_fallbacks.is_empty()).then_some(&cfg.default_fallbacks))
                .or_else(|| cfg.fallbacks.get(GENERIC_FALLBACK_KEY))
                .unwrap_or(&cfg.default_fallbacks)
                .iter()
                .map(|s| Cow::Borrowed(s.as_str()))
                .collect(),
        };
        for name in names {
            if self.chain.len() > cfg.max_fallbacks {
                break;
            }
            let Some((group, matched)) = router.lookup(&name) else {
                continue;
            };
            if self.chain.iter().any(|e| Arc::ptr_eq(e.group, group)) {
                continue;
            }
            self.chain.push(ChainEntry {
                group,
                requested: name,
                matched,
            });
        }
    }

    fn finish(&mut self) {
        self.phase = Phase::Done;
        if self.end != PlanEnd::Pending {
            return;
        }
        let primary: &'a Arc<ModelGroup> = self.chain[0].group;
        self.end = match (self.last_failure, self.unavailable_for) {
            (Some((class, retry_after)), _) => PlanEnd::Failed { class, retry_after },
            (None, wait) => PlanEnd::NoDeployments {
                group: primary.name.as_str(),
                retry_after: wait.unwrap_or(Duration::from_secs(1)),
            },
        };
    }
}

#[cfg(test)]
mod tests;
