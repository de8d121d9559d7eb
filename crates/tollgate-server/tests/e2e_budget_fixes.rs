//! End-to-end fixes of budget windows, the default end-user budget and per-model key budgets,
//! through the real `tollgate` binary in front of the priced mock upstream (the cases a
//! newcomer found):
//!
//! - `/customer/update` with only `budget_duration` on an end user held to the default budget
//!   keeps that cap (a new window at 0, or the default's window going on), never lifts it;
//! - end users created by traffic are visible to `/customer/info|update|list` at once;
//! - a windowed `model_max_budget` counts only its window's spend after a restart;
//! - `model_max_budget` entries keyed by the name a client calls through a wildcard group
//!   govern it, most specific name first; entries no model serves get a warning;
//! - numeric strings are one rule in both `model_max_budget` shapes;
//! - `/key/info` shows the end of the window in force after a reset nobody has rolled yet;
//! - `/customer/update` on a customer of a shared tier arms the window for every customer on it;
//! - `budget_duration: null` in `/key/update` leaves the window alone (LiteLLM's rule).
//!
//! Prices: every deployment has a free input and an output price of 0.00025 USD per token, so
//! one `"hello"` call with `max_tokens: 8` (5 prompt + 8 completion tokens on the mock) costs
//! exactly 0.002 USD, the admission estimate equals the actual cost, and admitted counts are
//! exact. With `TOLLGATE_TEST_DATABASE_URL` set, the `_postgres` variants run each in a fresh
//! database.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

#[path = "budget_fixes/customers.rs"]
mod customers;
#[path = "budget_fixes/per_model.rs"]
mod per_model;

use chrono::{DateTime, Utc};
use gov::*;
use serde_json::{Value, json};

/// USD of one `hello` call on any deployment here.
const CALL: f64 = 0.002;

fn dep(group: &'static str, deployment: &'static str, upstream: &'static str) -> Dep<'static> {
    Dep {
        group,
        deployment,
        upstream,
        id: deployment,
        input_cost: 0.0,
        output_cost: CALL / 8.0,
    }
}

/// `m1`, `m2` and the wildcard group `w/*` → `openai/*` (deployment `w`).
fn deps() -> Vec<Dep<'static>> {
    vec![
        dep("m1", "m1", "m1"),
        dep("m2", "m2", "m2"),
        dep("w/*", "w", "*"),
    ]
}

fn hello(model: &str) -> Value {
    chat_body(model, "hello", 8)
}

fn hello_as(model: &str, end_user: &str) -> Value {
    let mut b = hello(model);
    b["user"] = json!(end_user);
    b
}

fn time(v: &Value) -> DateTime<Utc> {
    v.as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| panic!("not an RFC 3339 time: {v}"))
}

/// The next midnight UTC: where a `1d` window armed now ends.
fn next_midnight() -> DateTime<Utc> {
    (Utc::now() + chrono::Duration::days(1))
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
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

/// `n` chat calls as `key` with `body`, each answered 200 with the key's spend after it
/// (`x-litellm-key-spend`) growing by one call from `from`.
async fn calls_ok(gw: &GovGateway, key: &str, body: &Value, n: usize, from: f64) {
    for i in 0..n {
        let r = chat(gw, key, body).await;
        assert_eq!(r.status, 200, "call {i} of {n}: {}", r.text);
        let want = from + CALL * (i + 1) as f64;
        assert!(
            same_dollars(r.header_f64("x-litellm-key-spend"), want),
            "x-litellm-key-spend {} != {want}",
            r.header("x-litellm-key-spend")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// `/key/info` after a window reset nobody has rolled yet; `budget_duration: null`
// ---------------------------------------------------------------------------------------------

/// A key with a 3-second window spends 0.002; once the window's end has passed with no request,
/// `/key/info` shows spend 0 and the end of the window in force (after now), not the reset that
/// already happened. After a restart whose downtime spans the next reset, the same holds (the
/// seed knows the key's window). A request then starts at 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_info_shows_the_window_in_force_after_a_reset() {
    let m = mock().await;
    let dir = TempDir::new("budget-fixes-reset");
    let db = format!("sqlite://{}", dir.0.join("t.db").display());
    let cfg = config(&m.base_url(), &deps(), "", Some(&db));
    let mut gw = GovGateway::start(&cfg);
    let (key, _) = generate_key(&gw, json!({"max_budget": 1.0, "budget_duration": "3s"})).await;
    calls_ok(&gw, &key, &hello("m1"), 1, 0.0).await;
    let first_end = time(&key_info(&gw, &key).await["budget_reset_at"]);
    while Utc::now() <= first_end + chrono::Duration::milliseconds(200) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let before = Utc::now();
    let info = key_info(&gw, &key).await;
    assert_eq!(info["spend"], 0.0, "{info}");
    let shown = time(&info["budget_reset_at"]);
    assert!(
        shown > before && shown <= before + chrono::Duration::seconds(3),
        "budget_reset_at {shown} is not the end of the 3 s window in force at {before} (the old one ended {first_end})"
    );
    // the next request finds that window, at 0
    calls_ok(&gw, &key, &hello("m1"), 1, 0.0).await;

    // across a restart that spans the next reset
    let end = time(&key_info(&gw, &key).await["budget_reset_at"]);
    assert!(gw.stop().await, "graceful shutdown");
    while Utc::now() <= end + chrono::Duration::milliseconds(200) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let gw = GovGateway::start(&cfg);
    let before = Utc::now();
    let info = key_info(&gw, &key).await;
    assert_eq!(info["spend"], 0.0, "{info}");
    let shown = time(&info["budget_reset_at"]);
    assert!(
        shown > before && shown <= before + chrono::Duration::seconds(3),
        "after a restart: budget_reset_at {shown}, now {before}, stored end {end}"
    );
    assert_eq!(upstream_calls(&m, "m1").len(), 2);
}

/// `budget_duration: null` in `/key/update` means "not given", as in LiteLLM (its
/// `prepare_key_update_data` drops a null `budget_duration`; its UI sends null for untouched
/// fields): the window, its end and its spend stay. `max_budget: null` removes the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_null_budget_duration_leaves_the_window_alone() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    let (key, _) = generate_key(&gw, json!({"max_budget": 0.003, "budget_duration": "30d"})).await;
    calls_ok(&gw, &key, &hello("m1"), 2, 0.0).await;
    let before = key_info(&gw, &key).await;
    let upd = admin(
        &gw,
        "/key/update",
        json!({"key": key, "budget_duration": null}),
    )
    .await;
    assert_eq!(upd["budget_duration"], "30d", "{upd}");
    assert_eq!(upd["budget_reset_at"], before["budget_reset_at"], "{upd}");
    assert!(same_dollars(f(&upd["spend"]), 0.004), "{upd}");
    let r = chat(&gw, &key, &hello("m1")).await;
    assert_eq!(
        r.status, 422,
        "still over its 0.003 in the window: {}",
        r.text
    );
    let upd = admin(&gw, "/key/update", json!({"key": key, "max_budget": null})).await;
    assert_eq!(upd["max_budget"], Value::Null, "{upd}");
    assert_eq!(upd["budget_duration"], "30d", "{upd}");
    calls_ok(&gw, &key, &hello("m1"), 1, 0.004).await;
    assert_eq!(upstream_calls(&m, "m1").len(), 3);
}
