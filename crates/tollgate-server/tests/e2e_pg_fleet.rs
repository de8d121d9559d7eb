//! End-to-end: Postgres shared by a fleet of real `tollgate` processes.
//!
//! - Replicas started at the same moment on a fresh, empty database all come up (migrations
//!   run under one advisory lock) and leave LiteLLM's schema complete.
//! - The gateway works through PgBouncer in transaction pooling mode (`pgbouncer=true` in the
//!   URL, as with Prisma): migrate, `/key/generate`, governed requests, spend logs, daily
//!   roll-ups, and a restart that loads it all back, with fewer server connections than the
//!   gateway's pool has clients.
//!
//! Mock token rule (crates/tollgate-mock/README.md): `"hello"` with `max_tokens: 8` costs 5
//! prompt + 8 completion tokens, so [`C1`] USD on the `priced` deployment.
//!
//! Run when `TOLLGATE_TEST_DATABASE_URL` is set (each test in a fresh database); the PgBouncer
//! test also needs `pgbouncer` on `PATH` (`apt-get install -y pgbouncer`; `.ci/run` installs it)
//! and says so when it is missing.
#![expect(
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;
#[path = "common/pgbouncer.rs"]
mod pgb;

use std::sync::Arc;

use gov::*;
use serde_json::json;
use sqlx::postgres::PgConnectOptions;

/// Input price of the `priced` deployment, USD per token.
const X: f64 = 0.001;
/// Output price of the `priced` deployment, USD per token.
const Y: f64 = 0.002;
/// Cost of one `"hello"` / `max_tokens: 8` call on `priced`: 5 × X + 8 × Y.
const C1: f64 = 0.021;

fn priced() -> Dep<'static> {
    Dep {
        group: "priced",
        deployment: "priced",
        upstream: "mock-gpt",
        id: "dep-priced",
        input_cost: X,
        output_cost: Y,
    }
}

/// Every table of Tollgate's catalogue is in `db`'s `public` schema.
async fn assert_schema_complete(db: &PgDb) {
    let tables = db.tables().await;
    for t in tollgate_governance::store::schema::TABLES {
        assert!(
            tables.iter().any(|x| x == t.name),
            "table {} missing: {tables:?}",
            t.name
        );
    }
}

