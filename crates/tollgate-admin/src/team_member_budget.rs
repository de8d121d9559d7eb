//! A team's default member budget: `team_member_budget` (USD), `team_member_rpm_limit`,
//! `team_member_tpm_limit` on `/team/new` and `/team/update`, as LiteLLM keeps it
//! (`TeamMemberBudgetHandler`, litellm/proxy/management_endpoints/team_endpoints.py):
//!
//! - the limits are a `"LiteLLM_BudgetTable"` row, `budget_id` `team-<alias, spaces as
//!   dashes>-budget-<hex uuid>` (`team-budget-<hex uuid>` without an alias), whose
//!   `budget_duration` is the team's; its id is linked from the team's
//!   `metadata.team_member_budget_id`. `/team/update` changes the given fields of the linked
//!   row in place (or creates one when none is linked);
//! - a member added afterwards without its own `max_budget_in_team` gets a private copy of that
//!   row (new uuid, same limits and window, its window starting when it joins), as LiteLLM's
//!   `_clone_team_default_budget_for_member` (litellm/proxy/management_helpers/utils.py) does,
//!   so the default is enforced per member on the `team_member` scope and editing one member's
//!   budget never changes another's;
//! - `/team/info` shows the linked row as `team_info.team_member_budget_table` (`null` without
//!   one), as LiteLLM's `_add_team_member_budget_table` does.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use tollgate_governance::admission::WindowPlan;
use tollgate_governance::runtime::Entities;
use tollgate_governance::store::{BudgetTier, Team};

use crate::error::{ApiError, ApiResult};
use crate::extract;
use crate::members::MemberBudget;
use crate::tier::{TierLimits, tier_with};

/// The team metadata key that links the default member tier (LiteLLM's name).
pub(crate) const METADATA_KEY: &str = "team_member_budget_id";

/// The default member limits a `/team/new` or `/team/update` body sets; `None` = unchanged.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub(crate) struct DefaultFields {
    /// USD each member may spend in the team.
    pub team_member_budget: Option<f64>,
    /// Requests per minute of each member in the team.
    pub team_member_rpm_limit: Option<i64>,
    /// Tokens per minute of each member in the team.
    pub team_member_tpm_limit: Option<i64>,
}

impl DefaultFields {
    /// True when any field is given (LiteLLM's `should_create_budget`).
    fn given(&self) -> bool {
        self.team_member_budget.is_some()
            || self.team_member_rpm_limit.is_some()
            || self.team_member_tpm_limit.is_some()
    }

    /// Errors: 400 for a negative value.
    fn check(&self) -> ApiResult<()> {
        let negative = [
            (
                "team_member_budget",
                self.team_member_budget.is_some_and(|v| v < 0.0),
            ),
            (
                "team_member_rpm_limit",
                self.team_member_rpm_limit.is_some_and(|v| v < 0),
            ),
            (
                "team_member_tpm_limit",
                self.team_member_tpm_limit.is_some_and(|v| v < 0),
            ),
        ];
        match negative.iter().find(|(_, bad)| *bad) {
            Some((field, _)) => Err(ApiError::bad_request(format!(
                "{field} must be a number >= 0"
            ))),
            None => Ok(()),
        }
    }
}

/// The `budget_id` linked from the team's `metadata.team_member_budget_id`, if a string.
pub(crate) fn default_id(team: &Team) -> Option<&str> {
    team.metadata.get(METADATA_KEY).and_then(Value::as_str)
}

/// The team's default member tier, when it is linked and still exists.
pub(crate) fn default_tier(e: &Entities, team: &Team) -> Option<BudgetTier> {
    e.budget(default_id(team)).map(|t| BudgetTier::clone(t))
}

/// The team's default member tier after `f`: the linked tier with the given fields changed,
/// or a new tier with the team's `budget_duration` (`duration`, the window the team had when
/// the tier is created), linked from `team.metadata`. `None` when `f` sets nothing.
/// Errors: 400 for a negative value.
pub(crate) fn upsert_default(
    e: &Entities,
    team: &mut Team,
    f: &DefaultFields,
    duration: Option<&str>,
    now: DateTime<Utc>,
    by: &str,
) -> ApiResult<Option<BudgetTier>> {
    f.check()?;
    if !f.given() {
        return Ok(None);
    }
    let linked = default_tier(e, team);
    let d = match &linked {
        Some(_) => None,
        None => extract::duration("budget_duration", duration)?,
    };
    let limits = TierLimits {
        max_budget: f.team_member_budget,
        duration: d,
        tpm_limit: f.team_member_tpm_limit,
        rpm_limit: f.team_member_rpm_limit,
    };
    let (mut tier, _) = tier_with(linked.as_ref(), &limits, None, now, by);
    if linked.is_none() {
        tier.budget_id = match team.team_alias.as_deref() {
            Some(a) => format!("team-{}-budget-{}", a.replace(' ', "-"), hex_id()),
            None => format!("team-budget-{}", hex_id()),
        };
    }
    if let Value::Object(m) = &mut team.metadata {
        m.insert(METADATA_KEY.into(), Value::from(tier.budget_id.clone()));
    } else {
        team.metadata = serde_json::json!({ METADATA_KEY: tier.budget_id });
    }
    Ok(Some(tier))
}

/// A uuid as 32 hex digits (Python's `uuid4().hex`).
fn hex_id() -> String {
    extract::new_id().replace('-', "")
}

/// The tier of a member joining with `budget`: without its own `max_budget_in_team` and with
/// a team default, a private copy of the default (its `budget_duration`, `tpm_limit`,
/// `rpm_limit` replaced by the request's when given); otherwise the request's own tier
/// ([`MemberBudget::tier`]). With it, the member scope's first window. Errors: 400 for a bad
/// `budget_duration`.
pub(crate) fn member_tier(
    budget: &MemberBudget,
    default: Option<&BudgetTier>,
    now: DateTime<Utc>,
    by: &str,
) -> ApiResult<Option<(BudgetTier, Option<WindowPlan>)>> {
    let Some(d) = default.filter(|_| budget.max_budget_in_team.is_none()) else {
        return budget.tier(None, now, by);
    };
    let own = extract::duration("budget_duration", budget.budget_duration.as_deref())?;
    let limits = TierLimits {
        max_budget: d.max_budget,
        duration: own.or(d.limits().budget_duration),
        tpm_limit: budget.tpm_limit.or(d.tpm_limit),
        rpm_limit: budget.rpm_limit.or(d.rpm_limit),
    };
    let (mut t, plan) = tier_with(None, &limits, None, now, by);
    t.soft_budget = d.soft_budget;
    t.max_parallel_requests = d.max_parallel_requests;
    if d.model_max_budget.is_object() {
        t.model_max_budget = d.model_max_budget.clone();
    }
    Ok(Some((t, plan)))
}
