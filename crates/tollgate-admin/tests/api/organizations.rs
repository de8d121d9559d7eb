//! `/organization/*`: an organization always has a budget tier; a key with its
//! `organization_id` is counted against the tier's limits; update, delete.

use http::StatusCode;
use serde_json::json;
use tollgate_governance::admission::{ScopeKey, ScopeKind};
use tollgate_governance::runtime::RequestFacts;
use tollgate_governance::store::GovernanceStore;

use crate::common::{H, without};

#[tokio::test]
async fn organization_crud_and_key_scope() {
    let h = H::new().await;
    let (s, o) = h
        .post(
            "/organization/new",
            json!({"organization_id": "org-1", "organization_alias": "Acme",
                   "models": ["mock-gpt"], "max_budget": 5.0, "tpm_limit": 900,
                   "metadata": {"region": "eu"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{o}");
    let budget_id = o["budget_id"].as_str().unwrap().to_owned();
    let tier = o["litellm_budget_table"].clone();
    assert_eq!(
        without(&o, &["litellm_budget_table", "created_at", "updated_at"]),
        json!({
            "organization_id": "org-1", "organization_alias": "Acme", "budget_id": budget_id,
            "models": ["mock-gpt"], "spend": 0.0, "metadata": {"region": "eu"},
            "created_by": "litellm-proxy-master-key", "updated_by": "litellm-proxy-master-key"
        })
    );
    assert!(
        o["created_at"].is_string() && o["updated_at"].is_string(),
        "{o}"
    );
    assert_eq!(
        without(&tier, &["created_at", "updated_at"]),
        json!({
            "budget_id": budget_id, "max_budget": 5.0, "soft_budget": null,
            "max_parallel_requests": null, "tpm_limit": 900, "rpm_limit": null,
            "model_max_budget": {}, "budget_duration": null, "budget_reset_at": null,
            "created_by": "litellm-proxy-master-key", "updated_by": "litellm-proxy-master-key"
        })
    );
    let (s, info) = h.get("/organization/info?organization_id=org-1").await;
    assert_eq!(s, StatusCode::OK);
    let mut expected = o.clone();
    expected["members"] = json!([]);
    expected["teams"] = json!([]);
    assert_eq!(info, expected);
    let (_, list) = h.get("/organization/list").await;
    assert_eq!(list, json!([o]));
    let (s, _) = h
        .post(
            "/organization/new",
            json!({"organization_id": "org-1", "organization_alias": "Again"}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "exists");
    // LiteLLM requires the alias (a NOT NULL column)
    let (s, e) = h.post("/organization/new", json!({})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(e["error"]["message"], "organization_alias is required");

    // an org without limits still gets a tier; the id defaults to a uuid
    let (s, o2) = h
        .post("/organization/new", json!({"organization_alias": "Beta"}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(o2["organization_id"].as_str().unwrap().len(), 36);
    assert_eq!(o2["litellm_budget_table"]["max_budget"], json!(null));
    assert!(o2["budget_id"].is_string());

    // a key of the org: the org scope carries the tier's limits
    let (_, hash) = h.key(json!({"organization_id": "org-1"})).await;
    let p = h.gov.principal(&hash).unwrap();
    let scopes = h.gov.scopes(Some(&p), RequestFacts::default()).unwrap();
    let org = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::Organization)
        .unwrap();
    assert_eq!(org.key, ScopeKey::new(ScopeKind::Organization, "org-1"));
    assert_eq!(org.limits.max_budget, Some(5.0));
    assert_eq!(org.limits.tpm_limit, Some(900));
    assert!(h.admits(&hash).await);
    h.gov
        .admission()
        .set_spend(&org.key, 5.0, None)
        .await
        .unwrap();
    assert!(!h.admits(&hash).await, "at the org's cap");

    // PATCH update: the linked tier changes, in force at once
    let (s, u) = h
        .call(
            "PATCH",
            "/organization/update",
            Some("admin"),
            Some(
                r#"{"organization_id": "org-1", "max_budget": 6.0, "organization_alias": "Acme2"}"#,
            ),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{u}");
    assert_eq!(
        (
            u["budget_id"].clone(),
            u["organization_alias"].clone(),
            u["spend"].clone(),
            u["litellm_budget_table"]["max_budget"].clone()
        ),
        (json!(budget_id), json!("Acme2"), json!(5.0), json!(6.0))
    );
    assert!(h.admits(&hash).await);
    let (s, _) = h
        .post(
            "/organization/update",
            json!({"organization_id": "nope", "max_budget": 1.0}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // non-admin: 403
    let (raw, _) = h.key(json!({})).await;
    for (m, uri, body) in [
        ("POST", "/organization/new", Some("{}")),
        (
            "DELETE",
            "/organization/delete",
            Some(r#"{"organization_ids": ["org-1"]}"#),
        ),
        ("GET", "/organization/list", None),
    ] {
        let (s, _) = h.call(m, uri, Some(&raw), body).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{uri}");
    }

    let (s, d) = h
        .call(
            "DELETE",
            "/organization/delete",
            Some("admin"),
            Some(r#"{"organization_ids": ["org-1"]}"#),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(d[0]["organization_id"], "org-1");
    assert_eq!(d.as_array().unwrap().len(), 1);
    let (s, _) = h.get("/organization/info?organization_id=org-1").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = h
        .post(
            "/organization/delete",
            json!({"organization_ids": ["org-1"]}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let stored = h.store.load().await.unwrap().organizations;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].organization_id, o2["organization_id"]);
}
