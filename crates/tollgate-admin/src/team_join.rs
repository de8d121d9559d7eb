//! Adding members to a team, shared by `/team/new` (`members_with_roles`),
//! `/team/member_add` and `/team/bulk_member_add` (LiteLLM's `_add_team_members_to_team` and
//! `add_new_member`, litellm/proxy/management_endpoints/team_endpoints.py and
//! litellm/proxy/management_helpers/utils.py): each member's user is found or created, joins
//! the team, and gets its budget tier: its own `max_budget_in_team`, else a copy of the team's
//! default member tier ([`crate::team_member_budget`]), else none.

use chrono::{DateTime, Utc};
use tollgate_governance::admission::{ScopeKey, WindowPlan};
use tollgate_governance::runtime::{Entities, Governance};
use tollgate_governance::store::{BudgetTier, Team, TeamMembership};

use crate::error::{ApiError, ApiResult};
use crate::live;
use crate::members::{self, MemberBudget, MemberIn};
use crate::team_member_budget;
use crate::write::Batch;

/// The members' first budget windows, to arm once the batch is committed.
#[derive(Debug, Default)]
pub(crate) struct Windows(Vec<(TeamMembership, WindowPlan)>);

/// Adds `list` to `team` with `budget` and the team's default member tier `default`: users
/// (created when missing) and memberships go into `batch`, with the members' tiers. Errors:
/// 400 (bad member, bad role, already a member, bad `budget_duration`).
pub(crate) fn add(
    e: &Entities,
    team: &mut Team,
    (list, budget, default): (&[MemberIn], &MemberBudget, Option<&BudgetTier>),
    now: DateTime<Utc>,
    by: &str,
    batch: &mut Batch,
) -> ApiResult<Windows> {
    let mut windows = Windows::default();
    for m in list {
        let mut user = members::resolve_user(e, m)?;
        let tier = team_member_budget::member_tier(budget, default, now, by)?;
        let budget_id = tier.as_ref().map(|(t, _)| t.budget_id.clone());
        let membership = members::join(e, team, &mut user, m.role()?, budget_id)?;
        if let Some((t, window)) = tier {
            if let Some(w) = window {
                windows.0.push((membership.clone(), w));
            }
            batch.budgets.push(t);
        }
        batch.users.push(user);
        batch.memberships.push(membership);
    }
    Ok(windows)
}

/// Reads the live spend into the batch's users and memberships (after the cache's guard is
/// dropped: no guard is held across an await).
pub(crate) async fn refresh(gov: &Governance, batch: &mut Batch) -> Result<(), ApiError> {
    for u in &mut batch.users {
        *u = live::user_row(gov, u).await?;
    }
    for m in &mut batch.memberships {
        *m = live::membership_row(gov, m).await?;
    }
    Ok(())
}

impl Windows {
    /// Starts each member's window (after the rows are stored and cached) on every scope
    /// following the member's tier (the member's own, unless the tier is shared).
    pub(crate) async fn arm(&self, gov: &Governance) -> Result<(), ApiError> {
        for (m, plan) in &self.0 {
            start_window(gov, m, plan).await?;
        }
        Ok(())
    }
}

/// Applies a member's budget window change to the scopes following its tier.
pub(crate) async fn start_window(
    gov: &Governance,
    m: &TeamMembership,
    plan: &WindowPlan,
) -> Result<(), ApiError> {
    match m.budget_id.as_deref() {
        Some(id) => live::arm_tier(gov, Some(id), Some(plan)).await,
        None => {
            live::arm(
                gov,
                &ScopeKey::team_member(&m.team_id, &m.user_id),
                Some(plan),
            )
            .await
        }
    }
}
