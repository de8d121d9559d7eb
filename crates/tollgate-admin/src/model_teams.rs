//! Team-owned deployments on the model routes (LiteLLM's "team models",
//! `litellm/proxy/management_endpoints/model_management_endpoints.py`):
//!
//! - **writes** ([`writer`]): a deployment with `model_info.team_id` may be added, changed or
//!   deleted by a proxy admin or by an admin of that team (`members_with_roles` role `admin`,
//!   LiteLLM's `_is_user_team_admin`); the team must exist (400 `Team id=<id> does not exist
//!   in db`); anyone else gets LiteLLM's 403 (`ModelManagementAuthChecks`). A deployment
//!   without a team stays proxy-admin only;
//! - **reads** ([`visible`]): admins and viewers see every deployment as stored (internal
//!   `model_name_<team>_<uuid>` names); a key of the owning team sees its team's deployment
//!   under `model_info.team_public_model_name`; other keys do not see it.

use serde_json::{Value, json};
use tollgate_governance::runtime::{AccessGroups, Principal};

use crate::AdminContext;
use crate::access::{self, Role, Who};
use crate::error::{ApiError, ApiResult};

/// `model_info.team_id` of a body or listed entry (non-empty), if any.
pub(crate) fn team_of(v: &Value) -> Option<&str> {
    v.pointer("/model_info/team_id")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
}

/// The caller, who may write a deployment owned by `team` (`None`: no team, admins only).
///
/// Errors: 401; 400 `auth_error` `Team id=<team> does not exist in db`; 403 `auth_error`
/// (LiteLLM's words: `Team ID=<team> does not match the API key's team ID=<key team>, OR you
/// are not the admin for this team. …`).
pub(crate) fn writer(
    ctx: &AdminContext,
    headers: &http::HeaderMap,
    route: &str,
    team: Option<&str>,
) -> ApiResult<Who> {
    let Some(team) = team else {
        return access::admin(ctx, headers, route);
    };
    let who = access::who(ctx, headers)?;
    let row = ctx.gov.cache().read().teams.get(team).cloned();
    let Some(row) = row else {
        return Err(ApiError::new(
            http::StatusCode::BAD_REQUEST,
            "auth_error",
            format!("Team id={team} does not exist in db"),
        ));
    };
    if who.role == Role::Admin {
        return Ok(who);
    }
    let user = who
        .principal
        .as_ref()
        .and_then(|p| p.key.user_id.as_deref());
    let team_admin = user.is_some_and(|u| {
        row.members_with_roles
            .iter()
            .any(|m| m.role == "admin" && m.user_id.as_deref() == Some(u))
    });
    if team_admin {
        return Ok(who);
    }
    let key_team = who
        .principal
        .as_ref()
        .and_then(|p| p.key.team_id.clone())
        .unwrap_or_else(|| "None".to_owned());
    Err(ApiError::forbidden(format!(
        "Team ID={team} does not match the API key's team ID={key_team}, OR you are not the admin for this team. Check `/user/info` to verify your team admin status."
    )))
}

/// The team owning the listed deployment `id`, and whether such a deployment is listed.
pub(crate) fn stored_team(ctx: &AdminContext, id: &str) -> (bool, Option<String>) {
    ctx.models
        .list()
        .iter()
        .find(|e| e.pointer("/model_info/id").and_then(Value::as_str) == Some(id))
        .map_or((false, None), |e| (true, team_of(e).map(str::to_owned)))
}

/// The caller of `/model/update` on deployment `id` with `patch`: [`writer`] for the
/// deployment's team (else the patch's). Errors: as [`writer`]; 403 `Cannot reassign a model
/// to a different team.` when the patch names another team than the stored one (LiteLLM's
/// `_update_team_model_in_db`).
pub(crate) fn updater(
    ctx: &AdminContext,
    headers: &http::HeaderMap,
    id: &str,
    patch: &Value,
) -> ApiResult<Who> {
    let (_, stored) = stored_team(ctx, id);
    let asked = team_of(patch);
    if let (Some(s), Some(a)) = (stored.as_deref(), asked)
        && s != a
    {
        access::who(ctx, headers)?;
        return Err(ApiError::forbidden(
            "Cannot reassign a model to a different team.",
        ));
    }
    writer(ctx, headers, "/model/update", stored.as_deref().or(asked))
}

/// `entry` as `who` sees it in a listing, or `None` when it may not see it (module docs).
pub(crate) fn visible(who: &Who, entry: Value, groups: &AccessGroups) -> Option<Value> {
    let p = match (who.reads_all(), &who.principal) {
        (false, Some(p)) => p,
        _ => return Some(entry),
    };
    let Some(owner) = team_of(&entry) else {
        let name = entry.get("model_name").and_then(Value::as_str)?;
        return p.model_denial(name, groups).is_none().then_some(entry);
    };
    if p.key.team_id.as_deref() != Some(owner) {
        return None;
    }
    let public = public_name(&entry)?.to_owned();
    if p.team_model_denial(&public, groups).is_some() {
        return None;
    }
    let mut entry = entry;
    entry["model_name"] = json!(public);
    Some(entry)
}

/// A team deployment's public name: `model_info.team_public_model_name`, else `model_name`.
fn public_name(entry: &Value) -> Option<&str> {
    entry
        .pointer("/model_info/team_public_model_name")
        .and_then(Value::as_str)
        .or_else(|| entry.get("model_name").and_then(Value::as_str))
}

