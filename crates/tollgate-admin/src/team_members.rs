//! Team membership routes (litellm-surface §4.4): `POST /team/member_add`,
//! `/team/member_update`, `/team/member_delete`. Admin only. The rules are in
//! [`crate::members`]; a per-member budget is a budget tier linked from the
//! `"LiteLLM_TeamMembership"` row, enforced on the `team_member` scope from the next request.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::{Team, TeamMembership, User};

use crate::error::{ApiError, ApiResult};
use crate::members::{self, MemberBudget, MemberIn};
use crate::team_reads::membership_object;
use crate::write::Batch;
use crate::{AdminContext, access, extract, live, team_join, team_member_budget, teams};

/// The membership routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/team/member_add", post(member_add))
        .route("/team/member_update", post(member_update))
        .route("/team/member_delete", post(member_delete))
}

/// The team `/team/member_add` (and the bulk add) acts on. Errors: 404 `not_found_error`
/// `Team not found for team_id=<id>` (LiteLLM's `team_member_add`, team_endpoints.py).
pub(crate) fn for_add(gov: &Governance, team_id: &str) -> ApiResult<Arc<Team>> {
    teams::cached(gov, team_id)
        .map_err(|_| ApiError::not_found(format!("Team not found for team_id={team_id}")))
}

/// The team `/team/member_update` and `/team/member_delete` act on. Errors: 400 `auth_error`
/// `Team id=<id> does not exist in db` (LiteLLM's `team_member_update` and
/// `team_member_delete`, team_endpoints.py: a 400, not a 404).
fn existing(gov: &Governance, team_id: &str) -> ApiResult<Arc<Team>> {
    teams::cached(gov, team_id).map_err(|_| {
        ApiError::new(
            http::StatusCode::BAD_REQUEST,
            "auth_error",
            format!("Team id={team_id} does not exist in db"),
        )
    })
}

/// `member`: one member or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Members {
    One(MemberIn),
    Many(Vec<MemberIn>),
}

#[derive(Debug, Deserialize)]
struct AddBody {
    team_id: Option<String>,
    member: Option<Members>,
    #[serde(flatten)]
    budget: MemberBudget,
}

/// `POST /team/member_add` `{"team_id", "member": {"user_id"|"user_email", "role"} | [...],
/// "max_budget_in_team"?, "budget_duration"?, "tpm_limit"?, "rpm_limit"?}`: adds the members
/// (creating missing users), each with its own budget tier when budget fields are given, else
/// with a copy of the team's default member tier (`team_member_budget`), else none.
/// Returns the team object plus `updated_users` and `updated_team_memberships` (LiteLLM's
/// `TeamAddMemberResponse`). Errors: 400 (bad body, already a member), 401, 403, 404 (team:
/// [`for_add`]), 500.
async fn member_add(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/team/member_add")?;
    let req: AddBody = extract::body(&body)?;
    let team_id = req
        .team_id
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let list = match req.member {
        Some(Members::One(m)) => vec![m],
        Some(Members::Many(v)) if !v.is_empty() => v,
        _ => return Err(ApiError::bad_request("member is required")),
    };
    let gov = &ctx.gov;
    let mut team = live::team_row(gov, &*for_add(gov, &team_id)?).await?;
    let (users, memberships) =
        add_and_commit(gov, &mut team, &list, &req.budget, &who.actor()).await?;
    tracing::info!(team_id = %team_id, count = list.len(), "team members added");
    Ok(Json(Value::Object(
        added_object(gov, &team, &users, &memberships).await?,
    )))
}

/// LiteLLM's `TeamAddMemberResponse`: the team object plus `updated_users` (user rows) and
/// `updated_team_memberships` (memberships with their `litellm_budget_table`).
pub(crate) async fn added_object(
    gov: &Governance,
    team: &Team,
    users: &[User],
    memberships: &[TeamMembership],
) -> Result<Map<String, Value>, ApiError> {
    let mut out = teams::object(gov, team).await?;
    out.insert(
        "updated_users".into(),
        users
            .iter()
            .map(|u| Value::Object(extract::object(u)))
            .collect(),
    );
    out.insert(
        "updated_team_memberships".into(),
        Value::from(
            live::each(memberships.iter(), |m| async move {
                Ok(Value::Object(membership_object(gov, m).await?))
            })
            .await?,
        ),
    );
    Ok(out)
}

/// Adds `list` to `team` ([`team_join::add`]), stores and caches the rows, starts the
/// members' windows. Returns the users and memberships written. Errors: 400, 500.
pub(crate) async fn add_and_commit(
    gov: &Governance,
    team: &mut Team,
    list: &[MemberIn],
    budget: &MemberBudget,
    by: &str,
) -> ApiResult<(Vec<User>, Vec<TeamMembership>)> {
    let now = gov.admission().now();
    let mut batch = Batch::default();
    let windows = {
        let e = gov.cache().read();
        let default = team_member_budget::default_tier(&e, team);
        team_join::add(
            &e,
            team,
            (list, budget, default.as_ref()),
            now,
            by,
            &mut batch,
        )?
    };
    team_join::refresh(gov, &mut batch).await?;
    team.updated_at = Some(now);
    batch.teams.push(team.clone());
    let users = batch.users.clone();
    let memberships = batch.memberships.clone();
    batch.commit(gov).await?;
    windows.arm(gov).await?;
    Ok((users, memberships))
}

