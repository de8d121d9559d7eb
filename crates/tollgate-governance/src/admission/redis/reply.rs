//! Reading the library's replies back into the seam's types (shapes: `library.lua`).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use redis::Value;

use super::super::money::units_to_usd;
use super::super::scope::ScopeKey;
use super::super::store::{
    Denial, RateLimitStatus, ReserveRequest, ScopeSpend, SpendSnapshot, Ticket,
};
use super::super::store_async::{CounterStoreError, Reserved};
use super::keys::KeySpace;

/// Fields `spend` reads with `HMGET`, in this order.
pub(crate) const SPEND_FIELDS: [&str; 7] =
    ["spend", "reserved", "reset_at", "dur", "inf", "wt", "rt"];

/// A reply that does not have the expected shape.
pub(crate) fn bad(operation: &'static str, v: &Value) -> CounterStoreError {
    CounterStoreError::BadReply {
        operation,
        detail: format!("{v:?}"),
    }
}

/// An integer reply, or a decimal string (the library returns exact money as strings).
pub(crate) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        Value::SimpleString(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(v: &Value) -> Option<&str> {
    match v {
        Value::BulkString(b) => std::str::from_utf8(b).ok(),
        Value::SimpleString(s) => Some(s),
        _ => None,
    }
}

/// Ms since the Unix epoch as a UTC time.
pub(crate) fn time(ms: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms)
}

fn items<'a>(v: &'a Value, op: &'static str) -> Result<&'a [Value], CounterStoreError> {
    match v {
        Value::Array(a) => Ok(a),
        _ => Err(bad(op, v)),
    }
}

/// What a reserve call answered: granted, denied, or (a checked call only) refused because the
/// fleet marker is missing (Redis lost its data; nothing was reserved).
#[derive(Debug)]
pub enum ReserveOutcome {
    /// Reserved on every scope; the ticket carries each scope's settled spend at admission.
    Granted(Reserved),
    /// A limit refused (nothing reserved).
    Denied(Denial),
    /// The fleet marker is missing: the scopes must be seeded again before counting on them.
    Unseeded,
}

/// The reply of `tollgate_v2_reserve` for `req`, whose distinct scopes are `unique` (positions
/// in `req.scopes`, in the order their keys were sent).
pub(crate) fn reserved(
    v: &Value,
    req: &ReserveRequest<'_>,
    unique: &[usize],
) -> Result<ReserveOutcome, CounterStoreError> {
    const OP: &str = "reserve";
    let a = items(v, OP)?;
    let at = |i: usize| a.get(i).and_then(int).ok_or_else(|| bad(OP, v));
    // a position in the reply → the first index of that scope in the request
    let scope = |i: usize| -> Result<usize, CounterStoreError> {
        let p = usize::try_from(at(i)?).map_err(|_| bad(OP, v))?;
        unique.get(p).copied().ok_or_else(|| bad(OP, v))
    };
    let u64_at = |i: usize| at(i).map(|n| u64::try_from(n).unwrap_or(0));
    if at(0)? == 0 {
        let denial = match at(1)? {
            1 => {
                let (spend, reserved) = (at(3)?, at(4)?);
                Denial::Budget {
                    scope: scope(2)?,
                    current_units: spend.saturating_add(reserved),
                    reserved_units: reserved,
                    max_units: at(5)?,
                }
            }
            2 => Denial::Requests {
                scope: scope(2)?,
                limit: u64_at(3)?,
                window_reset_ms: at(4)?,
            },
            3 => Denial::Tokens {
                scope: scope(2)?,
                limit: u64_at(3)?,
                used: u64_at(4)?,
                window_reset_ms: at(5)?,
            },
            4 => Denial::Parallel {
                scope: scope(2)?,
                limit: u64_at(3)?,
            },
            5 => Denial::DuplicateAttempt,
            6 => return Ok(ReserveOutcome::Unseeded),
            _ => return Err(bad(OP, v)),
        };
        return Ok(ReserveOutcome::Denied(denial));
    }
    let n = usize::try_from(at(2)?).map_err(|_| bad(OP, v))?;
    if n != unique.len() {
        return Err(bad(OP, v));
    }
    let spend_units: Arc<[i64]> = (3..3 + n).map(at).collect::<Result<_, _>>()?;
    let first = 3 + n;
    let mut statuses = Vec::with_capacity((a.len().saturating_sub(first)) / 4);
    let left = |n: i64| u64::try_from(n).ok();
    for q in (first..a.len()).step_by(4) {
        let s = &req.scopes[scope(q)?];
        statuses.push(RateLimitStatus {
            scope: s.key.clone(),
            limit_requests: s.limits.rpm_limit,
            remaining_requests: left(at(q + 1)?),
            limit_tokens: s.limits.tpm_limit,
            remaining_tokens: left(at(q + 2)?),
            window_reset_ms: at(q + 3)?,
        });
    }
    let scopes: Arc<[ScopeKey]> = unique.iter().map(|&i| req.scopes[i].key.clone()).collect();
    let ticket = Ticket {
        request_id: Arc::from(req.request_id),
        attempt: req.attempt,
        scopes,
        cost_units: req.cost_units,
        tokens: req.reserve_tokens,
        spend_units: Some(spend_units),
    };
    Ok(ReserveOutcome::Granted((ticket, statuses)))
}

