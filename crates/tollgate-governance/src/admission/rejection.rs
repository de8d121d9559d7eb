//! [`Rejection`]: what the server needs to answer a refused request like LiteLLM, and the
//! `x-ratelimit-*` header values (litellm-surface §5.2, §5.4).

use std::fmt;

use chrono::DateTime;

use super::money::units_to_usd;
use super::scope::{ScopeKey, ScopeKind};
use super::store::{Denial, RateLimitStatus, ScopeRequest};

/// Which limit refused the request.
#[derive(Debug, Clone, PartialEq)]
pub enum RejectReason {
    /// Budget: `current_cost` (spend + in-flight reservations, USD) `>= max_budget` (USD).
    Budget {
        /// USD.
        current_cost: f64,
        /// USD.
        max_budget: f64,
    },
    /// RPM limit reached in the current window.
    Requests {
        /// `rpm_limit`.
        limit: u64,
    },
    /// TPM limit: the window's tokens plus this prompt would exceed it.
    Tokens {
        /// `tpm_limit`.
        limit: u64,
        /// Tokens already counted in the window.
        used: u64,
    },
    /// `max_parallel_requests` reached.
    Parallel {
        /// `max_parallel_requests`.
        limit: u64,
    },
    /// The same (request id, attempt) was admitted already and is in flight (a caller bug).
    DuplicateAttempt,
    /// The shared counter store (Redis) could not answer the reservation: nothing reserved,
    /// the request not admitted.
    StoreUnavailable,
}

/// A refused admission. `Display` gives the message; nothing in it is a raw key (scopes are
/// named by hash, id, alias or masked key).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// HTTP status: budget → configurable (default 422; per-model budgets 429); limits → 429.
    pub status: u16,
    /// OpenAI-style error `type`: `budget_exceeded` or `rate_limit_error`.
    pub error_type: &'static str,
    /// The error message, LiteLLM's wording.
    pub message: String,
    /// The scope that refused (None for [`RejectReason::DuplicateAttempt`]).
    pub scope: Option<ScopeKey>,
    /// Why.
    pub reason: RejectReason,
    /// Seconds until retrying can succeed (`retry-after` header), for rate limits.
    pub retry_after_s: Option<u64>,
    /// Response headers to add: `retry-after` and `x-ratelimit-*` for rate limits.
    pub headers: Vec<(String, String)>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rejection {}

