//! Postgres shared by a fleet: several stores (as several replicas would hold) migrating one
//! fresh schema at once, writing spend-log batches and daily roll-ups for the same key and day
//! at once, and each pool bounded. Run when `TOLLGATE_TEST_DATABASE_URL` is set, each in its own
//! schema dropped afterwards.

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use serde_json::json;
use sqlx::Row;

use super::pg_tests::{drop_schema, pg_empty_store, schema_store};
use super::schema::TABLES;
use super::*;

/// Replicas in each test.
pub(super) const N: usize = 3;

/// Every catalogue table with every column, and the five daily unique indexes, in `s`'s
/// schema.
pub(super) async fn assert_schema_complete(s: &PostgresStore) {
    for t in TABLES {
        let cols: Vec<String> = sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
        )
        .bind(t.name)
        .fetch_all(s.pool())
        .await
        .unwrap();
        for (c, _, _) in t.columns {
            assert!(cols.iter().any(|h| h == c), "{}.{c} missing", t.name);
        }
        assert_eq!(cols.len(), t.columns.len(), "{}: {cols:?}", t.name);
    }
    let idx: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'tollgate_daily_%_uniq'",
    )
    .fetch_one(s.pool())
    .await
    .unwrap();
    assert_eq!(idx, 5);
}

/// `stores` migrate at the same moment (a barrier releases them together): each must succeed.
pub(super) async fn migrate_at_once(stores: &[PostgresStore], round: usize) {
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(stores.len()));
    let runs: Vec<_> = stores
        .iter()
        .cloned()
        .map(|s| {
            let start = std::sync::Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                s.migrate().await
            })
        })
        .collect();
    for (i, r) in futures_join(runs).await.into_iter().enumerate() {
        assert!(r.is_ok(), "round {round}: replica {i}: {r:?}");
    }
}

/// N stores migrate one empty schema at the same moment: all succeed (the advisory lock
/// serialises them; without it two fail on `pg_type_typname_nsp_index`), and the schema is
/// complete. A second round at once (every table there) is a no-op for all.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn pg_replicas_migrating_at_once_all_come_up() {
    let Some((first, url, schema)) = pg_empty_store("fleet_migrate").await else {
        return;
    };
    let mut stores = vec![first];
    for _ in 1..N {
        stores.push(schema_store(&url, &schema).await);
    }
    for round in 0..2 {
        migrate_at_once(&stores, round).await;
        assert_schema_complete(&stores[0]).await;
    }
    for s in &stores {
        s.pool().close().await;
    }
    drop_schema(&url, &schema).await;
}

pub(super) async fn futures_join<T>(hs: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(hs.len());
    for h in hs {
        out.push(h.await.unwrap());
    }
    out
}

/// Spend-log row `i` of replica `replica`: key `hk`, user `u1`, team `t1`, one model, one day.
/// Spend is a multiple of 1/1024 USD, so every sum is exact in any order. Every third row
/// repeats a response id another replica also got (an upstream with repeating ids), under its
/// own call id.
fn fleet_row(replica: usize, i: usize) -> SpendLogRow {
    let call = format!("call-{replica}-{i}");
    let request_id = if i.is_multiple_of(3) {
        format!("chatcmpl-shared-{i}")
    } else {
        call.clone()
    };
    let at = Utc.with_ymd_and_hms(2026, 5, 1, 12, 0, 0).unwrap();
    SpendLogRow {
        request_id,
        call_type: "acompletion".into(),
        api_key: "hk".into(),
        spend: ((i % 7) + 1) as f64 / 1024.0,
        prompt_tokens: 10 + i as i64,
        completion_tokens: 2,
        total_tokens: 12 + i as i64,
        start_time: at,
        end_time: at,
        model: "gpt-4o".into(),
        model_group: Some("gpt-4o".into()),
        custom_llm_provider: Some("openai".into()),
        user: Some("u1".into()),
        team_id: Some("t1".into()),
        status: Some("success".into()),
        litellm_call_id: Some(call),
        metadata: json!({}),
        request_tags: json!(["prod"]),
        ..SpendLogRow::default()
    }
}

