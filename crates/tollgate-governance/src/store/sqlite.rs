//! [`SqliteStore`]: the embedded default — one SQLite file, LiteLLM's table and column names.
//! What is SQLite's own is here (JSON, arrays and timestamps stored as text, `IN` lists within
//! its parameter limit, JSON functions); the entity logic is shared with Postgres
//! (`sql_store.rs`).

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteQueryResult};
use sqlx::{Sqlite, SqlitePool};

use super::StoreError;
use super::backend::{Query, RowGet, SqlDialect, Stmt};
use super::codec::Val;
use super::schema::Dialect;

/// SQLite-backed [`super::GovernanceStore`].
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

/// Most ids in one `IN (…)` list (within SQLite's oldest default of 999 parameters).
const IN_LIST_MAX: usize = 900;

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
}

fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A JSON text column's value; NULL reads as `None`.
fn parse_text<T: serde::de::DeserializeOwned>(
    r: &RowGet<'_, SqliteStore>,
    col: &str,
) -> Result<Option<T>, StoreError> {
    match r.get::<String>(col)? {
        Some(s) => serde_json::from_str(&s)
            .map(Some)
            .map_err(|e| StoreError::Decode(format!("{col}: {e}"))),
        None => Ok(None),
    }
}

impl SqlDialect for SqliteStore {
    type DB = Sqlite;
    const DIALECT: Dialect = Dialect::Sqlite;
    const MAX_PARAMS: usize = 999;
    const MODEL_SPEND_SQL: &'static str = "UPDATE \"LiteLLM_VerificationToken\" SET \"model_spend\" = json_patch(CASE WHEN json_valid(\"model_spend\") AND json_type(\"model_spend\") = 'object' THEN \"model_spend\" ELSE '{}' END, json_object(?, ?)) WHERE \"token\" = ?";
    const TEXT_PARAM: &'static str = "?";
    const FLOAT_SUM_CAST: &'static str = "";

    fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    fn sql(sql: Cow<'static, str>) -> Cow<'static, str> {
        sql
    }

    fn bind_json(q: Query<Sqlite>, v: Value) -> Query<Sqlite> {
        match v {
            Value::Null => q.bind(None::<String>),
            j => q.bind(Some(j.to_string())),
        }
    }

    fn bind_arr(q: Query<Sqlite>, v: Vec<String>) -> Query<Sqlite> {
        q.bind(Some(
            serde_json::to_string(&v).unwrap_or_else(|_| "[]".into()),
        ))
    }

    fn bind_time(q: Query<Sqlite>, v: Option<DateTime<Utc>>) -> Query<Sqlite> {
        q.bind(v.map(time_text))
    }

    fn affected(r: &SqliteQueryResult) -> u64 {
        r.rows_affected()
    }

    fn int(r: &RowGet<'_, Self>, col: &str) -> Result<Option<i64>, StoreError> {
        r.get::<i64>(col)
    }

    fn json(r: &RowGet<'_, Self>, col: &str) -> Result<Value, StoreError> {
        Ok(parse_text(r, col)?.unwrap_or(Value::Null))
    }

    fn arr(r: &RowGet<'_, Self>, col: &str) -> Result<Vec<String>, StoreError> {
        Ok(parse_text(r, col)?.unwrap_or_default())
    }

    fn time(r: &RowGet<'_, Self>, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        match r.get::<String>(col)? {
            Some(s) => DateTime::parse_from_rfc3339(&s)
                .map(|t| Some(t.with_timezone(&Utc)))
                .map_err(|e| StoreError::Decode(format!("{col}: {e}"))),
            None => Ok(None),
        }
    }

    fn columns_stmt(table: &'static str) -> Stmt {
        Stmt::new(format!("PRAGMA table_info(\"{table}\")"), Vec::new())
    }

    fn any_of(col: &str, ids: &[String]) -> Vec<Stmt> {
        ids.chunks(IN_LIST_MAX)
            .map(|chunk| Stmt {
                cached: false,
                ..Stmt::new(
                    format!("\"{col}\" IN ({})", vec!["?"; chunk.len()].join(", ")),
                    chunk.iter().map(|id| Val::Text(Some(id.clone()))).collect(),
                )
            })
            .collect()
    }
}