/// One operation's result in a `tollgate_v2_batch` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpOutcome {
    /// Settled, released or charged now.
    Applied,
    /// Nothing to do: already settled, released or charged (a re-sent batch), or a ticket
    /// Redis no longer holds.
    AlreadyDone,
    /// This operation failed on the server (the message Redis gave, e.g. `WRONGTYPE ...`);
    /// the other operations of its batch ran regardless.
    Failed(String),
}

/// The reply of `tollgate_v2_batch` for `count` operations: the fleet generation and one
/// outcome per operation.
pub(crate) fn batch(
    v: &Value,
    count: usize,
) -> Result<(String, Vec<OpOutcome>), CounterStoreError> {
    let a = items(v, "batch")?;
    let Some((generation, rest)) = a.split_first() else {
        return Err(bad("batch", v));
    };
    let generation = text(generation).ok_or_else(|| bad("batch", v))?.to_string();
    if rest.len() != count {
        return Err(bad("batch", v));
    }
    let outcomes = rest
        .iter()
        .map(|r| match (int(r), text(r)) {
            (Some(1), _) => Ok(OpOutcome::Applied),
            (Some(0), _) => Ok(OpOutcome::AlreadyDone),
            (_, Some(t)) => match t.strip_prefix("ERR ") {
                Some(msg) => Ok(OpOutcome::Failed(msg.to_string())),
                None => Err(bad("batch", v)),
            },
            _ => Err(bad("batch", v)),
        })
        .collect::<Result<_, _>>()?;
    Ok((generation, outcomes))
}

/// The reply of `tollgate_v2_settle`: nil, or each scope's spend in units.
pub(crate) fn settled(v: &Value) -> Result<Option<Vec<f64>>, CounterStoreError> {
    if matches!(v, Value::Nil) {
        return Ok(None);
    }
    items(v, "settle")?
        .iter()
        .map(|s| int(s).map(units_to_usd).ok_or_else(|| bad("settle", v)))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The `HMGET` of [`SPEND_FIELDS`]: `None` when every field is absent (a scope never seen).
pub(crate) fn scope_spend(v: &Value) -> Result<Option<ScopeSpend>, CounterStoreError> {
    let a = items(v, "spend")?;
    if a.len() != SPEND_FIELDS.len() {
        return Err(bad("spend", v));
    }
    if a.iter().all(|f| matches!(f, Value::Nil)) {
        return Ok(None);
    }
    let n = |i: usize| a.get(i).and_then(int).unwrap_or(0);
    let count = |i: usize| u64::try_from(n(i)).unwrap_or(0);
    Ok(Some(ScopeSpend {
        spend: units_to_usd(n(0)),
        reserved: units_to_usd(n(1)),
        budget_reset_at: a.get(2).and_then(int).and_then(time),
        budget_duration: a.get(3).and_then(text).and_then(|d| d.parse().ok()),
        in_flight: count(4),
        window_tokens: count(5).saturating_add(count(6)),
    }))
}

/// The reply of `tollgate_v2_drain`: five values per changed scope.
pub(crate) fn drained(v: &Value, keys: &KeySpace) -> Result<Vec<SpendSnapshot>, CounterStoreError> {
    let a = items(v, "drain")?;
    let mut out = Vec::with_capacity(a.len() / 5);
    for c in a.chunks(5) {
        let [name, spend, added, reset_at, reset] = c else {
            return Err(bad("drain", v));
        };
        // a key of no known kind (written by something else) is skipped
        let Some(scope) = text(name).and_then(|n| keys.parse_scope(n)) else {
            continue;
        };
        out.push(SpendSnapshot {
            scope,
            spend: units_to_usd(int(spend).unwrap_or(0)),
            added: units_to_usd(int(added).unwrap_or(0)),
            budget_reset_at: int(reset_at).and_then(time),
            was_reset: int(reset) == Some(1),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_reply_reads_one_outcome_per_operation() {
        let v = Value::Array(vec![
            Value::BulkString(b"g1".to_vec()),
            Value::Int(1),
            Value::Int(0),
            Value::BulkString(b"ERR WRONGTYPE Operation against a key".to_vec()),
        ]);
        assert_eq!(
            batch(&v, 3).unwrap(),
            (
                "g1".to_string(),
                vec![
                    OpOutcome::Applied,
                    OpOutcome::AlreadyDone,
                    OpOutcome::Failed("WRONGTYPE Operation against a key".to_string()),
                ]
            )
        );
        assert!(batch(&v, 2).is_err(), "one reply per operation");
        let odd = Value::Array(vec![
            Value::BulkString(b"g1".to_vec()),
            Value::BulkString(b"what".to_vec()),
        ]);
        assert!(batch(&odd, 1).is_err());
    }
}
