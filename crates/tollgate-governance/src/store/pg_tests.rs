//! Postgres tests: run when `TOLLGATE_TEST_DATABASE_URL` is set (e.g.
//! `postgres://postgres@127.0.0.1:5432/test`), each in its own schema dropped afterwards;
//! otherwise they print that they were skipped.

use std::sync::Arc;

use sqlx::postgres::PgConnectOptions;

use super::tests::{round_trip, spend_logs_case, write_behind_case};
use super::*;

async fn pg_store(name: &str) -> Option<(PostgresStore, String, String)> {
    let Ok(url) = std::env::var("TOLLGATE_TEST_DATABASE_URL") else {
        println!("SKIPPED postgres test {name}: TOLLGATE_TEST_DATABASE_URL is not set");
        return None;
    };
    let schema = format!("tollgate_gov_{name}_{}", std::process::id());
    let admin = PostgresStore::connect(&url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
    )))
    .execute(admin.pool())
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
        .execute(admin.pool())
        .await
        .unwrap();
    admin.pool().close().await;
    let opts: PgConnectOptions = url.parse().unwrap();
    let s = PostgresStore::connect_with(opts.options([("search_path", schema.as_str())]))
        .await
        .unwrap();
    s.migrate().await.unwrap();
    s.migrate().await.unwrap(); // idempotent
    Some((s, url, schema))
}

async fn drop_schema(url: &str, schema: &str) {
    let admin = PostgresStore::connect(url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
    )))
    .execute(admin.pool())
    .await
    .unwrap();
    admin.pool().close().await;
}

#[tokio::test]
async fn pg_entities_round_trip() {
    let Some((s, url, schema)) = pg_store("round_trip").await else {
        return;
    };
    round_trip(&s).await;
    // tables carry LiteLLM's names and types
    let ty: String = sqlx::query_scalar(
        "SELECT data_type::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'LiteLLM_VerificationToken' AND column_name = 'models'",
    )
    .fetch_one(s.pool())
    .await
    .unwrap();
    assert_eq!(ty, "ARRAY");
    s.pool().close().await;
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn pg_spend_logs() {
    let Some((s, url, schema)) = pg_store("spend_logs").await else {
        return;
    };
    spend_logs_case(&s).await;
    s.pool().close().await;
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn pg_write_behind() {
    let Some((s, url, schema)) = pg_store("write_behind").await else {
        return;
    };
    let pool = s.pool().clone();
    write_behind_case(Arc::new(s)).await;
    pool.close().await;
    drop_schema(&url, &schema).await;
}
