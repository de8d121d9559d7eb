//! [`PostgresStore`]: LiteLLM's own database (`general_settings.database_url` / `DATABASE_URL`).
//! Same tables, columns and types as LiteLLM's Prisma schema, so an existing LiteLLM database's
//! keys, budgets and spend keep working; migrations only add what is missing.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{AssertSqlSafe, PgPool, Row};

use super::codec::{GetCol, ToRow, Val};
use super::daily;
use super::entities::*;
use super::model_window;
use super::models::{self, ProxyModel};
use super::schema::{self, Dialect, TABLES, Table};
use super::secret_box::SecretBox;
use super::spend_ids;
use super::{
    GovernanceStore, Snapshot, SpendLogFilter, StoreError, model_spend_target, spend_target,
};
use crate::admission::SpendSnapshot;

/// Postgres-backed [`GovernanceStore`].
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

/// Rewrites `?` placeholders to `$1, $2, …` (the catalogue's SQL has no `?` in literals).
fn pg(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

fn naive(t: DateTime<Utc>) -> NaiveDateTime {
    t.naive_utc()
}

fn bind(q: Query<'_>, v: Val) -> Query<'_> {
    match v {
        Val::Text(s) => q.bind(s),
        Val::Float(f) => q.bind(f),
        Val::Int(i) => q.bind(i),
        Val::Bool(b) => q.bind(b),
        // LiteLLM's JSON columns are NOT NULL with default '{}'
        Val::Json(Value::Null) => q.bind(Value::Object(Default::default())),
        Val::Json(j) => q.bind(j),
        Val::Arr(a) => q.bind(a),
        Val::Time(t) => q.bind(t.map(naive)),
    }
}

/// `INSERT … ON CONFLICT (<primary key>) DO UPDATE` of every column of `t`.
fn upsert_sql(t: &Table) -> String {
    let marks = vec!["?"; t.columns.len()].join(", ");
    let pk: Vec<String> = t.primary_key.iter().map(|c| format!("\"{c}\"")).collect();
    let updates: Vec<String> = t
        .columns
        .iter()
        .filter(|(n, _, _)| !t.primary_key.contains(n))
        .map(|(n, _, _)| format!("\"{n}\" = excluded.\"{n}\""))
        .collect();
    pg(&format!(
        "INSERT INTO \"{}\" ({}) VALUES ({marks}) ON CONFLICT ({}) DO UPDATE SET {}",
        t.name,
        t.column_list(),
        pk.join(", "),
        updates.join(", ")
    ))
}

struct RowGet<'a>(&'a PgRow);

impl RowGet<'_> {
    fn get<T>(&self, col: &str) -> Result<Option<T>, StoreError>
    where
        for<'r> T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        match self.0.try_get::<Option<T>, _>(col) {
            Ok(v) => Ok(v),
            Err(sqlx::Error::ColumnNotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl GetCol for RowGet<'_> {
    fn text(&self, col: &str) -> Result<Option<String>, StoreError> {
        self.get::<String>(col)
    }
    fn float(&self, col: &str) -> Result<Option<f64>, StoreError> {
        self.get::<f64>(col)
    }
    fn int(&self, col: &str) -> Result<Option<i64>, StoreError> {
        // LiteLLM mixes INTEGER and BIGINT columns
        match self.get::<i64>(col) {
            Ok(v) => Ok(v),
            Err(_) => Ok(self.get::<i32>(col)?.map(i64::from)),
        }
    }
    fn boolean(&self, col: &str) -> Result<Option<bool>, StoreError> {
        self.get::<bool>(col)
    }
    /// NULL and LiteLLM's default `{}` both read as `Value::Null` (what Tollgate writes for "unset").
    fn json(&self, col: &str) -> Result<Value, StoreError> {
        Ok(match self.get::<Value>(col)? {
            Some(Value::Object(m)) if m.is_empty() => Value::Null,
            Some(v) => v,
            None => Value::Null,
        })
    }
    fn arr(&self, col: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.get::<Vec<String>>(col)?.unwrap_or_default())
    }
    fn time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self.get::<NaiveDateTime>(col)?.map(|t| t.and_utc()))
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`).
    ///
    /// Errors: [`StoreError::Db`] when the URL is invalid or the server unreachable.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let opts: PgConnectOptions = url.parse()?;
        Self::connect_with(opts).await
    }

    /// Connects with explicit options (e.g. a `search_path` for tests).
    pub async fn connect_with(opts: PgConnectOptions) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await?;
        Ok(Self { pool })
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn upsert<T: ToRow>(&self, item: &T) -> Result<(), StoreError> {
        let mut q = sqlx::query(AssertSqlSafe(upsert_sql(T::TABLE)));
        for v in item.to_row() {
            q = bind(q, v);
        }
        q.execute(&self.pool).await?;
        Ok(())
    }

    async fn load_table<T: ToRow>(&self) -> Result<Vec<T>, StoreError> {
        let sql = format!(
            "SELECT {} FROM \"{}\"",
            T::TABLE.column_list(),
            T::TABLE.name
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| T::from_row(&RowGet(r))).collect()
    }

    async fn delete_by(&self, table: &Table, col: &str, ids: &[String]) -> Result<u64, StoreError> {
        let sql = format!("DELETE FROM \"{}\" WHERE \"{col}\" = ANY($1)", table.name);
        Ok(sqlx::query(AssertSqlSafe(sql))
            .bind(ids.to_vec())
            .execute(&self.pool)
            .await?
            .rows_affected())
    }
}

/// Inserts spend-log rows (`ON CONFLICT DO NOTHING`) in multi-row statements of bounded,
/// power-of-two sizes; returns the `request_id`s inserted.
async fn insert_log_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    rows: &[SpendLogRow],
) -> Result<Vec<String>, StoreError> {
    let t = &schema::SPEND_LOGS;
    let mut inserted: Vec<String> = Vec::with_capacity(rows.len());
    let mut rest = rows;
    for size in schema::statement_sizes(rows.len(), t.rows_per_statement(65535)) {
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        let sql = pg(&format!(
            "{} RETURNING \"request_id\"",
            t.insert_many_sql(chunk.len(), "request_id")
        ));
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for r in chunk {
            for v in r.to_row() {
                q = bind(q, v);
            }
        }
        for row in q.fetch_all(&mut **tx).await? {
            inserted.push(row.try_get::<String, _>(0)?);
        }
    }
    Ok(inserted)
}

/// The attempt ([`spend_ids::row_attempt_id`]) of the stored row under each of `ids`.
async fn log_owners(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    ids: &[String],
) -> Result<HashMap<String, Option<String>>, StoreError> {
    let rows = sqlx::query(
        "SELECT \"request_id\", \"litellm_call_id\", \"metadata\" FROM \"LiteLLM_SpendLogs\" WHERE \"request_id\" = ANY($1)",
    )
    .bind(ids)
    .fetch_all(&mut **tx)
    .await?;
    let mut owners = HashMap::with_capacity(rows.len());
    for row in &rows {
        let g = RowGet(row);
        let stored = SpendLogRow {
            request_id: g.text("request_id")?.unwrap_or_default(),
            litellm_call_id: g.text("litellm_call_id")?,
            // an unreadable metadata column names no attempt (0)
            metadata: g.json("metadata").unwrap_or(Value::Null),
            ..SpendLogRow::default()
        };
        owners.insert(
            stored.request_id.clone(),
            spend_ids::row_attempt_id(&stored),
        );
    }
    Ok(owners)
}

#[async_trait]
impl GovernanceStore for PostgresStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        for t in TABLES {
            sqlx::query(AssertSqlSafe(t.create_sql(Dialect::Postgres)))
                .execute(&self.pool)
                .await?;
            let have: Vec<String> = sqlx::query_scalar(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
            )
            .bind(t.name)
            .fetch_all(&self.pool)
            .await?;
            for (col, _, _) in t.columns {
                if !have.iter().any(|h| h == col)
                    && let Some(sql) = t.add_column_sql(Dialect::Postgres, col)
                {
                    sqlx::query(AssertSqlSafe(sql)).execute(&self.pool).await?;
                }
            }
        }
        // the conflict targets of the daily roll-up upserts (after their tables exist)
        for sql in daily::create_index_sql() {
            sqlx::query(AssertSqlSafe(sql)).execute(&self.pool).await?;
        }
        Ok(())
    }

    async fn load(&self) -> Result<Snapshot, StoreError> {
        Ok(Snapshot {
            keys: self.load_table().await?,
            teams: self.load_table().await?,
            users: self.load_table().await?,
            end_users: self.load_table().await?,
            budgets: self.load_table().await?,
            memberships: self.load_table().await?,
            organizations: self.load_table().await?,
            tags: self.load_table().await?,
            model_budget_windows: self.load_table().await?,
        })
    }

    async fn upsert_key(&self, key: &VerificationToken) -> Result<(), StoreError> {
        self.upsert(key).await
    }

    async fn delete_keys(
        &self,
        hashes: &[String],
        deleted_by: Option<&str>,
    ) -> Result<u64, StoreError> {
        let now = naive(Utc::now());
        let mut tx = self.pool.begin().await?;
        let mut n = 0;
        for h in hashes {
            sqlx::query(
                "INSERT INTO \"LiteLLM_DeletedVerificationToken\" (\"id\", \"token\", \"key_name\", \"key_alias\", \"spend\", \"max_budget\", \"user_id\", \"team_id\", \"metadata\", \"deleted_at\", \"deleted_by\") \
                 SELECT \"token\" || ':' || $1::text, \"token\", \"key_name\", \"key_alias\", \"spend\", \"max_budget\", \"user_id\", \"team_id\", \"metadata\", $1, $2 \
                 FROM \"LiteLLM_VerificationToken\" WHERE \"token\" = $3",
            )
            .bind(now)
            .bind(deleted_by)
            .bind(h)
            .execute(&mut *tx)
            .await?;
            n += sqlx::query("DELETE FROM \"LiteLLM_VerificationToken\" WHERE \"token\" = $1")
                .bind(h)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        }
        tx.commit().await?;
        Ok(n)
    }

    async fn is_deleted_key(&self, hash: &str) -> Result<bool, StoreError> {
        let row = sqlx::query(
            "SELECT 1 FROM \"LiteLLM_DeletedVerificationToken\" WHERE \"token\" = $1 LIMIT 1",
        )
        .bind(hash)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.is_some())
    }

    async fn upsert_team(&self, team: &Team) -> Result<(), StoreError> {
        self.upsert(team).await
    }

    async fn delete_teams(&self, ids: &[String]) -> Result<u64, StoreError> {
        self.delete_by(&schema::TEAM, "team_id", ids).await
    }

    async fn upsert_user(&self, user: &User) -> Result<(), StoreError> {
        self.upsert(user).await
    }

    async fn delete_users(&self, ids: &[String]) -> Result<u64, StoreError> {
        self.delete_by(&schema::USER, "user_id", ids).await
    }

    async fn upsert_end_user(&self, end_user: &EndUser) -> Result<(), StoreError> {
        self.upsert(end_user).await
    }

    async fn delete_end_users(&self, ids: &[String]) -> Result<u64, StoreError> {
        self.delete_by(&schema::END_USER, "user_id", ids).await
    }

    async fn upsert_budget(&self, budget: &BudgetTier) -> Result<(), StoreError> {
        self.upsert(budget).await
    }

    async fn delete_budgets(&self, ids: &[String]) -> Result<u64, StoreError> {
        self.delete_by(&schema::BUDGET, "budget_id", ids).await
    }

    async fn upsert_membership(&self, m: &TeamMembership) -> Result<(), StoreError> {
        self.upsert(m).await
    }

    async fn delete_membership(&self, team_id: &str, user_id: &str) -> Result<u64, StoreError> {
        Ok(sqlx::query(
            "DELETE FROM \"LiteLLM_TeamMembership\" WHERE \"team_id\" = $1 AND \"user_id\" = $2",
        )
        .bind(team_id)
        .bind(user_id)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }

    async fn upsert_organization(&self, org: &Organization) -> Result<(), StoreError> {
        self.upsert(org).await
    }

    async fn upsert_tag(&self, tag: &Tag) -> Result<(), StoreError> {
        self.upsert(tag).await
    }

    async fn delete_organizations(&self, ids: &[String]) -> Result<u64, StoreError> {
        self.delete_by(&schema::ORGANIZATION, "organization_id", ids)
            .await
    }

    async fn delete_tags(&self, names: &[String]) -> Result<u64, StoreError> {
        self.delete_by(&schema::TAG, "tag_name", names).await
    }

    async fn write_spend(&self, updates: &[SpendSnapshot]) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for u in updates {
            if let Some((token, model)) = model_spend_target(&u.scope) {
                sqlx::query("UPDATE \"LiteLLM_VerificationToken\" SET \"model_spend\" = (CASE WHEN jsonb_typeof(\"model_spend\") = 'object' THEN \"model_spend\" ELSE '{}'::jsonb END) || jsonb_build_object($1::text, $2::float8) WHERE \"token\" = $3")
                    .bind(model)
                    .bind(u.spend)
                    .bind(token)
                    .execute(&mut *tx)
                    .await?;
                if let Some(w) = model_window::window_row(&u.scope, u.budget_reset_at) {
                    let mut q = sqlx::query(AssertSqlSafe(upsert_sql(
                        &model_window::MODEL_BUDGET_WINDOW,
                    )));
                    for v in w.to_row() {
                        q = bind(q, v);
                    }
                    q.execute(&mut *tx).await?;
                }
                continue;
            }
            let Some(target) = spend_target(&u.scope) else {
                continue;
            };
            if let Some(insert) = target.insert_if_missing {
                let mut q = sqlx::query(AssertSqlSafe(pg(insert)));
                for k in &target.keys {
                    q = q.bind(k.clone());
                }
                q.execute(&mut *tx).await?;
            }
            let sql = pg(&format!(
                "UPDATE \"{}\" SET \"spend\" = ?{} WHERE {}",
                target.table,
                if target.has_reset_at {
                    ", \"budget_reset_at\" = ?"
                } else {
                    ""
                },
                target.where_clause
            ));
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(u.spend);
            if target.has_reset_at {
                q = q.bind(u.budget_reset_at.map(naive));
            }
            for k in &target.keys {
                q = q.bind(k.clone());
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn insert_spend_logs(&self, rows: &[SpendLogRow]) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        // Rows under a `request_id` another call wrote go in again under their attempt id
        // (`spend_ids`); the daily roll-ups count the rows actually inserted, each once.
        let returned = insert_log_rows(&mut tx, rows).await?;
        let (mut new_rows, skipped) = spend_ids::split_inserted(rows, returned);
        let rekeyed = if skipped.is_empty() {
            Vec::new()
        } else {
            let owners = log_owners(&mut tx, &spend_ids::taken_ids(rows, &skipped)).await?;
            spend_ids::rekeyed(rows, &skipped, &owners)
        };
        if !rekeyed.is_empty() {
            let returned = insert_log_rows(&mut tx, &rekeyed).await?;
            new_rows.extend(spend_ids::split_inserted(&rekeyed, returned).0);
        }
        let n = new_rows.len() as u64;
        for up in daily::upserts(&new_rows, 65535, Utc::now()) {
            // not cached: row counts vary per flush and per table, and the statement cache is
            // kept for the spend-log and entity statements
            let mut q = sqlx::query(AssertSqlSafe(pg(&up.sql))).persistent(false);
            for v in up.values {
                q = bind(q, v);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(n)
    }

    async fn spend_logs(&self, f: &SpendLogFilter) -> Result<Vec<SpendLogRow>, StoreError> {
        let t = &schema::SPEND_LOGS;
        let mut sql = format!("SELECT {} FROM \"{}\" WHERE 1=1", t.column_list(), t.name);
        let mut texts: Vec<String> = Vec::new();
        for (col, v) in [
            ("api_key", &f.api_key),
            ("user", &f.user_id),
            ("request_id", &f.request_id),
            ("team_id", &f.team_id),
            ("end_user", &f.end_user),
        ] {
            if let Some(v) = v {
                sql.push_str(&format!(" AND \"{col}\" = ?"));
                texts.push(v.clone());
            }
        }
        let mut times: Vec<NaiveDateTime> = Vec::new();
        if let Some(s) = f.start {
            sql.push_str(" AND \"startTime\" >= ?");
            times.push(naive(s));
        }
        if let Some(e) = f.end {
            sql.push_str(" AND \"startTime\" <= ?");
            times.push(naive(e));
        }
        sql.push_str(" ORDER BY \"startTime\" DESC");
        if let Some(limit) = f.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut q = sqlx::query(AssertSqlSafe(pg(&sql)));
        for b in texts {
            q = q.bind(b);
        }
        for b in times {
            q = q.bind(b);
        }
        let rows = q.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| SpendLogRow::from_row(&RowGet(r)))
            .collect()
    }

    async fn spend_since(&self, since: Option<DateTime<Utc>>) -> Result<f64, StoreError> {
        let row: (Option<f64>,) = match since {
            Some(t) => {
                sqlx::query_as(
                    "SELECT SUM(\"spend\")::float8 FROM \"LiteLLM_SpendLogs\" WHERE \"startTime\" >= $1",
                )
                .bind(naive(t))
                .fetch_one(&self.pool)
                .await?
            }
            None => {
                sqlx::query_as("SELECT SUM(\"spend\")::float8 FROM \"LiteLLM_SpendLogs\"")
                    .fetch_one(&self.pool)
                    .await?
            }
        };
        Ok(row.0.unwrap_or(0.0))
    }

    async fn upsert_model(&self, model: &ProxyModel, key: &SecretBox) -> Result<(), StoreError> {
        self.upsert(&models::sealed(model, key)).await
    }

    async fn delete_model(&self, model_id: &str) -> Result<u64, StoreError> {
        self.delete_by(&models::PROXY_MODEL, "model_id", &[model_id.to_owned()])
            .await
    }

    async fn load_models(&self, key: &SecretBox) -> Result<Vec<ProxyModel>, StoreError> {
        let mut rows: Vec<ProxyModel> = self.load_table().await?;
        models::sort(&mut rows);
        Ok(rows.into_iter().map(|m| models::opened(m, key)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(
            pg("UPDATE t SET a = ? WHERE b = ? AND c = ?"),
            "UPDATE t SET a = $1 WHERE b = $2 AND c = $3"
        );
    }
}
