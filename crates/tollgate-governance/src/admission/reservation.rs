//! [`Reservation`]: a granted admission until it is settled, released or dropped, and the
//! [`Settlement`] it gives. Settling and releasing never wait: in-process they run inline,
//! with shared counters they are queued ([`super::SharedCounters::settle`] /
//! [`super::SharedCounters::release`]), and the spend after is computed from what the
//! reservation already knows (the spend at admission, [`Ticket::spend_units`]) instead of a
//! second round trip.

use std::sync::Arc;

use super::engine::{Counters, Estimate};
use super::money::{units_to_usd, usd_to_units};
use super::rejection::rate_limit_headers;
use super::scope::{ScopeKey, ScopeKind};
use super::store::{Actual, RateLimitStatus, Ticket};
use crate::duration::Clock;
use crate::pricing::Usage;

/// The result of [`Reservation::settle`].
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    /// Cost charged, USD.
    pub cost_usd: f64,
    /// Each reserved scope's spend after this request, USD. In-process: the counter's value
    /// after settling. Shared counters: the scope's spend at admission plus this request's
    /// cost (settlements of other replicas in between are not in it); **empty** when the
    /// shared store did not report the spend at admission, which is then unknown here.
    pub spend_after: Vec<(ScopeKey, f64)>,
}

impl Settlement {
    /// Spend after this request of the first scope of `kind` (e.g. the key, for
    /// `x-litellm-key-spend`); `None` when not known ([`Self::spend_after`]).
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

/// A granted admission. Holds the reserved estimate, one request in each RPM window and one
/// parallel slot on every scope until [`Reservation::settle`] replaces it with the actual usage.
/// Dropped unsettled (request never sent, task cancelled), it releases everything and charges
/// nothing; to bill a stream cut off by the client, settle with the partial usage first.
/// With shared counters the release of a drop is queued, so dropping needs a Tokio runtime
/// when the shared implementation spawns (as [`super::Unbatched`] does).
pub struct Reservation {
    counters: Counters,
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
    pub(super) fn new(
        counters: Counters,
        clock: Arc<dyn Clock>,
        ticket: Ticket,
        rate: Vec<RateLimitStatus>,
        estimate: Estimate,
    ) -> Self {
        Self {
            counters,
            clock,
            ticket,
            rate,
            estimate,
            done: false,
        }
    }

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

    /// Remaining-limit values once this request has used `tokens` (input + output) instead
    /// of its reservation, from the admission's view alone (no read): each TPM scope's
    /// remaining tokens plus the reserved tokens minus `tokens`, at most the limit, at least
    /// 0. Other requests' changes since admission are not in it.
    pub fn rate_limits_after(&self, tokens: u64) -> Vec<RateLimitStatus> {
        let reserved = self.ticket.tokens;
        let mut out = self.rate.clone();
        for r in &mut out {
            if let (Some(rem), Some(limit)) = (r.remaining_tokens.as_mut(), r.limit_tokens) {
                *rem = rem
                    .saturating_add(reserved)
                    .saturating_sub(tokens)
                    .min(limit);
            }
        }
        out
    }

    /// The settled spend, USD, at admission of the first scope of `kind`, when the counters
    /// reported it (shared counters do; `None` in-process and when unreported).
    pub fn spend_at_admission(&self, kind: ScopeKind) -> Option<f64> {
        let spends = self.ticket.spend_units.as_deref()?;
        self.ticket
            .scopes
            .iter()
            .zip(spends)
            .find(|(k, _)| k.kind == kind)
            .map(|(_, u)| units_to_usd(*u))
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
    /// stream ended early (client hang-up, upstream error). With shared counters the
    /// settlement is queued, once, and [`Settlement::spend_after`] computed from the spend at
    /// admission.
    ///
    /// Errors: [`SettleError::AlreadySettled`] on a second call (or if the in-process store
    /// already settled this request id and attempt); nothing is charged twice.
    pub fn settle(&mut self, usage: &Usage, cost_usd: f64) -> Result<Settlement, SettleError> {
        if self.done {
            return Err(SettleError::AlreadySettled);
        }
        self.done = true;
        let actual = Actual {
            cost_units: usd_to_units(cost_usd),
            tokens: usage.total_tokens(),
        };
        let spend_after = match &self.counters {
            Counters::Local(store) => {
                let spends = store
                    .settle(&self.ticket, actual, self.clock.now())
                    .ok_or(SettleError::AlreadySettled)?;
                self.ticket.scopes.iter().cloned().zip(spends).collect()
            }
            Counters::Shared(_) if self.ticket.scopes.is_empty() => Vec::new(),
            Counters::Shared(shared) => {
                shared.settle(self.ticket.clone(), actual);
                match self.ticket.spend_units.as_deref() {
                    Some(units) => self
                        .ticket
                        .scopes
                        .iter()
                        .cloned()
                        .zip(units)
                        .map(|(k, u)| (k, units_to_usd(u.saturating_add(actual.cost_units))))
                        .collect(),
                    None => Vec::new(),
                }
            }
        };
        Ok(Settlement {
            cost_usd: units_to_usd(actual.cost_units),
            spend_after,
        })
    }

    /// Releases the reservation without charging (the request was never sent upstream).
    /// Same as dropping it; returns false when already settled (with shared counters the
    /// release is queued and true means it was queued).
    pub fn release(mut self) -> bool {
        self.release_inner()
    }

    fn release_inner(&mut self) -> bool {
        if self.done {
            return false;
        }
        self.done = true;
        match &self.counters {
            Counters::Local(store) => store.release(&self.ticket, self.clock.now()),
            Counters::Shared(_) if self.ticket.scopes.is_empty() => true,
            Counters::Shared(shared) => {
                shared.release(self.ticket.clone());
                true
            }
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.release_inner();
    }
}
