//! Spend-log aggregation in SQL: `SUM(spend)`, `SUM(total_tokens)` and `COUNT(*)` of
//! `"LiteLLM_SpendLogs"` grouped by day, key, team, model, end user or request tag over a
//! `startTime` range, so a report over months reads one row per group, never the logs. A
//! narrow range uses the `startTime` index ([`START_TIME_INDEX_SQL`]); on SQLite a range that
//! covers most of the stored logs reads the table in order instead ([`scan_whole`]).

use chrono::{DateTime, Utc};

use super::StoreError;
use super::backend::{SqlBackend, Stmt};
use super::codec::{GetCol, Val};
use super::schema::Dialect;

/// A spend-log column (or derived value) to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendDim {
    /// The UTC day of `startTime`, `YYYY-MM-DD`.
    Day,
    /// `api_key` (the key hash).
    ApiKey,
    /// `team_id` (NULL for rows without a team).
    Team,
    /// `model`.
    Model,
    /// `end_user` (NULL when empty).
    EndUser,
    /// Each string of the `request_tags` JSON list (a row counts once per tag; rows without
    /// tags are left out).
    Tag,
}

/// What [`super::GovernanceStore::spend_groups`] sums.
#[derive(Debug, Clone, Default)]
pub struct SpendGroupQuery {
    /// The grouping columns, in the order of [`SpendGroup::keys`].
    pub by: Vec<SpendDim>,
    /// `startTime >= start`.
    pub start: Option<DateTime<Utc>>,
    /// `startTime <= end`.
    pub end: Option<DateTime<Utc>>,
    /// Only rows of this key hash.
    pub api_key: Option<String>,
    /// Only rows of this internal user (`user`).
    pub user_id: Option<String>,
}

/// One group's totals.
#[derive(Debug, Clone, PartialEq)]
pub struct SpendGroup {
    /// The group's value per [`SpendGroupQuery::by`] entry (`None`: NULL, e.g. no team).
    pub keys: Vec<Option<String>>,
    /// `SUM(spend)`, USD.
    pub spend: f64,
    /// `SUM(total_tokens)`.
    pub total_tokens: i64,
    /// `COUNT(*)`: spend-log rows (requests) in the group.
    pub requests: i64,
}

/// LiteLLM's Prisma index on `"LiteLLM_SpendLogs"("startTime")` (`@@index([startTime])` in
/// `schema.prisma`), under Prisma's name so a LiteLLM database keeps just the one it has.
pub(super) const START_TIME_INDEX_SQL: &str = "CREATE INDEX IF NOT EXISTS \"LiteLLM_SpendLogs_startTime_idx\" ON \"LiteLLM_SpendLogs\" (\"startTime\")";

/// The share of the stored logs' `startTime` span from which SQLite reads the whole table
/// rather than the `startTime` index. SQLite has no row statistics here (no `ANALYZE`), so it
/// takes the index for any range; over most of the table that costs one table lookup per row,
/// about twice the time of reading the table in order (100,000 rows over 90 days:
/// `tollgate-admin`'s `tests/api/spend_scale.rs`). Postgres plans from its own statistics.
const SCAN_SHARE: f64 = 0.25;

/// The first and last `startTime` of the stored logs.
pub(super) type Span = (DateTime<Utc>, DateTime<Utc>);

/// `SELECT MIN("startTime") AS lo, MAX("startTime") AS hi` of the logs (two index probes).
pub(super) fn span_stmt() -> Stmt {
    Stmt::new(
        "SELECT MIN(\"startTime\") AS lo, MAX(\"startTime\") AS hi FROM \"LiteLLM_SpendLogs\"",
        Vec::new(),
    )
}

/// Decodes [`span_stmt`]'s row: `None` when there are no logs.
pub(super) fn decode_span(r: &dyn GetCol) -> Result<Option<Span>, StoreError> {
    Ok(r.time("lo")?.zip(r.time("hi")?))
}

/// Whether `q`'s `startTime` range covers at least [`SCAN_SHARE`] of `span` (the stored logs'
/// first and last `startTime`), so reading the whole table beats the index. `false` without a
/// range (nothing to use the index for), without logs, or when the range misses them.
pub(super) fn scan_whole(q: &SpendGroupQuery, span: Option<Span>) -> bool {
    let Some((lo, hi)) = span else { return false };
    if q.start.is_none() && q.end.is_none() {
        return false;
    }
    let from = q.start.map_or(lo, |s| s.max(lo));
    let to = q.end.map_or(hi, |e| e.min(hi));
    if to < from {
        return false;
    }
    let total = (hi - lo).num_milliseconds().max(1) as f64;
    (to - from).num_milliseconds() as f64 / total >= SCAN_SHARE
}

