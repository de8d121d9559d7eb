//! End-to-end: a customer's (end user's) `models` allow-list, as LiteLLM documents it (its
//! customer docs, "restrict the models a customer can call"): set by `/customer/new` and
//! `/customer/update` (omitted or `null` keeps the list, `[]` clears it), shown by
//! `/customer/info` and `/customer/list` (`[]` when none), kept across a restart, and enforced
//! on the model actually called (after key aliases) for an end user named by the body's
//! `user` or the `x-litellm-customer-id` header: 403 `customer_model_access_denied`, nothing
//! sent upstream. The key's own list is checked first; an unknown end user restricts nothing.
//! On SQLite and on Postgres with LiteLLM's tables.

#![expect(
    clippy::expect_used,
    reason = "test support: a failed request fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

fn deps() -> Vec<Dep<'static>> {
    vec![flat_dep("allowed", 0.001), flat_dep("other", 0.001)]
}

fn as_customer(model: &str, customer: &str) -> Value {
    let mut b = chat_body(model, "hello", 8);
    b["user"] = json!(customer);
    b
}

async fn customer_models(gw: &GovGateway, id: &str) -> Value {
    let r = get_as(gw, MASTER, &format!("/customer/info?end_user_id={id}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["models"].clone()
}

fn assert_customer_denied(r: &Resp, model: &str) {
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.body["error"],
        json!({
            "message": format!("The requested model '{model}' is not in the allowed models for this customer. Check the models this customer can use and try again."),
            "type": "customer_model_access_denied",
            "param": "model",
            "code": "403",
        }),
        "{}",
        r.text
    );
}

async fn allow_list(db_url: &str) {
    let m = mock().await;
    let cfg = config(&m.base_url(), &deps(), "", Some(db_url));
    let mut gw = GovGateway::start(&cfg);
    let r = post_as(
        &gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "c-list", "models": ["allowed"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["models"], json!(["allowed"]), "{}", r.text);
    let r = post_as(&gw, MASTER, "/customer/new", &json!({"user_id": "c-none"})).await;
    assert_eq!(r.body["models"], json!([]), "{}", r.text);
    let (key, _) = generate_key(
        &gw,
        json!({"models": ["allowed", "other"], "aliases": {"nick": "other"}}),
    )
    .await;

    let r = chat(&gw, &key, &as_customer("allowed", "c-list")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = chat(&gw, &key, &as_customer("other", "c-list")).await;
    assert_customer_denied(&r, "other");
    // by header, and through a key alias whose target is outside the list
    let r = post_as(
        &gw,
        &key,
        "/v1/chat/completions",
        &chat_body("other", "hello", 8),
    )
    .await;
    assert_eq!(
        r.status, 200,
        "no end user: the key's list alone: {}",
        r.text
    );
    let r = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(&key)
        .header("x-litellm-customer-id", "c-list")
        .json(&chat_body("other", "hello", 8))
        .send()
        .await;
    let r = read(r.expect("request")).await;
    assert_customer_denied(&r, "other");
    let r = chat(&gw, &key, &as_customer("nick", "c-list")).await;
    assert_customer_denied(&r, "nick");
    // a customer without a list, and one never seen, restrict nothing
    for c in ["c-none", "c-never-seen"] {
        let r = chat(&gw, &key, &as_customer("other", c)).await;
        assert_eq!(r.status, 200, "{c}: {}", r.text);
    }
    // the key's own list is checked first
    let (narrow, _) = generate_key(&gw, json!({"models": ["allowed"]})).await;
    let r = post_as(
        &gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "c-wide", "models": ["allowed", "other"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = chat(&gw, &narrow, &as_customer("other", "c-wide")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(r.error_type(), "key_model_access_denied", "{}", r.text);
    // refused calls reached no upstream: 1 allowed + 1 without end user + 2 unrestricted
    assert_eq!(upstream_calls(&m, "allowed").len(), 1);
    assert_eq!(upstream_calls(&m, "other").len(), 3);

    // /customer/list shows each list
    let r = get_as(&gw, MASTER, "/customer/list").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let listed: Vec<(String, Value)> = r
        .body
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["user_id"].as_str().unwrap_or("").to_owned(),
                        c["models"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(
        listed.contains(&("c-list".into(), json!(["allowed"]))),
        "{listed:?}"
    );
    assert!(listed.contains(&("c-none".into(), json!([]))), "{listed:?}");

    // a restart keeps the list
    assert!(gw.stop().await, "graceful shutdown");
    let gw = GovGateway::start(&cfg);
    assert_eq!(customer_models(&gw, "c-list").await, json!(["allowed"]));
    let r = chat(&gw, &key, &as_customer("other", "c-list")).await;
    assert_customer_denied(&r, "other");

    // update: omitted and null keep the list, a new list replaces it, [] clears it
    for body in [
        json!({"user_id": "c-list", "alias": "renamed"}),
        json!({"user_id": "c-list", "models": null}),
    ] {
        let r = post_as(&gw, MASTER, "/customer/update", &body).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            customer_models(&gw, "c-list").await,
            json!(["allowed"]),
            "{body}"
        );
    }
    let r = post_as(
        &gw,
        MASTER,
        "/customer/update",
        &json!({"user_id": "c-list", "models": ["other"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = chat(&gw, &key, &as_customer("allowed", "c-list")).await;
    assert_customer_denied(&r, "allowed");
    let r = chat(&gw, &key, &as_customer("other", "c-list")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = post_as(
        &gw,
        MASTER,
        "/customer/update",
        &json!({"user_id": "c-list", "models": []}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(customer_models(&gw, "c-list").await, json!([]));
    let r = chat(&gw, &key, &as_customer("allowed", "c-list")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // a list that is not a list of strings is refused, nothing written
    let r = post_as(
        &gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "c-bad", "models": "allowed"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = get_as(&gw, MASTER, "/customer/info?end_user_id=c-bad").await;
    assert_eq!(r.status, 404, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn customer_model_allow_list_sqlite() {
    let dir = TempDir::new("customer-models");
    allow_list(&format!("sqlite://{}", dir.0.join("t.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn customer_model_allow_list_postgres() {
    let Some(db) = PgDb::create("customer_models").await else {
        return;
    };
    allow_list(&db.url).await;
}