/// Starts `n` gateways with `config` at the same moment (one blocking thread each).
async fn start_at_once(config: &str, n: usize) -> Vec<GovGateway> {
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let starts: Vec<_> = (0..n)
        .map(|_| {
            let (config, barrier) = (config.to_owned(), Arc::clone(&barrier));
            tokio::task::spawn_blocking(move || {
                barrier.wait();
                GovGateway::start(&config)
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for s in starts {
        out.push(s.await.expect("a replica started"));
    }
    out
}

/// Three replicas on one fresh database, started together: each comes up (none dies on
/// `pg_type_typname_nsp_index`), the schema is complete, and each serves a governed request
/// whose spend lands in LiteLLM's tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_started_at_once_on_a_fresh_database_all_come_up_postgres() {
    let Some(db) = PgDb::create("fleet_start").await else {
        return;
    };
    let m = mock().await;
    let cfg = config(&m.base_url(), &[priced()], "", Some(&db.url));
    let mut gws = start_at_once(&cfg, 3).await;
    assert_schema_complete(&db).await;
    let mut hashes = Vec::new();
    for gw in &gws {
        let (key, hash) = generate_key(gw, json!({})).await;
        let r = chat(gw, &key, &chat_body("priced", "hello", 8)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(same_dollars(r.header_f64("x-litellm-response-cost"), C1));
        hashes.push(hash);
    }
    for gw in &mut gws {
        assert!(gw.stop().await, "graceful shutdown");
        let log = gw.log();
        assert!(!log.contains("duplicate key"), "{log}");
    }
    let tokens = db.token_rows().await;
    let logs = db.spend_rows().await;
    assert_eq!(logs.len(), 3, "{logs:?}");
    for h in &hashes {
        let spend = tokens.iter().find(|(t, _)| t == h).map(|(_, s)| *s);
        assert!(spend.is_some_and(|s| same_dollars(s, C1)), "{h}: {spend:?}");
        let rows: Vec<_> = logs.iter().filter(|(k, _)| k == h).collect();
        assert_eq!(rows.len(), 1, "{h}: {logs:?}");
        assert!(same_dollars(rows[0].1, C1));
    }
}

/// `(spend, api_requests, prompt_tokens, completion_tokens)` of the one
/// `"LiteLLM_DailyUserSpend"` row of `user`.
async fn daily_user(db: &PgDb, user: &str) -> (f64, i64, i64, i64) {
    let mut c = db.connect().await;
    let rows: Vec<(f64, i64, i64, i64)> = sqlx::query_as(
        "SELECT spend::float8, api_requests::int8, prompt_tokens::int8, completion_tokens::int8 FROM \"LiteLLM_DailyUserSpend\" WHERE user_id = $1",
    )
    .bind(user)
    .fetch_all(&mut c)
    .await
    .expect("read LiteLLM_DailyUserSpend");
    let _ = sqlx::Connection::close(c).await;
    assert_eq!(
        rows.len(),
        1,
        "one roll-up row for the user and day: {rows:?}"
    );
    rows[0]
}

/// `n` governed calls at once as `key`; asserts each is 200 and returns the sum of their
/// `x-litellm-response-cost`.
async fn fire(gw: &GovGateway, key: &str, n: usize) -> f64 {
    let body = chat_body("priced", "hello", 8);
    let calls: Vec<_> = (0..n).map(|_| chat(gw, key, &body)).collect();
    let mut cost = 0.0;
    for r in futures_util::future::join_all(calls).await {
        assert_eq!(r.status, 200, "{}", r.text);
        cost += r.header_f64("x-litellm-response-cost");
    }
    cost
}

/// The gateway through PgBouncer (transaction pooling, 2 server connections for a gateway pool
/// of 6): it migrates a fresh database, generates a key, serves 24 concurrent governed calls
/// whose spend-log rows, key spend and daily roll-up all hold 24 × C1, and after a restart
/// (everything loaded back through PgBouncer) serves one more.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gateway_works_through_pgbouncer_transaction_pooling_postgres() {
    let Some(db) = PgDb::create("pgbouncer").await else {
        return;
    };
    if !pgb::installed_or_skip(&skip::test_name("pgbouncer")) {
        return;
    }
    let server: PgConnectOptions = std::env::var("TOLLGATE_TEST_DATABASE_URL")
        .expect("set: PgDb was created")
        .parse()
        .expect("TOLLGATE_TEST_DATABASE_URL parses");
    let database: PgConnectOptions = db.url.parse().expect("the test database URL parses");
    let mut bouncer = pgb::PgBouncer::start(&server, 2);
    let url = bouncer.url(
        server.get_username(),
        database.get_database().expect("a database name"),
    );
    let m = mock().await;
    let mut cfg = config(&m.base_url(), &[priced()], "", Some(&url));
    cfg.push_str("  database_connection_pool_limit: 6\n  database_connection_timeout: 30\n");

    let mut gw = GovGateway::start(&cfg);
    assert_schema_complete(&db).await;
    let (key, hash) = generate_key(&gw, json!({"user_id": "pgb-user"})).await;
    let cost = fire(&gw, &key, 24).await;
    assert!(same_dollars(cost, 24.0 * C1), "{cost}");
    let rows = spend_logs_n(&gw, &hash, 24).await;
    assert_eq!(rows.len(), 24);
    assert!(same_dollars(rows_spend(&rows), 24.0 * C1));
    let spend = key_spend_eventually(&gw, &key, 24.0 * C1).await;
    assert!(same_dollars(spend, 24.0 * C1), "{spend}");
    assert!(gw.stop().await, "graceful shutdown");

    // what PgBouncer let through, read from Postgres directly
    let logs: Vec<_> = db
        .spend_rows()
        .await
        .into_iter()
        .filter(|(k, _)| *k == hash)
        .collect();
    assert_eq!(logs.len(), 24);
    let token = db.token_rows().await;
    assert!(
        token
            .iter()
            .any(|(t, s)| *t == hash && same_dollars(*s, 24.0 * C1)),
        "{token:?}"
    );
    let (d_spend, requests, prompt, completion) = daily_user(&db, "pgb-user").await;
    assert!(same_dollars(d_spend, 24.0 * C1), "{d_spend}");
    assert_eq!((requests, prompt, completion), (24, 24 * 5, 24 * 8));

    // a restart loads the key and its spend back through PgBouncer
    let mut gw = GovGateway::start(&cfg);
    assert!(same_dollars(key_spend(&gw, &key).await, 24.0 * C1));
    assert!(same_dollars(fire(&gw, &key, 1).await, C1));
    assert_eq!(spend_logs_n(&gw, &hash, 25).await.len(), 25);
    assert!(gw.stop().await, "graceful shutdown");
    let log = gw.log();
    assert!(
        !log.contains("prepared statement") && !log.contains("database error"),
        "{log}"
    );
    let (d_spend, requests, _, _) = daily_user(&db, "pgb-user").await;
    assert!(same_dollars(d_spend, 25.0 * C1), "{d_spend}");
    assert_eq!(requests, 25);
    bouncer.stop();
}
