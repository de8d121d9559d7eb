//! End-to-end key lifecycle through the real `tollgate` binary in front of the priced mock
//! upstream, as LiteLLM answers it:
//!
//! - `temp_budget_increase` + `temp_budget_expiry` (`/key/update`): kept in the key's
//!   `metadata` (the expiry as Python's `isoformat()`), shown so by `/key/info`, across a
//!   restart; before the expiry the key's budget is `max_budget + increase` (admission, the
//!   refusal's "Max budget", `x-litellm-key-max-budget`), after it the plain `max_budget`
//!   (`_update_key_budget_with_temp_budget_increase`, `litellm/proxy/auth/user_api_key_auth.py`);
//! - `tag_rpm_limit` on a key: each request tag it names has its own requests-per-minute
//!   counter, refused with the v3 limiter's `tag_per_key` 429 and headers
//!   (`litellm/proxy/hooks/parallel_request_limiter_v3.py`);
//! - `/key/delete` answers `deleted_keys` with the list it was sent (`key_management_endpoints.py`),
//!   a plaintext key by its hash (no response but a key's creation carries one).
//!
//! Prices: a free input and an output price of 0.00025 USD per token, so one `"hello"` call
//! with `max_tokens: 8` (8 completion tokens on the mock) costs exactly 0.002 USD. The SQLite
//! variants use a file in a temporary directory (kept across the restart); with
//! `TOLLGATE_TEST_DATABASE_URL` set, the `_postgres` variants run each in a fresh database and
//! also read the stored `metadata` column; with `TOLLGATE_TEST_REDIS_URL` too, two replicas
//! share one `tag_per_key` counter in Redis.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;
#[path = "common/redis.rs"]
mod redis_support;

use chrono::Utc;
use gov::*;
use serde_json::{Value, json};

/// USD of one `hello` call.
const CALL: f64 = 0.002;

fn deps() -> Vec<Dep<'static>> {
    vec![Dep {
        group: "m1",
        deployment: "m1",
        upstream: "m1",
        id: "m1",
        input_cost: 0.0,
        output_cost: CALL / 8.0,
    }]
}

fn hello() -> Value {
    chat_body("m1", "hello", 8)
}

fn hello_tagged(tag: &str) -> Value {
    let mut b = hello();
    b["metadata"] = json!({"tags": [tag]});
    b
}

/// `POST path` as the master key; asserts 200 and returns the body.
async fn admin(gw: &GovGateway, path: &str, body: Value) -> Value {
    let r = post_as(gw, MASTER, path, &body).await;
    assert_eq!(r.status, 200, "{path} {body}: {}", r.text);
    r.body
}

/// A 422 `budget_exceeded` whose message is exactly `message`.
fn assert_refused(r: &Resp, message: &str) {
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.error_type(), "budget_exceeded", "{}", r.text);
    assert_eq!(r.body["error"]["message"], message, "{}", r.text);
}

/// A 200 whose `x-litellm-key-spend` is `spend` and `x-litellm-key-max-budget` is `max`.
fn assert_admitted(r: &Resp, spend: f64, max: f64) {
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        same_dollars(r.header_f64("x-litellm-key-spend"), spend),
        "{r:?}"
    );
    assert!(
        same_dollars(r.header_f64("x-litellm-key-max-budget"), max),
        "x-litellm-key-max-budget {} != {max}",
        r.header("x-litellm-key-max-budget")
    );
}

