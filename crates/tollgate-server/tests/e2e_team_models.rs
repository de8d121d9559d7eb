//! End-to-end: team-scoped deployments (LiteLLM's "team models": `/model/new` with
//! `model_info.team_id`, `_add_team_model_to_db` in
//! `litellm/proxy/management_endpoints/model_management_endpoints.py`), with the real binary in
//! front of the mock, on SQLite and on Postgres with LiteLLM's tables:
//!
//! - stored under `model_name_<team>_<uuid>` with `model_info.team_public_model_name`; only a
//!   proxy admin or an admin of that team may add, change or delete it (403 in LiteLLM's words
//!   otherwise); the team must exist (400);
//! - that team's keys call it by the public name (the mock sees the deployment's own model);
//!   another team's key, a key without a team and the master key get the unknown-model answer
//!   for the public name and for the internal one;
//! - `/v1/models`, `/model/info`, `/v2/model/info` show it to that team under the public name
//!   (`user_models_only`, `include_team_models`), to admins under the internal name;
//! - the spend-log row names the upstream model and the internal group, and the team's spend
//!   goes up by exactly usage × price;
//! - a request's `fallbacks` follow the same rule; a restart keeps all of it.
//!
//! Mock token rule (crates/tollgate-mock/README.md): `"hello"` with `max_tokens: 8` is 5 prompt
//! + 8 completion tokens, so [`C1`] USD on the team deployment.

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

/// Input price of the team deployment, USD per token.
const X: f64 = 0.001;
/// Output price of the team deployment, USD per token.
const Y: f64 = 0.002;
/// One `"hello"` / `max_tokens: 8` call on the team deployment: 5 × X + 8 × Y.
const C1: f64 = 0.021;

/// The callers of the scenario.
struct Keys {
    team_admin: String,
    team_member: String,
    member_hash: String,
    other_team: String,
    no_team: String,
}

async fn setup(gw: &GovGateway) -> (String, String, Keys) {
    let a = new_team(
        gw,
        json!({"team_alias": "a", "members_with_roles": [
            {"user_id": "ua-admin", "role": "admin"}, {"user_id": "ua-user", "role": "user"}]}),
    )
    .await;
    let b = new_team(gw, json!({"team_alias": "b"})).await;
    let (team_admin, _) = generate_key(gw, json!({"team_id": a, "user_id": "ua-admin"})).await;
    let (team_member, member_hash) =
        generate_key(gw, json!({"team_id": a, "user_id": "ua-user"})).await;
    let (other_team, _) = generate_key(gw, json!({"team_id": b})).await;
    let (no_team, _) = generate_key(gw, json!({})).await;
    let keys = Keys {
        team_admin,
        team_member,
        member_hash,
        other_team,
        no_team,
    };
    (a, b, keys)
}

fn team_model_body(mock: &str, team: &str) -> Value {
    json!({
        "model_name": "team-gpt",
        "litellm_params": {"model": "openai/team-upstream",
            "api_base": format!("{mock}/d/teamdep/v1"), "api_key": UPSTREAM_KEY},
        "model_info": {"team_id": team, "input_cost_per_token": X, "output_cost_per_token": Y},
    })
}

fn error(message: &str, error_type: &str, code: u16) -> Value {
    json!({"error": {"message": message, "type": error_type, "param": null,
        "code": code.to_string()}})
}

fn not_team_admin(team: &str, key_team: &str) -> Value {
    error(
        &format!(
            "Team ID={team} does not match the API key's team ID={key_team}, OR you are not the admin for this team. Check `/user/info` to verify your team admin status."
        ),
        "auth_error",
        403,
    )
}

/// The unknown-model answer (404, LiteLLM's wording with the caller's models) for `model`:
/// the same body as for a name the gateway never had, the name and the caller's
/// `/v1/models` list in the message.
async fn assert_unknown(gw: &GovGateway, key: &str, model: &str) {
    let r = chat(gw, key, &chat_body(model, "hello", 8)).await;
    let mut want = chat(gw, key, &chat_body("no-such-model", "hello", 8))
        .await
        .body;
    let list = ids(&get_as(gw, key, "/v1/models").await.body).join(", ");
    let message = |m: &str| {
        json!(format!(
            "The model `{m}` does not exist or you do not have access to it. Models available: {list}."
        ))
    };
    assert_eq!(want["error"]["message"], message("no-such-model"), "{want}");
    want["error"]["message"] = message(model);
    assert_eq!((r.status, r.body), (404, want), "{model}");
}

