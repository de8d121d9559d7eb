//! Postgres tests: run when `TOLLGATE_TEST_DATABASE_URL` is set (e.g.
//! `postgres://postgres@127.0.0.1:5432/test`), each in its own schema dropped afterwards;
//! otherwise they report their skip (`crate::test_support::skipped`).

use std::sync::Arc;

use sqlx::postgres::PgConnectOptions;

use super::tests::{
    Daily, DailyDb, LITELLM_DAILY_USER_DDL, daily_rollup_case, daily_select, round_trip,
    spend_logs_case, write_behind_case,
};
use super::*;

async fn pg_store(name: &str) -> Option<(PostgresStore, String, String)> {
    let (s, url, schema) = pg_empty_store(name).await?;
    s.migrate().await.unwrap();
    s.migrate().await.unwrap(); // idempotent
    Some((s, url, schema))
}

/// A store on a fresh, empty schema (not migrated): `(store, server URL, schema)`.
pub(super) async fn pg_empty_store(name: &str) -> Option<(PostgresStore, String, String)> {
    let url =
        crate::test_support::postgres_url(&format!("tollgate-governance store postgres {name}"))?;
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
    let s = schema_store(&url, &schema).await;
    Some((s, url, schema))
}

/// Another store on `schema` (as a second replica would be).
pub(super) async fn schema_store(url: &str, schema: &str) -> PostgresStore {
    let opts: PgConnectOptions = url.parse().unwrap();
    PostgresStore::connect_with(opts.options([("search_path", schema)]))
        .await
        .unwrap()
}

pub(super) async fn drop_schema(url: &str, schema: &str) {
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

#[async_trait::async_trait]
impl DailyDb for PostgresStore {
    async fn exec(&self, sql: &str) {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(self.pool())
            .await
            .unwrap();
    }
    async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(self.pool())
            .await
            .unwrap()
    }
    async fn daily(&self, table: &str, entity: &str) -> Vec<Daily> {
        use sqlx::Row;
        let rows = sqlx::query(sqlx::AssertSqlSafe(daily_select(table, entity)))
            .fetch_all(self.pool())
            .await
            .unwrap();
        rows.iter()
            .map(|r| Daily {
                entity: r.get(0),
                date: r.get(1),
                api_key: r.get(2),
                model: r.get(3),
                model_group: r.get(4),
                provider: r.get(5),
                mcp: r.get(6),
                endpoint: r.get(7),
                tokens: (r.get(8), r.get(9), r.get(10), r.get(11)),
                spend: r.get(12),
                requests: (r.get(13), r.get(14), r.get(15)),
            })
            .collect()
    }
}

#[tokio::test]
async fn pg_daily_rollups() {
    let Some((s, url, schema)) = pg_store("daily").await else {
        return;
    };
    daily_rollup_case(&s, &s).await;
    s.pool().close().await;
    drop_schema(&url, &schema).await;
}

/// A daily table and unique index LiteLLM created: migrate (twice) adds Tollgate's index next
/// to LiteLLM's, and the upserts work on LiteLLM's NOT NULL columns.
#[tokio::test]
async fn pg_daily_rollups_on_a_litellm_created_table() {
    let Some((s, url, schema)) = pg_empty_store("daily_litellm").await else {
        return;
    };
    for sql in LITELLM_DAILY_USER_DDL {
        s.exec(sql).await;
    }
    s.migrate().await.unwrap();
    s.migrate().await.unwrap();
    let both = s
        .count(
            "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'LiteLLM_DailyUserSpend' \
             AND indexname IN ('LiteLLM_DailyUserSpend_user_id_date_api_key_model_custom_ll_key', 'tollgate_daily_user_spend_uniq')",
        )
        .await;
    assert_eq!(both, 2);
    daily_rollup_case(&s, &s).await;
    s.pool().close().await;
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn pg_model_spend_is_merged_per_model() {
    let Some((s, url, schema)) = pg_store("model_spend").await else {
        return;
    };
    super::model_spend_tests::model_spend_case(&s).await;
    s.pool().close().await;
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn pg_repeated_response_ids_keep_every_attempt() {
    let Some((s, url, schema)) = pg_store("repeated_ids").await else {
        return;
    };
    super::spend_ids_tests::repeated_response_ids_case(&s, &s).await;
    s.pool().close().await;
    drop_schema(&url, &schema).await;
}

#[tokio::test]
async fn pg_spend_groups() {
    let Some((s, url, schema)) = pg_store("spend_groups").await else {
        return;
    };
    super::spend_groups_tests::spend_groups_case(&s).await;
    s.pool().close().await;
    drop_schema(&url, &schema).await;
}
