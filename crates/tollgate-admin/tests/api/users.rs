//! `/user/*`: new with an auto-created key, info, update, list, delete (count).

use http::StatusCode;
use serde_json::{Value, json};
use tollgate_governance::admission::ScopeKind;
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::{KeyError, RequestFacts};
use tollgate_governance::store::hash_key;

use crate::common::H;

#[tokio::test]
async fn user_lifecycle() {
    let h = H::new().await;
    let (s, v) = h
        .post(
            "/user/new",
            json!({"user_id": "alice", "user_email": "a@x.io", "max_budget": 5.0, "budget_duration": "1mo", "models": ["mock-gpt"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let raw = v["key"].as_str().unwrap().to_owned();
    assert!(raw.starts_with("sk-"));
    let hash = hash_key(&raw);
    assert_eq!(v["token_id"], hash);
    assert_eq!(
        (
            v["user_id"].clone(),
            v["user_email"].clone(),
            v["user_role"].clone(),
            v["teams"].clone()
        ),
        (
            json!("alice"),
            json!("a@x.io"),
            json!("internal_user"),
            json!([])
        )
    );
    assert_eq!(v["max_budget"], 5.0);
    assert_eq!(v["budget_duration"], "1mo");
    // the key is the user's, and the user's limits are on the request path
    let p = h.gov.principal(&hash).unwrap();
    assert_eq!(p.key.user_id.as_deref(), Some("alice"));
    assert_eq!(p.key.models, vec!["mock-gpt".to_owned()]);
    let scopes = h.gov.scopes(Some(&p), RequestFacts::default()).unwrap();
    let user = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::User)
        .unwrap();
    assert_eq!(user.limits.max_budget, Some(5.0));
    assert_eq!(user.limits.budget_duration, Some(BudgetDuration::Months(1)));

    let (s, _) = h.post("/user/new", json!({"user_id": "alice"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (_, v) = h
        .post(
            "/user/new",
            json!({"user_id": "bob", "auto_create_key": false}),
        )
        .await;
    assert_eq!(v["key"], Value::Null);
    assert_eq!(v["user_id"], "bob");

    let (s, info) = h.get("/user/info?user_id=alice").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(info["user_id"], "alice");
    assert_eq!(info["user_info"]["user_email"], "a@x.io");
    assert_eq!(info["user_info"]["spend"], 0.0);
    assert_eq!(info["keys"][0]["token"], hash);
    assert_eq!(info["teams"], json!([]));
    // alice's own key reads her info, not bob's
    let (s, own) = h.call("GET", "/user/info", Some(&raw), None).await;
    assert_eq!(
        (s, own["user_id"].clone()),
        (StatusCode::OK, json!("alice"))
    );
    let (s, _) = h
        .call("GET", "/user/info?user_id=bob", Some(&raw), None)
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    let (s, v) = h
        .post(
            "/user/update",
            json!({"user_id": "alice", "max_budget": 7.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["user_id"], "alice");
    assert_eq!(v["data"]["max_budget"], 7.0);
    assert_eq!(h.gov.cache().read().users["alice"].max_budget, Some(7.0));
    // an unknown user is created from the body (LiteLLM's upsert), with no role
    let (s, v) = h
        .post(
            "/user/update",
            json!({"user_id": "nobody", "max_budget": 2.5}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (
            v["user_id"].clone(),
            v["data"]["user_id"].clone(),
            v["data"]["max_budget"].clone(),
            v["data"]["user_role"].clone(),
            v["data"]["teams"].clone(),
            v["data"]["spend"].clone()
        ),
        (
            json!("nobody"),
            json!("nobody"),
            json!(2.5),
            Value::Null,
            json!([]),
            json!(0.0)
        )
    );

    let (_, l) = h.get("/user/list").await;
    assert_eq!(
        (
            l["total"].clone(),
            l["page"].clone(),
            l["page_size"].clone(),
            l["total_pages"].clone()
        ),
        (json!(3), json!(1), json!(25), json!(1))
    );
    let ids: Vec<&str> = l["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["user_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alice", "bob", "nobody"]);

    let (s, v) = h.post("/user/delete", json!({"user_ids": ["alice"]})).await;
    assert_eq!((s, v), (StatusCode::OK, json!(1)));
    assert_eq!(
        h.gov.principal(&hash).unwrap_err(),
        KeyError::NotFound(hash.clone())
    );
    let (s, _) = h.post("/user/delete", json!({"user_ids": ["ghost"]})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn user_new_joins_teams() {
    let h = H::new().await;
    h.post("/team/new", json!({"team_id": "t1"})).await;
    let (s, v) = h
        .post("/user/new", json!({"user_id": "carol", "teams": ["t1"]}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["teams"], json!(["t1"]));
    let team = h.gov.cache().read().teams["t1"].clone();
    // after the team's creator, `default_user_id`
    assert_eq!(team.members_with_roles[1].user_id.as_deref(), Some("carol"));
    let (s, _) = h
        .post("/user/new", json!({"user_id": "dave", "teams": ["nope"]}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_password_is_stored_hashed_and_never_shown() {
    use tollgate_governance::store::GovernanceStore;
    let h = H::new().await;
    let (s, v) = h
        .post(
            "/user/new",
            json!({"user_id": "pat", "password": "pw-CANARY3", "auto_create_key": false}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v.get("password").is_none(), "{v}");
    let stored = |h: &H| h.gov.cache().read().users["pat"].password.clone();
    assert_eq!(stored(&h), Some(hash_key("pw-CANARY3")));
    // Another field's update keeps it; a new password replaces it.
    let (s, v) = h
        .post("/user/update", json!({"user_id": "pat", "max_budget": 2.0}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["data"].get("password").is_none(), "{v}");
    assert_eq!(stored(&h), Some(hash_key("pw-CANARY3")));
    let (s, _) = h
        .post(
            "/user/update",
            json!({"user_id": "pat", "password": "pw-2"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(stored(&h), Some(hash_key("pw-2")));
    let snap = h.store.load().await.unwrap();
    let row = snap.users.iter().find(|u| u.user_id == "pat").unwrap();
    assert_eq!(row.password, Some(hash_key("pw-2")));
    for uri in ["/user/info?user_id=pat", "/user/list"] {
        let (_, v) = h.get(uri).await;
        assert!(!v.to_string().contains("password"), "{uri}: {v}");
    }
    let (s, v) = h
        .post("/user/update", json!({"user_id": "pat", "password": ""}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["message"], "password must not be empty");
}
