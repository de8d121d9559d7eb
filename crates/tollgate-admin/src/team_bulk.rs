//! `POST /team/bulk_member_add` (LiteLLM's `bulk_team_member_add`,
//! litellm/proxy/management_endpoints/team_endpoints.py; request and response types in
//! litellm/types/proxy/management_endpoints/team_endpoints.py). Admin only.
//!
//! Body: `{"team_id", "members": [{"user_id"|"user_email", "role"}], "all_users"?: bool,
//! "max_budget_in_team"?: USD}`. The members are added as `/team/member_add` adds them (users
//! created when missing, each with its own tier, or a copy of the team's default member tier).
//! The answer is 200 `{"team_id", "results": [{"user_id", "user_email", "success", "error",
//! "updated_user", "updated_team_membership"}], "total_requested", "successful_additions",
//! "failed_additions", "updated_team"}`; as in LiteLLM, a failure of the whole addition (an
//! unknown team, a bad member) marks every member failed with the error's message and
//! `updated_team: null`, still with status 200. Members already in the team are skipped and
//! reported failed (`User already in team. ...`); when every member is, the whole addition
//! fails (LiteLLM's `team_member_add_duplication_check`). Only an empty list and more than 500
//! members are refused (400) before anything is tried.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::{TeamMembership, User};

use crate::error::{ApiError, ApiResult};
use crate::members::{MemberBudget, MemberIn};
use crate::team_members::{add_and_commit, added_object, for_add};
use crate::team_reads::membership_object;
use crate::{AdminContext, access, extract, live};

/// LiteLLM's `MAX_BATCH_SIZE` of the route.
const MAX_MEMBERS: usize = 500;

/// The bulk route.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new().route("/team/bulk_member_add", post(bulk_member_add))
}

/// LiteLLM's `BulkTeamMemberAddRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BulkBody {
    team_id: Option<String>,
    members: Option<Vec<MemberIn>>,
    all_users: bool,
    /// USD each added member may spend in the team.
    max_budget_in_team: Option<f64>,
}

/// One member's `TeamMemberAddResult`.
fn result(
    m: &MemberIn,
    error: Option<&str>,
    user: Option<&User>,
    membership: Option<Value>,
) -> Value {
    json!({
        "user_id": m.user_id,
        "user_email": m.user_email,
        "success": error.is_none(),
        "error": error,
        "updated_user": user.map(|u| Value::Object(extract::object(u))),
        "updated_team_membership": membership,
    })
}

/// `POST /team/bulk_member_add` (see the module doc). Errors: 400 (no member, more than 500,
/// bad body), 401, 403; any other failure is reported per member in a 200.
async fn bulk_member_add(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/team/bulk_member_add")?;
    let req: BulkBody = extract::body(&body)?;
    let gov = &ctx.gov;
    let members = if req.all_users {
        all_users(gov)
    } else {
        req.members.clone().unwrap_or_default()
    };
    if members.is_empty() {
        return Err(ApiError::bad_request("At least one member is required"));
    }
    if members.len() > MAX_MEMBERS {
        return Err(ApiError::bad_request(format!(
            "Maximum {MAX_MEMBERS} members can be added at once"
        )));
    }
    let budget = MemberBudget {
        max_budget_in_team: req.max_budget_in_team,
        ..MemberBudget::default()
    };
    let team_id = req.team_id.clone().unwrap_or_default();
    let total = members.len();
    let answer = match add(gov, &team_id, &members, &budget, &who.actor()).await {
        Ok(added) => {
            let mut results = Vec::with_capacity(total);
            for (i, m) in members.iter().enumerate() {
                if added.skipped.contains(&i) {
                    let who = m.user_id.as_deref().or(m.user_email.as_deref());
                    let error = format!(
                        "User already in team. team_id={team_id}, user_id={}",
                        who.unwrap_or_default()
                    );
                    results.push(result(m, Some(&error), None, None));
                    continue;
                }
                let user = added.users.iter().find(|u| {
                    m.user_id.as_deref() == Some(u.user_id.as_str())
                        || (m.user_id.is_none() && u.user_email == m.user_email)
                });
                let tm =
                    user.and_then(|u| added.memberships.iter().find(|t| t.user_id == u.user_id));
                let membership = match tm {
                    Some(tm) => Some(Value::Object(membership_object(gov, tm).await?)),
                    None => None,
                };
                results.push(result(m, None, user, membership));
            }
            let failed = added.skipped.len();
            tracing::info!(team_id = %team_id, added = total - failed, "team members added in bulk");
            json!({
                "team_id": req.team_id, "results": results, "total_requested": total,
                "successful_additions": total - failed, "failed_additions": failed,
                "updated_team": added.team,
            })
        }
        Err(e) => {
            tracing::info!(team_id = %team_id, status = e.status.as_u16(), "bulk member add failed");
            let results: Vec<Value> = members
                .iter()
                .map(|m| result(m, Some(&e.message), None, None))
                .collect();
            json!({
                "team_id": req.team_id, "results": results, "total_requested": total,
                "successful_additions": 0, "failed_additions": total, "updated_team": null,
            })
        }
    };
    Ok(Json(answer))
}

/// Every user, as a member with role `user`, by `user_id`.
fn all_users(gov: &Governance) -> Vec<MemberIn> {
    let mut users: Vec<MemberIn> = gov
        .cache()
        .read()
        .users
        .values()
        .map(|u| MemberIn {
            user_id: Some(u.user_id.clone()),
            user_email: u.user_email.clone(),
            role: Some("user".to_owned()),
        })
        .collect();
    users.sort_by(|a, b| a.user_id.cmp(&b.user_id));
    users
}

/// What a bulk addition did: the `/team/member_add` answer object, the users and memberships
/// written, and the indexes of the members that were already in the team (skipped).
struct Added {
    team: Map<String, Value>,
    users: Vec<User>,
    memberships: Vec<TeamMembership>,
    skipped: Vec<usize>,
}

/// Adds the members not yet in the team as `/team/member_add` does. Errors: 400 (no team id,
/// bad member, every member already in the team), 404 (team), 500.
async fn add(
    gov: &Governance,
    team_id: &str,
    members: &[MemberIn],
    budget: &MemberBudget,
    by: &str,
) -> ApiResult<Added> {
    if team_id.is_empty() {
        return Err(ApiError::bad_request("team_id is required"));
    }
    let mut team = live::team_row(gov, &*for_add(gov, team_id)?).await?;
    let member = |m: &MemberIn| {
        team.members_with_roles.iter().any(|x| {
            (m.user_id.is_some() && x.user_id == m.user_id)
                || (m.user_email.is_some() && x.user_email == m.user_email)
        })
    };
    let skipped: Vec<usize> = (0..members.len())
        .filter(|i| member(&members[*i]))
        .collect();
    let fresh: Vec<MemberIn> = (0..members.len())
        .filter(|i| !skipped.contains(i))
        .map(|i| members[i].clone())
        .collect();
    if fresh.is_empty() {
        // LiteLLM's team_member_add_duplication_check
        return Err(ApiError::bad_request(format!(
            "All users are already in team. team_id={team_id}"
        )));
    }
    let (users, memberships) = add_and_commit(gov, &mut team, &fresh, budget, by).await?;
    let team = added_object(gov, &team, &users, &memberships).await?;
    Ok(Added {
        team,
        users,
        memberships,
        skipped,
    })
}
