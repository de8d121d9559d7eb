//! A team's default member budget (`team_member_budget`, LiteLLM's `TeamMemberBudgetHandler`)
//! and `/team/bulk_member_add`.

use http::StatusCode;
use serde_json::{Value, json};

use crate::common::{H, without};

/// The membership of `user` in `/team/info`'s `team_memberships`.
fn membership<'a>(info: &'a Value, user: &str) -> &'a Value {
    info["team_memberships"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["user_id"] == user))
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn team_member_budget_is_a_default_tier_copied_to_each_member() {
    let h = H::new().await;
    let (s, t) = h
        .post(
            "/team/new",
            json!({"team_id": "t", "team_alias": "Core Team", "team_member_budget": 3.0,
                   "team_member_rpm_limit": 7, "budget_duration": "1d",
                   "members_with_roles": [{"user_id": "u1", "role": "user"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{t}");
    let default_id = t["metadata"]["team_member_budget_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let hex = default_id.strip_prefix("team-Core-Team-budget-").unwrap();
    assert_eq!(hex.len(), 32, "{default_id}");
    assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(t.get("team_member_budget").is_none(), "not a team column");

    let (_, info) = h.get("/team/info?team_id=t").await;
    let table = &info["team_info"]["team_member_budget_table"];
    assert_eq!(
        without(table, &["created_at", "updated_at", "budget_reset_at"]),
        json!({"budget_id": default_id, "max_budget": 3.0, "soft_budget": null,
               "max_parallel_requests": null, "tpm_limit": null, "rpm_limit": 7,
               "model_max_budget": {}, "budget_duration": "1d",
               "created_by": "litellm-proxy-master-key", "updated_by": "litellm-proxy-master-key"})
    );
    // the member named at creation has its own copy
    let m1 = membership(&info, "u1");
    assert_ne!(m1["budget_id"], json!(default_id));
    assert_eq!(m1["litellm_budget_table"]["max_budget"], 3.0);
    assert_eq!(m1["litellm_budget_table"]["rpm_limit"], 7);
    assert_eq!(m1["litellm_budget_table"]["budget_duration"], "1d");

    // added later: a copy, unless the member has its own max_budget_in_team
    h.post(
        "/team/member_add",
        json!({"team_id": "t", "member": {"user_id": "u2"}}),
    )
    .await;
    h.post(
        "/team/member_add",
        json!({"team_id": "t", "member": {"user_id": "u3"}, "max_budget_in_team": 9.0}),
    )
    .await;
    // /team/update changes the default in place; existing copies keep their values
    let (s, v) = h
        .post(
            "/team/update",
            json!({"team_id": "t", "team_member_budget": 4.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["data"]["metadata"]["team_member_budget_id"],
        json!(default_id)
    );
    h.post(
        "/team/member_add",
        json!({"team_id": "t", "member": {"user_id": "u4"}}),
    )
    .await;
    let (_, info) = h.get("/team/info?team_id=t").await;
    assert_eq!(
        info["team_info"]["team_member_budget_table"]["max_budget"],
        4.0
    );
    assert_eq!(
        info["team_info"]["team_member_budget_table"]["rpm_limit"],
        7
    );
    let max = |u: &str| membership(&info, u)["litellm_budget_table"]["max_budget"].clone();
    assert_eq!(
        [max("u1"), max("u2"), max("u3"), max("u4")],
        [json!(3.0), json!(3.0), json!(9.0), json!(4.0)]
    );

    // enforced: u2's key is refused once $3 is spent in the team, u4's is not
    let (_, k2) = h.key(json!({"team_id": "t", "user_id": "u2"})).await;
    let (_, k4) = h.key(json!({"team_id": "t", "user_id": "u4"})).await;
    let cost = h.charge(&k2, "r-1", 3_000_000, 0, None).await;
    assert!((cost - 3.0).abs() < 1e-9, "{cost}");
    assert!(!h.admits(&k2).await);
    assert!(h.admits(&k4).await);
    let (_, info) = h.get("/team/info?team_id=t").await;
    assert_eq!(membership(&info, "u2")["spend"], 3.0);

    // /user/new into the team: a copy of the default too
    let (s, v) = h
        .post(
            "/user/new",
            json!({"user_id": "u5", "teams": ["t"], "auto_create_key": false}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, info) = h.get("/team/info?team_id=t").await;
    let u5 = &membership(&info, "u5")["litellm_budget_table"];
    assert_eq!(
        (u5["max_budget"].clone(), u5["rpm_limit"].clone()),
        (json!(4.0), json!(7))
    );
    assert_ne!(u5["budget_id"], json!(default_id));

    // a team without a default shows null
    h.post("/team/new", json!({"team_id": "plain"})).await;
    let (_, info) = h.get("/team/info?team_id=plain").await;
    assert_eq!(info["team_info"]["team_member_budget_table"], Value::Null);
    // a first default created by /team/update, named without an alias
    let (_, v) = h
        .post(
            "/team/update",
            json!({"team_id": "plain", "team_member_tpm_limit": 100}),
        )
        .await;
    let id = v["data"]["metadata"]["team_member_budget_id"]
        .as_str()
        .unwrap();
    assert!(
        id.starts_with("team-budget-") && id.len() == 12 + 32,
        "{id}"
    );
    let (s, e) = h
        .post(
            "/team/update",
            json!({"team_id": "plain", "team_member_budget": -1}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        e["error"]["message"],
        "team_member_budget must be a number >= 0"
    );
}

#[tokio::test]
async fn bulk_member_add_reports_each_member() {
    let h = H::new().await;
    h.post("/team/new", json!({"team_id": "t"})).await;
    let (s, v) = h
        .post(
            "/team/bulk_member_add",
            json!({"team_id": "t", "max_budget_in_team": 2.0,
                   "members": [{"user_id": "u1", "role": "user"}, {"user_email": "b@x.io", "role": "admin"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (
            v["team_id"].clone(),
            v["total_requested"].clone(),
            v["successful_additions"].clone(),
            v["failed_additions"].clone()
        ),
        (json!("t"), json!(2), json!(2), json!(0))
    );
    let r = &v["results"];
    assert_eq!(
        (
            r[0]["user_id"].clone(),
            r[0]["user_email"].clone(),
            r[0]["success"].clone(),
            r[0]["error"].clone()
        ),
        (json!("u1"), Value::Null, json!(true), Value::Null)
    );
    assert_eq!(r[0]["updated_user"]["user_id"], "u1");
    assert_eq!(r[0]["updated_team_membership"]["team_id"], "t");
    assert_eq!(
        r[0]["updated_team_membership"]["litellm_budget_table"]["max_budget"],
        2.0
    );
    assert_eq!(r[1]["user_email"], "b@x.io");
    assert_eq!(r[1]["updated_user"]["user_email"], "b@x.io");
    assert_eq!(r[1]["updated_user"]["teams"], json!(["t"]));
    let roles: Vec<Value> = v["updated_team"]["members_with_roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    // the creator (the master key's `default_user_id`) first, then the two added
    assert_eq!(roles, [json!("admin"), json!("user"), json!("admin")]);
    assert_eq!(
        v["updated_team"]["updated_users"].as_array().unwrap().len(),
        2
    );

    // the whole addition failing: every member failed, status 200, as LiteLLM answers
    let (s, v) = h
        .post(
            "/team/bulk_member_add",
            json!({"team_id": "nope", "members": [{"user_id": "u9"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v,
        json!({"team_id": "nope", "total_requested": 1, "successful_additions": 0,
               "failed_additions": 1, "updated_team": null,
               "results": [{"user_id": "u9", "user_email": null, "success": false,
                            "error": "Team not found for team_id=nope",
                            "updated_user": null, "updated_team_membership": null}]})
    );
    let (s, v) = h
        .post(
            "/team/bulk_member_add",
            json!({"team_id": "t", "members": []}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["message"], "At least one member is required");
    // a member already in the team is skipped and reported failed; the others are added
    let (s, v) = h
        .post(
            "/team/bulk_member_add",
            json!({"team_id": "t", "members": [{"user_id": "u1"}, {"user_id": "u7"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (
            v["successful_additions"].clone(),
            v["failed_additions"].clone()
        ),
        (json!(1), json!(1)),
        "{v}"
    );
    assert_eq!(
        (
            v["results"][0]["success"].clone(),
            v["results"][0]["error"].clone()
        ),
        (
            json!(false),
            json!("User already in team. team_id=t, user_id=u1")
        )
    );
    assert_eq!(v["results"][1]["updated_user"]["user_id"], "u7");
    // all of them already in: the whole addition fails
    let (_, v) = h
        .post(
            "/team/bulk_member_add",
            json!({"team_id": "t", "members": [{"user_id": "u7"}]}),
        )
        .await;
    assert_eq!(
        v["results"][0]["error"], "All users are already in team. team_id=t",
        "{v}"
    );
    assert_eq!(v["updated_team"], Value::Null);
    // all_users: every user (three) into a new team
    h.post("/team/new", json!({"team_id": "t2"})).await;
    let (_, v) = h
        .post(
            "/team/bulk_member_add",
            json!({"team_id": "t2", "all_users": true}),
        )
        .await;
    assert_eq!(v["successful_additions"], 3, "{v}");
}