/// The SQL expression of `d` over spend-log alias `s` (tag alias `t`).
fn expr(d: SpendDim, dialect: Dialect) -> &'static str {
    match (d, dialect) {
        (SpendDim::Day, Dialect::Sqlite) => "substr(s.\"startTime\", 1, 10)",
        (SpendDim::Day, Dialect::Postgres) => "to_char(s.\"startTime\", 'YYYY-MM-DD')",
        (SpendDim::ApiKey, _) => "s.\"api_key\"",
        (SpendDim::Team, _) => "NULLIF(s.\"team_id\", '')",
        (SpendDim::Model, _) => "s.\"model\"",
        (SpendDim::EndUser, _) => "NULLIF(s.\"end_user\", '')",
        (SpendDim::Tag, _) => "t.value",
    }
}

/// The `FROM` clause: the logs, joined to their tags when grouping by tag.
fn from(q: &SpendGroupQuery, dialect: Dialect) -> &'static str {
    if !q.by.contains(&SpendDim::Tag) {
        return "\"LiteLLM_SpendLogs\" s";
    }
    match dialect {
        Dialect::Sqlite => {
            "\"LiteLLM_SpendLogs\" s, json_each(CASE WHEN json_valid(s.\"request_tags\") THEN s.\"request_tags\" ELSE '[]' END) t"
        }
        Dialect::Postgres => {
            "\"LiteLLM_SpendLogs\" s CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN jsonb_typeof(s.\"request_tags\") = 'array' THEN s.\"request_tags\" ELSE '[]'::jsonb END) AS t(value)"
        }
    }
}

/// The `SELECT … GROUP BY` of `q`: columns `ngroups`, `g0…gN`, `spend`, `total_tokens`, `requests`,
/// ordered by the grouping columns. With `whole` the range is written `+s."startTime"`, which
/// keeps SQLite off the `startTime` index ([`scan_whole`]).
pub(super) fn stmt<B: SqlBackend>(q: &SpendGroupQuery, whole: bool) -> Stmt {
    let d = B::DIALECT;
    let groups: Vec<String> =
        q.by.iter()
            .enumerate()
            .map(|(i, g)| format!("{} AS g{i}", expr(*g, d)))
            .collect();
    let mut sql = format!(
        "SELECT CAST({n} AS BIGINT) AS ngroups, {}{}SUM(s.\"spend\"){cast} AS spend, CAST(SUM(s.\"total_tokens\") AS BIGINT) AS total_tokens, COUNT(*) AS requests FROM {} WHERE 1=1",
        groups.join(", "),
        if groups.is_empty() { "" } else { ", " },
        from(q, d),
        cast = B::FLOAT_SUM_CAST,
        n = q.by.len(),
    );
    let mut vals = Vec::new();
    if q.by.contains(&SpendDim::Tag) && d == Dialect::Sqlite {
        sql.push_str(" AND t.type = 'text'");
    }
    for (col, v) in [("api_key", &q.api_key), ("user", &q.user_id)] {
        if let Some(v) = v {
            sql.push_str(&format!(" AND s.\"{col}\" = ?"));
            vals.push(Val::Text(Some(v.clone())));
        }
    }
    let col = if whole && d == Dialect::Sqlite {
        "+s.\"startTime\""
    } else {
        "s.\"startTime\""
    };
    if let Some(s) = q.start {
        sql.push_str(&format!(" AND {col} >= ?"));
        vals.push(Val::Time(Some(s)));
    }
    if let Some(e) = q.end {
        sql.push_str(&format!(" AND {col} <= ?"));
        vals.push(Val::Time(Some(e)));
    }
    if !q.by.is_empty() {
        // column 1 is `ngroups`; the groups are columns 2..
        let idx: Vec<String> = (2..=q.by.len() + 1).map(|i| i.to_string()).collect();
        sql.push_str(&format!(
            " GROUP BY {} ORDER BY {}",
            idx.join(", "),
            idx.join(", ")
        ));
    }
    Stmt::new(sql, vals)
}

/// Decodes one row of [`stmt`] (its `ngroups` column says how many `g` columns it has).
pub(super) fn decode(r: &dyn GetCol) -> Result<SpendGroup, StoreError> {
    let n = usize::try_from(r.int("ngroups")?.unwrap_or(0)).unwrap_or(0);
    let keys = (0..n)
        .map(|i| r.text(&format!("g{i}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SpendGroup {
        keys,
        spend: r.float("spend")?.unwrap_or(0.0),
        total_tokens: r.int("total_tokens")?.unwrap_or(0),
        requests: r.int("requests")?.unwrap_or(0),
    })
}
