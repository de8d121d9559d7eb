//! End-to-end: identity changes reach every replica of a fleet. Three real `tollgate`
//! processes share one fresh Postgres database and one Redis (each test on its own
//! `TOLLGATE_REDIS_KEY_PREFIX`, so its own `<prefix>:changes` channel); what the management API
//! changes through one replica is in force on the others within 1 s, timed from the moment
//! the management call returned until a request on the other replica sees the change:
//!
//! - a key generated on replica 1 is accepted by replicas 2 and 3; blocked through replica 2
//!   it is a 401 "Key is blocked" on 1 and 3; unblocked, accepted again; deleted, a 401
//!   everywhere;
//! - a team's budget lowered on replica 3 refuses (422 `budget_exceeded`) on replica 1, where
//!   the team already spent more than the new cap;
//! - a deployment added through `/model/new` on replica 1 is callable on replica 2, and gone
//!   from it once deleted;
//! - with the feed out of reach (a replica on another prefix hears nothing) the periodic
//!   reconcile still brings the change, within its period (1 s here);
//! - a key generated on one replica is accepted by another on its first request, before any
//!   announcement: a key missing from a replica's cache is looked up in the database.
//!
//! Mock token rule (crates/tollgate-mock/README.md): `"hello"` with `max_tokens: 8` costs 5
//! prompt + 8 completion tokens, so [`C1`] USD on the `priced` deployment.
//!
//! Run when both `TOLLGATE_TEST_DATABASE_URL` and `TOLLGATE_TEST_REDIS_URL` are set; each
//! skipped test says which is missing.
#[path = "common/governance.rs"]
mod gov;

use std::io::Write;
use std::time::{Duration, Instant};

use gov::*;
use serde_json::json;

/// Input price of the `priced` deployment, USD per token.
const X: f64 = 0.001;
/// Output price of the `priced` deployment, USD per token.
const Y: f64 = 0.002;
/// Cost of one `"hello"` / `max_tokens: 8` call on `priced`: 5 × X + 8 × Y.
const C1: f64 = 0.021;
/// The bound a change must meet on every other replica.
const BOUND: Duration = Duration::from_secs(1);

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

/// `TOLLGATE_TEST_REDIS_URL`; `None` after reporting the skip.
fn redis_url(test: &str) -> Option<String> {
    let url = std::env::var("TOLLGATE_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        skip::skipped(test, "TOLLGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379");
    }
    url
}

/// A fresh prefix, so each test has its own channel on the shared Redis.
fn prefix() -> String {
    format!("tg-ident-{}", uuid::Uuid::new_v4().simple())
}

/// Deletes every key under a test's prefix when dropped. Declared before the test's gateways,
/// so it runs after they are killed (their last counter writes and routing syncs are in).
struct Cleanup {
    url: String,
    prefix: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Ok(mut c) = redis::Client::open(self.url.as_str()).and_then(|c| c.get_connection())
        else {
            return;
        };
        for pattern in [format!("{{{}}}*", self.prefix), format!("{}*", self.prefix)] {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query(&mut c)
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&keys).query(&mut c);
            }
        }
    }
}

/// A fresh prefix for this test and the guard that deletes its keys.
fn prefix_cleaned(url: &str) -> (String, Cleanup) {
    let p = prefix();
    let guard = Cleanup {
        url: url.to_owned(),
        prefix: p.clone(),
    };
    (p, guard)
}

/// The governed config on `db`, with Redis `redis` under `prefix` and the reconcile period
/// `reconcile` seconds (`"0"` = off: only the feed can carry a change).
fn fleet_config(mock: &str, db: &PgDb, redis: &str, prefix: &str, reconcile: &str) -> String {
    let mut c = config(mock, &[priced()], "", Some(&db.url));
    c.push_str(&format!(
        "environment_variables:\n  REDIS_URL: \"{redis}\"\n  TOLLGATE_REDIS_KEY_PREFIX: \"{prefix}\"\n  TOLLGATE_IDENTITY_RECONCILE_SECONDS: \"{reconcile}\"\n"
    ));
    c
}

