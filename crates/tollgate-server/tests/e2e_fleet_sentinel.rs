//! End-to-end: a fleet whose Redis is found through Sentinel (LiteLLM's
//! `REDIS_SENTINEL_NODES` + `REDIS_SERVICE_NAME`). Two real `tollgate` replicas share one
//! Postgres database and a primary `redis-server` that a Sentinel started by the test watches;
//! the replicas are given only the Sentinel. Through it they share:
//!
//! - the counters: a key's `rpm_limit` of 2 admits one request on each replica, then refuses
//!   the third on either (429, the v3 limiter's message);
//! - the identity feed: a key blocked through replica 2 is refused on replica 1, which held it
//!   in its cache, within 1 s;
//! - the cooldowns: a deployment that answers 429 on replica 1 is skipped by replica 2 from
//!   then on (every request goes to the group's other deployment).
//!
//! Run when `TOLLGATE_TEST_DATABASE_URL` and `TOLLGATE_TEST_REDIS_URL` are set (the Redis
//! tests' switch; this one starts its own servers and skips without `redis-server`).
#[path = "common/governance.rs"]
mod gov;
#[path = "common/redis.rs"]
mod redis_support;

use std::time::{Duration, Instant};

use gov::*;
use serde_json::json;

fn deps() -> Vec<Dep<'static>> {
    let mut good = flat_dep("pair", 0.001);
    good.deployment = "pair-good";
    good.id = "pair-good";
    let mut bad = flat_dep("pair", 0.001);
    bad.deployment = "pair-bad";
    bad.id = "pair-bad";
    vec![flat_dep("flat", 0.001), good, bad]
}

fn sentinel_config(mock: &str, db: &PgDb, nodes: &str, prefix: &str) -> String {
    // cooldowns on, as in LiteLLM by default: a 429 cools its deployment at once
    let mut c = config(mock, &deps(), "  cooldown_time: 30\n", Some(&db.url));
    c = c.replace("  disable_cooldowns: true\n", "");
    c.push_str(&format!(
        "environment_variables:\n  REDIS_SENTINEL_NODES: '{nodes}'\n  REDIS_SERVICE_NAME: \"tgtest\"\n  TOLLGATE_REDIS_KEY_PREFIX: \"{prefix}\"\n  TOLLGATE_IDENTITY_RECONCILE_SECONDS: \"0\"\n"
    ));
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fleet_through_sentinel_shares_counters_identities_and_cooldowns_postgres() {
    let Some(db) = PgDb::create("fleet_sentinel").await else {
        return;
    };
    if redis_support::redis_url("fleet_sentinel").is_none() {
        return;
    }
    let Some(sentinel) = redis_support::private_sentinel("fleet_sentinel").await else {
        return;
    };
    let m = mock().await;
    let prefix = redis_support::unique_prefix("sentinel");
    let cfg = sentinel_config(&m.base_url(), &db, &sentinel.nodes_json(), &prefix);
    let (r1, r2) = (GovGateway::start(&cfg), GovGateway::start(&cfg));
    for gw in [&r1, &r2] {
        let log = gw.log();
        assert!(
            log.contains("identity changes shared with the fleet"),
            "{log}"
        );
        assert!(log.contains("sentinel service tgtest"), "{log}");
    }

    // counters: one RPM window for the fleet
    let (key, hash) = generate_key(&r1, json!({"rpm_limit": 2})).await;
    let body = chat_body("flat", "hello", 8);
    assert_eq!(chat(&r1, &key, &body).await.status, 200);
    assert_eq!(chat(&r2, &key, &body).await.status, 200);
    for gw in [&r1, &r2] {
        let r = chat(gw, &key, &body).await;
        assert_eq!(r.status, 429, "{}", r.text);
        let msg = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.starts_with(&format!(
                "Rate limit exceeded for api_key: {hash}. Limit type: requests. Current limit: 2, Remaining: 0."
            )),
            "{msg}"
        );
    }

    // identities: blocked through replica 2, refused on replica 1 (which holds the key)
    let (key, _) = generate_key(&r1, json!({})).await;
    assert_eq!(chat(&r1, &key, &body).await.status, 200);
    // replica 2 knows the key from its first request (a miss is looked up)
    assert_eq!(chat(&r2, &key, &body).await.status, 200);
    let b = post_as(&r2, MASTER, "/key/block", &json!({"key": key})).await;
    assert_eq!(b.status, 200, "{}", b.text);
    let t0 = Instant::now();
    let mut r = chat(&r1, &key, &body).await;
    while r.status != 401 && t0.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        r = chat(&r1, &key, &body).await;
    }
    assert_eq!(
        r.status,
        401,
        "still {} after {:?}: {}",
        r.status,
        t0.elapsed(),
        r.text
    );
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "took {:?}",
        t0.elapsed()
    );

    // cooldowns: pair-bad fails on replica 1; replica 2 then sends the group's requests to
    // pair-good only
    script_default(&m, "pair-bad", json!({"status": 429}));
    let pair = chat_body("pair", "hello", 8);
    let t0 = Instant::now();
    while upstream_calls(&m, "pair-bad").is_empty() && t0.elapsed() < Duration::from_secs(5) {
        let _ = chat(&r1, MASTER, &pair).await;
    }
    assert_eq!(
        upstream_calls(&m, "pair-bad").len(),
        1,
        "one failure cools it"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let good_before = upstream_calls(&m, "pair-good").len();
    for _ in 0..10 {
        let r = chat(&r2, MASTER, &pair).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    assert_eq!(
        upstream_calls(&m, "pair-bad").len(),
        1,
        "replica 2 skipped the cooled deployment"
    );
    assert_eq!(upstream_calls(&m, "pair-good").len(), good_before + 10);
    drop(sentinel);
}
