//! [`SqliteStore`]: the embedded default — one SQLite file, LiteLLM's table and column names.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteRow};
use sqlx::{AssertSqlSafe, Row, SqlitePool};

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

/// SQLite-backed [`GovernanceStore`].
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) the database file at `path`, or an in-memory database for
    /// `":memory:"`. WAL journal, so the gateway's batch writes do not block readers.
    ///
    /// Errors: [`StoreError::Db`] when the file cannot be opened.
    pub async fn open(path: &str) -> Result<Self, StoreError> {
        let opts = if path == ":memory:" {
            SqliteConnectOptions::new().in_memory(true)
        } else {
            SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                // WAL + NORMAL is durable across process crashes (not power loss) and keeps
                // batch commits cheap.
                .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
        };
        // The gateway's footprint budget is ~20 MB: a 512 KiB page cache per connection and a
        // small statement cache (the store runs a handful of distinct statements).
        let opts = opts
            .pragma("cache_size", "-512")
            .statement_cache_capacity(32);
        // one connection for ":memory:" (each connection would be its own database); two
        // otherwise: one writer (write-behind) and one reader (management API) at a time.
        let max = if path == ":memory:" { 1 } else { 2 };
        if path != ":memory:" {
            // Create the file and switch it to WAL on one connection first: two pool
            // connections switching a new file's journal mode at once can fail with "database
            // is locked" (SQLite answers SQLITE_BUSY there without waiting on busy_timeout;
            // seen once in CI at startup). On a file already in WAL the pragma is a no-op.
            use sqlx::Connection;
            sqlx::SqliteConnection::connect_with(&opts)
                .await?
                .close()
                .await?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(max)
            .connect_with(opts)
            .await?;
        Ok(Self { pool })
    }

    /// The pool (for tests and tools).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn columns_of(&self, table: &str) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!("PRAGMA table_info(\"{table}\")")))
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| r.try_get::<String, _>("name").map_err(StoreError::from))
            .collect()
    }

    async fn upsert<T: ToRow>(&self, item: &T) -> Result<(), StoreError> {
        let sql = upsert_sql(T::TABLE);
        let mut q = sqlx::query(AssertSqlSafe(sql.clone()));
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
        let mut n = 0;
        for id in ids {
            let sql = format!("DELETE FROM \"{}\" WHERE \"{col}\" = ?", table.name);
            n += sqlx::query(AssertSqlSafe(sql))
                .bind(id)
                .execute(&self.pool)
                .await?
                .rows_affected();
        }
        Ok(n)
    }
}

fn upsert_sql(t: &Table) -> String {
    let cols = t.column_list();
    let marks = vec!["?"; t.columns.len()].join(", ");
    let pk: Vec<String> = t.primary_key.iter().map(|c| format!("\"{c}\"")).collect();
    let updates: Vec<String> = t
        .columns
        .iter()
        .filter(|(n, _, _)| !t.primary_key.contains(n))
        .map(|(n, _, _)| format!("\"{n}\" = excluded.\"{n}\""))
        .collect();
    format!(
        "INSERT INTO \"{}\" ({cols}) VALUES ({marks}) ON CONFLICT ({}) DO UPDATE SET {}",
        t.name,
        pk.join(", "),
        updates.join(", ")
    )
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>;

fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn bind(q: Query<'_>, v: Val) -> Query<'_> {
    match v {
        Val::Text(s) => q.bind(s),
        Val::Float(f) => q.bind(f),
        Val::Int(i) => q.bind(i),
        Val::Bool(b) => q.bind(b),
        Val::Json(Value::Null) => q.bind(None::<String>),
        Val::Json(j) => q.bind(Some(j.to_string())),
        Val::Arr(a) => q.bind(Some(
            serde_json::to_string(&a).unwrap_or_else(|_| "[]".into()),
        )),
        Val::Time(t) => q.bind(t.map(time_text)),
    }
}

struct RowGet<'a>(&'a SqliteRow);

impl RowGet<'_> {
    fn get<T>(&self, col: &str) -> Result<Option<T>, StoreError>
    where
        for<'r> T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>,
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
        self.get::<i64>(col)
    }
    fn boolean(&self, col: &str) -> Result<Option<bool>, StoreError> {
        self.get::<bool>(col)
    }
    fn json(&self, col: &str) -> Result<Value, StoreError> {
        Ok(match self.text(col)? {
            Some(s) => {
                serde_json::from_str(&s).map_err(|e| StoreError::Decode(format!("{col}: {e}")))?
            }
            None => Value::Null,
        })
    }
    fn arr(&self, col: &str) -> Result<Vec<String>, StoreError> {
        Ok(match self.text(col)? {
            Some(s) => {
                serde_json::from_str(&s).map_err(|e| StoreError::Decode(format!("{col}: {e}")))?
            }
            None => Vec::new(),
        })
    }
    fn time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        match self.text(col)? {
            Some(s) => DateTime::parse_from_rfc3339(&s)
                .map(|t| Some(t.with_timezone(&Utc)))
                .map_err(|e| StoreError::Decode(format!("{col}: {e}"))),
            None => Ok(None),
        }
    }
}

