//! Key settings LiteLLM keeps in a key's `metadata` rather than in columns of its own
//! (`LiteLLM_ManagementEndpoint_MetadataFields`, `litellm/proxy/_types.py`):
//!
//! - `temp_budget_increase` (USD) with `temp_budget_expiry` (an ISO 8601 date or date-time,
//!   stored as Python's `datetime.isoformat()` writes it): while now is before the expiry, the
//!   key's `max_budget` is `max_budget + temp_budget_increase` for every check and report of
//!   the request (`_update_key_budget_with_temp_budget_increase`,
//!   `litellm/proxy/auth/user_api_key_auth.py`); a key without a `max_budget` gains nothing.
//! - `tag_rpm_limit` (`{"<request tag>": <requests per minute>}`): each tag of a request that
//!   has an entry is counted on its own `tag_per_key` counter `<key hash>:<tag>`
//!   (`_add_tag_per_key_rate_limit_descriptor`, `litellm/proxy/hooks/parallel_request_limiter_v3.py`).
//!
//! An expiry without an offset is read as UTC (LiteLLM compares it with the server's local
//! `datetime.now()`, which is UTC in its container images).

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, Utc};
use serde_json::Value;

use crate::admission::{Limits, ScopeKey, ScopeRequest};

/// `metadata` key of the temporary increase, USD.
pub const TEMP_BUDGET_INCREASE: &str = "temp_budget_increase";
/// `metadata` key of the increase's end.
pub const TEMP_BUDGET_EXPIRY: &str = "temp_budget_expiry";
/// `metadata` key of the per-tag request limits.
pub const TAG_RPM_LIMIT: &str = "tag_rpm_limit";

/// Why a `temp_budget_expiry` is refused (400 on the management API).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Invalid temp_budget_expiry={0}: expected an ISO 8601 date or date-time, e.g. \"2026-10-15\" or \"2026-10-15T12:00:00Z\""
)]
pub struct ExpiryError(pub String);

/// A parsed expiry: the instant, and the offset it was written with (`None` = none written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TempBudgetExpiry {
    /// The instant the increase ends.
    pub at: DateTime<Utc>,
    /// The offset of the input; `None` for a date or a date-time without one.
    pub offset: Option<FixedOffset>,
}