/// The temporary increase end to end; `cfg` keeps its store across the restart. Returns the
/// key's hash.
async fn temp_budget(cfg: &str, m: &tollgate_mock::MockHandle) -> String {
    let mut gw = GovGateway::start(cfg);
    let (key, hash) = generate_key(&gw, json!({"max_budget": CALL, "key_alias": "temp"})).await;
    let tail = &key[key.len() - 4..];
    let refusal = |cost: &str, max: &str| {
        format!(
            "Budget has been exceeded! Key=temp (sk-...{tail}) Current cost: {cost}, Max budget: {max}"
        )
    };
    assert_admitted(&chat(&gw, &key, &hello()).await, CALL, CALL);
    assert_refused(&chat(&gw, &key, &hello()).await, &refusal("0.002", "0.002"));

    let upd = admin(
        &gw,
        "/key/update",
        json!({"key": key, "temp_budget_increase": CALL, "temp_budget_expiry": "2099-01-01"}),
    )
    .await;
    let stored = json!({"temp_budget_increase": CALL, "temp_budget_expiry": "2099-01-01T00:00:00"});
    assert_eq!(upd["metadata"], stored, "{upd}");
    assert!(gw.stop().await, "graceful shutdown");

    // after a restart: stored as sent, in force
    let gw = GovGateway::start(cfg);
    let info = key_info(&gw, &key).await;
    assert_eq!(info["metadata"], stored, "{info}");
    assert_eq!(info["max_budget"], json!(CALL), "{info}");
    assert_admitted(&chat(&gw, &key, &hello()).await, 2.0 * CALL, 2.0 * CALL);
    assert_refused(&chat(&gw, &key, &hello()).await, &refusal("0.004", "0.004"));

    // an increase ending in 3 s admits until then, then the plain max_budget refuses
    let end = Utc::now() + chrono::Duration::seconds(3);
    let end_text = end.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let upd = admin(
        &gw,
        "/key/update",
        json!({"key": key, "temp_budget_increase": 1.0, "temp_budget_expiry": end_text}),
    )
    .await;
    assert_eq!(
        upd["metadata"]["temp_budget_expiry"],
        json!(end.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()),
        "{upd}"
    );
    assert_admitted(&chat(&gw, &key, &hello()).await, 3.0 * CALL, 1.0 + CALL);
    while Utc::now() <= end + chrono::Duration::milliseconds(200) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_refused(&chat(&gw, &key, &hello()).await, &refusal("0.006", "0.002"));
    assert_eq!(upstream_calls(m, "m1").len(), 3);
    hash
}

/// `tag_rpm_limit: {"cell-1": 1}`: the first `cell-1` request passes with the
/// `tag_per_key` headers, the second is a 429 naming `<hash>:cell-1`; other tags and untagged
/// requests are not counted against it.
async fn tag_rpm(gw: &GovGateway, m: &tollgate_mock::MockHandle) {
    let (key, hash) = generate_key(gw, json!({"tag_rpm_limit": {"cell-1": 1}})).await;
    let info = key_info(gw, &key).await;
    assert_eq!(
        info["metadata"],
        json!({"tag_rpm_limit": {"cell-1": 1}}),
        "{info}"
    );
    let ok = chat(gw, &key, &hello_tagged("cell-1")).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(ok.header("x-ratelimit-tag_per_key-limit-requests"), "1");
    assert_eq!(ok.header("x-ratelimit-tag_per_key-remaining-requests"), "0");
    let r = chat(gw, &key, &hello_tagged("cell-1")).await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.error_type(), "rate_limit_error", "{}", r.text);
    let msg = r.body["error"]["message"].as_str().unwrap_or_default();
    let want = format!(
        "Rate limit exceeded for tag_per_key: {hash}:cell-1. Limit type: requests. Current limit: 1, Remaining: 0. Limit resets at: "
    );
    assert!(msg.starts_with(&want), "{msg}");
    assert!(msg.ends_with(" UTC"), "{msg}");
    assert_eq!(r.header("x-ratelimit-tag_per_key-limit-requests"), "1");
    assert_eq!(r.header("x-ratelimit-tag_per_key-remaining-requests"), "0");
    assert_eq!(r.header("rate_limit_type"), "requests");
    let retry: u64 = r.header("retry-after").parse().unwrap();
    assert!((1..=60).contains(&retry), "retry-after {retry}");
    for body in [hello_tagged("cell-2"), hello()] {
        let r = chat(gw, &key, &body).await;
        assert_eq!(r.status, 200, "{body}: {}", r.text);
    }
    assert_eq!(upstream_calls(m, "m1").len(), 3);
}

/// `/key/delete` by aliases echoes the aliases, by keys the keys (a plaintext key as its hash);
/// the deleted keys are 401.
async fn delete_echo(gw: &GovGateway) {
    let (a, _) = generate_key(gw, json!({"key_alias": "del-a"})).await;
    let (b, hash_b) = generate_key(gw, json!({"key_alias": "del-b"})).await;
    let (c, hash_c) = generate_key(gw, json!({})).await;
    let v = admin(gw, "/key/delete", json!({"key_aliases": ["del-a"]})).await;
    assert_eq!(v, json!({"deleted_keys": ["del-a"]}));
    let v = admin(gw, "/key/delete", json!({"keys": [hash_b, c]})).await;
    assert_eq!(v, json!({"deleted_keys": [hash_b, hash_c]}));
    for k in [a, b, c] {
        assert_eq!(chat(gw, &k, &hello()).await.status, 401);
    }
}