/// `writers` each write 8 batches of 24 rows for the same key and day at once, every batch
/// twice (a retry after a commit whose answer was lost); `check` reads the result: every
/// attempt is stored once, and the spend-log sums and each daily roll-up equal the sum of what
/// was sent, none lost.
pub(super) async fn spend_at_once(writers: &[PostgresStore], check: &PostgresStore) {
    const BATCHES: usize = 8;
    const ROWS: usize = 24;
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(writers.len()));
    let runs: Vec<_> = writers
        .iter()
        .cloned()
        .enumerate()
        .map(|(replica, s)| {
            let start = std::sync::Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let mut inserted = 0;
                for b in 0..BATCHES {
                    let batch: Vec<SpendLogRow> = (b * ROWS..(b + 1) * ROWS)
                        .map(|i| fleet_row(replica, i))
                        .collect();
                    inserted += s.insert_spend_logs(&batch).await.unwrap();
                    // the retry adds nothing
                    assert_eq!(s.insert_spend_logs(&batch).await.unwrap(), 0);
                }
                inserted
            })
        })
        .collect();
    let inserted: u64 = futures_join(runs).await.into_iter().sum();
    let rows: Vec<SpendLogRow> = (0..writers.len())
        .flat_map(|r| (0..BATCHES * ROWS).map(move |i| fleet_row(r, i)))
        .collect();
    let want_spend: f64 = rows.iter().map(|r| r.spend).sum();
    let want_prompt: i64 = rows.iter().map(|r| r.prompt_tokens).sum();
    let n = rows.len() as i64;
    assert_eq!(inserted, rows.len() as u64);
    let (count, spend): (i64, f64) =
        sqlx::query_as("SELECT COUNT(*), SUM(spend)::float8 FROM \"LiteLLM_SpendLogs\"")
            .fetch_one(check.pool())
            .await
            .unwrap();
    assert_eq!((count, spend), (n, want_spend));
    assert_eq!(check.spend_since(None).await.unwrap(), want_spend);
    for (table, col, id) in [
        ("LiteLLM_DailyUserSpend", "user_id", "u1"),
        ("LiteLLM_DailyTeamSpend", "team_id", "t1"),
        ("LiteLLM_DailyTagSpend", "tag", "prod"),
    ] {
        let sql = format!(
            "SELECT COUNT(*) OVER () AS n, spend::float8 AS spend, api_requests, successful_requests, prompt_tokens, completion_tokens, date FROM \"{table}\" WHERE \"{col}\" = $1"
        );
        let r = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_one(check.pool())
            .await
            .unwrap();
        assert_eq!(
            r.get::<i64, _>("n"),
            1,
            "{table}: one row for the key and day"
        );
        assert_eq!(r.get::<f64, _>("spend"), want_spend, "{table}");
        assert_eq!(r.get::<i64, _>("api_requests"), n, "{table}");
        assert_eq!(r.get::<i64, _>("successful_requests"), n, "{table}");
        assert_eq!(r.get::<i64, _>("prompt_tokens"), want_prompt, "{table}");
        assert_eq!(r.get::<i64, _>("completion_tokens"), 2 * n, "{table}");
        assert_eq!(r.get::<String, _>("date"), "2026-05-01", "{table}");
    }
}

/// N stores write spend-log batches and daily roll-ups for one key and day at once: nothing
/// lost, nothing counted twice ([`spend_at_once`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn pg_replicas_writing_spend_at_once_lose_and_double_nothing() {
    let Some((first, url, schema)) = pg_empty_store("fleet_spend").await else {
        return;
    };
    first.migrate().await.unwrap();
    let mut stores = vec![first];
    for _ in 1..N {
        stores.push(schema_store(&url, &schema).await);
    }
    spend_at_once(&stores, &stores[0]).await;
    for s in &stores {
        s.pool().close().await;
    }
    drop_schema(&url, &schema).await;
}

/// The pool opens at most `database_connection_pool_limit` connections however many queries
/// wait (counted in `pg_stat_activity` by the pool's `application_name`), the URL's
/// `connection_limit` yields to the setting, and a wait past `database_connection_timeout`
/// fails instead of hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_pool_is_bounded_by_the_settings() {
    let Some(url) = crate::test_support::postgres_url("pg_pool_is_bounded_by_the_settings") else {
        return;
    };
    let app = format!("tg_pool_{}", std::process::id());
    let sep = if url.contains('?') { '&' } else { '?' };
    let pooled = format!("{url}{sep}application_name={app}&connection_limit=8");
    let settings = PgPoolSettings {
        max_connections: Some(2),
        acquire_timeout_secs: Some(0.3),
    };
    let s = PostgresStore::connect_pooled(&pooled, &settings)
        .await
        .unwrap();
    assert_eq!(s.max_connections(), 2);
    assert!(!s.pgbouncer());
    let sleeps: Vec<_> = (0..6)
        .map(|_| {
            let pool = s.pool().clone();
            tokio::spawn(async move {
                // each waits at most 0.3 s for a connection: run them two at a time
                let _ = sqlx::query("SELECT pg_sleep(0.1)").execute(&pool).await;
            })
        })
        .collect();
    let observer = PostgresStore::connect(&url).await.unwrap();
    let mut most = 0;
    for _ in 0..10 {
        let open: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = $1")
                .bind(&app)
                .fetch_one(observer.pool())
                .await
                .unwrap();
        most = most.max(open);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    futures_join(sleeps).await;
    assert!((1..=2).contains(&most), "{most} connections open");
    // both connections held: the third acquire times out after ~0.3 s
    let a = s.pool().acquire().await.unwrap();
    let b = s.pool().acquire().await.unwrap();
    let t0 = Instant::now();
    let third = s.pool().acquire().await;
    assert!(matches!(third, Err(sqlx::Error::PoolTimedOut)), "{third:?}");
    assert!(
        t0.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t0.elapsed()
    );
    drop((a, b));
    s.pool().close().await;
    observer.pool().close().await;
}