impl TempBudgetExpiry {
    /// Parses `2026-10-15`, `2026-10-15T12:00:00[.ffffff]` (either with a space instead of
    /// `T`) and the same with `Z` or `±HH:MM`, as Python's `datetime` parsing in LiteLLM's
    /// request models accepts them. Errors: [`ExpiryError`].
    pub fn parse(s: &str) -> Result<Self, ExpiryError> {
        let t = s.trim();
        if let Ok(d) = DateTime::parse_from_rfc3339(&t.replacen(' ', "T", 1)) {
            return Ok(Self {
                at: d.with_timezone(&Utc),
                offset: Some(*d.offset()),
            });
        }
        let naive = NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f")
            .or_else(|_| NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f"))
            .or_else(|_| {
                NaiveDate::parse_from_str(t, "%Y-%m-%d").map(|d| d.and_time(Default::default()))
            })
            .map_err(|_| ExpiryError(s.to_owned()))?;
        Ok(Self {
            at: naive.and_utc(),
            offset: None,
        })
    }

    /// The stored form, as Python's `datetime.isoformat()`: `YYYY-MM-DDTHH:MM:SS`, then
    /// `.ffffff` when there are microseconds, then `+HH:MM` when an offset was given.
    pub fn isoformat(&self) -> String {
        let fmt = |d: NaiveDateTime| {
            let base = d.format("%Y-%m-%dT%H:%M:%S").to_string();
            match d.and_utc().timestamp_subsec_micros() {
                0 => base,
                us => format!("{base}.{us:06}"),
            }
        };
        match self.offset {
            None => fmt(self.at.naive_utc()),
            Some(o) => {
                let local = self.at.with_timezone(&o);
                format!("{}{}", fmt(local.naive_local()), local.format("%:z"))
            }
        }
    }
}

/// The temporary increase in force at `now`, USD: `metadata.temp_budget_increase` while
/// `metadata.temp_budget_expiry` is after `now`; `None` when either is missing, unreadable or
/// past.
pub fn active_temp_budget_increase(metadata: &Value, now: DateTime<Utc>) -> Option<f64> {
    let m = metadata.as_object().filter(|m| !m.is_empty())?;
    let increase = m.get(TEMP_BUDGET_INCREASE)?.as_f64()?;
    let expiry = TempBudgetExpiry::parse(m.get(TEMP_BUDGET_EXPIRY)?.as_str()?).ok()?;
    (expiry.at > now && increase.is_finite()).then_some(increase)
}

/// The key's `max_budget` at `now`, USD: its own plus the temporary increase in force
/// ([`active_temp_budget_increase`]); `None` without a `max_budget`.
pub fn effective_max_budget(
    max_budget: Option<f64>,
    metadata: &Value,
    now: DateTime<Utc>,
) -> Option<f64> {
    let b = max_budget?;
    Some(b + active_temp_budget_increase(metadata, now).unwrap_or(0.0))
}

/// The `tag_per_key` scopes of a request with `tags` on the key `key_hash` with `metadata`:
/// one per distinct tag that `metadata.tag_rpm_limit` limits, with that requests-per-minute
/// limit. Nothing is looked up for a request without tags or a key with empty metadata.
pub fn tag_scopes(key_hash: &str, metadata: &Value, tags: &[String]) -> Vec<ScopeRequest> {
    if tags.is_empty() {
        return Vec::new();
    }
    let Some(limits) = metadata
        .as_object()
        .filter(|m| !m.is_empty())
        .and_then(|m| m.get(TAG_RPM_LIMIT))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let mut out: Vec<ScopeRequest> = Vec::new();
    for tag in tags {
        let Some(rpm) = limits.get(tag).and_then(Value::as_u64) else {
            continue;
        };
        let key = ScopeKey::tag_per_key(key_hash, tag);
        if out.iter().any(|s| s.key == key) {
            continue;
        }
        let l = Limits {
            rpm_limit: Some(rpm),
            ..Limits::default()
        };
        out.push(ScopeRequest::new(key, l));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::ScopeKind;
    use chrono::TimeZone;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn expiries_parse_and_store_as_python_isoformat() {
        let d = TempBudgetExpiry::parse("2026-10-15").unwrap();
        assert_eq!(d.at, Utc.with_ymd_and_hms(2026, 10, 15, 0, 0, 0).unwrap());
        assert_eq!(d.isoformat(), "2026-10-15T00:00:00");
        let z = TempBudgetExpiry::parse("2026-10-15T12:30:00Z").unwrap();
        assert_eq!(z.isoformat(), "2026-10-15T12:30:00+00:00");
        let off = TempBudgetExpiry::parse("2026-10-15T12:30:00.25+02:00").unwrap();
        assert_eq!(off.at, at("2026-10-15T10:30:00.25Z"));
        assert_eq!(off.isoformat(), "2026-10-15T12:30:00.250000+02:00");
        let naive = TempBudgetExpiry::parse("2026-10-15 08:00:00").unwrap();
        assert_eq!(naive.isoformat(), "2026-10-15T08:00:00");
        assert_eq!(
            TempBudgetExpiry::parse("next week"),
            Err(ExpiryError("next week".into()))
        );
    }

    #[test]
    fn the_increase_counts_only_before_its_expiry_and_only_with_a_budget() {
        let m = json!({"temp_budget_increase": 100.0, "temp_budget_expiry": "2026-10-15T00:00:00"});
        let before = at("2026-10-14T23:59:59Z");
        let after = at("2026-10-15T00:00:00Z");
        assert_eq!(active_temp_budget_increase(&m, before), Some(100.0));
        assert_eq!(effective_max_budget(Some(0.5), &m, before), Some(100.5));
        assert_eq!(effective_max_budget(Some(0.5), &m, after), Some(0.5));
        assert_eq!(effective_max_budget(None, &m, before), None);
        let half = json!({"temp_budget_increase": 100.0});
        assert_eq!(effective_max_budget(Some(0.5), &half, before), Some(0.5));
        assert_eq!(
            effective_max_budget(Some(0.5), &json!({}), before),
            Some(0.5)
        );
    }

    #[test]
    fn tag_limits_make_one_scope_per_limited_tag() {
        let m = json!({"tag_rpm_limit": {"cell-1": 2, "cell-2": 5}});
        let tags = vec!["cell-1".to_owned(), "free".to_owned(), "cell-1".to_owned()];
        let s = tag_scopes("abc", &m, &tags);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].key.kind, ScopeKind::TagPerKey);
        assert_eq!(s[0].key.id.as_ref(), "abc:cell-1");
        assert_eq!(s[0].limits.rpm_limit, Some(2));
        assert_eq!(s[0].limits.max_budget, None);
        assert!(tag_scopes("abc", &m, &[]).is_empty());
        assert!(tag_scopes("abc", &json!({}), &tags).is_empty());
    }
}
