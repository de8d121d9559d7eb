//! One upstream call of a plan, and the in-flight count it (or its stream) holds.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use crate::group::{ModelGroup, RoutedDeployment};
use crate::resolve::Router;
use crate::state::{AttemptTokens, CallTiming, RouterState};

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
    pub(super) index: usize,
    pub(super) seq: u32,
    /// When the attempt's prompt estimate was counted.
    pub(super) began: Instant,
    /// That estimate, tokens.
    pub(super) prompt_estimate: u64,
    pub(super) in_flight: InFlight<'a>,
}

/// Decrements the deployment's in-flight count on drop, unless handed to a [`StreamSlot`].
pub(super) struct InFlight<'a> {
    pub(super) state: &'a dyn RouterState,
    pub(super) slot: usize,
    pub(super) handed_over: bool,
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
