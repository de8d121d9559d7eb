//! End-to-end, through the real `tollgate` binary in front of `tollgate-mock`, on SQLite and on
//! Postgres: management answers that LiteLLM's own integration tests parse.
//!
//! - `/user/update` of a user that does not exist creates it (LiteLLM's upsert,
//!   `_update_single_user_helper`, internal_user_endpoints.py) and answers
//!   `{"user_id", "data"}`;
//! - `/team/member_delete` of a user who is not a member is LiteLLM's 400 `User not found in
//!   team` (team_endpoints.py); the member routes on an unknown team answer LiteLLM's 400 /
//!   404 (`management_contract/unknown_team.rs`);
//! - `/user/info` shows each of the user's teams with `keys` and `team_memberships` (the user's
//!   membership rows, spend live, with `litellm_budget_table`), LiteLLM's
//!   `TeamListResponseObject`;
//! - a team created with the master key has `default_user_id` (LiteLLM's
//!   `litellm_proxy_admin_name`) as an admin member (`new_team`);
//! - `/key/service-account/generate` makes a team key with no user, refusing a missing or
//!   unknown `team_id` with LiteLLM's words (key_management_endpoints.py);
//! - a team deployment's public name joins its team's `models` (`["all-proxy-models", …]` for
//!   a team with every model) and leaves it with the team's last deployment of that name;
//!   `/v2/model/info?model=<public name>` finds it (model_management_endpoints.py);
//! - a name the caller cannot route (unknown, or another team's model) that its key's or
//!   team's `models` do not admit is that list's 403 `*_model_access_denied` (LiteLLM checks
//!   the lists before routing, auth_checks.py); a caller no list restricts keeps the 404;
//! - with `litellm_settings.max_budget`, `/user/info?user_id=litellm-proxy-budget` is the
//!   proxy's budget and spend (LiteLLM's `_add_proxy_budget_to_db`, proxy_server.py).

#[path = "common/governance.rs"]
mod gov;

// the service-account and team-model parts, in their own files
#[path = "management_contract/service_keys.rs"]
mod service_keys;
#[path = "management_contract/team_models.rs"]
mod team_models;
#[path = "management_contract/unknown_team.rs"]
mod unknown_team;

use gov::*;
use serde_json::{Value, json};

/// One completion token costs $0.001; the mock answers a chat with 8 completion tokens.
fn deps() -> Vec<Dep<'static>> {
    vec![Dep {
        group: "flat",
        deployment: "flat",
        upstream: "flat",
        id: "flat-1",
        input_cost: 0.0,
        output_cost: 0.001,
    }]
}

