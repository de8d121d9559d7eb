//! The seam between the shared entity logic (`sql_store.rs`, `sql_spend.rs`) and a SQL
//! database. A backend (`sqlite.rs`, `postgres.rs`) says only what its dialect does its own
//! way ([`SqlDialect`]: placeholders, how JSON, arrays and timestamps are bound and read, the
//! few statements whose SQL differs); running dialect-neutral [`Stmt`]s (`?` placeholders,
//! [`Val`] values) is written once here ([`SqlBackend`]), over any sqlx database.

use std::borrow::Cow;
use std::future::Future;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::database::HasStatementCache;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Type};

use super::StoreError;
use super::codec::{GetCol, Val};
use super::schema::Dialect;

/// One statement: SQL with `?` placeholders and its values in placeholder order.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    /// The SQL (`?` placeholders; [`SqlDialect::sql`] renumbers them where needed).
    pub sql: Cow<'static, str>,
    /// Bound values, in placeholder order.
    pub vals: Vec<Val>,
    /// Keep the prepared statement in the connection's cache (false for SQL whose text varies
    /// with the number of values, so the cache keeps the statements that repeat).
    pub cached: bool,
}

impl Stmt {
    /// A cached statement.
    pub fn new(sql: impl Into<Cow<'static, str>>, vals: Vec<Val>) -> Self {
        Self {
            sql: sql.into(),
            vals,
            cached: true,
        }
    }
}

/// A query of database `DB` whose SQL it owns.
pub type Query<DB> = sqlx::query::Query<'static, DB, <DB as Database>::Arguments>;

