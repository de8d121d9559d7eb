//! Spend on any [`SqlBackend`]: counter snapshots written to their entity rows, spend-log rows
//! inserted exactly once per attempt with their daily roll-ups, and the spend-log queries.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::backend::{SqlBackend, Stmt};
use super::codec::{GetCol, ToRow, Val};
use super::entities::SpendLogRow;
use super::sql_store::upsert_stmt;
use super::{
    SpendLogFilter, StoreError, daily, model_spend_target, model_window, schema, spend_ids,
    spend_target,
};
use crate::admission::SpendSnapshot;

fn text(v: &str) -> Val {
    Val::Text(Some(v.to_owned()))
}

/// Writes each snapshot's absolute spend (and window end) to the row holding its scope's
/// spend ([`spend_target`], [`model_spend_target`]), all in one transaction.
pub(super) async fn write_spend<B: SqlBackend>(
    b: &B,
    updates: &[SpendSnapshot],
) -> Result<(), StoreError> {
    let mut tx = b.begin().await?;
    for u in updates {
        if let Some((token, model)) = model_spend_target(&u.scope) {
            let vals = vec![text(model), Val::Float(Some(u.spend)), text(token)];
            b.run(Some(&mut tx), Stmt::new(B::MODEL_SPEND_SQL, vals))
                .await?;
            if let Some(w) = model_window::window_row(&u.scope, u.budget_reset_at) {
                b.run(Some(&mut tx), upsert_stmt(&w)).await?;
            }
            continue;
        }
        let Some(target) = spend_target(&u.scope) else {
            continue;
        };
        let keys = || target.keys.iter().map(|k| text(k));
        // rows of end users, memberships and tags are created on first spend (LiteLLM does
        // the same for end users); other entities must exist.
        if let Some(insert) = target.insert_if_missing {
            b.run(Some(&mut tx), Stmt::new(insert, keys().collect()))
                .await?;
        }
        let sql = format!(
            "UPDATE \"{}\" SET \"spend\" = ?{} WHERE {}",
            target.table,
            if target.has_reset_at {
                ", \"budget_reset_at\" = ?"
            } else {
                ""
            },
            target.where_clause
        );
        let mut vals = vec![Val::Float(Some(u.spend))];
        if target.has_reset_at {
            vals.push(Val::Time(u.budget_reset_at));
        }
        vals.extend(keys());
        b.run(Some(&mut tx), Stmt::new(sql, vals)).await?;
    }
    B::commit(tx).await
}

/// Inserts spend-log rows in one transaction, each attempt once (see
/// [`super::GovernanceStore::insert_spend_logs`]), and adds the rows inserted to the daily
/// roll-ups; returns how many were inserted.
pub(super) async fn insert_spend_logs<B: SqlBackend>(
    b: &B,
    rows: &[SpendLogRow],
) -> Result<u64, StoreError> {
    let mut tx = b.begin().await?;
    // Rows under a `request_id` another call wrote go in again under their attempt id
    // (`spend_ids`); the daily roll-ups count the rows actually inserted, each once.
    let returned = insert_log_rows(b, &mut tx, rows).await?;
    let (mut new_rows, skipped) = spend_ids::split_inserted(rows, returned);
    let rekeyed = if skipped.is_empty() {
        Vec::new()
    } else {
        let owners = log_owners(b, &mut tx, &spend_ids::taken_ids(rows, &skipped)).await?;
        spend_ids::rekeyed(rows, &skipped, &owners)
    };
    if !rekeyed.is_empty() {
        let returned = insert_log_rows(b, &mut tx, &rekeyed).await?;
        new_rows.extend(spend_ids::split_inserted(&rekeyed, returned).0);
    }
    let n = new_rows.len() as u64;
    for up in daily::upserts(&new_rows, B::MAX_PARAMS, Utc::now()) {
        // not cached: row counts vary per flush and per table, and the statement cache is
        // kept for the spend-log and entity statements
        let s = Stmt {
            cached: false,
            ..Stmt::new(up.sql, up.values)
        };
        b.run(Some(&mut tx), s).await?;
    }
    B::commit(tx).await?;
    Ok(n)
}

fn request_id(r: &dyn GetCol) -> Result<String, StoreError> {
    r.text("request_id")?
        .ok_or_else(|| StoreError::Decode("request_id: NULL".into()))
}

