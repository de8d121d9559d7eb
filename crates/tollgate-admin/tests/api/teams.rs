//! `/team/*`: members with roles, per-member budget tiers on the request path, aliases,
//! block, member update/delete, team delete.

use http::StatusCode;
use serde_json::{Value, json};
use tollgate_governance::admission::{ScopeKey, ScopeKind};
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::{KeyError, RequestFacts};

use crate::common::{H, without};

#[tokio::test]
async fn team_with_members_and_member_budget_tier() {
    let h = H::new().await;
    let (s, t) = h
        .post(
            "/team/new",
            json!({
                "team_id": "t1", "team_alias": "core", "max_budget": 10.0, "models": ["mock-gpt"],
                "model_aliases": {"fast": "mock-gpt"},
                "members_with_roles": [{"user_id": "u1", "role": "admin"}]
            }),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{t}");
    assert_eq!(
        without(&t, &["created_at", "updated_at"]),
        json!({
            "team_id": "t1", "team_alias": "core", "organization_id": null, "admins": [],
            "members": [],
            // the master key's user joins as an admin (LiteLLM's new_team)
            "members_with_roles": [{"user_id": "u1", "user_email": null, "role": "admin"},
                                   {"user_id": "default_user_id", "user_email": null, "role": "admin"}],
            "metadata": {"model_aliases": {"fast": "mock-gpt"}}, "max_budget": 10.0,
            "soft_budget": null, "spend": 0.0, "models": ["mock-gpt"], "max_parallel_requests": null,
            "tpm_limit": null, "rpm_limit": null, "budget_duration": null, "budget_reset_at": null,
            "blocked": false, "model_spend": {}, "model_max_budget": {}
        })
    );
    // the member's user was created, in the team
    assert_eq!(
        h.gov.cache().read().users["u1"].teams,
        vec!["t1".to_owned()]
    );
    let (s, _) = h.post("/team/new", json!({"team_id": "t1"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    let (s, v) = h
        .post(
            "/team/member_add",
            json!({"team_id": "t1", "member": {"user_id": "u2", "role": "user"}, "max_budget_in_team": 2.5, "budget_duration": "1d"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let m = &v["updated_team_memberships"][0];
    assert_eq!(
        (m["team_id"].clone(), m["user_id"].clone()),
        (json!("t1"), json!("u2"))
    );
    let tier_id = m["budget_id"].as_str().unwrap().to_owned();
    assert_eq!(m["litellm_budget_table"]["budget_id"], tier_id);
    assert_eq!(m["litellm_budget_table"]["max_budget"], 2.5);
    assert_eq!(m["litellm_budget_table"]["budget_duration"], "1d");
    assert_eq!(v["members_with_roles"].as_array().unwrap().len(), 3);
    assert_eq!(v["updated_users"][0]["teams"], json!(["t1"]));
    let (s, _) = h
        .post(
            "/team/member_add",
            json!({"team_id": "t1", "member": {"user_id": "u2"}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "already a member");

    // a key of u2 in t1: the request path sees the member scope with that tier, and the alias
    let (_, hash) = h.key(json!({"team_id": "t1", "user_id": "u2"})).await;
    let p = h.gov.principal(&hash).unwrap();
    assert_eq!(p.alias("fast").as_deref(), Some("mock-gpt"));
    let facts = RequestFacts {
        model_group: "mock-gpt",
        ..RequestFacts::default()
    };
    let scopes = h.gov.scopes(Some(&p), facts).unwrap();
    let member = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::TeamMember)
        .unwrap();
    assert_eq!(member.key, ScopeKey::team_member("t1", "u2"));
    assert_eq!(member.limits.max_budget, Some(2.5));
    assert_eq!(member.limits.budget_duration, Some(BudgetDuration::Days(1)));
    let team = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::Team)
        .unwrap();
    assert_eq!(team.limits.max_budget, Some(10.0));
    let tier_reset = h.gov.cache().read().budgets[&tier_id].budget_reset_at;
    assert_eq!(
        h.gov
            .admission()
            .spend(&ScopeKey::team_member("t1", "u2"))
            .await
            .unwrap()
            .unwrap()
            .budget_reset_at,
        tier_reset
    );

    // info: team, its keys (hashes) and memberships
    let (s, info) = h.get("/team/info?team_id=t1").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(info["team_id"], "t1");
    assert_eq!(info["team_info"]["team_alias"], "core");
    assert_eq!(info["keys"].as_array().unwrap().len(), 1);
    assert_eq!(info["keys"][0]["token"], hash);
    let ms = info["team_memberships"].as_array().unwrap();
    assert_eq!(ms.len(), 3);
    assert_eq!(ms[0]["user_id"], "default_user_id");
    assert_eq!(
        (
            ms[1]["user_id"].clone(),
            ms[1]["litellm_budget_table"].clone()
        ),
        (json!("u1"), Value::Null)
    );
    assert_eq!(ms[2]["litellm_budget_table"]["max_budget"], 2.5);

    // member_update changes the tier, in force at once
    let (s, v) = h
        .post(
            "/team/member_update",
            json!({"team_id": "t1", "user_id": "u2", "max_budget_in_team": 5.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v,
        json!({"team_id": "t1", "user_id": "u2", "user_email": null, "max_budget_in_team": 5.0,
               "budget_duration": "1d", "tpm_limit": null, "rpm_limit": null})
    );
    let p = h.gov.principal(&hash).unwrap();
    let scopes = h.gov.scopes(Some(&p), facts).unwrap();
    let member = scopes
        .iter()
        .find(|s| s.key.kind == ScopeKind::TeamMember)
        .unwrap();
    assert_eq!(member.limits.max_budget, Some(5.0));

    // update → LiteLLM's {"team_id", "data"}
    let (s, v) = h
        .post("/team/update", json!({"team_id": "t1", "max_budget": 20.0}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["team_id"], "t1");
    assert_eq!(v["data"]["max_budget"], 20.0);
    assert_eq!(
        v["data"]["metadata"],
        json!({"model_aliases": {"fast": "mock-gpt"}})
    );
    assert_eq!(h.gov.cache().read().teams["t1"].max_budget, Some(20.0));

    // block / unblock the team: its keys are refused, then accepted
    let (s, v) = h.post("/team/block", json!({"team_id": "t1"})).await;
    assert_eq!((s, v["blocked"].clone()), (StatusCode::OK, json!(true)));
    assert_eq!(
        h.gov.principal(&hash).unwrap_err(),
        KeyError::TeamBlocked("t1".into())
    );
    h.post("/team/unblock", json!({"team_id": "t1"})).await;
    assert!(h.gov.principal(&hash).is_ok());

    // list
    let (_, l) = h.get("/team/list").await;
    assert_eq!(l.as_array().unwrap().len(), 1);
    assert_eq!(l[0]["keys"][0]["token"], hash);

    // member_delete: membership gone, user's teams updated
    let (s, v) = h
        .post(
            "/team/member_delete",
            json!({"team_id": "t1", "user_id": "u2"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v["members_with_roles"],
        json!([{"user_id": "u1", "user_email": null, "role": "admin"},
               {"user_id": "default_user_id", "user_email": null, "role": "admin"}])
    );
    assert!(h.gov.cache().read().users["u2"].teams.is_empty());
    assert!(
        !h.gov
            .cache()
            .read()
            .memberships
            .contains_key(&("t1".into(), "u2".into()))
    );
    // no longer a member: LiteLLM's 400
    let (s, v) = h
        .post(
            "/team/member_delete",
            json!({"team_id": "t1", "user_id": "u2"}),
        )
        .await;
    assert_eq!(
        (s, v["error"]["message"].clone(), v["error"]["type"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("User not found in team"),
            json!("bad_request_error")
        )
    );

    // delete: the team's keys and memberships go with it
    let (s, v) = h.post("/team/delete", json!({"team_ids": ["t1"]})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"deleted_teams": ["t1"]}));
    assert_eq!(
        h.gov.principal(&hash).unwrap_err(),
        KeyError::NotFound(hash.clone())
    );
    assert!(h.gov.cache().read().users["u1"].teams.is_empty());
    assert!(h.gov.cache().read().memberships.is_empty());
    let (s, _) = h.get("/team/info?team_id=t1").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let stored = h.gov.store().load().await.unwrap();
    assert!(stored.teams.is_empty() && stored.keys.is_empty());
}

#[tokio::test]
async fn member_by_email_creates_the_user_and_team_id_is_generated() {
    let h = H::new().await;
    let (_, t) = h.post("/team/new", json!({"budget_duration": "1h"})).await;
    let id = t["team_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "uuid");
    assert!(t["budget_reset_at"].is_string());
    let (s, v) = h
        .post(
            "/team/member_add",
            json!({"team_id": id, "member": [{"user_email": "a@x.io"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let user = &v["updated_users"][0];
    assert_eq!(user["user_email"], "a@x.io");
    assert_eq!(user["user_role"], "internal_user");
    assert_eq!(
        v["updated_team_memberships"][0]["litellm_budget_table"],
        Value::Null
    );
    let (s, _) = h
        .post(
            "/team/member_add",
            json!({"team_id": "nope", "member": {"user_id": "x"}}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = h
        .post(
            "/team/member_add",
            json!({"team_id": id, "member": {"role": "admin"}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}
