//! End-to-end budget windows through the real `tollgate` binary in front
//! of the priced mock upstream:
//!
//! - a `budget_duration` added to a key, team, user or customer that already has spend starts a
//!   window at 0 (the lifetime total stays in the spend logs and `/global/spend`); the same
//!   update again leaves the window alone; a different duration keeps the spend;
//! - LiteLLM's default end-user budget (`litellm_settings.max_end_user_budget`,
//!   `max_end_user_budget_id`) holds for a burst of simultaneous first requests from an end
//!   user never seen before;
//! - per-model budgets on keys (`model_max_budget`, both LiteLLM shapes) refuse one model while
//!   the key's other models still work, and `/key/info` reports them.
//!
//! Mock token rule (crates/tollgate-mock/README.md): `"hello"` with `max_tokens: 8` costs 5
//! prompt + 8 completion tokens. Every deployment here has a free input, so the admission
//! estimate (`max_tokens` × output price) equals the actual cost and the admitted counts are
//! exact. With `TOLLGATE_TEST_DATABASE_URL` set, the `_postgres` variants run each in a fresh
//! database and read LiteLLM's tables.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

// items 5 and 6, in their own files (this one holds item 4 and the shared helpers)
#[path = "budget_windows/end_users.rs"]
mod end_users;
#[path = "budget_windows/per_model.rs"]
mod per_model;

use chrono::{DateTime, Duration, Utc};
use gov::*;
use serde_json::{Value, json};

/// Output price of `dear`, USD per token: one `hello` call costs 8 × 0.075 = 0.6.
const DEAR: f64 = 0.6;
/// Output price of the `flat*` deployments, USD per token: one call costs 8 × 0.001 = 0.008.
const FLAT: f64 = 0.008;

fn deps() -> Vec<Dep<'static>> {
    vec![
        flat_dep("dear", DEAR / 8.0),
        flat_dep("flat", FLAT / 8.0),
        flat_dep("flat-b", FLAT / 8.0),
        flat_dep("free-c", FLAT / 8.0),
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

/// A 422 `budget_exceeded` whose message starts with `prefix` and contains `part`.
fn assert_refused(r: &Resp, prefix: &str, part: &str) {
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.error_type(), "budget_exceeded", "{}", r.text);
    assert_eq!(r.body["error"]["code"], "422", "{}", r.text);
    let msg = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with(prefix), "{msg}");
    assert!(msg.contains(part), "{msg} lacks {part}");
}

async fn global_spend(gw: &GovGateway) -> f64 {
    let r = get_as(gw, MASTER, "/global/spend").await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["spend"].as_f64().unwrap_or(-1.0)
}

async fn update_key(gw: &GovGateway, body: Value) -> Value {
    let r = post_as(gw, MASTER, "/key/update", &body).await;
    assert_eq!(r.status, 200, "/key/update {body}: {}", r.text);
    r.body
}

// ---------------------------------------------------------------------------------------------
// Item 4: a window armed on a key that already has spend
// ---------------------------------------------------------------------------------------------

