//! [`PostgresStore`]: LiteLLM's own database (`general_settings.database_url` / `DATABASE_URL`).
//! Same tables, columns and types as LiteLLM's Prisma schema, so an existing LiteLLM database's
//! keys, budgets and spend keep working; migrations only add what is missing. What is Postgres'
//! own is here (placeholders `$n`, native JSON, arrays and timestamps, `= ANY`, JSON
//! functions); the entity logic is shared with SQLite (`sql_store.rs`).

use std::borrow::Cow;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgQueryResult};
use sqlx::{PgPool, Postgres};

use super::StoreError;
use super::backend::{Query, RowGet, SqlDialect, Stmt};
use super::codec::Val;
use super::schema::Dialect;

/// Postgres-backed [`super::GovernanceStore`].
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
}

impl SqlDialect for PostgresStore {
    type DB = Postgres;
    const DIALECT: Dialect = Dialect::Postgres;
    const MAX_PARAMS: usize = 65535;
    const MODEL_SPEND_SQL: &'static str = "UPDATE \"LiteLLM_VerificationToken\" SET \"model_spend\" = (CASE WHEN jsonb_typeof(\"model_spend\") = 'object' THEN \"model_spend\" ELSE '{}'::jsonb END) || jsonb_build_object(?::text, ?::float8) WHERE \"token\" = ?";
    const TEXT_PARAM: &'static str = "?::text";
    const FLOAT_SUM_CAST: &'static str = "::float8";

    fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn sql(sql: Cow<'static, str>) -> Cow<'static, str> {
        pg(&sql).into()
    }

    fn bind_json(q: Query<Postgres>, v: Value) -> Query<Postgres> {
        match v {
            // LiteLLM's JSON columns are NOT NULL with default '{}'
            Value::Null => q.bind(Value::Object(Default::default())),
            j => q.bind(j),
        }
    }

    fn bind_arr(q: Query<Postgres>, v: Vec<String>) -> Query<Postgres> {
        q.bind(v)
    }

    fn bind_time(q: Query<Postgres>, v: Option<DateTime<Utc>>) -> Query<Postgres> {
        q.bind(v.map(|t| t.naive_utc()))
    }

    fn affected(r: &PgQueryResult) -> u64 {
        r.rows_affected()
    }

    fn int(r: &RowGet<'_, Self>, col: &str) -> Result<Option<i64>, StoreError> {
        // LiteLLM mixes INTEGER and BIGINT columns
        match r.get::<i64>(col) {
            Ok(v) => Ok(v),
            Err(_) => Ok(r.get::<i32>(col)?.map(i64::from)),
        }
    }

    /// NULL and LiteLLM's default `{}` both read as `Value::Null` (what Tollgate writes for "unset").
    fn json(r: &RowGet<'_, Self>, col: &str) -> Result<Value, StoreError> {
        Ok(match r.get::<Value>(col)? {
            Some(Value::Object(m)) if m.is_empty() => Value::Null,
            Some(v) => v,
            None => Value::Null,
        })
    }

    fn arr(r: &RowGet<'_, Self>, col: &str) -> Result<Vec<String>, StoreError> {
        Ok(r.get::<Vec<String>>(col)?.unwrap_or_default())
    }

    fn time(r: &RowGet<'_, Self>, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(r.get::<NaiveDateTime>(col)?.map(|t| t.and_utc()))
    }

    fn columns_stmt(table: &'static str) -> Stmt {
        Stmt::new(
            "SELECT column_name::text AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
            vec![Val::Text(Some(table.to_owned()))],
        )
    }

    fn any_of(col: &str, ids: &[String]) -> Vec<Stmt> {
        vec![Stmt::new(
            format!("\"{col}\" = ANY(?)"),
            vec![Val::Arr(ids.to_vec())],
        )]
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
