//! `/model/*` over the registry.

use http::StatusCode;
use serde_json::json;

use crate::common::{H, error};

#[tokio::test]
async fn model_info_new_delete() {
    let h = H::new().await;
    let (s, v) = h.get("/model/info").await;
    assert_eq!((s, v), (StatusCode::OK, json!({"data": []})));
    let (s, v) = h
        .post(
            "/model/new",
            json!({"model_name": "mock-gpt", "litellm_params": {"model": "openai/mock-gpt"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v,
        json!({"model_name": "mock-gpt", "litellm_params": {"model": "openai/mock-gpt"}, "model_info": {"id": "m-1"}})
    );
    h.post(
        "/model/new",
        json!({"model_name": "other", "litellm_params": {"model": "openai/other"}}),
    )
    .await;
    let (_, v) = h.get("/v1/model/info").await;
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    // a key limited to mock-gpt sees only it
    let (raw, _) = h.key(json!({"models": ["mock-gpt"]})).await;
    let (s, v) = h.call("GET", "/model/info", Some(&raw), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"][0]["model_name"], "mock-gpt");
    let (s, _) = h.post("/model/new", json!({"litellm_params": {}})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, v) = h.post("/model/delete", json!({"id": "m-9"})).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::NOT_FOUND,
            error("Model with id=m-9 not found", "not_found_error", 404)
        )
    );
    let (s, v) = h.post("/model/delete", json!({"id": "m-1"})).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::OK,
            json!({"message": "Model: m-1 deleted successfully"})
        )
    );
    let (_, v) = h.get("/model/info").await;
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    // a config-file deployment is refused with the registry's message
    let (s, v) = h.post("/model/delete", json!({"id": "config-1"})).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::BAD_REQUEST,
            error(
                "config-1 is defined in the config file",
                "bad_request_error",
                400
            )
        )
    );
}
