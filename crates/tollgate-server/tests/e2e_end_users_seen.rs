//! End-to-end: end users first seen in traffic are real customers. Each way LiteLLM reads an
//! end user id from a request (`get_end_user_id_from_request_body`,
//! `litellm/proxy/auth/auth_utils.py`): the `x-litellm-customer-id` and
//! `x-litellm-end-user-id` headers, the body's `user`, `litellm_metadata.user` and
//! `metadata.user_id`, the last two as objects or as JSON strings. Each such end user is found
//! by `/customer/info` and `/customer/list` with the spend of its call, and `/customer/update`,
//! `/customer/block` (its next request refused) and `/customer/delete` act on it. On SQLite and
//! on Postgres with LiteLLM's tables.

#![expect(
    clippy::expect_used,
    reason = "test support: a failed request fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

/// One call of `flat` costs 8 output tokens × 0.001 = 0.008 USD.
const CALL: f64 = 0.008;

fn deps() -> Vec<Dep<'static>> {
    vec![flat_dep("flat", 0.001)]
}

/// An end user id, the headers that carry it, the body fields that carry it.
type Source = (&'static str, Vec<(&'static str, &'static str)>, Value);

/// A chat call as `key` with extra `headers` and top-level body `fields`.
async fn call(gw: &GovGateway, key: &str, headers: &[(&str, &str)], fields: Value) -> Resp {
    let mut body = chat_body("flat", "hello", 8);
    if let (Some(b), Some(f)) = (body.as_object_mut(), fields.as_object()) {
        b.extend(f.clone());
    }
    let mut rq = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&body);
    for (k, v) in headers {
        rq = rq.header(*k, *v);
    }
    read(rq.send().await.expect("request")).await
}

async fn seen(db_url: &str) {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", Some(db_url)));
    let (key, _) = generate_key(&gw, json!({})).await;
    let sources: Vec<Source> = vec![
        (
            "eu-cust-hdr",
            vec![("x-litellm-customer-id", "eu-cust-hdr")],
            json!({}),
        ),
        (
            "eu-end-hdr",
            vec![("x-litellm-end-user-id", "eu-end-hdr")],
            json!({}),
        ),
        ("eu-body", vec![], json!({"user": "eu-body"})),
        (
            "eu-lm-obj",
            vec![],
            json!({"litellm_metadata": {"user": "eu-lm-obj"}}),
        ),
        (
            "eu-lm-str",
            vec![],
            json!({"litellm_metadata": "{\"user\": \"eu-lm-str\"}"}),
        ),
        (
            "eu-meta-obj",
            vec![],
            json!({"metadata": {"user_id": "eu-meta-obj"}}),
        ),
        (
            "eu-meta-str",
            vec![],
            json!({"metadata": "{\"user_id\": \"eu-meta-str\"}"}),
        ),
    ];
    for (id, headers, fields) in &sources {
        let r = call(&gw, &key, headers, fields.clone()).await;
        assert_eq!(r.status, 200, "{id}: {}", r.text);
    }
    for (id, _, _) in &sources {
        let path = format!("/customer/info?end_user_id={id}");
        let info = poll(
            || get_as(&gw, MASTER, &path),
            |r| r.status == 200 && same_dollars(r.body["spend"].as_f64().unwrap_or(-1.0), CALL),
        )
        .await;
        assert_eq!(info.status, 200, "{id}: {}", info.text);
        assert_eq!(info.body["user_id"], *id, "{}", info.text);
        assert!(
            same_dollars(info.body["spend"].as_f64().unwrap_or(-1.0), CALL),
            "{id}: {}",
            info.text
        );
        assert_eq!(info.body["blocked"], false, "{}", info.text);
    }
    let r = get_as(&gw, MASTER, "/customer/list").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let listed: Vec<&str> = r
        .body
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["user_id"].as_str()).collect())
        .unwrap_or_default();
    for (id, _, _) in &sources {
        assert!(listed.contains(id), "{id} not in {listed:?}");
    }

    // update: a budget of one call, already spent → refused
    let r = post_as(
        &gw,
        MASTER,
        "/customer/update",
        &json!({"user_id": "eu-body", "max_budget": CALL}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = call(&gw, &key, &[], json!({"user": "eu-body"})).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        format!("ExceededBudget: End User=eu-body over budget. Spend={CALL}, Budget={CALL}")
    );
    // block: refused; the metadata-string form is refused the same
    let r = post_as(
        &gw,
        MASTER,
        "/customer/block",
        &json!({"user_ids": ["eu-meta-str"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = call(
        &gw,
        &key,
        &[],
        json!({"metadata": "{\"user_id\": \"eu-meta-str\"}"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        "Blocked user: end user eu-meta-str is blocked. Unblock via `/customer/unblock`."
    );
    // delete: gone from info and list
    let r = post_as(
        &gw,
        MASTER,
        "/customer/delete",
        &json!({"user_ids": ["eu-end-hdr"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = get_as(&gw, MASTER, "/customer/info?end_user_id=eu-end-hdr").await;
    assert_eq!(r.status, 404, "{}", r.text);
    // every allowed call reached the upstream once; the refused ones did not
    assert_eq!(upstream_calls(&m, "flat").len(), sources.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_users_seen_in_traffic_are_customers_sqlite() {
    let dir = TempDir::new("end-users-seen");
    seen(&format!("sqlite://{}", dir.0.join("t.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_users_seen_in_traffic_are_customers_postgres() {
    let Some(db) = PgDb::create("end_users_seen").await else {
        return;
    };
    seen(&db.url).await;
}
