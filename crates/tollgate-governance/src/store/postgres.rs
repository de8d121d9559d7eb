//! [`PostgresStore`]: LiteLLM's own database (`general_settings.database_url` / `DATABASE_URL`).
//! Same tables, columns and types as LiteLLM's Prisma schema, so an existing LiteLLM database's
//! keys, budgets and spend keep working; migrations only add what is missing. What is Postgres'
//! own is here (placeholders `$n`, native JSON, arrays and timestamps, `= ANY`, JSON
//! functions); the entity logic is shared with SQLite (`sql_store.rs`).
//!
//! Many replicas share one database: migrations take [`MIGRATION_LOCK_KEY`] so replicas can
//! start together, each pool is bounded ([`PgPoolSettings`]), and `pgbouncer=true` in the URL
//! makes every statement work through PgBouncer's transaction pooling (see
//! [`PostgresStore::connect_pooled`]).

use std::borrow::Cow;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgQueryResult};
use sqlx::{PgPool, Postgres};

use super::StoreError;
use super::backend::{Query, RowGet, SqlDialect, Stmt};
use super::codec::Val;
use super::pg_connect::{PgPoolPlan, PgPoolSettings, PgUrl};
use super::schema::Dialect;

/// The transaction-scoped advisory lock ([`pg_advisory_xact_lock`]) every migration takes
/// first: `"tollgate"` in ASCII as a big-endian `i64` (8390043843661231205; `pg_locks` shows it
/// as `classid` 1953459308, `objid` 1734440037, `objsubid` 1). Replicas started together on a
/// fresh database migrate one after another: without it, concurrent `CREATE TABLE IF NOT
/// EXISTS` fail with `duplicate key value violates unique constraint
/// "pg_type_typname_nsp_index"`. Transaction-scoped (released at commit or rollback, never
/// left behind by a crashed replica), so it also holds through PgBouncer's transaction
/// pooling, where a session lock could stay on a server connection another client gets.
///
/// [`pg_advisory_xact_lock`]: https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-ADVISORY-LOCKS
pub const MIGRATION_LOCK_KEY: i64 = 0x746f_6c6c_6761_7465;

/// Postgres-backed [`super::GovernanceStore`].
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    /// PgBouncer transaction mode: unnamed statements only, each statement outside a
    /// transaction in one.
    pgbouncer: bool,
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
    /// Connects to `url` (`postgres://user@host:port/db`) with the default pool settings (see
    /// [`PostgresStore::connect_pooled`]).
    ///
    /// Errors: [`StoreError::Db`] when the URL is invalid or the server unreachable.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_pooled(url, &PgPoolSettings::default()).await
    }

    /// Connects to `url` with a pool of at most `settings.max_connections` connections (else
    /// the URL's `connection_limit`, else 10) that waits at most `settings.acquire_timeout_secs`
    /// for a free one (else the URL's `pool_timeout`, else 60 s): see `pg_connect.rs`.
    ///
    /// With `pgbouncer=true` in the URL (Prisma's parameter, which LiteLLM users already set
    /// for PgBouncer), the store works through PgBouncer in transaction pooling mode, which
    /// keeps no prepared statement across transactions (PgBouncer before 1.21 tracks none):
    /// no statement is prepared under a name and sqlx's statement cache is off (every
    /// statement is the unnamed one, parsed again each time), each statement
    /// outside a transaction runs in its own `BEGIN … COMMIT` (sqlx parses and executes in
    /// two round trips, each ending with `Sync`; between them PgBouncer may hand the server
    /// connection to another client), and `extra_float_digits` is not sent at startup
    /// (PgBouncer refuses startup parameters it does not know; Postgres 12+ prints floats
    /// exactly by default).
    ///
    /// Errors: [`StoreError::Db`] when the URL is invalid or the server unreachable.
    pub async fn connect_pooled(url: &str, settings: &PgPoolSettings) -> Result<Self, StoreError> {
        let url = PgUrl::parse(url);
        let plan = PgPoolPlan::new(settings, &url);
        let opts: PgConnectOptions = url.url.parse()?;
        Self::open_pool(opts, &plan).await
    }

    /// Connects with explicit options (e.g. a `search_path` for tests) and the default pool.
    ///
    /// Errors: [`StoreError::Db`] when the server is unreachable.
    pub async fn connect_with(opts: PgConnectOptions) -> Result<Self, StoreError> {
        let plan = PgPoolPlan::new(&PgPoolSettings::default(), &PgUrl::parse(""));
        Self::open_pool(opts, &plan).await
    }

    async fn open_pool(opts: PgConnectOptions, plan: &PgPoolPlan) -> Result<Self, StoreError> {
        let opts = if plan.pgbouncer {
            opts.statement_cache_capacity(0)
                .extra_float_digits(None::<i8>)
        } else {
            opts
        };
        let pool = PgPoolOptions::new()
            .max_connections(plan.max_connections)
            .acquire_timeout(plan.acquire_timeout)
            .connect_with(opts)
            .await?;
        Ok(Self {
            pool,
            pgbouncer: plan.pgbouncer,
        })
    }

    /// Most connections the pool opens.
    pub fn max_connections(&self) -> u32 {
        self.pool.options().get_max_connections()
    }

    /// Whether the store runs in PgBouncer transaction mode (`pgbouncer=true`).
    pub fn pgbouncer(&self) -> bool {
        self.pgbouncer
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
    const MIGRATION_LOCK: Option<&'static str> =
        Some("SELECT pg_advisory_xact_lock(8390043843661231205)");
    const MIGRATION_QUIET: Option<&'static str> = Some("SET LOCAL client_min_messages TO warning");

    fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn transaction_pooling(&self) -> bool {
        self.pgbouncer
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

    /// The stored document as it is (`{}` stays `{}`, what LiteLLM shows for its default);
    /// NULL reads as `Value::Null`.
    fn json(r: &RowGet<'_, Self>, col: &str) -> Result<Value, StoreError> {
        Ok(r.get::<Value>(col)?.unwrap_or(Value::Null))
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
    fn the_migration_lock_takes_the_documented_key() {
        assert_eq!(MIGRATION_LOCK_KEY, 8_390_043_843_661_231_205);
        assert_eq!(MIGRATION_LOCK_KEY.to_be_bytes(), *b"tollgate");
        let sql = PostgresStore::MIGRATION_LOCK.unwrap();
        assert_eq!(
            sql,
            format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
        );
    }

    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(
            pg("UPDATE t SET a = ? WHERE b = ? AND c = ?"),
            "UPDATE t SET a = $1 WHERE b = $2 AND c = $3"
        );
    }
}