/// Inserts spend-log rows (`ON CONFLICT DO NOTHING`) in multi-row statements of bounded,
/// power-of-two sizes; returns the `request_id`s inserted.
async fn insert_log_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    rows: &[SpendLogRow],
) -> Result<Vec<String>, StoreError> {
    let t = &schema::SPEND_LOGS;
    let mut inserted: Vec<String> = Vec::with_capacity(rows.len());
    let mut rest = rows;
    for size in schema::statement_sizes(rows.len(), t.rows_per_statement(999)) {
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        let sql = format!(
            "{} RETURNING \"request_id\"",
            t.insert_many_sql(chunk.len(), "request_id")
        );
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
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    ids: &[String],
) -> Result<HashMap<String, Option<String>>, StoreError> {
    let mut owners = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(900) {
        let sql = format!(
            "SELECT \"request_id\", \"litellm_call_id\", \"metadata\" FROM \"LiteLLM_SpendLogs\" WHERE \"request_id\" IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let mut q = sqlx::query(AssertSqlSafe(sql)).persistent(false);
        for id in chunk {
            q = q.bind(id);
        }
        for row in q.fetch_all(&mut **tx).await? {
            let g = RowGet(&row);
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
    }
    Ok(owners)
}

#[async_trait]
impl GovernanceStore for SqliteStore {
    async fn migrate(&self) -> Result<(), StoreError> {
        for t in TABLES {
            sqlx::query(AssertSqlSafe(t.create_sql(Dialect::Sqlite)))
                .execute(&self.pool)
                .await?;
            let have = self.columns_of(t.name).await?;
            for (col, _, _) in t.columns {
                if !have.iter().any(|h| h == col)
                    && let Some(sql) = t.add_column_sql(Dialect::Sqlite, col)
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
        let now = time_text(Utc::now());
        let mut tx = self.pool.begin().await?;
        let mut n = 0;
        for h in hashes {
            sqlx::query(
                "INSERT INTO \"LiteLLM_DeletedVerificationToken\" (\"id\", \"token\", \"key_name\", \"key_alias\", \"spend\", \"max_budget\", \"user_id\", \"team_id\", \"metadata\", \"deleted_at\", \"deleted_by\") \
                 SELECT \"token\" || ':' || ?, \"token\", \"key_name\", \"key_alias\", \"spend\", \"max_budget\", \"user_id\", \"team_id\", \"metadata\", ?, ? \
                 FROM \"LiteLLM_VerificationToken\" WHERE \"token\" = ?",
            )
            .bind(&now)
            .bind(&now)
            .bind(deleted_by)
            .bind(h)
            .execute(&mut *tx)
            .await?;
            n += sqlx::query("DELETE FROM \"LiteLLM_VerificationToken\" WHERE \"token\" = ?")
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
            "SELECT 1 AS x FROM \"LiteLLM_DeletedVerificationToken\" WHERE \"token\" = ? LIMIT 1",
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
            "DELETE FROM \"LiteLLM_TeamMembership\" WHERE \"team_id\" = ? AND \"user_id\" = ?",
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
                sqlx::query("UPDATE \"LiteLLM_VerificationToken\" SET \"model_spend\" = json_patch(CASE WHEN json_valid(\"model_spend\") AND json_type(\"model_spend\") = 'object' THEN \"model_spend\" ELSE '{}' END, json_object(?, ?)) WHERE \"token\" = ?")
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
            let reset = u.budget_reset_at.map(time_text);
            // rows of end users, memberships and tags are created on first spend (LiteLLM does
            // the same for end users); other entities must exist.
            if let Some(insert) = target.insert_if_missing {
                let mut q = sqlx::query(insert);
                for k in &target.keys {
                    q = q.bind(k.clone());
                }
                q.execute(&mut *tx).await?;
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
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(u.spend);
            if target.has_reset_at {
                q = q.bind(reset);
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
        for up in daily::upserts(&new_rows, 999, Utc::now()) {
            // not cached: row counts vary per flush and per table, and the statement cache is
            // kept for the spend-log and entity statements
            let mut q = sqlx::query(AssertSqlSafe(up.sql)).persistent(false);
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
        let mut binds: Vec<String> = Vec::new();
        for (col, v) in [
            ("api_key", &f.api_key),
            ("user", &f.user_id),
            ("request_id", &f.request_id),
            ("team_id", &f.team_id),
            ("end_user", &f.end_user),
        ] {
            if let Some(v) = v {
                sql.push_str(&format!(" AND \"{col}\" = ?"));
                binds.push(v.clone());
            }
        }
        if let Some(s) = f.start {
            sql.push_str(" AND \"startTime\" >= ?");
            binds.push(time_text(s));
        }
        if let Some(e) = f.end {
            sql.push_str(" AND \"startTime\" <= ?");
            binds.push(time_text(e));
        }
        sql.push_str(" ORDER BY \"startTime\" DESC");
        if let Some(limit) = f.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut q = sqlx::query(AssertSqlSafe(sql.clone()));
        for b in binds {
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
                    "SELECT SUM(\"spend\") FROM \"LiteLLM_SpendLogs\" WHERE \"startTime\" >= ?",
                )
                .bind(time_text(t))
                .fetch_one(&self.pool)
                .await?
            }
            None => {
                sqlx::query_as("SELECT SUM(\"spend\") FROM \"LiteLLM_SpendLogs\"")
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
