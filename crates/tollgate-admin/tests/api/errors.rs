//! Error JSON: LiteLLM's `{"error": {"message", "type", "param": null, "code"}}` for bad
//! bodies (400), unknown entities (404), missing credentials (401), store failures (500).

use http::StatusCode;
use serde_json::json;

use crate::common::{H, error};

#[tokio::test]
async fn bad_bodies_are_400_with_litellm_error_json() {
    let h = H::new().await;
    let (s, v) = h
        .call("POST", "/key/generate", Some("admin"), Some("{not json"))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["type"], "bad_request_error");
    assert_eq!(v["error"]["code"], "400");
    assert_eq!(v["error"]["param"], json!(null));
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid request body: ")
    );
    let (s, v) = h.post("/key/generate", json!({"max_budget": "ten"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid type: string \"ten\", expected f64")
    );
    let (s, v) = h
        .post("/key/generate", json!({"budget_duration": "1y"}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        error(
            "Invalid budget_duration: invalid duration \"1y\": expected <positive int><s|m|h|d|w|mo>, e.g. \"30s\", \"1d\", \"1mo\"",
            "bad_request_error",
            400
        )
    );
    let (s, v) = h.post("/key/generate", json!({"key": "abc-123"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        error(
            "Invalid key: a LiteLLM virtual key must start with 'sk-'",
            "bad_request_error",
            400
        )
    );
    let (s, v) = h.post("/key/generate", json!({"team_id": "ghost"})).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::BAD_REQUEST,
            error(
                "Team not found, passed team_id=ghost",
                "bad_request_error",
                400
            )
        )
    );
    let (s, _) = h
        .post(
            "/key/generate",
            json!({"model_max_budget": {"gpt": "five"}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = h
        .post(
            "/team/new",
            json!({"members_with_roles": [{"user_id": "u", "role": "owner"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(h.gov.cache().read().keys.is_empty() && h.gov.cache().read().teams.is_empty());
}

#[tokio::test]
async fn unknown_entities_are_404_and_missing_credentials_401() {
    let h = H::new().await;
    let unknown = "a".repeat(64);
    let (s, v) = h.get(&format!("/key/info?key={unknown}")).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::NOT_FOUND,
            error(
                &format!("Key not found. token={unknown}"),
                "not_found_error",
                404
            )
        )
    );
    for uri in [
        "/team/info?team_id=x",
        "/user/info?user_id=x",
        "/customer/info?end_user_id=x",
    ] {
        let (s, v) = h.get(uri).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(v["error"]["code"], "404");
    }
    let (s, v) = h.call("GET", "/key/info", None, None).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::UNAUTHORIZED,
            error(
                "Authentication Error, No api key passed in.",
                "auth_error",
                401
            )
        )
    );
    let (s, v) = h
        .call("GET", "/key/list", Some("sk-never-issued"), None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(v["error"]["type"], "token_not_found_in_db");
}

#[tokio::test]
async fn store_failure_is_500_and_leaves_the_cache_alone() {
    let h = H::new().await;
    h.store.pool().close().await;
    let (s, v) = h
        .post("/key/generate", json!({"key": "sk-fail-0001"}))
        .await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(v["error"]["type"], "internal_server_error");
    assert_eq!(v["error"]["code"], "500");
    assert!(!v.to_string().contains("sk-fail-0001"));
    assert!(h.gov.cache().read().keys.is_empty());
    let (s, _) = h.post("/team/new", json!({"team_id": "t"})).await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(h.gov.cache().read().teams.is_empty());
}
