//! `/key/service-account/generate` in the management contract (LiteLLM's
//! `generate_service_account_key_fn`, key_management_endpoints.py).

use serde_json::{Value, json};

use crate::gov::*;

/// `/key/service-account/generate`: team required and known; the key has no user.
pub async fn service_account_keys(gw: &GovGateway) {
    let r = post_as(gw, MASTER, "/key/service-account/generate", &json!({})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        "team_id is required for service account keys. Please specify `team_id` in the request body."
    );
    let r = post_as(
        gw,
        MASTER,
        "/key/service-account/generate",
        &json!({"team_id": "no-such-team"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        "team_id does not exist in the database. Please specify a valid `team_id` in the request body."
    );
    new_team(gw, json!({"team_id": "sa"})).await;
    let r = post_as(gw, MASTER, "/user/new", &json!({"user_id": "sa-u"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = post_as(
        gw,
        MASTER,
        "/key/service-account/generate",
        &json!({"team_id": "sa", "user_id": "sa-u", "key_alias": "svc", "max_budget": 2.0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let key = r.body["key"].as_str().unwrap_or_default().to_owned();
    assert!(key.starts_with("sk-"), "{}", r.text);
    assert_eq!(
        (
            r.body["team_id"].clone(),
            r.body["user_id"].clone(),
            r.body["key_alias"].clone(),
            r.body["max_budget"].clone(),
            r.body["token_id"].clone()
        ),
        (
            json!("sa"),
            Value::Null,
            json!("svc"),
            json!(2.0),
            json!(sha256_hex(&key))
        ),
        "{}",
        r.text
    );
    // deleting the user the body named leaves the team's key alone
    let r = post_as(gw, MASTER, "/user/delete", &json!({"user_ids": ["sa-u"]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let c = chat(gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(c.status, 200, "{}", c.text);
}
