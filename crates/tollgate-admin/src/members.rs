//! Team membership rules shared by `/team/new`, `/team/member_*` and `/user/new`
//! (LiteLLM's `add_new_member`, litellm-surface §4.4):
//!
//! - a member is named by `user_id` or `user_email`; a user that does not exist is created
//!   (role `internal_user`), as LiteLLM does;
//! - joining adds `{"user_id", "user_email", "role"}` to the team's `members_with_roles`, the
//!   team id to the user's `teams`, and a `"LiteLLM_TeamMembership"` row (per-member spend);
//! - `/team/new` adds its creator as an `admin` ([`with_creator`]);
//! - a per-member budget (`max_budget_in_team`, `budget_duration`, `tpm_limit`, `rpm_limit`)
//!   is a budget tier (uuid `budget_id`) linked from that membership row.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};
use tollgate_governance::admission::WindowPlan;
use tollgate_governance::runtime::Entities;
use tollgate_governance::store::{BudgetTier, Team, TeamMember, TeamMembership, User};

use crate::error::{ApiError, ApiResult};
use crate::extract;
use crate::tier::{TierLimits, tier_window, tier_with};

/// A member as given in `members_with_roles` / `member`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MemberIn {
    pub user_id: Option<String>,
    pub user_email: Option<String>,
    /// `admin` or `user` (default `user`).
    pub role: Option<String>,
}

impl MemberIn {
    /// The role. Errors: 400 for anything but `admin` / `user`.
    pub fn role(&self) -> ApiResult<String> {
        match self.role.as_deref() {
            None => Ok("user".to_owned()),
            Some(r @ ("admin" | "user")) => Ok(r.to_owned()),
            Some(r) => Err(ApiError::bad_request(format!(
                "Invalid member role={r}; expected 'admin' or 'user'"
            ))),
        }
    }
}

/// The user id LiteLLM gives the master key (`litellm_proxy_admin_name`, its
/// `LITELLM_PROXY_ADMIN_NAME` constant).
pub(crate) const PROXY_ADMIN_USER_ID: &str = "default_user_id";

/// `/team/new`'s member list with its creator added as an `admin` at the end, unless the
/// list names it already (LiteLLM's `new_team`, team_endpoints.py): the calling key's user,
/// or [`PROXY_ADMIN_USER_ID`] for the master key; a key without a user adds no one.
pub(crate) fn with_creator(mut list: Vec<MemberIn>, creator: Option<&str>) -> Vec<MemberIn> {
    if let Some(c) = creator
        && !list.iter().any(|m| m.user_id.as_deref() == Some(c))
    {
        list.push(MemberIn {
            user_id: Some(c.to_owned()),
            user_email: None,
            role: Some("admin".to_owned()),
        });
    }
    list
}

/// A new user row with LiteLLM's defaults.
pub(crate) fn new_user(user_id: String, user_email: Option<String>, role: &str) -> User {
    User {
        user_id,
        user_email,
        user_role: Some(role.to_owned()),
        metadata: Value::Object(Map::new()),
        model_spend: Value::Object(Map::new()),
        model_max_budget: Value::Object(Map::new()),
        ..User::default()
    }
}

/// The member's user: the existing row (by `user_id`, else by `user_email`) or a new
/// `internal_user`. Errors: 400 when neither id nor e-mail is given.
pub(crate) fn resolve_user(e: &Entities, m: &MemberIn) -> ApiResult<User> {
    if let Some(id) = &m.user_id {
        return Ok(match e.users.get(id) {
            Some(u) => User::clone(u),
            None => new_user(id.clone(), m.user_email.clone(), "internal_user"),
        });
    }
    let Some(email) = &m.user_email else {
        return Err(ApiError::bad_request(
            "A team member needs a user_id or a user_email",
        ));
    };
    Ok(
        match e
            .users
            .values()
            .find(|u| u.user_email.as_deref() == Some(email.as_str()))
        {
            Some(u) => User::clone(u),
            None => new_user(extract::new_id(), Some(email.clone()), "internal_user"),
        },
    )
}

/// The team member with this user id or e-mail. Errors: 400 without either, 404 when not a
/// member.
pub(crate) fn find_member<'a>(
    team: &'a Team,
    user_id: Option<&str>,
    user_email: Option<&str>,
) -> ApiResult<&'a TeamMember> {
    if user_id.is_none() && user_email.is_none() {
        return Err(ApiError::bad_request("user_id or user_email is required"));
    }
    team.members_with_roles
        .iter()
        .find(|m| match user_id {
            Some(id) => m.user_id.as_deref() == Some(id),
            None => m.user_email.as_deref() == user_email,
        })
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "User not found in team. team_id={}, user_id={}",
                team.team_id,
                user_id.or(user_email).unwrap_or_default()
            ))
        })
}

/// Adds `user` to `team` with `role`; returns the membership row (the cached one, or a new
/// one, linked to `budget_id` when given). Errors: 400 when already a member.
pub(crate) fn join(
    e: &Entities,
    team: &mut Team,
    user: &mut User,
    role: String,
    budget_id: Option<String>,
) -> ApiResult<TeamMembership> {
    if team
        .members_with_roles
        .iter()
        .any(|m| m.user_id.as_deref() == Some(user.user_id.as_str()))
    {
        return Err(ApiError::bad_request(format!(
            "User already in team. team_id={}, user_id={}",
            team.team_id, user.user_id
        )));
    }
    if !user.teams.contains(&team.team_id) {
        user.teams.push(team.team_id.clone());
    }
    team.members_with_roles.push(TeamMember {
        user_id: Some(user.user_id.clone()),
        user_email: user.user_email.clone(),
        role,
    });
    let mut m = e
        .memberships
        .get(&(team.team_id.clone(), user.user_id.clone()))
        .map(|m| TeamMembership::clone(m))
        .unwrap_or_else(|| TeamMembership {
            user_id: user.user_id.clone(),
            team_id: team.team_id.clone(),
            ..TeamMembership::default()
        });
    if budget_id.is_some() {
        m.budget_id = budget_id;
    }
    Ok(m)
}

/// A per-member budget in `/team/member_add` / `/team/member_update`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MemberBudget {
    /// USD the member may spend in the team.
    pub max_budget_in_team: Option<f64>,
    /// Window of that budget.
    pub budget_duration: Option<String>,
    /// Tokens per minute of the member in the team.
    pub tpm_limit: Option<i64>,
    /// Requests per minute of the member in the team.
    pub rpm_limit: Option<i64>,
}

impl MemberBudget {
    /// The member's tier after this change: `existing` with the given fields, or a new tier
    /// (uuid id); `None` when no field is given. With it, the window change of the member's
    /// scope ([`WindowPlan`]: a first window starts at 0). Errors: 400 for a bad
    /// `budget_duration`.
    pub fn tier(
        &self,
        existing: Option<&BudgetTier>,
        now: DateTime<Utc>,
        by: &str,
    ) -> ApiResult<Option<(BudgetTier, Option<WindowPlan>)>> {
        let d = extract::duration("budget_duration", self.budget_duration.as_deref())?;
        if self.max_budget_in_team.is_none()
            && d.is_none()
            && self.tpm_limit.is_none()
            && self.rpm_limit.is_none()
        {
            return Ok(None);
        }
        let limits = TierLimits {
            max_budget: self.max_budget_in_team,
            duration: d,
            tpm_limit: self.tpm_limit,
            rpm_limit: self.rpm_limit,
        };
        Ok(Some(tier_with(
            existing,
            &limits,
            tier_window(existing),
            now,
            by,
        )))
    }
}
