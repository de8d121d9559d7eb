//! Trying a store without using it (`tollgate check-config --connect`): one connection, one
//! read-only query, nothing created, migrated or written.

use std::path::Path;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use super::StoreError;

/// Connects to the Postgres database of `url` and returns the server's version
/// (`SHOW server_version`, e.g. `16.4`). A connection succeeds only when the database exists
/// and the credentials are accepted, so this checks both.
///
/// Errors: [`StoreError::Db`]: a URL that does not parse, an unreachable server, refused
/// credentials, a missing database (SQLSTATE `3D000`,
/// [`super::SQLSTATE_NO_SUCH_DATABASE`]). The caller bounds the wait.
///
/// Prisma's URL parameters are read as the store reads them ([`super::PgUrl`]): with
/// `pgbouncer=true` the probe connects as the store would through PgBouncer (no named prepared
/// statement, no `extra_float_digits` at startup, the query in a transaction).
pub async fn probe_postgres(url: &str) -> Result<String, StoreError> {
    let url = super::PgUrl::parse(url);
    let opts: PgConnectOptions = url.url.parse()?;
    let opts = if url.pgbouncer {
        opts.statement_cache_capacity(0)
            .extra_float_digits(None::<i8>)
    } else {
        opts
    };
    let mut conn = PgConnection::connect_with(&opts).await?;
    let mut tx = conn.begin().await?;
    let version: String = sqlx::query_scalar("SHOW server_version")
        .persistent(!url.pgbouncer)
        .fetch_one(&mut *tx)
        .await?;
    tx.rollback().await?;
    let _ = conn.close().await;
    Ok(version)
}

/// Opens the existing SQLite file at `path` read-only and returns how many tables it has
/// (0 for a new, empty file).
///
/// Errors: [`StoreError::Db`] when the file cannot be opened or is not an SQLite database.
pub async fn probe_sqlite(path: &Path) -> Result<u64, StoreError> {
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .create_if_missing(false);
    let mut conn = SqliteConnection::connect_with(&opts).await?;
    let tables: i64 = sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
        .fetch_one(&mut conn)
        .await?;
    let _ = conn.close().await;
    Ok(u64::try_from(tables).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_sqlite_store_is_read_not_written() {
        let dir = std::env::temp_dir().join(format!("tollgate-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("t.db");
        let _ = std::fs::remove_file(&db);
        let store = crate::store::SqliteStore::open(&db.to_string_lossy())
            .await
            .unwrap();
        crate::store::GovernanceStore::migrate(&store)
            .await
            .unwrap();
        let tables = probe_sqlite(&db).await.unwrap();
        assert!(tables >= 10, "LiteLLM's tables: {tables}");

        let junk = dir.join("junk.db");
        std::fs::write(
            &junk,
            b"this is not a database, it is a text file of some length",
        )
        .unwrap();
        let e = probe_sqlite(&junk).await.unwrap_err().to_string();
        assert!(e.contains("not a database"), "{e}");
        let missing = dir.join("missing.db");
        assert!(probe_sqlite(&missing).await.is_err());
        assert!(!missing.exists(), "a probe creates nothing");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_postgres_url_that_does_not_parse_is_an_error() {
        let e = probe_postgres("postgres://u:pw@[::1/db").await.unwrap_err();
        assert!(!e.to_string().contains("pw"), "{e}");
    }
}