/// Sends `call` every 10 ms until its status is `want`, for at most `limit`; returns the last
/// response and the time from the start until it had `want`.
async fn until_status<F, Fut>(limit: Duration, want: u16, mut call: F) -> (Resp, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Resp>,
{
    let t0 = Instant::now();
    loop {
        let r = call().await;
        if r.status == want || t0.elapsed() > limit {
            return (r, t0.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The chat call used to probe a key on a replica.
async fn probe(gw: &GovGateway, key: &str) -> Resp {
    chat(gw, key, &chat_body("priced", "hello", 8)).await
}

/// Asserts `r` is within [`BOUND`] and has status `want`; `what` names the change.
fn assert_within(what: &str, (r, took): &(Resp, Duration), want: u16) {
    // the measured time, shown with --nocapture
    let _ = writeln!(std::io::stderr().lock(), "{what}: {took:?}");
    assert_eq!(
        r.status, want,
        "{what}: still {} after {took:?}: {}",
        r.status, r.text
    );
    assert!(*took < BOUND, "{what}: took {took:?}");
}

/// Starts three replicas of `cfg`.
fn three(cfg: &str) -> [GovGateway; 3] {
    [
        GovGateway::start(cfg),
        GovGateway::start(cfg),
        GovGateway::start(cfg),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn key_lifecycle_reaches_every_replica_within_a_second_postgres() {
    let Some(db) = PgDb::create("fleet_identity_keys").await else {
        return;
    };
    let Some(redis) = redis_url("fleet_identity_keys") else {
        return;
    };
    let m = mock().await;
    let (p, _clean) = prefix_cleaned(&redis);
    let cfg = fleet_config(&m.base_url(), &db, &redis, &p, "0");
    let [r1, r2, r3] = three(&cfg);
    for gw in [&r1, &r2, &r3] {
        assert!(
            gw.log().contains("identity changes shared with the fleet"),
            "{}",
            gw.log()
        );
    }

    // generated on replica 1 → accepted by 2 and 3
    let (key, _hash) = generate_key(&r1, json!({"key_alias": "fleet"})).await;
    for (name, gw) in [("replica 2", &r2), ("replica 3", &r3)] {
        let got = until_status(BOUND * 2, 200, || probe(gw, &key)).await;
        assert_within(&format!("new key on {name}"), &got, 200);
        assert!(same_dollars(
            got.0.header_f64("x-litellm-response-cost"),
            C1
        ));
    }

    // blocked through replica 2 → 401 on 1 and 3
    let b = post_as(&r2, MASTER, "/key/block", &json!({"key": key})).await;
    assert_eq!(b.status, 200, "{}", b.text);
    for (name, gw) in [("replica 1", &r1), ("replica 3", &r3)] {
        let got = until_status(BOUND * 2, 401, || probe(gw, &key)).await;
        assert_within(&format!("blocked key on {name}"), &got, 401);
        let msg = got.0.body["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("Key is blocked"), "{name}: {}", got.0.text);
    }

    // unblocked through replica 3 → accepted on 1 and 2
    let u = post_as(&r3, MASTER, "/key/unblock", &json!({"key": key})).await;
    assert_eq!(u.status, 200, "{}", u.text);
    for (name, gw) in [("replica 1", &r1), ("replica 2", &r2)] {
        let got = until_status(BOUND * 2, 200, || probe(gw, &key)).await;
        assert_within(&format!("unblocked key on {name}"), &got, 200);
    }

    // deleted through replica 1 → 401 everywhere
    let d = post_as(&r1, MASTER, "/key/delete", &json!({"keys": [key]})).await;
    assert_eq!(d.status, 200, "{}", d.text);
    for (name, gw) in [("replica 1", &r1), ("replica 2", &r2), ("replica 3", &r3)] {
        let got = until_status(BOUND * 2, 401, || probe(gw, &key)).await;
        assert_within(&format!("deleted key on {name}"), &got, 401);
    }
    for gw in [&r1, &r2, &r3] {
        assert!(!gw.log().contains(&key), "a raw key was logged");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn team_budget_and_deployments_reach_every_replica_postgres() {
    let Some(db) = PgDb::create("fleet_identity_team").await else {
        return;
    };
    let Some(redis) = redis_url("fleet_identity_team") else {
        return;
    };
    let m = mock().await;
    let (p, _clean) = prefix_cleaned(&redis);
    let cfg = fleet_config(&m.base_url(), &db, &redis, &p, "0");
    let [r1, r2, r3] = three(&cfg);

    // the team spends C1 through replica 1
    let team = new_team(&r1, json!({"team_alias": "fleet", "max_budget": 1.0})).await;
    let (key, _) = generate_key(&r1, json!({"team_id": team})).await;
    let r = probe(&r1, &key).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(same_dollars(r.header_f64("x-litellm-response-cost"), C1));

    // management reads on replica 3 know the team too (its cache answers /team/info)
    let info = format!("/team/info?team_id={team}");
    let got = until_status(BOUND * 2, 200, || get_as(&r3, MASTER, &info)).await;
    assert_within("new team on replica 3", &got, 200);

    // its budget lowered below that on replica 3 → replica 1 refuses the team's next call
    let up = post_as(
        &r3,
        MASTER,
        "/team/update",
        &json!({"team_id": team, "max_budget": 0.01}),
    )
    .await;
    assert_eq!(up.status, 200, "{}", up.text);
    let got = until_status(BOUND * 2, 422, || probe(&r1, &key)).await;
    assert_within("lowered team budget on replica 1", &got, 422);
    assert_eq!(
        got.0.body["error"]["type"], "budget_exceeded",
        "{}",
        got.0.text
    );
    let msg = got.0.body["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("Max budget: 0.01"), "{msg}");

    // a deployment added on replica 1 → callable on replica 2
    let (caller, _) = generate_key(&r1, json!({})).await;
    let new = post_as(
        &r1,
        MASTER,
        "/model/new",
        &json!({
            "model_name": "fleet-added",
            "litellm_params": {
                "model": "openai/mock-gpt",
                "api_base": format!("{}/d/added/v1", m.base_url()),
                "api_key": UPSTREAM_KEY,
                "input_cost_per_token": X,
                "output_cost_per_token": Y,
            },
            "model_info": {"id": "dep-added"},
        }),
    )
    .await;
    assert_eq!(new.status, 200, "{}", new.text);
    let body = chat_body("fleet-added", "hello", 8);
    let got = until_status(BOUND * 2, 200, || chat(&r2, &caller, &body)).await;
    assert_within("/model/new deployment on replica 2", &got, 200);
    assert!(same_dollars(
        got.0.header_f64("x-litellm-response-cost"),
        C1
    ));
    assert!(
        !upstream_calls(&m, "added").is_empty(),
        "replica 2 called the added deployment"
    );

    // deleted on replica 1 → no longer routed by replica 2 (nor 3)
    let del = post_as(&r1, MASTER, "/model/delete", &json!({"id": "dep-added"})).await;
    assert_eq!(del.status, 200, "{}", del.text);
    for (name, gw) in [("replica 2", &r2), ("replica 3", &r3)] {
        let t0 = Instant::now();
        let mut r = chat(gw, &caller, &body).await;
        while r.status == 200 && t0.elapsed() < BOUND * 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            r = chat(gw, &caller, &body).await;
        }
        let took = t0.elapsed();
        assert_ne!(r.status, 200, "{name} still routes the deleted deployment");
        assert!(took < BOUND, "deleted deployment on {name}: took {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_reconcile_brings_changes_the_feed_did_not_postgres() {
    let Some(db) = PgDb::create("fleet_identity_reconcile").await else {
        return;
    };
    let Some(redis) = redis_url("fleet_identity_reconcile") else {
        return;
    };
    let m = mock().await;
    // the writer announces on one channel; the reader listens on another and hears nothing
    let (pw, _clean_w) = prefix_cleaned(&redis);
    let (pr, _clean_r) = prefix_cleaned(&redis);
    let writer = GovGateway::start(&fleet_config(&m.base_url(), &db, &redis, &pw, "0"));
    let reader = GovGateway::start(&fleet_config(&m.base_url(), &db, &redis, &pr, "1"));
    // let the reader's start-up refreshes (subscribe) pass, so only the reconcile is left
    tokio::time::sleep(Duration::from_millis(300)).await;
    // a new key is found at once (a miss is looked up in the database); what only the
    // reconcile brings is the change to a key the reader already holds
    let (key, _) = generate_key(&writer, json!({})).await;
    let r = probe(&reader, &key).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let b = post_as(&writer, MASTER, "/key/block", &json!({"key": key})).await;
    assert_eq!(b.status, 200, "{}", b.text);
    let (r, took) = until_status(Duration::from_secs(4), 401, || probe(&reader, &key)).await;
    assert_eq!(
        r.status, 401,
        "block not reconciled after {took:?}: {}",
        r.text
    );
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

/// A key generated through replica 1 is accepted by replica 2 on its very first request, before
/// the feed's announcement could arrive: replica 2 finds the key missing from its cache and
/// looks it up in the database; so does replica 2's management API (`/key/block` at once). Keys the database does not hold stay 401
/// `token_not_found_in_db`, however many arrive at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_key_is_accepted_by_another_replica_at_once_postgres() {
    let Some(db) = PgDb::create("fleet_identity_new_key").await else {
        return;
    };
    let Some(redis) = redis_url("fleet_identity_new_key") else {
        return;
    };
    let m = mock().await;
    let (p, _clean) = prefix_cleaned(&redis);
    let cfg = fleet_config(&m.base_url(), &db, &redis, &p, "0");
    let (r1, r2) = (GovGateway::start(&cfg), GovGateway::start(&cfg));
    for i in 0..10 {
        let (key, _) = generate_key(&r1, json!({"key_alias": format!("at-once-{i}")})).await;
        let r = probe(&r2, &key).await;
        assert_eq!(r.status, 200, "key {i} on replica 2 at once: {}", r.text);
    }
    // the management API on replica 2 acts on a key replica 1 created a moment ago
    let (key, hash) = generate_key(&r1, json!({"key_alias": "managed-at-once"})).await;
    let b = post_as(&r2, MASTER, "/key/block", &json!({"key": key})).await;
    assert_eq!(b.status, 200, "/key/block on replica 2 at once: {}", b.text);
    let info = get_as(&r2, MASTER, &format!("/key/info?key={hash}")).await;
    assert_eq!(info.status, 200, "{}", info.text);
    assert_eq!(info.body["info"]["blocked"], true, "{}", info.text);
    // ... and deletes one by its alias, which has no hash to look up: the cache is reloaded
    let (key, _) = generate_key(&r1, json!({"key_alias": "deleted-at-once"})).await;
    let d = post_as(
        &r2,
        MASTER,
        "/key/delete",
        &json!({"key_aliases": ["deleted-at-once"]}),
    )
    .await;
    assert_eq!(
        d.status, 200,
        "/key/delete by alias on replica 2 at once: {}",
        d.text
    );
    assert_eq!(
        d.body,
        json!({"deleted_keys": ["deleted-at-once"]}),
        "{}",
        d.text
    );
    let gone = probe(&r2, &key).await;
    assert_eq!(gone.status, 401, "{}", gone.text);
    assert_eq!(gone.error_type(), "token_not_found_in_db", "{}", gone.text);
    for i in 0..30 {
        let stranger = format!("sk-never-issued-{i}");
        let r = probe(&r2, &stranger).await;
        assert_eq!(r.status, 401, "{}", r.text);
        assert_eq!(r.error_type(), "token_not_found_in_db", "{}", r.text);
    }
    assert_eq!(upstream_calls(&m, "priced").len(), 10);
}
