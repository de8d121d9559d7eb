//! Live spend and budget windows. Cached rows carry the spend of their last write; the
//! admission counters carry the spend now. Responses report the counters, rows written back
//! to the store carry the counters' values (so a management write never rolls spend back),
//! and a new or changed `budget_duration` changes the window in the counters at once
//! ([`arm`], by the rule of [`WindowPlan`]: a first window starts at 0, the same one again is
//! untouched, a different one keeps the spend and moves `budget_reset_at`).
//!
//! With counters shared by a fleet (Redis) each read and write here is one awaited round trip,
//! so a change is in force for the next request of every replica; a shared store that cannot
//! answer fails the management call with 503 ([`ApiError`]'s `From<CounterStoreError>`).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use tollgate_governance::admission::{ScopeKey, ScopeKind, WindowPlan};
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::Governance;

use crate::error::ApiError;
use tollgate_governance::store::{
    EndUser, ModelBudget, Team, TeamMembership, User, VerificationToken,
};

/// Spend (USD) and next reset of a scope now ([`window`] without a fallback period).
pub(crate) async fn spend(
    gov: &Governance,
    scope: &ScopeKey,
) -> Result<(f64, Option<DateTime<Utc>>), ApiError> {
    window(gov, scope, None).await
}

/// Spend (USD) in the window in force now and when that window ends. A window whose reset
/// time has passed with no request since (nothing has rolled it yet) is shown as the next
/// request will find it: spend 0, ending at the next standardised reset of its period (the
/// counter's, else `period`: the window the entity is counted under), never the reset that
/// already happened.
pub(crate) async fn window(
    gov: &Governance,
    scope: &ScopeKey,
    period: Option<BudgetDuration>,
) -> Result<(f64, Option<DateTime<Utc>>), ApiError> {
    let now = gov.admission().now();
    Ok(match gov.admission().spend(scope).await? {
        None => (0.0, None),
        Some(s) => match s.budget_reset_at {
            Some(at) if at <= now => {
                let next = s.budget_duration.or(period).map(|d| d.next_reset(now));
                (0.0, next.or(Some(at)))
            }
            at => (s.spend, at),
        },
    })
}

/// Sets a scope's counter: `spend` USD in a window ending at `reset_at` (kept when `None`).
/// Called after the store and the cache hold the change.
pub(crate) async fn set(
    gov: &Governance,
    scope: &ScopeKey,
    spend: f64,
    reset_at: Option<DateTime<Utc>>,
) -> Result<(), ApiError> {
    Ok(gov.admission().set_spend(scope, spend, reset_at).await?)
}

/// Applies a window change to a scope's counters, once the store and the cache hold the
/// change; in force for the very next request. Nothing for `None`.
pub(crate) async fn arm(
    gov: &Governance,
    scope: &ScopeKey,
    plan: Option<&WindowPlan>,
) -> Result<(), ApiError> {
    if let Some(p) = plan {
        gov.admission().arm_window(scope, p).await?;
    }
    Ok(())
}

/// The scopes whose window follows tier `id`: keys without their own `budget_duration`,
/// customers, team members, organizations and tags linked to it.
pub(crate) fn linked_scopes(gov: &Governance, id: &str) -> Vec<ScopeKey> {
    let e = gov.cache().read();
    let is = |b: &Option<String>| b.as_deref() == Some(id);
    let mut out: Vec<ScopeKey> = e
        .keys
        .values()
        .filter(|k| is(&k.budget_id) && k.budget_duration.is_none())
        .map(|k| ScopeKey::key(&k.token))
        .collect();
    out.extend(
        e.end_users
            .values()
            .filter(|c| is(&c.budget_id))
            .map(|c| ScopeKey::new(ScopeKind::EndUser, c.user_id.as_str())),
    );
    out.extend(
        e.memberships
            .values()
            .filter(|m| is(&m.budget_id))
            .map(|m| ScopeKey::team_member(&m.team_id, &m.user_id)),
    );
    out.extend(
        e.organizations
            .values()
            .filter(|o| is(&o.budget_id))
            .map(|o| ScopeKey::new(ScopeKind::Organization, o.organization_id.as_str())),
    );
    out.extend(
        e.tags
            .values()
            .filter(|t| is(&t.budget_id))
            .map(|t| ScopeKey::new(ScopeKind::Tag, t.tag_name.as_str())),
    );
    out
}