/// Inserts spend-log rows (`ON CONFLICT DO NOTHING`) in multi-row statements of bounded,
/// power-of-two sizes; returns the `request_id`s inserted.
async fn insert_log_rows<B: SqlBackend>(
    b: &B,
    tx: &mut B::Tx,
    rows: &[SpendLogRow],
) -> Result<Vec<String>, StoreError> {
    let t = &schema::SPEND_LOGS;
    let mut inserted: Vec<String> = Vec::with_capacity(rows.len());
    let mut rest = rows;
    for size in schema::statement_sizes(rows.len(), t.rows_per_statement(B::MAX_PARAMS)) {
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        let sql = format!(
            "{} RETURNING \"request_id\"",
            t.insert_many_sql(chunk.len(), "request_id")
        );
        let vals = chunk.iter().flat_map(ToRow::to_row).collect();
        inserted.extend(b.rows(Some(tx), Stmt::new(sql, vals), request_id).await?);
    }
    Ok(inserted)
}

/// `(request_id, attempt)` of a stored spend-log row ([`spend_ids::row_attempt_id`]).
fn owner(r: &dyn GetCol) -> Result<(String, Option<String>), StoreError> {
    let stored = SpendLogRow {
        request_id: r.text("request_id")?.unwrap_or_default(),
        litellm_call_id: r.text("litellm_call_id")?,
        // an unreadable metadata column names no attempt (0)
        metadata: r.json("metadata").unwrap_or(Value::Null),
        ..SpendLogRow::default()
    };
    let attempt = spend_ids::row_attempt_id(&stored);
    Ok((stored.request_id, attempt))
}

/// The attempt ([`spend_ids::row_attempt_id`]) of the stored row under each of `ids`.
async fn log_owners<B: SqlBackend>(
    b: &B,
    tx: &mut B::Tx,
    ids: &[String],
) -> Result<HashMap<String, Option<String>>, StoreError> {
    let mut owners = HashMap::with_capacity(ids.len());
    for cond in B::any_of("request_id", ids) {
        let sql = format!(
            "SELECT \"request_id\", \"litellm_call_id\", \"metadata\" FROM \"LiteLLM_SpendLogs\" WHERE {}",
            cond.sql
        );
        let s = Stmt {
            sql: sql.into(),
            ..cond
        };
        owners.extend(b.rows(Some(tx), s, owner).await?);
    }
    Ok(owners)
}

/// The `SELECT` of [`super::GovernanceStore::spend_logs`]: rows matching `f`, newest first.
pub(super) fn spend_logs_stmt(f: &SpendLogFilter) -> Stmt {
    let t = &schema::SPEND_LOGS;
    let mut sql = format!("SELECT {} FROM \"{}\" WHERE 1=1", t.column_list(), t.name);
    let mut vals: Vec<Val> = Vec::new();
    for (col, v) in [
        ("api_key", &f.api_key),
        ("user", &f.user_id),
        ("request_id", &f.request_id),
        ("team_id", &f.team_id),
        ("end_user", &f.end_user),
    ] {
        if let Some(v) = v {
            sql.push_str(&format!(" AND \"{col}\" = ?"));
            vals.push(text(v));
        }
    }
    if let Some(s) = f.start {
        sql.push_str(" AND \"startTime\" >= ?");
        vals.push(Val::Time(Some(s)));
    }
    if let Some(e) = f.end {
        sql.push_str(" AND \"startTime\" <= ?");
        vals.push(Val::Time(Some(e)));
    }
    sql.push_str(" ORDER BY \"startTime\" DESC");
    if let Some(limit) = f.limit {
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    Stmt::new(sql, vals)
}

/// `SUM` of spend-log `spend` since `since` (all rows when `None`), as column `total`.
pub(super) fn spend_since_stmt<B: SqlBackend>(since: Option<DateTime<Utc>>) -> Stmt {
    let sum = format!(
        "SELECT SUM(\"spend\"){} AS \"total\" FROM \"LiteLLM_SpendLogs\"",
        B::FLOAT_SUM_CAST
    );
    match since {
        Some(t) => Stmt::new(
            format!("{sum} WHERE \"startTime\" >= ?"),
            vec![Val::Time(Some(t))],
        ),
        None => Stmt::new(sum, Vec::new()),
    }
}