/// `include_team_models=true` of `/v2/model/info`: `model_info.direct_access` (the caller
/// may call the deployment without a team: an admin, or a key without a team that may) and
/// `model_info.access_via_team_ids` (the caller's team, when the deployment is its own or
/// its `models` allow it), LiteLLM's fields; `None` when neither gives access (LiteLLM then
/// leaves the deployment out).
pub(crate) fn with_access(who: &Who, mut entry: Value, groups: &AccessGroups) -> Option<Value> {
    let (direct, via) = match &who.principal {
        None => (true, Vec::new()),
        Some(p) => access_of(p, who.role == Role::Admin, &entry, groups),
    };
    if !direct && via.is_empty() {
        return None;
    }
    if let Some(Value::Object(m)) = entry.get_mut("model_info") {
        m.insert("direct_access".into(), json!(direct));
        m.insert("access_via_team_ids".into(), json!(via));
    }
    Some(entry)
}

fn access_of(
    p: &Principal,
    admin: bool,
    entry: &Value,
    groups: &AccessGroups,
) -> (bool, Vec<String>) {
    let name = entry
        .get("model_name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let owner = team_of(entry);
    let via = match (&p.team, owner) {
        (Some(t), Some(o)) if t.team_id == o => vec![o.to_owned()],
        (Some(t), None) if tollgate_governance::runtime::list_allows(&t.models, name, groups) => {
            vec![t.team_id.clone()]
        }
        _ => Vec::new(),
    };
    let direct =
        admin || (p.team.is_none() && owner.is_none() && p.model_denial(name, groups).is_none());
    (direct, via)
}

/// A boolean query flag as FastAPI reads one (`true`, `1`, `yes`, `on`, any case); absent is
/// false. Errors: 400 for another value (FastAPI's 422 validation error, as a 400 here like
/// every other malformed query value).
pub(crate) fn flag(field: &str, v: Option<&str>) -> ApiResult<bool> {
    let Some(v) = v else { return Ok(false) };
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "{field} must be a boolean, got {v}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tollgate_governance::store::{Team, VerificationToken};

    use super::*;

    fn member(team: Option<(&str, &[&str])>) -> Who {
        Who {
            role: Role::Member,
            principal: Some(Box::new(Principal {
                key: Arc::new(VerificationToken {
                    team_id: team.map(|(t, _)| t.to_owned()),
                    ..Default::default()
                }),
                key_tier: None,
                team: team.map(|(t, models)| {
                    Arc::new(Team {
                        team_id: t.to_owned(),
                        models: models.iter().map(|m| (*m).to_owned()).collect(),
                        ..Default::default()
                    })
                }),
                user: None,
                membership: None,
                member_tier: None,
                organization: None,
                organization_tier: None,
            })),
        }
    }

    fn team_entry() -> Value {
        json!({"model_name": "model_name_t1_x", "model_info": {"id": "m1", "team_id": "t1",
            "team_public_model_name": "team-gpt"}})
    }

    #[test]
    fn team_entries_show_to_their_team_under_the_public_name_only() {
        let g = AccessGroups::default();
        let seen = visible(&member(Some(("t1", &["gpt-4o"]))), team_entry(), &g);
        assert_eq!(
            seen.and_then(|e| e.get("model_name").cloned()),
            Some(json!("team-gpt"))
        );
        assert_eq!(visible(&member(Some(("t2", &[]))), team_entry(), &g), None);
        assert_eq!(visible(&member(None), team_entry(), &g), None);
        let admin = Who {
            role: Role::Admin,
            principal: None,
        };
        assert_eq!(visible(&admin, team_entry(), &g), Some(team_entry()));
        // A global entry follows the key's access as before.
        let global = json!({"model_name": "gpt-4o", "model_info": {"id": "g"}});
        let narrow = member(Some(("t1", &["other"])));
        assert_eq!(visible(&narrow, global.clone(), &g), None);
        assert_eq!(visible(&member(None), global.clone(), &g), Some(global));
    }

    #[test]
    fn include_team_models_names_the_way_in() {
        let g = AccessGroups::default();
        let fields = |w: &Who, e: Value| {
            with_access(w, e, &g).map(|e| {
                (
                    e["model_info"]["direct_access"].clone(),
                    e["model_info"]["access_via_team_ids"].clone(),
                )
            })
        };
        let global = json!({"model_name": "gpt-4o", "model_info": {"id": "g"}});
        let t1 = member(Some(("t1", &[])));
        assert_eq!(
            fields(&t1, team_entry()),
            Some((json!(false), json!(["t1"])))
        );
        assert_eq!(
            fields(&t1, global.clone()),
            Some((json!(false), json!(["t1"])))
        );
        assert_eq!(fields(&member(Some(("t1", &["x"]))), global.clone()), None);
        assert_eq!(
            fields(&member(None), global),
            Some((json!(true), json!([])))
        );
    }

    #[test]
    fn flags_read_as_fastapi_reads_booleans() {
        assert_eq!(flag("f", None), Ok(false));
        assert_eq!(flag("f", Some("True")), Ok(true));
        assert_eq!(flag("f", Some("1")), Ok(true));
        assert_eq!(flag("f", Some("false")), Ok(false));
        assert_eq!(
            flag("f", Some("maybe")).map_err(|e| e.message),
            Err("f must be a boolean, got maybe".to_owned())
        );
    }
}