/// The stored `metadata` of a key's `"LiteLLM_VerificationToken"` row.
async fn pg_metadata(db: &PgDb, hash: &str) -> Value {
    let mut c = db.connect().await;
    let (m,): (String,) =
        sqlx::query_as("SELECT metadata::text FROM \"LiteLLM_VerificationToken\" WHERE token = $1")
            .bind(hash)
            .fetch_one(&mut c)
            .await
            .expect("the key's row");
    let _ = sqlx::Connection::close(c).await;
    serde_json::from_str(&m).expect("metadata is JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_increase_holds_until_its_expiry() {
    let m = mock().await;
    let dir = TempDir::new("key-life-temp");
    let db = format!("sqlite://{}", dir.0.join("t.db").display());
    temp_budget(&config(&m.base_url(), &deps(), "", Some(&db)), &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_increase_holds_until_its_expiry_postgres() {
    let Some(db) = PgDb::create("key_life_temp").await else {
        return;
    };
    let m = mock().await;
    let hash = temp_budget(&config(&m.base_url(), &deps(), "", Some(&db.url)), &m).await;
    let stored = pg_metadata(&db, &hash).await;
    assert_eq!(stored["temp_budget_increase"], json!(1.0), "{stored}");
    let exp = stored["temp_budget_expiry"].as_str().unwrap_or_default();
    assert!(exp.ends_with("+00:00"), "{stored}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_rpm_limit_refuses_the_second_request_of_a_tag() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    tag_rpm(&gw, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_rpm_limit_refuses_the_second_request_of_a_tag_postgres() {
    let Some(db) = PgDb::create("key_life_tag").await else {
        return;
    };
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", Some(&db.url)));
    tag_rpm(&gw, &m).await;
    let (key, hash) = generate_key(&gw, json!({"tag_rpm_limit": {"x": 3}})).await;
    assert_eq!(
        key_info(&gw, &key).await["metadata"]["tag_rpm_limit"],
        json!({"x": 3})
    );
    assert_eq!(
        pg_metadata(&db, &hash).await,
        json!({"tag_rpm_limit": {"x": 3}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_echoes_what_was_sent() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    delete_echo(&gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_echoes_what_was_sent_postgres() {
    let Some(db) = PgDb::create("key_life_delete").await else {
        return;
    };
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", Some(&db.url)));
    delete_echo(&gw).await;
}

/// Two replicas on one Postgres and one Redis (`TOLLGATE_REDIS_KEY_PREFIX` of its own): a
/// `tag_rpm_limit` of 1 is one counter for both, so the second `cell-1` request, sent to the
/// other replica, is the 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tag_rpm_limit_is_one_counter_across_replicas_postgres() {
    let what = "key_life_tag_fleet";
    let Some(url) = redis_support::redis_url(what) else {
        return;
    };
    let Some(db) = PgDb::create(what).await else {
        return;
    };
    let prefix = redis_support::unique_prefix("keylife");
    let m = mock().await;
    let mut cfg = config(&m.base_url(), &deps(), "", Some(&db.url));
    cfg.push_str(&format!(
        "environment_variables:\n  REDIS_URL: \"{url}\"\n  TOLLGATE_REDIS_KEY_PREFIX: \"{prefix}\"\n"
    ));
    let a = GovGateway::start(&cfg);
    let b = GovGateway::start(&cfg);
    let (key, hash) = generate_key(&a, json!({"tag_rpm_limit": {"cell-1": 1}})).await;
    // the other replica learns the key from the change feed
    let seen = poll(
        || async {
            get_as(&b, MASTER, &format!("/key/info?key={hash}"))
                .await
                .status
        },
        |s| *s == 200,
    )
    .await;
    assert_eq!(seen, 200, "replica b never saw the key");
    let ok = chat(&a, &key, &hello_tagged("cell-1")).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let r = chat(&b, &key, &hello_tagged("cell-1")).await;
    assert_eq!(r.status, 429, "{}", r.text);
    let msg = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with(&format!("Rate limit exceeded for tag_per_key: {hash}:cell-1. Limit type: requests. Current limit: 1, Remaining: 0.")),
        "{msg}"
    );
    assert_eq!(chat(&b, &key, &hello_tagged("cell-2")).await.status, 200);
    assert_eq!(upstream_calls(&m, "m1").len(), 2);
    redis_support::delete_prefix(&url, &prefix).await;
}