fn ids(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `(model_name, model_info.id)` of every `/model/info`-shaped entry of `v["data"]`.
fn names(v: &Value) -> Vec<(String, String)> {
    v["data"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|e| {
                    let s = |p: &str| {
                        e.pointer(p)
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned()
                    };
                    (s("/model_name"), s("/model_info/id"))
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn writes_are_scoped(gw: &GovGateway, m: &str, a: &str, b: &str, k: &Keys) {
    let r = post_as(gw, &k.team_member, "/model/new", &team_model_body(m, a)).await;
    assert_eq!((r.status, r.body.clone()), (403, not_team_admin(a, a)));
    let r = post_as(gw, &k.team_admin, "/model/new", &team_model_body(m, b)).await;
    assert_eq!((r.status, r.body.clone()), (403, not_team_admin(b, a)));
    let r = post_as(gw, &k.no_team, "/model/new", &team_model_body(m, a)).await;
    assert_eq!((r.status, r.body.clone()), (403, not_team_admin(a, "None")));
    let r = post_as(gw, MASTER, "/model/new", &team_model_body(m, "nope")).await;
    let want = error("Team id=nope does not exist in db", "auth_error", 400);
    assert_eq!((r.status, r.body.clone()), (400, want));
}

async fn scenario(db_url: &str) {
    let m = mock().await;
    let cfg = config(
        &m.base_url(),
        &[flat_dep("shared", 0.001)],
        "",
        Some(db_url),
    );
    let mut gw = GovGateway::start(&cfg);
    let (a, b, k) = setup(&gw).await;
    writes_are_scoped(&gw, &m.base_url(), &a, &b, &k).await;

    // Added by the team's admin: internal name, public name in model_info.
    let r = post_as(
        &gw,
        &k.team_admin,
        "/model/new",
        &team_model_body(&m.base_url(), &a),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["model_id"].as_str().unwrap_or_default().to_owned();
    let internal = r.body["model_name"].as_str().unwrap_or_default().to_owned();
    let prefix = format!("model_name_{a}_");
    assert!(internal.starts_with(&prefix), "{internal}");
    assert_eq!(internal.len(), prefix.len() + 36, "{internal}");
    assert_eq!(
        r.body["model_info"],
        json!({"team_id": a, "team_public_model_name": "team-gpt", "input_cost_per_token": X,
            "output_cost_per_token": Y, "id": id, "db_model": true})
    );
    assert_eq!(r.body["created_by"], "ua-admin");
    assert_eq!(r.body["updated_by"], "ua-admin");

    // Calls: the team reaches its deployment by the public name (and by the internal one).
    let r = chat(&gw, &k.team_member, &chat_body("team-gpt", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(same_dollars(r.header_f64("x-litellm-response-cost"), C1));
    assert_eq!(r.header("x-litellm-model-group"), internal);
    assert_eq!(r.header("x-litellm-model-id"), id);
    let seen = upstream_calls(&m, "teamdep");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].model.as_deref(), Some("team-upstream"));
    let r = chat(&gw, &k.team_admin, &chat_body(&internal, "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for key in [&k.other_team, &k.no_team, MASTER] {
        assert_unknown(&gw, key, "team-gpt").await;
        assert_unknown(&gw, key, &internal).await;
    }
    assert_eq!(
        upstream_calls(&m, "teamdep").len(),
        2,
        "refusals sent nothing"
    );

    // Spend: the row names the upstream model and the internal group; the team pays C1 × 2.
    let rows = spend_logs_n(&gw, &k.member_hash, 1).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["model"], "team-upstream");
    assert_eq!(rows[0]["model_group"], json!(internal));
    assert_eq!(rows[0]["model_id"], json!(id));
    assert_eq!(rows[0]["team_id"], json!(a));
    assert!(same_dollars(rows[0]["spend"].as_f64().unwrap_or(-1.0), C1));
    let team_spend = poll(
        || async {
            let r = get_as(&gw, MASTER, &format!("/team/info?team_id={a}")).await;
            r.body["team_info"]["spend"].as_f64().unwrap_or(0.0)
        },
        |s| same_dollars(*s, 2.0 * C1),
    )
    .await;
    assert!(same_dollars(team_spend, 2.0 * C1), "{team_spend}");

    listings(&gw, &k, &a, &id, &internal).await;
    fallbacks(&gw, &m, &k, &internal).await;

    // A restart loads the stored team deployment with its owner.
    assert!(gw.stop().await, "graceful shutdown");
    let gw = GovGateway::start(&cfg);
    let r = chat(&gw, &k.team_member, &chat_body("team-gpt", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-model-group"), internal);
    assert_unknown(&gw, &k.other_team, "team-gpt").await;
    updates_and_deletes(&gw, &k, &a, &b, &id, &internal).await;
}

async fn listings(gw: &GovGateway, k: &Keys, a: &str, id: &str, internal: &str) {
    let r = get_as(gw, &k.team_member, "/v1/models").await;
    assert_eq!(ids(&r.body), vec!["shared", "team-gpt"], "{}", r.text);
    for key in [&k.other_team, &k.no_team, MASTER] {
        let r = get_as(gw, key, "/v1/models").await;
        assert_eq!(ids(&r.body), vec!["shared"], "{}", r.text);
    }
    let shared = ("shared".to_owned(), "shared".to_owned());
    let public = ("team-gpt".to_owned(), id.to_owned());
    let stored = (internal.to_owned(), id.to_owned());
    let r = get_as(gw, &k.team_member, "/model/info").await;
    assert_eq!(names(&r.body), vec![shared.clone(), public.clone()]);
    let team_entry = &r.body["data"][1];
    assert_eq!(team_entry["model_info"]["created_by"], "ua-admin");
    assert_eq!(team_entry["model_info"]["updated_by"], "ua-admin");
    assert!(
        team_entry["model_info"]["created_at"].is_string(),
        "{team_entry}"
    );
    let r = get_as(gw, &k.other_team, "/model/info").await;
    assert_eq!(names(&r.body), vec![shared.clone()]);
    let r = get_as(gw, MASTER, "/model/info").await;
    assert_eq!(names(&r.body), vec![shared.clone(), stored.clone()]);

    let r = get_as(gw, &k.team_member, "/v2/model/info").await;
    assert_eq!(names(&r.body), vec![shared.clone(), public.clone()]);
    assert_eq!(r.body["total_count"], 2);
    let r = get_as(gw, &k.team_admin, "/v2/model/info?user_models_only=true").await;
    assert_eq!(names(&r.body), vec![public.clone()], "{}", r.text);
    let r = get_as(gw, MASTER, "/v2/model/info?user_models_only=true").await;
    assert_eq!(
        (r.body["total_count"].clone(), names(&r.body)),
        (json!(0), vec![])
    );
    let r = get_as(
        gw,
        &k.team_member,
        "/v2/model/info?include_team_models=true",
    )
    .await;
    let access: Vec<(Value, Value)> = r.body["data"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|e| {
                    let i = &e["model_info"];
                    (i["direct_access"].clone(), i["access_via_team_ids"].clone())
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        access,
        vec![(json!(false), json!([a])), (json!(false), json!([a]))],
        "{}",
        r.text
    );
    let r = get_as(gw, &k.no_team, "/v2/model/info?include_team_models=true").await;
    assert_eq!(names(&r.body), vec![shared.clone()]);
    assert_eq!(r.body["data"][0]["model_info"]["direct_access"], true);
    assert_eq!(
        r.body["data"][0]["model_info"]["access_via_team_ids"],
        json!([])
    );
    let r = get_as(gw, MASTER, "/v2/model/info?search=team-gpt").await;
    assert_eq!(names(&r.body), vec![stored]);
}

/// A request's `fallbacks` follow the same rule: the team's public name reaches its own
/// deployment, another team's internal name is never called.
async fn fallbacks(gw: &GovGateway, m: &tollgate_mock::MockHandle, k: &Keys, internal: &str) {
    script_default(m, "shared", json!({"status": 500}));
    let before = upstream_calls(m, "teamdep").len();
    let mut body = chat_body("shared", "hello", 8);
    body["fallbacks"] = json!([internal]);
    let r = chat(gw, &k.other_team, &body).await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(upstream_calls(m, "teamdep").len(), before, "never called");
    body["fallbacks"] = json!(["team-gpt"]);
    let r = chat(gw, &k.team_member, &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-model-group"), internal);
    assert_eq!(r.header("x-litellm-attempted-fallbacks"), "1");
    assert_eq!(upstream_calls(m, "teamdep").len(), before + 1);
}

async fn updates_and_deletes(
    gw: &GovGateway,
    k: &Keys,
    a: &str,
    b: &str,
    id: &str,
    internal: &str,
) {
    let rename = json!({"model_info": {"id": id}, "model_name": "team-gpt-2"});
    let r = post_as(gw, &k.team_member, "/model/update", &rename).await;
    assert_eq!((r.status, r.body.clone()), (403, not_team_admin(a, a)));
    let r = post_as(gw, &k.other_team, "/model/update", &rename).await;
    assert_eq!((r.status, r.body.clone()), (403, not_team_admin(a, b)));
    let moved = json!({"model_info": {"id": id, "team_id": b}});
    let r = post_as(gw, &k.team_admin, "/model/update", &moved).await;
    let want = error(
        "Cannot reassign a model to a different team.",
        "auth_error",
        403,
    );
    assert_eq!((r.status, r.body.clone()), (403, want));
    let r = post_as(gw, &k.team_admin, "/model/update", &rename).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["model_name"], json!(internal));
    assert_eq!(r.body["model_info"]["team_public_model_name"], "team-gpt-2");
    let r = chat(gw, &k.team_member, &chat_body("team-gpt-2", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_unknown(gw, &k.team_member, "team-gpt").await;

    let del = json!({"id": id});
    let r = post_as(gw, &k.team_member, "/model/delete", &del).await;
    assert_eq!((r.status, r.body.clone()), (403, not_team_admin(a, a)));
    let r = post_as(gw, &k.team_admin, "/model/delete", &del).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body,
        json!({"message": format!("Model: {id} deleted successfully")})
    );
    assert_unknown(gw, &k.team_member, "team-gpt-2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn team_models_sqlite() {
    let dir = TempDir::new("team-models");
    scenario(&format!("sqlite://{}", dir.0.join("t.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn team_models_postgres() {
    let Some(db) = PgDb::create("team_models").await else {
        return;
    };
    scenario(&db.url).await;
}