/// Applies the window change of tier `id` to every scope that follows it ([`linked_scopes`]),
/// once the store and the cache hold the change. A tier is shared: LiteLLM updates a linked
/// tier in place whichever route changes it (`/budget/update`, `/customer/update`,
/// `/tag/update`, ...), so one rule holds for all its customers, keys, members, organizations
/// and tags (a first window starts at 0 for each of them, the same one again leaves each as it
/// is). Nothing for `None`.
pub(crate) async fn arm_tier(
    gov: &Governance,
    id: Option<&str>,
    plan: Option<&WindowPlan>,
) -> Result<(), ApiError> {
    let (Some(id), Some(p)) = (id, plan) else {
        return Ok(());
    };
    for s in linked_scopes(gov, id) {
        gov.admission().arm_window(&s, p).await?;
    }
    Ok(())
}

/// The key's `model_spend` now: the stored object with, for each model of its
/// `model_max_budget`, the live spend of that model's budget in its window, USD (0 before the
/// model's first request).
pub(crate) async fn model_spend(
    gov: &Governance,
    k: &VerificationToken,
) -> Result<Value, ApiError> {
    let mut out = match &k.model_spend {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    if let Some(models) = k.model_max_budget.as_object() {
        for model in models.keys() {
            let Some(b) = ModelBudget::of(&k.model_max_budget, model) else {
                continue;
            };
            let (spend, _) =
                window(gov, &ScopeKey::model_per_key(&k.token, model), b.duration).await?;
            out.insert(model.clone(), Value::from(spend));
        }
    }
    Ok(Value::Object(out))
}

/// A key row carrying its live spend, window and per-model spend (to write back without
/// rolling any of them back).
pub(crate) async fn key_row(
    gov: &Governance,
    k: &VerificationToken,
) -> Result<VerificationToken, ApiError> {
    let period = crate::key_fields::key_window(&gov.cache().read(), k, None);
    let (spend, reset) = window(gov, &ScopeKey::key(&k.token), period).await?;
    Ok(VerificationToken {
        spend,
        budget_reset_at: reset.or(k.budget_reset_at),
        model_spend: model_spend(gov, k).await?,
        ..k.clone()
    })
}

/// A user row carrying its live spend and window (to write back without rolling spend back).
pub(crate) async fn user_row(gov: &Governance, u: &User) -> Result<User, ApiError> {
    let scope = ScopeKey::new(ScopeKind::User, u.user_id.as_str());
    let (spend, reset) = window(gov, &scope, u.limits().budget_duration).await?;
    Ok(User {
        spend,
        budget_reset_at: reset.or(u.budget_reset_at),
        ..u.clone()
    })
}

/// A team row carrying its live spend and window.
pub(crate) async fn team_row(gov: &Governance, t: &Team) -> Result<Team, ApiError> {
    let scope = ScopeKey::new(ScopeKind::Team, t.team_id.as_str());
    let (spend, reset) = window(gov, &scope, t.limits().budget_duration).await?;
    Ok(Team {
        spend,
        budget_reset_at: reset.or(t.budget_reset_at),
        ..t.clone()
    })
}

/// A membership row carrying its live spend in the team.
pub(crate) async fn membership_row(
    gov: &Governance,
    m: &TeamMembership,
) -> Result<TeamMembership, ApiError> {
    Ok(TeamMembership {
        spend: self::spend(gov, &ScopeKey::team_member(&m.team_id, &m.user_id))
            .await?
            .0,
        ..m.clone()
    })
}

/// An end-user row carrying its live spend.
pub(crate) async fn end_user_row(gov: &Governance, c: &EndUser) -> Result<EndUser, ApiError> {
    Ok(EndUser {
        spend: self::spend(gov, &ScopeKey::new(ScopeKind::EndUser, c.user_id.as_str()))
            .await?
            .0,
        ..c.clone()
    })
}

/// `f` of every item, in order, each awaited before the next (a list's objects; with shared
/// counters one read each).
///
/// Errors: the first [`ApiError`] of `f`.
pub(crate) async fn each<T, U, F, Fut>(
    items: impl IntoIterator<Item = T>,
    mut f: F,
) -> Result<Vec<U>, ApiError>
where
    F: FnMut(T) -> Fut,
    Fut: std::future::Future<Output = Result<U, ApiError>>,
{
    let mut out = Vec::new();
    for item in items {
        out.push(f(item).await?);
    }
    Ok(out)
}