#[derive(Debug, Deserialize)]
struct UpdateBody {
    team_id: Option<String>,
    user_id: Option<String>,
    user_email: Option<String>,
    role: Option<String>,
    #[serde(flatten)]
    budget: MemberBudget,
}

/// `POST /team/member_update` `{"team_id", "user_id"|"user_email", "role"?,
/// "max_budget_in_team"?, "budget_duration"?, "tpm_limit"?, "rpm_limit"?}`: changes the role
/// and/or the member's budget tier (created when it has none). Returns
/// `{"team_id", "user_id", "user_email", "max_budget_in_team", "budget_duration",
/// "tpm_limit", "rpm_limit"}`. Errors: 400 (an unknown team: [`existing`]), 401, 403, 404
/// (member), 500.
async fn member_update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/team/member_update")?;
    let req: UpdateBody = extract::body(&body)?;
    let team_id = req
        .team_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let gov = &ctx.gov;
    let mut team = live::team_row(gov, &*existing(gov, &team_id)?).await?;
    let member =
        members::find_member(&team, req.user_id.as_deref(), req.user_email.as_deref())?.clone();
    let user_id = member
        .user_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("the member has no user_id"))?;
    let now = gov.admission().now();
    let by = who.actor();
    let mut batch = Batch::default();
    if req.role.is_some() {
        let role = MemberIn {
            role: req.role.clone(),
            ..MemberIn::default()
        }
        .role()?;
        for m in &mut team.members_with_roles {
            if m.user_id.as_deref() == Some(user_id.as_str()) {
                m.role = role.clone();
            }
        }
        team.updated_at = Some(now);
        batch.teams.push(team.clone());
    }
    let (mut membership, existing) = {
        let e = gov.cache().read();
        let m = e
            .memberships
            .get(&(team_id.clone(), user_id.clone()))
            .map(|m| TeamMembership::clone(m))
            .unwrap_or_else(|| TeamMembership {
                team_id: team_id.clone(),
                user_id: user_id.clone(),
                ..TeamMembership::default()
            });
        let tier = e.budget(m.budget_id.as_deref()).map(|t| t.as_ref().clone());
        (m, tier)
    };
    membership = live::membership_row(gov, &membership).await?;
    let tier = req.budget.tier(existing.as_ref(), now, &by)?;
    let mut window = None;
    let shown = match tier {
        Some((t, w)) => {
            membership.budget_id = Some(t.budget_id.clone());
            window = w;
            batch.budgets.push(t.clone());
            batch.memberships.push(membership.clone());
            Some(t)
        }
        None => existing,
    };
    batch.commit(gov).await?;
    if let Some(w) = &window {
        team_join::start_window(gov, &membership, w).await?;
    }
    tracing::info!(team_id = %team_id, user_id = %user_id, "team member updated");
    Ok(Json(json!({
        "team_id": team_id,
        "user_id": user_id,
        "user_email": member.user_email,
        "max_budget_in_team": shown.as_ref().and_then(|t| t.max_budget),
        "budget_duration": shown.as_ref().and_then(|t| t.budget_duration.clone()),
        "tpm_limit": shown.as_ref().and_then(|t| t.tpm_limit),
        "rpm_limit": shown.as_ref().and_then(|t| t.rpm_limit),
    })))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    team_id: Option<String>,
    user_id: Option<String>,
    user_email: Option<String>,
}

/// `POST /team/member_delete` `{"team_id", "user_id"|"user_email"}`: removes the member
/// from `members_with_roles`, deletes its membership row and drops the team from the user's
/// `teams`. Returns the team object. Errors: 400 (no user named; `User not found in team`
/// for one who is not a member, and an unknown team: [`existing`], LiteLLM's words), 401, 403,
/// 500.
async fn member_delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/team/member_delete")?;
    let req: DeleteBody = extract::body(&body)?;
    let team_id = req
        .team_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let gov = &ctx.gov;
    let mut team = live::team_row(gov, &*existing(gov, &team_id)?).await?;
    // LiteLLM answers a user who is not a member with 400 `User not found in team`
    // (team_member_delete, team_endpoints.py), not a 404
    let member = members::find_member(&team, req.user_id.as_deref(), req.user_email.as_deref())
        .map_err(|e| match e.status {
            http::StatusCode::NOT_FOUND => ApiError::bad_request("User not found in team"),
            _ => e,
        })?
        .clone();
    let now = gov.admission().now();
    team.members_with_roles.retain(|m| {
        m.user_id != member.user_id
            || (member.user_id.is_none() && m.user_email != member.user_email)
    });
    team.updated_at = Some(now);
    let mut batch = Batch::default();
    if let Some(uid) = &member.user_id {
        let (user, member_of) = {
            let e = gov.cache().read();
            (
                e.users.get(uid).cloned(),
                e.memberships.contains_key(&(team_id.clone(), uid.clone())),
            )
        };
        if let Some(u) = user {
            let mut u = live::user_row(gov, &u).await?;
            u.teams.retain(|t| t != &team_id);
            batch.users.push(u);
        }
        if member_of {
            batch
                .delete_memberships
                .push((team_id.clone(), uid.clone()));
        }
    }
    batch.teams.push(team.clone());
    batch.commit(gov).await?;
    tracing::info!(team_id = %team_id, "team member removed");
    Ok(Json(Value::Object(teams::object(gov, &team).await?)))
}
