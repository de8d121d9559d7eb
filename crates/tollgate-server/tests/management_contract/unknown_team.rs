//! The team-member routes on a team that does not exist, in LiteLLM's words
//! (team_endpoints.py): `/team/member_delete` and `/team/member_update` are a 400
//! `Team id=<id> does not exist in db`; `/team/member_add` a 404 `Team not found for
//! team_id=<id>` (`/team/bulk_member_add` reports those words per member).

use serde_json::{Value, json};

use crate::gov::*;

fn error(message: &str, error_type: &str, code: u16) -> Value {
    json!({"message": message, "type": error_type, "param": null, "code": code.to_string()})
}

/// Each member route on the unknown team `ghost`: status and the whole `error` object.
pub async fn member_routes_of_an_unknown_team(gw: &GovGateway) {
    let cases = [
        (
            "/team/member_delete",
            json!({"team_id": "ghost", "user_id": "u"}),
            error("Team id=ghost does not exist in db", "auth_error", 400),
        ),
        (
            "/team/member_update",
            json!({"team_id": "ghost", "user_id": "u", "max_budget_in_team": 1.0}),
            error("Team id=ghost does not exist in db", "auth_error", 400),
        ),
        (
            "/team/member_add",
            json!({"team_id": "ghost", "member": {"user_id": "u", "role": "user"}}),
            error("Team not found for team_id=ghost", "not_found_error", 404),
        ),
    ];
    for (route, body, want) in cases {
        let r = post_as(gw, MASTER, route, &body).await;
        let code: u16 = want["code"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        assert_eq!(r.status, code, "{route}: {}", r.text);
        assert_eq!(r.body["error"], want, "{route}");
    }
    // the bulk route reports it per member, in the same words
    let r = post_as(
        gw,
        MASTER,
        "/team/bulk_member_add",
        &json!({"team_id": "ghost", "members": [{"user_id": "u", "role": "user"}]}),
    )
    .await;
    assert_eq!(
        (
            r.status,
            r.body["results"][0]["error"].clone(),
            r.body["failed_additions"].clone()
        ),
        (200, json!("Team not found for team_id=ghost"), json!(1)),
        "{}",
        r.text
    );
    // nothing was created on the way
    let r = get_as(gw, MASTER, "/user/info?user_id=u").await;
    assert_eq!(r.status, 404, "{}", r.text);
}