/// What one SQL database does its own way. Implemented by [`super::SqliteStore`] and
/// [`super::PostgresStore`]; everything else is shared.
pub trait SqlDialect: Send + Sync + 'static {
    /// The sqlx database.
    type DB: Database + HasStatementCache;
    /// The DDL dialect ([`super::schema::Table::create_sql`]).
    const DIALECT: Dialect;
    /// Most bound parameters one statement may carry (SQLite's oldest default 999, Postgres
    /// 65,535).
    const MAX_PARAMS: usize;
    /// Sets entry `?1` (a model group) of a key's `model_spend` JSON object to `?2` (USD),
    /// where `"token" = ?3`; a value that is not an object is replaced by one.
    const MODEL_SPEND_SQL: &'static str;
    /// A `?` placeholder read as text (Postgres cannot infer a parameter's type under `||`).
    const TEXT_PARAM: &'static str;
    /// What makes `SUM("spend")` a float (`::float8` on Postgres, nothing on SQLite).
    const FLOAT_SUM_CAST: &'static str;
    /// The statement that takes the lock serialising migrations of one database across
    /// processes (Postgres: a transaction-scoped advisory lock); with one, a migration runs in
    /// one transaction that starts with it. `None` (SQLite: one file, one writer at a time):
    /// the migration's statements run one by one.
    const MIGRATION_LOCK: Option<&'static str> = None;
    /// Run after [`Self::MIGRATION_LOCK`] in the migration's transaction: keeps the server's
    /// notices about what already exists (`relation ... already exists, skipping`, one per
    /// table and index at every start) out of the log. Postgres: `SET LOCAL
    /// client_min_messages`, which ends with the transaction (safe behind PgBouncer).
    const MIGRATION_QUIET: Option<&'static str> = None;

    /// The connection pool.
    fn pool(&self) -> &Pool<Self::DB>;
    /// True behind a transaction-pooling proxy (PgBouncer's `pool_mode = transaction`; see
    /// [`super::PostgresStore::connect_pooled`]): no statement is prepared under a name (a
    /// named statement lives on one server connection, which the next transaction may not
    /// get), and a statement outside a transaction still runs in one, so every message of it
    /// reaches the same server connection. Default false.
    fn transaction_pooling(&self) -> bool {
        false
    }
    /// `sql` (`?` placeholders) as the database wants it.
    fn sql(sql: Cow<'static, str>) -> Cow<'static, str>;
    /// Binds a JSON value (`Value::Null`: unset).
    fn bind_json(q: Query<Self::DB>, v: Value) -> Query<Self::DB>;
    /// Binds a text array.
    fn bind_arr(q: Query<Self::DB>, v: Vec<String>) -> Query<Self::DB>;
    /// Binds a timestamp.
    fn bind_time(q: Query<Self::DB>, v: Option<DateTime<Utc>>) -> Query<Self::DB>;
    /// Rows a statement affected.
    fn affected(r: &<Self::DB as Database>::QueryResult) -> u64;
    /// Reads an integer column.
    fn int(r: &RowGet<'_, Self>, col: &str) -> Result<Option<i64>, StoreError>;
    /// Reads a JSON column (`Value::Null` when unset).
    fn json(r: &RowGet<'_, Self>, col: &str) -> Result<Value, StoreError>;
    /// Reads a text-array column (empty when NULL).
    fn arr(r: &RowGet<'_, Self>, col: &str) -> Result<Vec<String>, StoreError>;
    /// Reads a timestamp column.
    fn time(r: &RowGet<'_, Self>, col: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
    /// The statement listing the column names of `table`, each as column `name`.
    fn columns_stmt(table: &'static str) -> Stmt;
    /// Conditions "`col` is one of `ids`" with their values, as many as the dialect needs
    /// (one array parameter on Postgres; `IN` lists within the parameter limit on SQLite).
    fn any_of(col: &str, ids: &[String]) -> Vec<Stmt>;
}

/// Runs [`Stmt`]s: what the shared [`super::GovernanceStore`] implementation needs of a
/// database. Every [`SqlDialect`] of a sqlx database is one.
pub trait SqlBackend: SqlDialect {
    /// An open transaction.
    type Tx: Send;
    /// Opens a transaction.
    fn begin(&self) -> impl Future<Output = Result<Self::Tx, StoreError>> + Send;
    /// Commits `tx`.
    fn commit(tx: Self::Tx) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Runs `s` in `tx` (or on a pool connection); returns the rows it affected.
    fn run(
        &self,
        tx: Option<&mut Self::Tx>,
        s: Stmt,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
    /// Runs `s` in `tx` (or on a pool connection) and reads every row it returns with `read`.
    fn rows<T: Send>(
        &self,
        tx: Option<&mut Self::Tx>,
        s: Stmt,
        read: fn(&dyn GetCol) -> Result<T, StoreError>,
    ) -> impl Future<Output = Result<Vec<T>, StoreError>> + Send;
}

/// `s` as a query of `D`: SQL in `D`'s form, values bound; prepared under a name (and cached)
/// only when `s.cached` and not `unnamed`.
fn query<D: SqlDialect>(s: Stmt, unnamed: bool) -> Query<D::DB>
where
    for<'t> Option<String>: Encode<'t, D::DB> + Type<D::DB>,
    for<'t> Option<f64>: Encode<'t, D::DB> + Type<D::DB>,
    for<'t> Option<i64>: Encode<'t, D::DB> + Type<D::DB>,
    for<'t> Option<bool>: Encode<'t, D::DB> + Type<D::DB>,
{
    let mut q = sqlx::query(sqlx::AssertSqlSafe(D::sql(s.sql))).persistent(s.cached && !unnamed);
    for v in s.vals {
        q = match v {
            Val::Text(s) => q.bind(s),
            Val::Float(f) => q.bind(f),
            Val::Int(i) => q.bind(i),
            Val::Bool(b) => q.bind(b),
            Val::Json(j) => D::bind_json(q, j),
            Val::Arr(a) => D::bind_arr(q, a),
            Val::Time(t) => D::bind_time(q, t),
        };
    }
    q
}

impl<D> SqlBackend for D
where
    D: SqlDialect,
    <D::DB as Database>::Arguments: IntoArguments<D::DB>,
    for<'c> &'c mut <D::DB as Database>::Connection: Executor<'c, Database = D::DB>,
    for<'t> Option<String>: Encode<'t, D::DB> + Type<D::DB>,
    for<'t> Option<f64>: Encode<'t, D::DB> + Type<D::DB>,
    for<'t> Option<i64>: Encode<'t, D::DB> + Type<D::DB>,
    for<'t> Option<bool>: Encode<'t, D::DB> + Type<D::DB>,
    for<'a> RowGet<'a, D>: GetCol,
{
    type Tx = sqlx::Transaction<'static, D::DB>;

    async fn begin(&self) -> Result<Self::Tx, StoreError> {
        Ok(self.pool().begin().await?)
    }

    async fn commit(tx: Self::Tx) -> Result<(), StoreError> {
        Ok(tx.commit().await?)
    }

    async fn run(&self, tx: Option<&mut Self::Tx>, s: Stmt) -> Result<u64, StoreError> {
        let q = query::<D>(s, self.transaction_pooling());
        let done = match tx {
            Some(tx) => q.execute(&mut **tx).await?,
            None if self.transaction_pooling() => {
                let mut tx = self.pool().begin().await?;
                let done = q.execute(&mut *tx).await?;
                tx.commit().await?;
                done
            }
            None => q.execute(self.pool()).await?,
        };
        Ok(D::affected(&done))
    }

    async fn rows<T: Send>(
        &self,
        tx: Option<&mut Self::Tx>,
        s: Stmt,
        read: fn(&dyn GetCol) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let q = query::<D>(s, self.transaction_pooling());
        let rows = match tx {
            Some(tx) => q.fetch_all(&mut **tx).await?,
            None if self.transaction_pooling() => {
                let mut tx = self.pool().begin().await?;
                let rows = q.fetch_all(&mut *tx).await?;
                tx.commit().await?;
                rows
            }
            None => q.fetch_all(self.pool()).await?,
        };
        rows.iter().map(|r| read(&RowGet::<D>(r))).collect()
    }
}

/// A row of dialect `D`'s database, read through [`GetCol`].
pub struct RowGet<'a, D: SqlDialect + ?Sized>(pub &'a <D::DB as Database>::Row);

impl<D: SqlDialect + ?Sized> RowGet<'_, D> {
    /// Column `col` as `T`; a missing column reads as `None`.
    ///
    /// Errors: [`StoreError::Db`] when the value does not decode as `T`.
    pub fn get<T>(&self, col: &str) -> Result<Option<T>, StoreError>
    where
        for<'r> T: Decode<'r, D::DB> + Type<D::DB>,
        for<'s> &'s str: ColumnIndex<<D::DB as Database>::Row>,
    {
        use sqlx::Row;
        match self.0.try_get::<Option<T>, _>(col) {
            Ok(v) => Ok(v),
            Err(sqlx::Error::ColumnNotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

impl<D: SqlDialect> GetCol for RowGet<'_, D>
where
    for<'r> String: Decode<'r, D::DB> + Type<D::DB>,
    for<'r> f64: Decode<'r, D::DB> + Type<D::DB>,
    for<'r> bool: Decode<'r, D::DB> + Type<D::DB>,
    for<'s> &'s str: ColumnIndex<<D::DB as Database>::Row>,
{
    fn text(&self, col: &str) -> Result<Option<String>, StoreError> {
        self.get::<String>(col)
    }
    fn float(&self, col: &str) -> Result<Option<f64>, StoreError> {
        self.get::<f64>(col)
    }
    fn int(&self, col: &str) -> Result<Option<i64>, StoreError> {
        D::int(self, col)
    }
    fn boolean(&self, col: &str) -> Result<Option<bool>, StoreError> {
        self.get::<bool>(col)
    }
    fn json(&self, col: &str) -> Result<Value, StoreError> {
        D::json(self, col)
    }
    fn arr(&self, col: &str) -> Result<Vec<String>, StoreError> {
        D::arr(self, col)
    }
    fn time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        D::time(self, col)
    }
}
