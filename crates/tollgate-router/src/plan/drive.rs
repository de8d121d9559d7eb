//! Driving a plan: the next attempt to make, and what a reported outcome leads to.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::attempt::InFlight;
use super::{
    Attempt, AttemptPlan, INITIAL_RETRY_DELAY, MAX_RETRY_DELAY, PendingRetry, Phase, PlanEnd,
    PlanSummary,
};
use crate::failure::{FailureClass, Outcome};
use crate::group::ModelGroup;
use crate::resolve::upstream_for;
use crate::select::{SelectCtx, Selection};
use crate::state::{AttemptTokens, CallTiming, SuccessSample};

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
                Selection::Picked(index) => return Some(self.start(index, now)),
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

    /// Starts the call to deployment `index` of the current group at `now`: counts it in
    /// flight and in this plan, and sets when it may be sent (after a retry's wait).
    fn start(&mut self, index: usize, now: Instant) -> Attempt<'a> {
        let router = self.router;
        let entry = &self.chain[self.cur];
        let group = entry.group;
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
        Attempt {
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
        self.hold_failure(attempt, class, retry_after, now);
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

    /// What a failure of `class` at `now` leaves on the deployment of `attempt`: a cooldown
    /// (when its rule says so) and, for a timeout, the wait as a latency sample.
    fn hold_failure(
        &self,
        attempt: &Attempt<'a>,
        class: FailureClass,
        retry_after: Option<Duration>,
        now: Instant,
    ) {
        let router = self.router;
        let slot = attempt.group.slot_base + attempt.index;
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
