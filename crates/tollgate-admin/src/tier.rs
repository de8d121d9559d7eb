//! Budget tiers written on behalf of another entity (a customer's, tag's, organization's or
//! team member's limits, a key's `soft_budget`): LiteLLM keeps those limits on a linked
//! `"LiteLLM_BudgetTable"` row. One rule for every route: change the linked tier, or create one.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use tollgate_governance::admission::WindowPlan;
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::{EndUserDefault, Entities, end_user_limits};
use tollgate_governance::store::BudgetTier;

use crate::extract;

/// Limits a route sets on a tier; `None` = unchanged. Budget in USD, limits per minute.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TierLimits {
    pub max_budget: Option<f64>,
    /// The tier's window; a first or different one is planned with [`WindowPlan::for_update`]
    /// (the same one again leaves `budget_reset_at` as it is).
    pub duration: Option<BudgetDuration>,
    pub tpm_limit: Option<i64>,
    pub rpm_limit: Option<i64>,
}

/// The window of a tier (`None` without one, or with an unreadable one).
pub(crate) fn tier_window(t: Option<&BudgetTier>) -> Option<BudgetDuration> {
    t.and_then(|t| t.limits().budget_duration)
}

/// `linked` with `limits` applied, or a new tier (uuid id, LiteLLM's empty
/// `model_max_budget`, created now by `by`) when none is linked; stamped updated now by `by`.
/// Also returns the window change of the scopes that follow the tier (`before` = the window
/// they were counted under; see [`WindowPlan`]), already written into `budget_reset_at`.
pub(crate) fn tier_with(
    linked: Option<&BudgetTier>,
    limits: &TierLimits,
    before: Option<BudgetDuration>,
    now: DateTime<Utc>,
    by: &str,
) -> (BudgetTier, Option<WindowPlan>) {
    let mut t = linked.cloned().unwrap_or_else(|| BudgetTier {
        budget_id: extract::new_id(),
        model_max_budget: Value::Object(Map::new()),
        created_at: Some(now),
        created_by: Some(by.to_owned()),
        ..BudgetTier::default()
    });
    if let Some(v) = limits.max_budget {
        t.max_budget = Some(v);
    }
    if let Some(d) = limits.duration {
        t.budget_duration = Some(d.to_string());
    }
    let plan = WindowPlan::for_update(before, limits.duration, now);
    if let Some(p) = &plan {
        t.budget_reset_at = Some(p.reset_at);
    }
    if let Some(v) = limits.tpm_limit {
        t.tpm_limit = Some(v);
    }
    if let Some(v) = limits.rpm_limit {
        t.rpm_limit = Some(v);
    }
    t.updated_at = Some(now);
    t.updated_by = Some(by.to_owned());
    (t, plan)
}

/// A new tier (uuid id, created now by `by`) carrying the default end-user budget
/// (`max_end_user_budget`, the `max_end_user_budget_id` tier's limits, the tighter cap of the
/// two), for an end user that governs itself from now on: giving such an end user budget
/// fields never lifts the cap it was held to. `None` when no default is configured.
pub(crate) fn default_end_user_tier(
    e: &Entities,
    default: &EndUserDefault,
    now: DateTime<Utc>,
    by: &str,
) -> Option<BudgetTier> {
    if default.is_empty() {
        return None;
    }
    let tier = e.budget(default.budget_id.as_deref());
    let cap = end_user_limits(e, None, default).max_budget;
    let mut t = tier.map(|t| BudgetTier::clone(t)).unwrap_or_default();
    t.budget_id = extract::new_id();
    t.max_budget = cap;
    t.budget_reset_at = None;
    if !t.model_max_budget.is_object() {
        t.model_max_budget = Value::Object(Map::new());
    }
    t.created_at = Some(now);
    t.created_by = Some(by.to_owned());
    Some(t)
}
