//! End-to-end: the refusals clients parse, word for word as LiteLLM gives them (status, `type`,
//! `code`, `param`, message), through the real binary on SQLite and on Postgres:
//!
//! - a virtual key with no row (never issued, or deleted): 401 `token_not_found_in_db`,
//!   naming the key's hash (`litellm/proxy/auth/auth_checks.py`, `get_key_object`), while
//!   `/key/info` reports the deleted key as deleted;
//! - a blocked key 401 `auth_error`, an expired key 401 `expired_key`;
//! - budgets 422 `budget_exceeded`: a key, a team named by its `team_id` (not its alias), an
//!   end user (`ExceededBudget: End User=<id> over budget. Spend=<x>, Budget=<y>`), the
//!   proxy-wide budget with no entity named;
//! - a key's RPM limit 429 `rate_limit_error` in the v3 limiter's words.

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

fn deps() -> Vec<Dep<'static>> {
    vec![flat_dep("flat", 0.001)]
}

fn hello() -> Value {
    chat_body("flat", "hello", 8)
}

/// `(status, type, code, param, message)` of an OpenAI-shaped error.
fn refusal(r: &Resp) -> (u16, String, Value, Value, String) {
    let e = &r.body["error"];
    (
        r.status,
        r.error_type(),
        e["code"].clone(),
        e["param"].clone(),
        e["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn not_in_db(hash: &str) -> (u16, String, Value, Value, String) {
    (
        401,
        "token_not_found_in_db".into(),
        json!("401"),
        json!("key"),
        format!(
            "Authentication Error, Invalid proxy server token passed. key={hash}, not found in db. \
             Create key via `/key/generate` call."
        ),
    )
}

async fn key_refusals(gw: &GovGateway, m: &tollgate_mock::MockHandle) {
    // never issued
    let stranger = "sk-never-issued-0001";
    let r = chat(gw, stranger, &hello()).await;
    assert_eq!(refusal(&r), not_in_db(&sha256_hex(stranger)), "{}", r.text);
    assert!(!r.text.contains(stranger), "{}", r.text);

    // deleted: refused as unknown, reported as deleted
    let (key, hash) = generate_key(gw, json!({"key_alias": "to-delete"})).await;
    let r = chat(gw, &key, &hello()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = post_as(gw, MASTER, "/key/delete", &json!({"keys": [key]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = chat(gw, &key, &hello()).await;
    assert_eq!(refusal(&r), not_in_db(&hash), "{}", r.text);
    let r = get_as(gw, MASTER, &format!("/key/info?key={key}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body, json!({"key": hash, "info": {"status": "deleted"}}));

    // blocked
    let (key, _) = generate_key(gw, json!({})).await;
    let r = post_as(gw, MASTER, "/key/block", &json!({"key": key})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = chat(gw, &key, &hello()).await;
    assert_eq!(
        refusal(&r),
        (
            401,
            "auth_error".into(),
            json!("401"),
            Value::Null,
            "Authentication Error, Key is blocked. Update via `/key/unblock` if you're an admin."
                .into()
        ),
        "{}",
        r.text
    );

    // expired
    let (key, _) = generate_key(gw, json!({"duration": "1s"})).await;
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let r = chat(gw, &key, &hello()).await;
    let (status, kind, code, _, message) = refusal(&r);
    assert_eq!(
        (status, kind.as_str(), code),
        (401, "expired_key", json!("401"))
    );
    assert!(
        message.starts_with("Authentication Error - Expired Key. Key Expiry time "),
        "{message}"
    );
    assert!(message.contains(" and current time "), "{message}");
    assert!(
        upstream_calls(m, "flat").len() == 1,
        "only the deleted key's first call went up"
    );
}

async fn budget_refusals(gw: &GovGateway) {
    let budget = |r: &Resp, message: &str| {
        assert_eq!(
            refusal(r),
            (
                422,
                "budget_exceeded".into(),
                json!("422"),
                Value::Null,
                message.to_owned()
            ),
            "{}",
            r.text
        );
    };
    // a team named by its id, though it has an alias
    let team = new_team(gw, json!({"team_alias": "named-team", "max_budget": 0.0})).await;
    let (key, _) = generate_key(gw, json!({"team_id": team})).await;
    let r = chat(gw, &key, &hello()).await;
    budget(
        &r,
        &format!("Budget has been exceeded! Team={team} Current cost: 0, Max budget: 0"),
    );

    // an end user, from the request's `user`
    let r = post_as(
        gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "broke-customer", "max_budget": 0.0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (key, _) = generate_key(gw, json!({})).await;
    let mut body = hello();
    body["user"] = json!("broke-customer");
    let r = chat(gw, &key, &body).await;
    budget(
        &r,
        "ExceededBudget: End User=broke-customer over budget. Spend=0, Budget=0",
    );

    // a key, named by its alias and masked key
    let (key, _) = generate_key(gw, json!({"key_alias": "broke-key", "max_budget": 0.0})).await;
    let r = chat(gw, &key, &hello()).await;
    let tail: String = key
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    budget(
        &r,
        &format!(
            "Budget has been exceeded! Key=broke-key (sk-...{tail}) Current cost: 0, Max budget: 0"
        ),
    );

    // a key's RPM limit
    let (key, hash) = generate_key(gw, json!({"rpm_limit": 1})).await;
    let r = chat(gw, &key, &hello()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = chat(gw, &key, &hello()).await;
    let (status, kind, code, _, message) = refusal(&r);
    assert_eq!(
        (status, kind.as_str(), code),
        (429, "rate_limit_error", json!("429")),
        "{}",
        r.text
    );
    let want = format!(
        "Rate limit exceeded for api_key: {hash}. Limit type: requests. Current limit: 1, Remaining: 0. Limit resets at: "
    );
    assert!(message.starts_with(&want), "{message}");
    assert!(
        r.header("retry-after")
            .parse::<u64>()
            .is_ok_and(|s| (1..=60).contains(&s))
    );
}

async fn contracts(db_url: Option<&str>) {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", db_url));
    key_refusals(&gw, &m).await;
    budget_refusals(&gw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_match_litellm_sqlite() {
    let dir = TempDir::new("contracts");
    contracts(Some(&format!("sqlite://{}", dir.0.join("t.db").display()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_match_litellm_postgres() {
    let Some(db) = PgDb::create("error_contracts").await else {
        return;
    };
    contracts(Some(&db.url)).await;
}

/// The proxy-wide budget (`litellm_settings.max_budget`) refuses with LiteLLM's plain
/// `BudgetExceededError` message: no entity named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_budget_names_no_entity() {
    let m = mock().await;
    let mut cfg = config(&m.base_url(), &deps(), "", None);
    cfg.push_str("litellm_settings:\n  max_budget: 0.0\n");
    let gw = GovGateway::start(&cfg);
    let (key, _) = generate_key(&gw, json!({})).await;
    let r = chat(&gw, &key, &hello()).await;
    assert_eq!(
        refusal(&r),
        (
            422,
            "budget_exceeded".into(),
            json!("422"),
            Value::Null,
            "Budget has been exceeded! Current cost: 0, Max budget: 0".into()
        ),
        "{}",
        r.text
    );
    assert!(upstream_calls(&m, "flat").is_empty());
}
