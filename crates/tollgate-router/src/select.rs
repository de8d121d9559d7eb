//! Choosing one deployment of a group: `order` tiers, availability (cooldown, pre-call
//! checks) and the routing strategy.

use std::cmp::Ordering;
use std::time::{Duration, Instant};

use crate::config::RoutingStrategy;
use crate::group::ModelGroup;
use crate::resolve::Router;
use crate::state::DeploymentSnapshot;

/// Inputs of one selection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SelectCtx {
    /// Prompt estimate, tokens (pre-call checks, TPM headroom).
    pub prompt_tokens: u64,
    /// Streamed request: latency routing compares time to first token.
    pub stream: bool,
    /// Deployment indexes (< 64) to leave out, as a bit set.
    pub exclude: u64,
}

/// The result of one selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selection {
    /// Index into the group's deployments.
    Picked(usize),
    /// Nothing available; the time until the first deployment returns, if any will: the end
    /// of a cooldown, or of the minute whose RPM/TPM a deployment has used up.
    Unavailable { retry_after: Option<Duration> },
}

/// Keeps the lowest key seen, with a uniform random choice among equal keys.
struct MinPick {
    best: Option<usize>,
    key: (f64, f64),
    ties: u64,
}

impl MinPick {
    fn new() -> Self {
        MinPick {
            best: None,
            key: (f64::INFINITY, f64::INFINITY),
            ties: 0,
        }
    }

    fn offer(&mut self, router: &Router, i: usize, key: (f64, f64)) {
        let ord = if self.best.is_none() {
            Ordering::Less
        } else {
            key.partial_cmp(&self.key).unwrap_or(Ordering::Equal)
        };
        match ord {
            Ordering::Less => {
                self.best = Some(i);
                self.key = key;
                self.ties = 1;
            }
            Ordering::Equal => {
                self.ties += 1;
                if router.rng.below(self.ties) == 0 {
                    self.best = Some(i);
                }
            }
            Ordering::Greater => {}
        }
    }
}

impl Router {
    /// Picks a deployment: the first `order` tier with an available deployment, then the
    /// strategy within that tier.
    pub(crate) fn select(&self, g: &ModelGroup, now: Instant, ctx: &SelectCtx) -> Selection {
        let deps = &g.deployments;
        let mut soonest: Option<Instant> = None;
        let mut start = 0;
        while start < deps.len() {
            let order = deps[start].order;
            let len = deps[start..]
                .iter()
                .take_while(|d| d.order == order)
                .count();
            if let Some(i) = self.select_tier(g, start, start + len, now, ctx, &mut soonest) {
                return Selection::Picked(i);
            }
            start += len;
        }
        Selection::Unavailable {
            retry_after: soonest.map(|t| t.saturating_duration_since(now)),
        }
    }

    /// The snapshot of deployment `i` if it is available for this request.
    fn available(
        &self,
        g: &ModelGroup,
        i: usize,
        now: Instant,
        ctx: &SelectCtx,
        soonest: &mut Option<Instant>,
    ) -> Option<DeploymentSnapshot> {
        if i < 64 && ctx.exclude & (1 << i) != 0 {
            return None;
        }
        let snap = self.state.snapshot(g.slot_base + i, now);
        if let Some(until) = snap.cooldown_until {
            *soonest = Some(soonest.map_or(until, |s| s.min(until)));
            return None;
        }
        let pre_call = self.config.enable_pre_call_checks;
        if pre_call || self.config.strategy == RoutingStrategy::UsageBased {
            let lim = g.limits(i);
            if lim.rpm.is_some_and(|rpm| snap.rpm_used >= rpm)
                || lim
                    .tpm
                    .is_some_and(|tpm| snap.tpm_used.saturating_add(ctx.prompt_tokens) > tpm)
            {
                // Its capacity comes back when this minute's counts start afresh (a prompt
                // larger than its whole TPM never fits, and says nothing sooner).
                if lim.tpm.is_none_or(|tpm| ctx.prompt_tokens <= tpm) {
                    let back = self.state.minute_ends(now);
                    *soonest = Some(soonest.map_or(back, |s| s.min(back)));
                }
                return None;
            }
            if pre_call && lim.max_input_tokens.is_some_and(|m| ctx.prompt_tokens > m) {
                return None;
            }
        }
        Some(snap)
    }

    /// The latency (ms) that latency routing compares; 0 for a deployment without a recent
    /// sample, so new or forgotten deployments get explored first (as LiteLLM does).
    fn latency_key(&self, snap: &DeploymentSnapshot, now: Instant, stream: bool) -> f64 {
        let fresh = |v: Option<(f64, Instant)>| {
            v.filter(|&(_, at)| now.saturating_duration_since(at) <= self.config.latency_ttl)
                .map(|(ms, _)| ms)
        };
        let ttft = if stream { fresh(snap.ttft_ms) } else { None };
        ttft.or_else(|| fresh(snap.latency_ms)).unwrap_or(0.0)
    }

    fn select_tier(
        &self,
        g: &ModelGroup,
        start: usize,
        end: usize,
        now: Instant,
        ctx: &SelectCtx,
        soonest: &mut Option<Instant>,
    ) -> Option<usize> {
        match self.config.strategy {
            RoutingStrategy::SimpleShuffle => {
                // Weighted reservoir of size one; uniform if no candidate has a weight.
                let (mut weighted, mut total) = (None, 0.0);
                let (mut uniform, mut n) = (None, 0u64);
                for i in start..end {
                    if self.available(g, i, now, ctx, soonest).is_none() {
                        continue;
                    }
                    n += 1;
                    if self.rng.below(n) == 0 {
                        uniform = Some(i);
                    }
                    let w = g.deployments[i].weight;
                    if w.is_finite() && w > 0.0 {
                        total += w;
                        if self.rng.next_f64() * total < w {
                            weighted = Some(i);
                        }
                    }
                }
                weighted.or(uniform)
            }
            RoutingStrategy::LatencyBased if self.config.lowest_latency_buffer > 0.0 => {
                let mut lowest = f64::INFINITY;
                for i in start..end {
                    if let Some(s) = self.available(g, i, now, ctx, soonest) {
                        lowest = lowest.min(self.latency_key(&s, now, ctx.stream));
                    }
                }
                let limit = lowest * (1.0 + self.config.lowest_latency_buffer);
                let mut pick = MinPick::new();
                let mut ignore = None;
                for i in start..end {
                    if let Some(s) = self.available(g, i, now, ctx, &mut ignore)
                        && self.latency_key(&s, now, ctx.stream) <= limit
                    {
                        pick.offer(self, i, (0.0, 0.0));
                    }
                }
                pick.best
            }
            strategy => {
                let mut pick = MinPick::new();
                for i in start..end {
                    let Some(s) = self.available(g, i, now, ctx, soonest) else {
                        continue;
                    };
                    let key = match strategy {
                        RoutingStrategy::LeastBusy => (s.in_flight as f64, 0.0),
                        RoutingStrategy::UsageBased => (s.tpm_used as f64, s.rpm_used as f64),
                        RoutingStrategy::LatencyBased => {
                            (self.latency_key(&s, now, ctx.stream), 0.0)
                        }
                        _ => {
                            let lim = g.limits(i);
                            let cost = match (lim.input_cost_per_token, lim.output_cost_per_token) {
                                (None, None) => f64::INFINITY,
                                (a, b) => a.unwrap_or(0.0) + b.unwrap_or(0.0),
                            };
                            (cost, 0.0)
                        }
                    };
                    pick.offer(self, i, key);
                }
                pick.best
            }
        }
    }
}

#[cfg(test)]
mod tests;
