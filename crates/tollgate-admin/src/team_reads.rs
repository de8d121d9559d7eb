//! Team reads: `GET /team/info` and `GET /team/list` (litellm-surface §4.4).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::{Team, TeamMembership, VerificationToken};

use crate::error::{ApiError, ApiResult};
use crate::{AdminContext, access, extract, key_view, live, team_member_budget, teams};

/// The team routes that read.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/team/info", get(info))
        .route("/team/list", get(list))
}

/// A membership as LiteLLM shows it: `{"user_id", "team_id", "spend" (live, USD),
/// "budget_id", "litellm_budget_table"}`.
pub(crate) async fn membership_object(
    gov: &Governance,
    m: &TeamMembership,
) -> Result<Map<String, Value>, ApiError> {
    let mut o = extract::object(&live::membership_row(gov, m).await?);
    let tier = gov.cache().read().budget(m.budget_id.as_deref()).cloned();
    o.insert(
        "litellm_budget_table".into(),
        tier.map_or(Value::Null, |t| Value::Object(extract::object(t.as_ref()))),
    );
    Ok(o)
}

/// The team's keys (key objects, `token` = hash) and memberships (only `user`'s when given,
/// as LiteLLM's `get_all_team_memberships` filters them), sorted by id.
pub(crate) async fn keys_and_memberships(
    gov: &Governance,
    team_id: &str,
    user: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let (mut keys, mut ms): (Vec<Arc<VerificationToken>>, Vec<Arc<TeamMembership>>) = {
        let e = gov.cache().read();
        (
            e.keys
                .values()
                .filter(|k| k.team_id.as_deref() == Some(team_id))
                .cloned()
                .collect(),
            e.memberships
                .values()
                .filter(|m| m.team_id == team_id && user.is_none_or(|u| m.user_id == u))
                .cloned()
                .collect(),
        )
    };
    keys.sort_by(|a, b| a.token.cmp(&b.token));
    ms.sort_by(|a, b| a.user_id.cmp(&b.user_id));
    Ok((
        live::each(keys.iter(), |k| async move {
            Ok(Value::Object(key_view::object(gov, k).await?))
        })
        .await?,
        live::each(ms.iter(), |m| async move {
            Ok(Value::Object(membership_object(gov, m).await?))
        })
        .await?,
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InfoQuery {
    team_id: Option<String>,
}

/// True when a non-admin caller may read `team`: its key belongs to the team, or its user is a
/// member (LiteLLM's `validate_membership`).
fn may_read(w: &access::Who, team: &Team) -> bool {
    w.reads_all()
        || w.principal.as_ref().is_some_and(|p| {
            p.key.team_id.as_deref() == Some(team.team_id.as_str())
                || p.key.user_id.as_ref().is_some_and(|u| {
                    team.members_with_roles
                        .iter()
                        .any(|m| m.user_id.as_ref() == Some(u))
                })
        })
}

/// `GET /team/info?team_id=` (default: the calling key's team) →
/// `{"team_id", "team_info": team object with `team_member_budget_table` (the default member
/// tier, or `null`), "keys": [key objects], "team_memberships": [...]}`.
/// A non-admin may read its own team only (403). Errors: 400, 401, 403, 404.
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let q: InfoQuery = extract::query(&uri)?;
    let id = q
        .team_id
        .or_else(|| who.principal.as_ref().and_then(|p| p.key.team_id.clone()))
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let gov = &ctx.gov;
    let team = match teams::cached(gov, &id) {
        Ok(t) => t,
        Err(_) if !who.reads_all() => return Err(access::denied(&who, "/team/info")),
        Err(e) => return Err(e),
    };
    if !may_read(&who, &team) {
        return Err(ApiError::forbidden(format!(
            "Only proxy admins and members of team={id} can view it. Route=/team/info"
        )));
    }
    let (keys, memberships) = keys_and_memberships(gov, &id, None).await?;
    let mut info = teams::object(gov, &team).await?;
    let default = team_member_budget::default_tier(&gov.cache().read(), &team);
    info.insert(
        "team_member_budget_table".into(),
        default.map_or(Value::Null, |t| Value::Object(extract::object(&t))),
    );
    Ok(Json(json!({
        "team_id": id,
        "team_info": info,
        "keys": keys,
        "team_memberships": memberships,
    })))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ListQuery {
    user_id: Option<String>,
    organization_id: Option<String>,
}

/// `GET /team/list?user_id&organization_id`: a list of team objects, each with its `keys` and
/// `team_memberships` (with `user_id`, that user's only, as LiteLLM's `list_team`), sorted by
/// `team_id`. Admins and viewers. Errors: 401, 403.
async fn list(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/team/list")?;
    let q: ListQuery = extract::query(&uri)?;
    let gov = &ctx.gov;
    let mut teams: Vec<Arc<Team>> = gov
        .cache()
        .read()
        .teams
        .values()
        .filter(|t| {
            q.user_id.as_ref().is_none_or(|u| {
                t.members_with_roles
                    .iter()
                    .any(|m| m.user_id.as_ref() == Some(u))
            }) && q
                .organization_id
                .as_ref()
                .is_none_or(|o| t.organization_id.as_ref() == Some(o))
        })
        .cloned()
        .collect();
    teams.sort_by(|a, b| a.team_id.cmp(&b.team_id));
    let user = q.user_id.as_deref();
    let out: Vec<Value> = live::each(teams.iter(), |t| async move {
        let mut o = teams::object(gov, t).await?;
        let (keys, ms) = keys_and_memberships(gov, &t.team_id, user).await?;
        o.insert("keys".into(), Value::from(keys));
        o.insert("team_memberships".into(), Value::from(ms));
        Ok(Value::Object(o))
    })
    .await?;
    Ok(Json(Value::from(out)))
}
