//! The phases of an [`InMemoryCounterStore`](super::InMemoryCounterStore) reservation, on
//! borrowed state: the lock order, the check phase (nothing changes) and the commit phase
//! (applied only when every check passed), and the ticket. The caller holds every scope's lock
//! from the check through the commit: all or nothing.

use std::sync::{Arc, Mutex};

use super::{ScopeGuard, ScopeState, lock};
use crate::admission::money::usd_to_units;
use crate::admission::scope::{Limits, ScopeKey};
use crate::admission::store::{Denial, RateLimitStatus, ReserveRequest, ScopeRequest, Ticket};

/// The request indices of `scopes` in `ScopeKey` order (the lock order that keeps requests
/// touching overlapping scopes from deadlocking), each distinct key once.
pub(super) fn lock_order(scopes: &[ScopeRequest]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scopes.len()).collect();
    order.sort_by(|&a, &b| scopes[a].key.cmp(&scopes[b].key));
    order.dedup_by(|a, b| scopes[*a].key == scopes[*b].key);
    order
}

/// Locks `states` (by request index) in `order`; indices not in `order` get `None`.
pub(super) fn lock_in_order<'a>(
    states: &'a [Arc<Mutex<ScopeState>>],
    order: &[usize],
) -> Vec<ScopeGuard<'a>> {
    let mut guards: Vec<ScopeGuard<'a>> = (0..states.len()).map(|_| None).collect();
    for &i in order {
        guards[i] = Some(lock(&states[i]));
    }
    guards
}

/// The check phase: every budget first, then every rate limit, in request order; the first
/// refusal wins. Nothing is changed.
pub(super) fn check_all(
    req: &ReserveRequest<'_>,
    guards: &[ScopeGuard<'_>],
    window_end: &[i64],
) -> Result<(), Denial> {
    for (i, s) in req.scopes.iter().enumerate() {
        if let Some(st) = guards[i].as_deref() {
            check_budget(st, &s.limits, i)?;
        }
    }
    for (i, s) in req.scopes.iter().enumerate() {
        if let Some(st) = guards[i].as_deref() {
            check_rates(st, &s.limits, i, req.prompt_tokens, window_end[i])?;
        }
    }
    Ok(())
}

/// The commit phase: reserves the request's cost and tokens and counts one request in flight
/// on every locked scope; returns the rate-limit status of each scope with an RPM or TPM limit.
pub(super) fn commit_all(
    req: &ReserveRequest<'_>,
    guards: &mut [ScopeGuard<'_>],
    window_end: &[i64],
) -> Vec<RateLimitStatus> {
    let mut statuses = Vec::new();
    for (i, s) in req.scopes.iter().enumerate() {
        let Some(st) = guards[i].as_deref_mut() else {
            continue;
        };
        st.reserved = st.reserved.saturating_add(req.cost_units);
        st.reserved_tokens = st.reserved_tokens.saturating_add(req.reserve_tokens);
        st.window_requests += 1;
        st.in_flight += 1;
        if let Some(status) = rate_status(s, st, window_end[i]) {
            statuses.push(status);
        }
    }
    statuses
}

/// Remaining requests and tokens of scope `s` after this admission (`None` without an RPM or
/// TPM limit); the window ends at `window_end`, Unix ms.
fn rate_status(s: &ScopeRequest, st: &ScopeState, window_end: i64) -> Option<RateLimitStatus> {
    let l = &s.limits;
    if l.rpm_limit.is_none() && l.tpm_limit.is_none() {
        return None;
    }
    Some(RateLimitStatus {
        scope: s.key.clone(),
        limit_requests: l.rpm_limit,
        remaining_requests: l
            .rpm_limit
            .map(|lim| lim.saturating_sub(st.window_requests)),
        limit_tokens: l.tpm_limit,
        remaining_tokens: l.tpm_limit.map(|lim| lim.saturating_sub(st.tokens_used())),
        window_reset_ms: window_end,
    })
}

/// The ticket of a granted reservation: each distinct scope once (`order` holds their request
/// indices), in request order.
pub(super) fn ticket(
    req: &ReserveRequest<'_>,
    request_id: Arc<str>,
    mut order: Vec<usize>,
) -> Ticket {
    order.sort_unstable();
    let scopes: Arc<[ScopeKey]> = order.iter().map(|&i| req.scopes[i].key.clone()).collect();
    Ticket {
        request_id,
        attempt: req.attempt,
        scopes,
        cost_units: req.cost_units,
        tokens: req.reserve_tokens,
        spend_units: None,
    }
}

/// Refuses when scope `i`'s spend plus in-flight reservations reach its finite budget.
fn check_budget(st: &ScopeState, limits: &Limits, i: usize) -> Result<(), Denial> {
    if let Some(max) = limits.finite_budget() {
        let max_units = usd_to_units(max);
        let current_units = st.spend.saturating_add(st.reserved);
        if current_units >= max_units {
            return Err(Denial::Budget {
                scope: i,
                current_units,
                reserved_units: st.reserved,
                max_units,
            });
        }
    }
    Ok(())
}

/// Refuses when scope `i` is at its RPM limit, when its window's tokens (settled and
/// reserved) plus the `prompt` would exceed its TPM limit, or when it is at
/// `max_parallel_requests`; `window_end` (Unix ms) is when the rate window resets.
fn check_rates(
    st: &ScopeState,
    limits: &Limits,
    i: usize,
    prompt: u64,
    window_end: i64,
) -> Result<(), Denial> {
    if let Some(limit) = limits.rpm_limit
        && st.window_requests >= limit
    {
        return Err(Denial::Requests {
            scope: i,
            limit,
            window_reset_ms: window_end,
        });
    }
    if let Some(limit) = limits.tpm_limit {
        let used = st.tokens_used();
        if used >= limit || used.saturating_add(prompt) > limit {
            return Err(Denial::Tokens {
                scope: i,
                limit,
                used,
                window_reset_ms: window_end,
            });
        }
    }
    if let Some(limit) = limits.max_parallel_requests
        && st.in_flight >= limit
    {
        return Err(Denial::Parallel { scope: i, limit });
    }
    Ok(())
}
