//! `/customer/*` and `/end_user/*`: budget tier created and changed through the customer,
//! block on the request path, delete.

use http::StatusCode;
use serde_json::json;
use tollgate_governance::admission::ScopeKind;
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::{BlockedEndUser, RequestFacts};

use crate::common::H;

fn facts(id: &str) -> RequestFacts<'_> {
    RequestFacts {
        end_user: Some(id),
        model_group: "mock-gpt",
        ..RequestFacts::default()
    }
}

#[tokio::test]
async fn customer_budget_block_and_delete() {
    let h = H::new().await;
    let (s, c) = h
        .post(
            "/customer/new",
            json!({"user_id": "cust-1", "alias": "Acme", "max_budget": 0.5, "budget_duration": "1d", "rpm_limit": 3}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{c}");
    let tier = c["budget_id"].as_str().unwrap().to_owned();
    assert_eq!(c["litellm_budget_table"]["budget_id"], tier);
    assert_eq!(c["litellm_budget_table"]["max_budget"], 0.5);
    assert_eq!(c["litellm_budget_table"]["rpm_limit"], 3);
    assert_eq!(
        (c["alias"].clone(), c["spend"].clone(), c["blocked"].clone()),
        (json!("Acme"), json!(0.0), json!(false))
    );
    // the request path: the end-user scope carries the tier's limits
    let scopes = h.gov.scopes(None, facts("cust-1")).unwrap();
    let eu = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::EndUser)
        .unwrap();
    assert_eq!(eu.limits.max_budget, Some(0.5));
    assert_eq!(eu.limits.rpm_limit, Some(3));
    assert_eq!(eu.limits.budget_duration, Some(BudgetDuration::Days(1)));

    let (s, info) = h.get("/end_user/info?end_user_id=cust-1").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(info, c);

    let (s, u) = h
        .post(
            "/customer/update",
            json!({"user_id": "cust-1", "max_budget": 0.75}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        u["budget_id"], tier,
        "the linked tier is changed, not replaced"
    );
    assert_eq!(u["litellm_budget_table"]["max_budget"], 0.75);
    let scopes = h.gov.scopes(None, facts("cust-1")).unwrap();
    let eu = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::EndUser)
        .unwrap();
    assert_eq!(eu.limits.max_budget, Some(0.75));

    let (s, v) = h
        .post("/customer/block", json!({"user_ids": ["cust-1"]}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["blocked_users"][0]["blocked"], true);
    assert_eq!(
        h.gov.scopes(None, facts("cust-1")).unwrap_err(),
        BlockedEndUser("cust-1".into())
    );
    let (_, v) = h
        .post("/end_user/unblock", json!({"user_ids": ["cust-1"]}))
        .await;
    assert_eq!(v["unblocked_users"][0]["blocked"], false);
    assert!(h.gov.scopes(None, facts("cust-1")).is_ok());
    // blocking a customer not seen yet creates it blocked
    h.post("/customer/block", json!({"user_ids": ["new-cust"]}))
        .await;
    assert!(h.gov.scopes(None, facts("new-cust")).is_err());

    let (_, l) = h.get("/customer/list").await;
    let ids: Vec<&str> = l
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["user_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["cust-1", "new-cust"]);

    let (s, _) = h.post("/customer/new", json!({"user_id": "cust-1"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "exists");
    let (s, _) = h
        .post(
            "/customer/new",
            json!({"user_id": "cust-2", "budget_id": tier, "max_budget": 1.0}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "budget_id and budget fields");
    let (s, v) = h
        .post(
            "/customer/new",
            json!({"user_id": "cust-2", "budget_id": tier}),
        )
        .await;
    assert_eq!(
        (s, v["litellm_budget_table"]["max_budget"].clone()),
        (StatusCode::OK, json!(0.75))
    );

    let (s, v) = h
        .post(
            "/customer/delete",
            json!({"user_ids": ["cust-1", "new-cust", "cust-2"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["deleted_customers"], 3);
    let (s, _) = h.get("/customer/info?end_user_id=cust-1").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = h
        .post("/customer/delete", json!({"user_ids": ["cust-1"]}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