/// `/user/update` of unknown users: by id (kept) and by e-mail alone (a uuid id).
async fn user_update_upserts(gw: &GovGateway) {
    let r = post_as(
        gw,
        MASTER,
        "/user/update",
        &json!({"user_id": "up-new", "max_budget": 3.0, "user_alias": "New"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let d = &r.body["data"];
    assert_eq!(
        (
            r.body["user_id"].clone(),
            d["user_id"].clone(),
            d["max_budget"].clone(),
            d["user_alias"].clone(),
            d["user_role"].clone(),
            d["teams"].clone(),
            d["spend"].clone()
        ),
        (
            json!("up-new"),
            json!("up-new"),
            json!(3.0),
            json!("New"),
            Value::Null,
            json!([]),
            json!(0.0)
        ),
        "{}",
        r.text
    );
    let r = get_as(gw, MASTER, "/user/info?user_id=up-new").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user_info"]["max_budget"], 3.0, "{}", r.text);

    let r = post_as(
        gw,
        MASTER,
        "/user/update",
        &json!({"user_email": "mail-only@x.io"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["user_id"].as_str().unwrap_or_default();
    assert_eq!(
        (
            id.len(),
            r.body["data"]["user_id"].clone(),
            r.body["data"]["user_email"].clone()
        ),
        (36, json!(id), json!("mail-only@x.io")),
        "a uuid id: {}",
        r.text
    );
    // the same e-mail again updates that user
    let r = post_as(
        gw,
        MASTER,
        "/user/update",
        &json!({"user_email": "mail-only@x.io", "max_budget": 1.5}),
    )
    .await;
    assert_eq!(
        (
            r.body["user_id"].clone(),
            r.body["data"]["max_budget"].clone()
        ),
        (json!(id), json!(1.5)),
        "{}",
        r.text
    );
}

/// `/team/member_delete` of a non-member: 400, LiteLLM's message.
async fn member_delete_of_a_stranger(gw: &GovGateway) {
    new_team(
        gw,
        json!({"team_id": "md", "members_with_roles": [{"user_id": "md-1", "role": "user"}]}),
    )
    .await;
    let r = post_as(
        gw,
        MASTER,
        "/team/member_delete",
        &json!({"team_id": "md", "user_id": "stranger"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        r.body["error"],
        json!({"message": "User not found in team", "type": "bad_request_error",
               "param": null, "code": "400"})
    );
    let r = post_as(
        gw,
        MASTER,
        "/team/member_delete",
        &json!({"team_id": "md", "user_id": "md-1"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

/// `/user/info` teams carry the user's membership rows, with live spend.
async fn user_info_team_memberships(gw: &GovGateway) {
    new_team(gw, json!({"team_id": "ui", "team_alias": "Info"})).await;
    let r = post_as(
        gw,
        MASTER,
        "/team/member_add",
        &json!({"team_id": "ui", "member": {"user_id": "ui-m", "role": "user"},
                "max_budget_in_team": 0.5}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (key, hash) = generate_key(gw, json!({"team_id": "ui", "user_id": "ui-m"})).await;
    let c = chat(gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(c.status, 200, "{}", c.text);

    let r = get_as(gw, MASTER, "/user/info?user_id=ui-m").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let teams = r.body["teams"].as_array().cloned().unwrap_or_default();
    assert_eq!(teams.len(), 1, "{}", r.text);
    let t = &teams[0];
    assert_eq!(
        (t["team_id"].clone(), t["team_alias"].clone()),
        (json!("ui"), json!("Info"))
    );
    let ms = t["team_memberships"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(ms.len(), 1, "only ui-m's membership: {}", r.text);
    let m = &ms[0];
    assert_eq!(
        (
            m["user_id"].clone(),
            m["team_id"].clone(),
            m["litellm_budget_table"]["max_budget"].clone(),
            m["litellm_budget_table"]["budget_id"].clone()
        ),
        (
            json!("ui-m"),
            json!("ui"),
            json!(0.5),
            m["budget_id"].clone()
        ),
        "{}",
        r.text
    );
    assert!(m["budget_id"].is_string(), "{}", r.text);
    assert!(
        same_dollars(m["spend"].as_f64().unwrap_or(-1.0), 0.008),
        "{}",
        r.text
    );
    assert_eq!(t["keys"][0]["token"], json!(hash), "{}", r.text);
}

/// A team the master key creates has `default_user_id` as an admin, a real user.
async fn creator_is_team_admin(gw: &GovGateway) {
    let r = post_as(
        gw,
        MASTER,
        "/team/new",
        &json!({"team_id": "cr", "members_with_roles": [{"user_id": "cr-1", "role": "user"}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["members_with_roles"],
        json!([{"user_id": "cr-1", "user_email": null, "role": "user"},
               {"user_id": "default_user_id", "user_email": null, "role": "admin"}])
    );
    // named explicitly, it is not added twice
    let r = post_as(
        gw,
        MASTER,
        "/team/new",
        &json!({"team_id": "cr2", "members_with_roles": [{"user_id": "default_user_id", "role": "user"}]}),
    )
    .await;
    assert_eq!(
        r.body["members_with_roles"],
        json!([{"user_id": "default_user_id", "user_email": null, "role": "user"}])
    );
    let r = get_as(gw, MASTER, "/user/info?user_id=default_user_id").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut teams: Vec<String> = r.body["user_info"]["teams"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    teams.sort();
    assert!(
        teams.contains(&"cr".to_owned()) && teams.contains(&"cr2".to_owned()),
        "{}",
        r.text
    );
}

/// The proxy's budget as LiteLLM's `litellm-proxy-budget` user: every call so far (four of
/// $0.008) against `litellm_settings.max_budget`.
async fn proxy_budget_user(gw: &GovGateway) {
    let r = poll(
        || get_as(gw, MASTER, "/user/info?user_id=litellm-proxy-budget"),
        |r| same_dollars(r.body["user_info"]["spend"].as_f64().unwrap_or(-1.0), 0.032),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let u = &r.body["user_info"];
    assert_eq!(
        (
            r.body["user_id"].clone(),
            u["user_id"].clone(),
            u["max_budget"].clone(),
            u["budget_duration"].clone(),
            r.body["keys"].clone(),
            r.body["teams"].clone()
        ),
        (
            json!("litellm-proxy-budget"),
            json!("litellm-proxy-budget"),
            json!(5.0),
            json!("30d"),
            json!([]),
            json!([])
        ),
        "{}",
        r.text
    );
    assert!(
        same_dollars(u["spend"].as_f64().unwrap_or(-1.0), 0.032),
        "{}",
        r.text
    );
    assert!(u["budget_reset_at"].is_string(), "{}", r.text);
}

/// The contract on a running gateway; returns it for the caller's row checks.
async fn contract(db_url: Option<&str>) -> (GovGateway, tollgate_mock::MockHandle) {
    let m = mock().await;
    let proxy_budget = "litellm_settings:\n  max_budget: 5.0\n  budget_duration: 30d\n";
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), proxy_budget, db_url));
    user_update_upserts(&gw).await;
    member_delete_of_a_stranger(&gw).await;
    unknown_team::member_routes_of_an_unknown_team(&gw).await;
    user_info_team_memberships(&gw).await;
    creator_is_team_admin(&gw).await;
    service_keys::service_account_keys(&gw).await;
    team_models::team_model_list(&gw, &m.base_url()).await;
    team_models::unroutable_names(&gw).await;
    proxy_budget_user(&gw).await;
    (gw, m)
}

const USER_ROW: &str =
    "SELECT max_budget, user_role FROM \"LiteLLM_UserTable\" WHERE user_id = 'up-new'";
const CREATOR_MEMBERSHIP: &str = "SELECT COUNT(*) FROM \"LiteLLM_TeamMembership\" WHERE user_id = 'default_user_id' AND team_id = 'cr'";
const TEAM_MODELS: &str = "SELECT models FROM \"LiteLLM_TeamTable\" WHERE team_id = 'tm'";
const SERVICE_KEY: &str =
    "SELECT user_id, team_id FROM \"LiteLLM_VerificationToken\" WHERE key_alias = 'svc'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_answers_as_litellm_sqlite() {
    let (mut gw, _m) = contract(None).await;
    assert!(gw.stop().await, "graceful shutdown");
    let store =
        tollgate_governance::store::SqliteStore::open(gw.db_path().to_str().expect("utf-8 path"))
            .await
            .expect("open the gateway's SQLite store");
    let user: (Option<f64>, Option<String>) = sqlx::query_as(USER_ROW)
        .fetch_one(store.pool())
        .await
        .expect("the upserted user row");
    assert_eq!(user, (Some(3.0), None));
    let n: i64 = sqlx::query_scalar(CREATOR_MEMBERSHIP)
        .fetch_one(store.pool())
        .await
        .expect("count");
    assert_eq!(n, 1);
    let k: (Option<String>, Option<String>) = sqlx::query_as(SERVICE_KEY)
        .fetch_one(store.pool())
        .await
        .expect("the service-account key row");
    assert_eq!(k, (None, Some("sa".to_owned())));
    let models: String = sqlx::query_scalar(TEAM_MODELS)
        .fetch_one(store.pool())
        .await
        .expect("the team row");
    let models: Vec<String> = serde_json::from_str(&models).expect("a JSON list");
    assert_eq!(models, ["all-proxy-models", "tm-gpt"]);
    store.pool().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_answers_as_litellm_postgres() {
    let Some(db) = PgDb::create("management_contract").await else {
        return;
    };
    let (mut gw, _m) = contract(Some(&db.url)).await;
    assert!(gw.stop().await, "graceful shutdown");
    let mut c = db.connect().await;
    let user: (Option<f64>, Option<String>) = sqlx::query_as(USER_ROW)
        .fetch_one(&mut c)
        .await
        .expect("the upserted user row");
    assert_eq!(user, (Some(3.0), None));
    let n: i64 = sqlx::query_scalar(CREATOR_MEMBERSHIP)
        .fetch_one(&mut c)
        .await
        .expect("count");
    assert_eq!(n, 1);
    let k: (Option<String>, Option<String>) = sqlx::query_as(SERVICE_KEY)
        .fetch_one(&mut c)
        .await
        .expect("the service-account key row");
    assert_eq!(k, (None, Some("sa".to_owned())));
    let models: Vec<String> = sqlx::query_scalar(TEAM_MODELS)
        .fetch_one(&mut c)
        .await
        .expect("the team row");
    assert_eq!(models, ["all-proxy-models", "tm-gpt"]);
    let _ = sqlx::Connection::close(c).await;
}
