//! `/budget/*`: tier CRUD; a key linked to a tier gets its cap and window.

use http::StatusCode;
use serde_json::json;
use tollgate_governance::admission::ScopeKey;
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::RequestFacts;

use crate::common::{H, without};

#[tokio::test]
async fn budget_tier_crud_and_linked_key() {
    let h = H::new().await;
    let (s, b) = h
        .post(
            "/budget/new",
            json!({"budget_id": "tier-1", "max_budget": 30.0, "budget_duration": "1d", "tpm_limit": 1000}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(
        without(&b, &["created_at", "updated_at", "budget_reset_at"]),
        json!({
            "budget_id": "tier-1", "max_budget": 30.0, "soft_budget": null,
            "max_parallel_requests": null, "tpm_limit": 1000, "rpm_limit": null,
            "model_max_budget": {}, "budget_duration": "1d",
            "created_by": "litellm-proxy-master-key", "updated_by": "litellm-proxy-master-key"
        })
    );
    assert!(b["budget_reset_at"].is_string());
    let (s, _) = h.post("/budget/new", json!({"budget_id": "tier-1"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (_, info) = h.post("/budget/info", json!({"budgets": ["tier-1"]})).await;
    assert_eq!(info, json!([b]));
    let (_, list) = h.get("/budget/list").await;
    assert_eq!(list, json!([b]));

    // a key with the tier and no cap of its own: the tier's cap and window apply
    let (_, g) = h
        .post("/key/generate", json!({"budget_id": "tier-1"}))
        .await;
    let hash = g["token_id"].as_str().unwrap().to_owned();
    // The key follows the tier's window from the start
    let reset = h
        .gov
        .admission()
        .spend(&ScopeKey::key(&hash))
        .await
        .unwrap()
        .unwrap()
        .budget_reset_at;
    assert!(reset.is_some());
    assert_eq!(g["budget_reset_at"], serde_json::to_value(reset).unwrap());
    assert_eq!(g["litellm_budget_table"]["max_budget"], 30.0);
    let p = h.gov.principal(&hash).unwrap();
    let s0 = &h.gov.scopes(Some(&p), RequestFacts::default()).unwrap()[0];
    assert_eq!(s0.limits.max_budget, Some(30.0));
    assert_eq!(s0.limits.budget_duration, Some(BudgetDuration::Days(1)));
    assert_eq!(s0.limits.tpm_limit, Some(1000));

    let (s, u) = h
        .post(
            "/budget/update",
            json!({"budget_id": "tier-1", "max_budget": 40.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(u["max_budget"], 40.0);
    let p = h.gov.principal(&hash).unwrap();
    let s0 = &h.gov.scopes(Some(&p), RequestFacts::default()).unwrap()[0];
    assert_eq!(s0.limits.max_budget, Some(40.0));
    let (s, _) = h.post("/budget/update", json!({"budget_id": "nope"})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // still linked: refused; once the key is gone, deleted
    let (s, _) = h.post("/budget/delete", json!({"id": "tier-1"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    h.post("/key/delete", json!({"keys": [hash]})).await;
    let (s, d) = h.post("/budget/delete", json!({"id": "tier-1"})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(d["budget_id"], "tier-1");
    let (s, _) = h.post("/budget/info", json!({"budgets": ["tier-1"]})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert!(h.gov.store().load().await.unwrap().budgets.is_empty());
}
