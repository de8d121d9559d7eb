//! Team-scoped models in the management contract: a team deployment's public name in its
//! team's `models`, `/v2/model/info?model=<public name>`, and the 403 / 404 of names a caller
//! cannot route (model_management_endpoints.py, auth_checks.py).

use serde_json::{Value, json};

use crate::gov::*;

/// `/model/new` body of a deployment of `team` on the mock, called `public` by the team.
fn team_model(mock: &str, team: &str, public: &str) -> Value {
    json!({
        "model_name": public,
        "litellm_params": {"model": "openai/team-upstream",
            "api_base": format!("{mock}/d/teamdep/v1"), "api_key": UPSTREAM_KEY},
        "model_info": {"team_id": team, "input_cost_per_token": 0.0, "output_cost_per_token": 0.001},
    })
}

/// The team's `models` as `/team/info` shows them.
async fn team_models(gw: &GovGateway, team: &str) -> Value {
    let r = get_as(gw, MASTER, &format!("/team/info?team_id={team}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["team_info"]["models"].clone()
}

/// `/model/new` as the master key; returns `model_info.id`.
async fn add_model(gw: &GovGateway, body: &Value) -> String {
    let r = post_as(gw, MASTER, "/model/new", body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["model_info"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A team's `models` follows its team deployments; `/v2/model/info?model=` finds one by its
/// public name.
pub async fn team_model_list(gw: &GovGateway, mock: &str) {
    new_team(gw, json!({"team_id": "tm"})).await;
    add_model(gw, &team_model(mock, "tm", "tm-gpt")).await;
    assert_eq!(
        team_models(gw, "tm").await,
        json!(["all-proxy-models", "tm-gpt"])
    );
    let (key, _) = generate_key(gw, json!({"team_id": "tm"})).await;
    let c = chat(gw, &key, &chat_body("tm-gpt", "hello", 8)).await;
    assert_eq!(c.status, 200, "{}", c.text);
    let c = chat(gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(c.status, 200, "every model still: {}", c.text);

    let r = get_as(gw, MASTER, "/v2/model/info?model=tm-gpt").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["total_count"], 1, "{}", r.text);
    let e = &r.body["data"][0];
    assert_eq!(
        (
            e["model_info"]["team_public_model_name"].clone(),
            e["model_info"]["team_id"].clone()
        ),
        (json!("tm-gpt"), json!("tm")),
        "{}",
        r.text
    );
    assert!(
        e["model_name"]
            .as_str()
            .is_some_and(|n| n.starts_with("model_name_tm_")),
        "{}",
        r.text
    );

    new_team(gw, json!({"team_id": "tn", "models": ["flat"]})).await;
    let first = add_model(gw, &team_model(mock, "tn", "tn-gpt")).await;
    let second = add_model(gw, &team_model(mock, "tn", "tn-gpt")).await;
    assert_eq!(team_models(gw, "tn").await, json!(["flat", "tn-gpt"]));
    let r = post_as(gw, MASTER, "/model/delete", &json!({"id": first})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        team_models(gw, "tn").await,
        json!(["flat", "tn-gpt"]),
        "another deployment still carries the name"
    );
    let r = post_as(gw, MASTER, "/model/delete", &json!({"id": second})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(team_models(gw, "tn").await, json!(["flat"]));
}

/// `error.type`, `error.code` and the status of a chat by `key` for `model`.
async fn refusal(gw: &GovGateway, key: &str, model: &str) -> (u16, Value, Value) {
    let r = chat(gw, key, &chat_body(model, "hello", 8)).await;
    (
        r.status,
        r.body["error"]["type"].clone(),
        r.body["error"]["code"].clone(),
    )
}

/// A restricted key or team asking for a name it cannot route: its list's 403; an
/// unrestricted one: 404. Needs `tm-gpt` (team `tm`'s model).
pub async fn unroutable_names(gw: &GovGateway) {
    let (narrow, _) = generate_key(gw, json!({"models": ["flat"]})).await;
    let (open, _) = generate_key(gw, json!({})).await;
    new_team(gw, json!({"team_id": "tr", "models": ["flat"]})).await;
    let (narrow_team, _) = generate_key(gw, json!({"team_id": "tr"})).await;
    let (open_team, _) = generate_key(gw, json!({"team_id": "md"})).await;
    let denied = |t: &str| (403, json!(t), json!("403"));
    let missing = (
        404,
        json!("invalid_request_error"),
        json!("model_not_found"),
    );
    for (key, model, want) in [
        (&narrow, "tm-gpt", denied("key_model_access_denied")),
        (&narrow, "no-such-model", denied("key_model_access_denied")),
        (&narrow_team, "tm-gpt", denied("team_model_access_denied")),
        (
            &narrow_team,
            "no-such-model",
            denied("team_model_access_denied"),
        ),
        (&open, "tm-gpt", missing.clone()),
        (&open, "no-such-model", missing.clone()),
        (&open_team, "tm-gpt", missing.clone()),
    ] {
        assert_eq!(refusal(gw, key, model).await, want, "{model}");
    }
}