/// A key spends 0.6 of 1.0 without a window; `/key/update` adds `30d`: the window starts at 0
/// (two more calls of 0.6 are admitted, 0 → 0.6 → 1.2, the next is refused at 1.2; without the
/// fix the second would be refused at 0.6 + 0.6), the lifetime 1.8 stays in `/global/spend`
/// and the spend logs; the same update again changes nothing; `1d` keeps the 1.2 and moves
/// the reset to the next midnight. Returns the key, its hash and its `/key/info`.
async fn key_window(gw: &GovGateway, m: &tollgate_mock::MockHandle) -> (String, String, Value) {
    let (key, hash) = generate_key(gw, json!({"max_budget": 1.0, "key_alias": "window"})).await;
    let r = chat(gw, &key, &hello("dear")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(same_dollars(r.header_f64("x-litellm-key-spend"), 0.6));

    let before = Utc::now();
    let upd = update_key(gw, json!({"key": key, "budget_duration": "30d"})).await;
    assert_eq!(upd["spend"], 0.0, "{upd}");
    let reset = time(&upd["budget_reset_at"]);
    // LiteLLM's standardised reset: today's midnight (UTC) + 30 days
    assert!(
        reset > before + Duration::days(29) && reset <= before + Duration::days(30),
        "budget_reset_at {reset} is not ~30 days ahead of {before}"
    );
    let info = key_info(gw, &key).await;
    assert_eq!(info["spend"], 0.0, "{info}");
    assert_eq!(info["budget_duration"], "30d");
    assert_eq!(time(&info["budget_reset_at"]), reset);

    // the very next request is admitted against the new window
    for want in [0.6, 1.2] {
        let r = chat(gw, &key, &hello("dear")).await;
        assert_eq!(
            r.status, 200,
            "window spend before this call < 1.0: {}",
            r.text
        );
        assert!(
            same_dollars(r.header_f64("x-litellm-key-spend"), want),
            "x-litellm-key-spend {} != {want}",
            r.header("x-litellm-key-spend")
        );
    }
    let refused = chat(gw, &key, &hello("dear")).await;
    assert_refused(
        &refused,
        "Budget has been exceeded! Key=window (sk-...",
        "Current cost: 1.2, Max budget: 1",
    );
    assert_eq!(upstream_calls(m, "dear").len(), 3);

    // the lifetime total: three calls
    assert!(same_dollars(global_spend(gw).await, 1.8));
    let rows = spend_logs_n(gw, &hash, 3).await;
    assert_eq!(rows.len(), 3);
    assert!(same_dollars(rows_spend(&rows), 1.8));

    // the same update again: no new window
    let again = update_key(gw, json!({"key": key, "budget_duration": "30d"})).await;
    assert!(
        same_dollars(again["spend"].as_f64().unwrap_or(-1.0), 1.2),
        "{again}"
    );
    assert_eq!(time(&again["budget_reset_at"]), reset);
    let r = chat(gw, &key, &hello("dear")).await;
    assert_refused(
        &r,
        "Budget has been exceeded! Key=window",
        "Current cost: 1.2",
    );
    assert_eq!(upstream_calls(m, "dear").len(), 3);

    // a different duration keeps the window's spend and moves its end (LiteLLM's rule)
    let moved = update_key(gw, json!({"key": key, "budget_duration": "1d"})).await;
    assert!(
        same_dollars(moved["spend"].as_f64().unwrap_or(-1.0), 1.2),
        "{moved}"
    );
    let next_midnight = (Utc::now() + Duration::days(1))
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    assert_eq!(time(&moved["budget_reset_at"]), next_midnight);
    let r = chat(gw, &key, &hello("dear")).await;
    assert_refused(
        &r,
        "Budget has been exceeded! Key=window",
        "Current cost: 1.2",
    );
    let info = key_info(gw, &key).await;
    assert!(same_dollars(info["spend"].as_f64().unwrap_or(-1.0), 1.2));
    (key, hash, info)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_added_to_a_key_with_spend_starts_at_zero() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    key_window(&gw, &m).await;
}

/// `(spend, budget_reset_at, model_spend)` of a `"LiteLLM_VerificationToken"` row.
async fn pg_key_row(db: &PgDb, hash: &str) -> (f64, Option<DateTime<Utc>>, Value) {
    let mut c = db.connect().await;
    let (spend, reset, model_spend): (f64, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT spend::float8, budget_reset_at::text, model_spend::text FROM \"LiteLLM_VerificationToken\" WHERE token = $1",
    )
    .bind(hash)
    .fetch_one(&mut c)
    .await
    .expect("the key's LiteLLM_VerificationToken row");
    let _ = sqlx::Connection::close(c).await;
    let reset = reset.map(|t| {
        chrono::NaiveDateTime::parse_from_str(&t, "%Y-%m-%d %H:%M:%S%.f")
            .unwrap_or_else(|e| panic!("budget_reset_at {t:?}: {e}"))
            .and_utc()
    });
    let model_spend = model_spend
        .map(|t| serde_json::from_str(&t).expect("model_spend is JSON"))
        .unwrap_or(Value::Null);
    (spend, reset, model_spend)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_added_to_a_key_with_spend_starts_at_zero_postgres() {
    let Some(db) = PgDb::create("window_key").await else {
        return;
    };
    let m = mock().await;
    let cfg = config(&m.base_url(), &deps(), "", Some(&db.url));
    let mut gw = GovGateway::start(&cfg);
    let (key, hash, info) = key_window(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    // LiteLLM's columns: the window's spend and its end
    let (spend, reset, _) = pg_key_row(&db, &hash).await;
    assert!(same_dollars(spend, 1.2), "stored spend {spend}");
    assert_eq!(reset, Some(time(&info["budget_reset_at"])));
    let rows = db.spend_rows().await;
    assert!(same_dollars(rows.iter().map(|(_, s)| s).sum(), 1.8));
    // a restart keeps the window: still 1.2 of 1.0, still refused, nothing sent
    let gw = GovGateway::start(&cfg);
    let info2 = key_info(&gw, &key).await;
    assert!(
        same_dollars(info2["spend"].as_f64().unwrap_or(-1.0), 1.2),
        "{info2}"
    );
    assert_eq!(info2["budget_reset_at"], info["budget_reset_at"]);
    let r = chat(&gw, &key, &hello("dear")).await;
    assert_refused(
        &r,
        "Budget has been exceeded! Key=window",
        "Current cost: 1.2",
    );
    assert_eq!(upstream_calls(&m, "dear").len(), 3);
}

// ---------------------------------------------------------------------------------------------
// Item 4: teams, users, customers (one rule for every entity)
// ---------------------------------------------------------------------------------------------

/// Each entity has a budget of exactly one call (0.6) and has spent it, so it is refused; a
/// `budget_duration` update admits exactly one more call (the window starts at 0) and the
/// same update again admits none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_added_to_teams_users_and_customers_start_at_zero() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));

    let team = new_team(&gw, json!({"team_alias": "tw", "max_budget": 0.6})).await;
    let (team_key, _) = generate_key(&gw, json!({"team_id": team})).await;
    let r = post_as(
        &gw,
        MASTER,
        "/user/new",
        &json!({"user_id": "uw", "max_budget": 0.6}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let user_key = r.body["key"].as_str().expect("/user/new key").to_owned();
    let r = post_as(
        &gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "cw", "max_budget": 0.6}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (plain_key, _) = generate_key(&gw, json!({})).await;

    struct Case<'a> {
        key: &'a str,
        body: Value,
        update: (&'a str, Value),
        info: String,
        spend_at: &'a [&'a str],
        refusal: String,
    }
    let cases = [
        Case {
            key: &team_key,
            body: hello("dear"),
            // with the budget in the same update (LiteLLM's UI sends both)
            update: (
                "/team/update",
                json!({"team_id": team, "budget_duration": "30d", "max_budget": 0.6}),
            ),
            info: format!("/team/info?team_id={team}"),
            spend_at: &["team_info", "spend"],
            // named by its team_id, not its alias "tw", as LiteLLM names it
            refusal: format!("Budget has been exceeded! Team={team} Current cost: "),
        },
        Case {
            key: &user_key,
            body: hello("dear"),
            update: (
                "/user/update",
                json!({"user_id": "uw", "budget_duration": "30d"}),
            ),
            info: "/user/info?user_id=uw".into(),
            spend_at: &["user_info", "spend"],
            refusal: "Budget has been exceeded! User=uw".into(),
        },
        Case {
            key: &plain_key,
            body: hello_as("dear", "cw"),
            update: (
                "/customer/update",
                json!({"user_id": "cw", "budget_duration": "30d"}),
            ),
            info: "/customer/info?end_user_id=cw".into(),
            spend_at: &["spend"],
            refusal: "ExceededBudget: End User=cw over budget. Spend=0.6, Budget=0.6".into(),
        },
    ];
    let spend_of =
        |v: &Value, path: &[&str]| path.iter().fold(v, |v, p| &v[*p]).as_f64().unwrap_or(-1.0);
    let mut calls = 0;
    for c in &cases {
        let r = chat(&gw, c.key, &c.body).await;
        assert_eq!(r.status, 200, "{}", r.text);
        calls += 1;
        let r = chat(&gw, c.key, &c.body).await;
        assert_refused(&r, &c.refusal, "0.6");
        let info = poll(
            || get_as(&gw, MASTER, &c.info),
            |r| same_dollars(spend_of(&r.body, c.spend_at), 0.6),
        )
        .await;
        assert!(
            same_dollars(spend_of(&info.body, c.spend_at), 0.6),
            "{}",
            info.text
        );

        let (path, body) = &c.update;
        let r = post_as(&gw, MASTER, path, body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        let info = get_as(&gw, MASTER, &c.info).await;
        assert_eq!(
            spend_of(&info.body, c.spend_at),
            0.0,
            "{path}: {}",
            info.text
        );

        let r = chat(&gw, c.key, &c.body).await;
        assert_eq!(r.status, 200, "{path} starts a window at 0: {}", r.text);
        calls += 1;
        let r = chat(&gw, c.key, &c.body).await;
        assert_refused(&r, &c.refusal, "0.6");
        // the same update again: the window is left as it is
        let r = post_as(&gw, MASTER, path, body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        let r = chat(&gw, c.key, &c.body).await;
        assert_refused(&r, &c.refusal, "0.6");
        let info = get_as(&gw, MASTER, &c.info).await;
        assert!(
            same_dollars(spend_of(&info.body, c.spend_at), 0.6),
            "{}",
            info.text
        );
    }
    assert_eq!(upstream_calls(&m, "dear").len(), calls);
    assert!(same_dollars(global_spend(&gw).await, 0.6 * calls as f64));
}