fn reset_text(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

/// Seconds a client is told to wait (`retry-after`) when the counter store is unavailable.
pub const UNAVAILABLE_RETRY_AFTER_S: u64 = 1;

impl Rejection {
    /// The refusal of a request whose budgets and limits could not be checked because the
    /// shared counter store (Redis) did not answer: 503 `service_unavailable`, `retry-after:
    /// 1`. Budgets are never skipped silently, so the request is neither reserved nor sent.
    pub fn unavailable() -> Self {
        Rejection {
            status: 503,
            error_type: "service_unavailable",
            message: "The budget and rate-limit store is unavailable: the request was not admitted. Retry later.".to_owned(),
            scope: None,
            reason: RejectReason::StoreUnavailable,
            retry_after_s: Some(UNAVAILABLE_RETRY_AFTER_S),
            headers: vec![(
                "retry-after".to_owned(),
                UNAVAILABLE_RETRY_AFTER_S.to_string(),
            )],
        }
    }

    /// Builds the rejection for a store [`Denial`]. `scopes` are the request's scopes (a
    /// denial names one by index), `now_ms` the Unix time in ms (for `retry-after`),
    /// `budget_status` / `model_budget_status` the HTTP statuses of budget refusals.
    pub(crate) fn from_denial(
        d: Denial,
        scopes: &[ScopeRequest],
        now_ms: i64,
        budget_status: u16,
        model_budget_status: u16,
    ) -> Self {
        match d {
            Denial::Budget {
                scope,
                current_units,
                reserved_units,
                max_units,
            } => {
                let s = &scopes[scope];
                let status = if s.key.kind == ScopeKind::ModelPerKey {
                    model_budget_status
                } else {
                    budget_status
                };
                budget_rejection(s, status, current_units, reserved_units, max_units)
            }
            Denial::Requests {
                scope,
                limit,
                window_reset_ms,
            } => rate_rejection(
                &scopes[scope],
                now_ms,
                "requests",
                limit,
                RejectReason::Requests { limit },
                Some(window_reset_ms),
            ),
            Denial::Tokens {
                scope,
                limit,
                used,
                window_reset_ms,
            } => rate_rejection(
                &scopes[scope],
                now_ms,
                "tokens",
                limit,
                RejectReason::Tokens { limit, used },
                Some(window_reset_ms),
            ),
            Denial::Parallel { scope, limit } => parallel_rejection(&scopes[scope], now_ms, limit),
            Denial::DuplicateAttempt => Rejection {
                status: 409,
                error_type: "invalid_request_error",
                message: "This request attempt is already in flight.".to_owned(),
                scope: None,
                reason: RejectReason::DuplicateAttempt,
                retry_after_s: None,
                headers: Vec::new(),
            },
        }
    }
}

/// A budget refusal of scope `s` with HTTP `status`: `current_units` is the spend plus what
/// requests in flight hold (`reserved_units` of it), `max_units` the cap, all money units
/// (see [`super::money`]). Message: [`budget_message`].
fn budget_rejection(
    s: &ScopeRequest,
    status: u16,
    current_units: i64,
    reserved_units: i64,
    max_units: i64,
) -> Rejection {
    let (current_cost, max_budget) = (units_to_usd(current_units), units_to_usd(max_units));
    // The settled spend, and what requests in flight hold on top of it: a budget
    // can refuse before its spend reaches the cap (see the module docs).
    let cost_text = if reserved_units > 0 {
        format!(
            "{} (+ {} reserved by requests in flight)",
            units_to_usd(current_units - reserved_units),
            units_to_usd(reserved_units)
        )
    } else {
        current_cost.to_string()
    };
    Rejection {
        status,
        error_type: "budget_exceeded",
        message: budget_message(s, &cost_text, max_budget),
        scope: Some(s.key.clone()),
        reason: RejectReason::Budget {
            current_cost,
            max_budget,
        },
        retry_after_s: None,
        headers: Vec::new(),
    }
}

/// A 429 `rate_limit_error` of scope `s` for limit type `kind` (`requests`, `tokens` or
/// `max_parallel_requests`), LiteLLM v3 limiter wording (litellm-surface §5.4):
/// `Rate limit exceeded for <descriptor>: <id>. Limit type: <kind>. Current limit: <limit>,
/// Remaining: 0.`, then ` Limit resets at: <UTC time>` when the window ends at `reset_ms`
/// (Unix ms). `retry-after` is the seconds from `now_ms` to `reset_ms`, rounded up, at least
/// 1 (1 without a reset time); the `x-ratelimit-*` headers are added except for
/// `max_parallel_requests`.
fn rate_rejection(
    s: &ScopeRequest,
    now_ms: i64,
    kind: &str,
    limit: u64,
    reason: RejectReason,
    reset_ms: Option<i64>,
) -> Rejection {
    let retry = reset_ms
        .map(|r| ((r - now_ms).max(0) as u64).div_ceil(1000).max(1))
        .unwrap_or(1);
    let d = s.key.kind.descriptor();
    let mut message = format!(
        "Rate limit exceeded for {d}: {}. Limit type: {kind}. Current limit: {limit}, Remaining: 0.",
        s.key.id
    );
    if let Some(r) = reset_ms {
        message.push_str(&format!(" Limit resets at: {}", reset_text(r)));
    }
    let mut headers = vec![("retry-after".to_owned(), retry.to_string())];
    if kind != "max_parallel_requests" {
        headers.push((format!("x-ratelimit-{d}-limit-{kind}"), limit.to_string()));
        headers.push((format!("x-ratelimit-{d}-remaining-{kind}"), "0".to_owned()));
        headers.push((format!("x-ratelimit-limit-{kind}"), limit.to_string()));
        headers.push((format!("x-ratelimit-remaining-{kind}"), "0".to_owned()));
    }
    headers.push(("rate_limit_type".to_owned(), kind.to_owned()));
    Rejection {
        status: 429,
        error_type: "rate_limit_error",
        message,
        scope: Some(s.key.clone()),
        reason,
        retry_after_s: Some(retry),
        headers,
    }
}

/// `max_parallel_requests` reached on scope `s`: a [`rate_rejection`] (`retry-after: 1`) with
/// LiteLLM's parallel-limit message `Max parallel request limit reached for <descriptor>:
/// <id>. Current limit: <limit>.`
fn parallel_rejection(s: &ScopeRequest, now_ms: i64, limit: u64) -> Rejection {
    let mut r = rate_rejection(
        s,
        now_ms,
        "max_parallel_requests",
        limit,
        RejectReason::Parallel { limit },
        None,
    );
    r.message = format!(
        "Max parallel request limit reached for {}: {}. Current limit: {limit}.",
        s.key.kind.descriptor(),
        s.key.id
    );
    r
}

/// LiteLLM's over-budget message for scope `s` (litellm-surface §5.2):
///
/// - end user (`auth_checks._check_end_user_budget`):
///   `ExceededBudget: End User=<id> over budget. Spend=<USD>, Budget=<USD>`;
/// - per-model budget of a key (`_PROXY_VirtualKeyModelMaxBudgetLimiter`):
///   `LiteLLM Virtual Key: <key hash>, key_alias: <alias|None>, exceeded budget for model=<group>`;
/// - the proxy-wide budget (`litellm.BudgetExceededError`'s own message):
///   `Budget has been exceeded! Current cost: <USD>, Max budget: <USD>`;
/// - every other scope: `Budget has been exceeded! <Label>=<display> Current cost: <USD>, Max
///   budget: <USD>` (a team by its `team_id`, `litellm/proxy/auth/auth_checks.py`).
///
/// `cost` is the settled spend, followed by what requests in flight reserve when that is not 0.
fn budget_message(s: &ScopeRequest, cost: &str, max_budget: f64) -> String {
    match s.key.kind {
        ScopeKind::EndUser => format!(
            "ExceededBudget: End User={} over budget. Spend={cost}, Budget={max_budget}",
            s.key.id
        ),
        ScopeKind::ModelPerKey => {
            let (hash, group) = s.key.id.split_once('/').unwrap_or((&s.key.id, ""));
            format!(
                "LiteLLM Virtual Key: {hash}, key_alias: {}, exceeded budget for model={group}",
                s.display
            )
        }
        // the proxy-wide budget (`litellm_settings.max_budget`) is LiteLLM's plain
        // `BudgetExceededError` message, with no entity named
        ScopeKind::Global => {
            format!("Budget has been exceeded! Current cost: {cost}, Max budget: {max_budget}")
        }
        kind => format!(
            "Budget has been exceeded! {}={} Current cost: {cost}, Max budget: {max_budget}",
            kind.label(),
            s.display
        ),
    }
}

/// `x-ratelimit-*` headers for a successful admission (LiteLLM v3 limiter, litellm-surface §5.4):
///
/// - per scope with a limit: `x-ratelimit-{descriptor}-limit-requests|tokens` and
///   `x-ratelimit-{descriptor}-remaining-requests|tokens` (when two scopes share a descriptor,
///   e.g. two tags, the one with fewer remaining wins);
/// - per-model key limits also as `x-litellm-key-remaining-requests|tokens-{model_group}`
///   (`/` and `:` in the group replaced by `-`);
/// - legacy `x-ratelimit-limit-*` / `x-ratelimit-remaining-*`: the scope with the fewest remaining.
pub fn rate_limit_headers(statuses: &[RateLimitStatus]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |name: String, value: u64, prefer_min: bool| {
        if let Some(slot) = out.iter_mut().find(|(n, _)| *n == name) {
            let old: u64 = slot.1.parse().unwrap_or(u64::MAX);
            if prefer_min && value < old {
                slot.1 = value.to_string();
            }
        } else {
            out.push((name, value.to_string()));
        }
    };
    let mut legacy: [Option<(u64, u64)>; 2] = [None, None]; // (remaining, limit) for requests, tokens
    for s in statuses {
        let d = s.scope.kind.descriptor();
        for (kind, limit, remaining, slot) in [
            ("requests", s.limit_requests, s.remaining_requests, 0),
            ("tokens", s.limit_tokens, s.remaining_tokens, 1),
        ] {
            let (Some(limit), Some(remaining)) = (limit, remaining) else {
                continue;
            };
            put(format!("x-ratelimit-{d}-limit-{kind}"), limit, true);
            put(format!("x-ratelimit-{d}-remaining-{kind}"), remaining, true);
            if s.scope.kind == ScopeKind::ModelPerKey {
                let group = s
                    .scope
                    .id
                    .split_once('/')
                    .map(|(_, g)| g)
                    .unwrap_or(&s.scope.id);
                let group = group.replace(['/', ':'], "-");
                put(
                    format!("x-litellm-key-remaining-{kind}-{group}"),
                    remaining,
                    true,
                );
            }
            if legacy[slot].is_none_or(|(r, _)| remaining < r) {
                legacy[slot] = Some((remaining, limit));
            }
        }
    }
    for (slot, kind) in [(0, "requests"), (1, "tokens")] {
        if let Some((remaining, limit)) = legacy[slot] {
            put(format!("x-ratelimit-limit-{kind}"), limit, false);
            put(format!("x-ratelimit-remaining-{kind}"), remaining, false);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Limits;
    use crate::admission::money::usd_to_units;

    fn budget_denial(scope: ScopeRequest, spend: f64, reserved: f64, max: f64) -> Rejection {
        let d = Denial::Budget {
            scope: 0,
            current_units: usd_to_units(spend + reserved),
            reserved_units: usd_to_units(reserved),
            max_units: usd_to_units(max),
        };
        Rejection::from_denial(d, &[scope], 0, 422, 429)
    }

    #[test]
    fn end_user_and_per_model_budgets_speak_litellm() {
        let eu = ScopeRequest::new(
            ScopeKey::new(ScopeKind::EndUser, "cust-9"),
            Limits::default(),
        );
        let r = budget_denial(eu.clone(), 0.032, 0.0, 0.032);
        assert_eq!(
            (r.status, r.error_type, r.message.as_str()),
            (
                422,
                "budget_exceeded",
                "ExceededBudget: End User=cust-9 over budget. Spend=0.032, Budget=0.032"
            )
        );
        let r = budget_denial(eu, 0.008, 0.024, 0.032);
        assert_eq!(
            r.message,
            "ExceededBudget: End User=cust-9 over budget. Spend=0.008 (+ 0.024 reserved by requests in flight), Budget=0.032"
        );
        let m = ScopeRequest::new(
            ScopeKey::model_per_key("ab12", "openai/gpt-4o"),
            Limits::default(),
        )
        .with_display("ci");
        let r = budget_denial(m, 1.2, 0.0, 1.0);
        assert_eq!(
            (r.status, r.error_type, r.message.as_str()),
            (
                429,
                "budget_exceeded",
                "LiteLLM Virtual Key: ab12, key_alias: ci, exceeded budget for model=openai/gpt-4o"
            )
        );
        assert_eq!(
            r.reason,
            RejectReason::Budget {
                current_cost: 1.2,
                max_budget: 1.0
            }
        );
    }
}
