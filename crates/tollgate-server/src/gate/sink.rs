//! [`GovernedSink`]: settles each attempt exactly once with what it produced, and queues its
//! spend-log row (written behind in batches).
//!
//! Billing policy (the same bill for every caller, budget or not):
//! - complete answers: the provider's final cumulative usage (one record per attempt; usage values are cumulative, the last one wins);
//!   tokens it leaves out (no `usage` at all, or a count of 0) are counted
//!   ([`super::unreported`]): the prompt from the request, the completion from the text
//!   produced;
//! - a stream cut off by the client, or failing mid-way: the usage seen so far, the prompt
//!   counted when it lacks it, and completion tokens at least those of the content deltas
//!   relayed;
//! - a failed attempt with no usage (upstream error before any output): nothing billed, the
//!   reservation released.

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use tollgate_governance::admission::ScopeKind;
use tollgate_governance::pricing::Usage;
use tollgate_governance::runtime::{CallOutcome, Charge, Governance};

use crate::relay::{CallRecord, CallSink, Settled, log_call};

/// The sink used when governance runs.
#[derive(Debug)]
pub struct GovernedSink {
    gov: Arc<Governance>,
}

impl GovernedSink {
    /// A sink settling on `gov`.
    pub fn new(gov: Arc<Governance>) -> Self {
        Self { gov }
    }
}

impl CallSink for GovernedSink {
    fn record(&self, mut r: CallRecord) -> Option<Settled> {
        log_call(&r);
        let mut charge = r.charge.take()?;
        if let Some(id) = r.response_id.take() {
            charge.log.request_id = id;
        }
        let usage = billed_usage(&r, &charge);
        let wall = |i: Instant| -> DateTime<Utc> {
            r.started_at
                + chrono::Duration::from_std(i.saturating_duration_since(r.started))
                    .unwrap_or_default()
        };
        let outcome = CallOutcome {
            usage,
            success: r.status < 400 && !r.upstream_failed,
            end_time: wall(r.ended),
            completion_start: r.first_byte.map(wall),
        };
        let (s, rate_limits) = self.gov.settle_reporting(*charge, outcome)?;
        Some(Settled {
            cost_usd: s.cost_usd,
            key_spend: s.spend_of(ScopeKind::Key),
            rate_limits,
        })
    }
}

/// The usage an attempt is billed for (see the module docs).
pub fn billed_usage(r: &CallRecord, charge: &Charge) -> Option<Usage> {
    let reported = r.usage.map(|u| Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        cached_tokens: u.cached_tokens,
        cache_write_tokens: u.cache_write_tokens,
        reasoning_tokens: u.reasoning_tokens,
    });
    let cut_off = r.client_disconnected || r.upstream_failed;
    if !cut_off && r.status >= 400 {
        return reported;
    }
    if cut_off && reported.is_none() && r.unreported.produced_nothing() && r.first_byte.is_none() {
        return None;
    }
    let mut u = reported.unwrap_or_default();
    if u.prompt_tokens == 0 {
        // the admission count when there was one: the same count, already paid for
        u.prompt_tokens = match charge.reservation.estimate().prompt_tokens {
            0 => r.unreported.prompt_tokens(&r.upstream_model),
            n => n,
        };
    }
    if cut_off {
        let produced = r.unreported.completion_tokens(&r.upstream_model);
        u.completion_tokens = u.completion_tokens.max(produced);
    } else if u.completion_tokens == 0 {
        u.completion_tokens = r.unreported.completion_tokens(&r.upstream_model);
    }
    Some(u)
}
