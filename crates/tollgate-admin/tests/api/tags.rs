//! `/tag/*`: a tag's budget tier reaches the request path, refuses at its cap, changes on
//! update, and goes away on delete.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

use http::StatusCode;
use serde_json::{Value, json};
use tollgate_governance::admission::{AdmitRequest, Estimate, ScopeKey, ScopeKind};
use tollgate_governance::runtime::RequestFacts;
use tollgate_governance::store::{GovernanceStore, SpendLogRow};

use crate::common::{H, without};

/// The tier JSON of a tag without its volatile fields (ids and times).
fn tier(v: &Value) -> Value {
    without(
        v,
        &["budget_id", "created_at", "updated_at", "budget_reset_at"],
    )
}

/// Whether a request tagged `prod` is admitted now (reservation dropped unsettled).
async fn admit_prod(h: &H) -> Result<(), (u16, Option<ScopeKey>)> {
    let tags = vec!["prod".to_owned()];
    let facts = RequestFacts {
        model_group: "mock-gpt",
        tags: &tags,
        ..RequestFacts::default()
    };
    let scopes = h.gov.scopes(None, facts).unwrap();
    let est = Estimate::new(h.gov.admission().config(), None, 10, Some(10));
    h.gov
        .admit(
            AdmitRequest {
                request_id: "r-tag".into(),
                attempt: 0,
                scopes,
                estimate: est,
            },
            None,
            SpendLogRow::default(),
        )
        .await
        .map(|_| ())
        .map_err(|r| (r.status, r.scope))
}

#[tokio::test]
async fn tag_budget_crud_and_request_path() {
    let h = H::new().await;
    let (s, v) = h
        .post(
            "/tag/new",
            json!({"name": "prod", "description": "production", "models": ["mock-gpt"],
                   "max_budget": 2.0, "budget_duration": "1d", "rpm_limit": 7}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let budget_id = v["tag"]["budget_id"].as_str().unwrap().to_owned();
    assert_eq!(v["tag"]["litellm_budget_table"]["budget_id"], budget_id);
    assert!(v["tag"]["litellm_budget_table"]["budget_reset_at"].is_string());
    let tag = json!({
        "name": "prod", "description": "production", "models": ["mock-gpt"],
        "budget_id": budget_id, "spend": 0.0,
        "litellm_budget_table": v["tag"]["litellm_budget_table"].clone(),
    });
    assert_eq!(
        v,
        json!({"message": "Tag prod created successfully", "tag": tag})
    );
    assert_eq!(
        tier(&v["tag"]["litellm_budget_table"]),
        json!({
            "max_budget": 2.0, "soft_budget": null, "max_parallel_requests": null,
            "tpm_limit": null, "rpm_limit": 7, "model_max_budget": {}, "budget_duration": "1d",
            "created_by": "litellm-proxy-master-key", "updated_by": "litellm-proxy-master-key"
        })
    );
    let (s, info) = h.post("/tag/info", json!({"names": ["prod"]})).await;
    assert_eq!((s, info), (StatusCode::OK, json!({"prod": tag})));
    let (s, list) = h.get("/tag/list").await;
    assert_eq!((s, list), (StatusCode::OK, json!([tag])));
    let (s, _) = h.post("/tag/new", json!({"name": "prod"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "exists");

    // the request path: the tag scope carries the tier's limits
    let tags = vec!["prod".to_owned()];
    let facts = RequestFacts {
        model_group: "mock-gpt",
        tags: &tags,
        ..RequestFacts::default()
    };
    let scopes = h.gov.scopes(None, facts).unwrap();
    let t = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::Tag)
        .unwrap();
    assert_eq!(t.key, ScopeKey::new(ScopeKind::Tag, "prod"));
    assert_eq!(t.limits.max_budget, Some(2.0));
    assert_eq!(t.limits.rpm_limit, Some(7));
    assert_eq!(admit_prod(&h).await, Ok(()));
    let scope = ScopeKey::new(ScopeKind::Tag, "prod");
    h.gov
        .admission()
        .set_spend(&scope, 2.0, None)
        .await
        .unwrap();
    assert_eq!(admit_prod(&h).await, Err((422, Some(scope.clone()))));

    // update: the linked tier is changed, in force on the next request
    let (s, u) = h
        .post("/tag/update", json!({"name": "prod", "max_budget": 3.0}))
        .await;
    assert_eq!(s, StatusCode::OK, "{u}");
    assert_eq!(u["message"], "Tag prod updated successfully");
    assert_eq!(u["tag"]["budget_id"], budget_id);
    assert_eq!(u["tag"]["spend"], 2.0);
    assert_eq!(u["tag"]["litellm_budget_table"]["max_budget"], 3.0);
    assert_eq!(admit_prod(&h).await, Ok(()));

    // non-admin: 403 on writes and reads
    let (raw, _) = h.key(json!({})).await;
    for (m, uri, body) in [
        ("POST", "/tag/new", Some(r#"{"name": "x"}"#)),
        ("POST", "/tag/delete", Some(r#"{"name": "prod"}"#)),
        ("GET", "/tag/list", None),
    ] {
        let (s, _) = h.call(m, uri, Some(&raw), body).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{uri}");
    }

    let (s, d) = h.post("/tag/delete", json!({"name": "prod"})).await;
    assert_eq!(
        (s, d),
        (
            StatusCode::OK,
            json!({"message": "Tag prod deleted successfully"})
        )
    );
    let (s, _) = h.post("/tag/info", json!({"names": ["prod"]})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = h.post("/tag/delete", json!({"name": "prod"})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (_, list) = h.get("/tag/list").await;
    assert_eq!(list, json!([]));
    assert!(h.store.load().await.unwrap().tags.is_empty());
    // a deleted tag no longer limits requests
    assert_eq!(admit_prod(&h).await, Ok(()));
}
