//! Seeding the admission counters at start from what the store holds: every entity's `spend`
//! and `budget_reset_at` columns with the window it is counted under (so `/key/info` and the
//! other reads know when a window in force ends before the scope's next request), and the
//! per-model budgets of keys (`model_max_budget`, `model_spend`, and where each windowed one
//! ends: [`crate::store::ModelBudgetWindow`]).

use std::collections::HashMap;

use crate::admission::fleet::Seed;
use crate::admission::{Admission, Limits, ScopeKey, ScopeKind};
use crate::duration::BudgetDuration;
use crate::store::{
    BudgetTier, GovernanceStore, ModelBudget, ModelBudgetWindow, SpendLogFilter, StoreError,
};

use super::cache::Entities;
use super::scopes::{EndUserDefault, end_user_limits};

/// The window of a scope that follows tier `t` (and, for a key, its own `budget_duration`
/// first, as on the request path).
fn window(own: &Limits, tier: Option<&std::sync::Arc<BudgetTier>>) -> Option<BudgetDuration> {
    own.budget_duration
        .or_else(|| tier.and_then(|t| t.limits().budget_duration))
}

/// Writes `seeds` into the admission counters (with shared counters, only those the shared
/// store does not hold yet).
///
/// Errors: [`StoreError::Counters`] when shared counters cannot answer.
pub(super) async fn apply(admission: &Admission, seeds: &[Seed]) -> Result<(), StoreError> {
    for s in seeds {
        admission
            .seed(&s.scope, s.spend_usd, s.budget_reset_at, s.duration)
            .await?;
    }
    Ok(())
}

fn seed(
    scope: ScopeKey,
    spend_usd: f64,
    budget_reset_at: Option<chrono::DateTime<chrono::Utc>>,
    duration: Option<BudgetDuration>,
) -> Seed {
    Seed {
        scope,
        spend_usd,
        budget_reset_at,
        duration,
    }
}

/// The stored spend of every entity, each with the window it is counted under (an end
/// user's: its tier's, else the default end-user budget's).
pub(super) fn spend_seeds(e: &Entities, end_user_default: &EndUserDefault) -> Vec<Seed> {
    let mut out = Vec::with_capacity(e.keys.len() + e.teams.len() + e.users.len());
    for k in e.keys.values() {
        let d = window(&k.limits(), e.budget(k.budget_id.as_deref()));
        out.push(seed(ScopeKey::key(&k.token), k.spend, k.budget_reset_at, d));
    }
    for t in e.teams.values() {
        out.push(seed(
            ScopeKey::new(ScopeKind::Team, t.team_id.as_str()),
            t.spend,
            t.budget_reset_at,
            t.limits().budget_duration,
        ));
    }
    for u in e.users.values() {
        out.push(seed(
            ScopeKey::new(ScopeKind::User, u.user_id.as_str()),
            u.spend,
            u.budget_reset_at,
            u.limits().budget_duration,
        ));
    }
    let none = Limits::default();
    for c in e.end_users.values().filter(|c| c.spend != 0.0) {
        let d = end_user_limits(e, Some(c), end_user_default).budget_duration;
        out.push(seed(
            ScopeKey::new(ScopeKind::EndUser, c.user_id.as_str()),
            c.spend,
            None,
            d,
        ));
    }
    for m in e.memberships.values().filter(|m| m.spend != 0.0) {
        out.push(seed(
            ScopeKey::team_member(&m.team_id, &m.user_id),
            m.spend,
            None,
            window(&none, e.budget(m.budget_id.as_deref())),
        ));
    }
    for o in e.organizations.values().filter(|o| o.spend != 0.0) {
        out.push(seed(
            ScopeKey::new(ScopeKind::Organization, o.organization_id.as_str()),
            o.spend,
            None,
            window(&none, e.budget(o.budget_id.as_deref())),
        ));
    }
    for t in e.tags.values().filter(|t| t.spend != 0.0) {
        out.push(seed(
            ScopeKey::new(ScopeKind::Tag, t.tag_name.as_str()),
            t.spend,
            None,
            window(&none, e.budget(t.budget_id.as_deref())),
        ));
    }
    out
}

/// The spend of every per-model budget of every key (`model_per_key` scopes, one per
/// `model_max_budget` entry, named by the entry):
///
/// - an entry without a window (`{"gpt-4o": 1.0}`): the key's `model_spend` column, no reset;
/// - an entry with a `time_period` whose window end is stored (`windows`, written behind with
///   `model_spend` from the same counter snapshot): while that end is ahead, the window goes on
///   with `model_spend` as its spend; once it has passed (the gateway was down over the
///   reset), a new window starts at 0. A window armed by a management write (which starts at
///   0) therefore never counts what was spent before it;
/// - an entry with a `time_period` but no stored end (written by a version without the window
///   table): the key's spend-log rows for that model group since the start of the current
///   window.
///
/// Errors: the store's, reading spend logs.
pub(super) async fn model_spend_seeds(
    store: &dyn GovernanceStore,
    now: chrono::DateTime<chrono::Utc>,
    e: &Entities,
    windows: &[ModelBudgetWindow],
) -> Result<Vec<Seed>, StoreError> {
    let mut out = Vec::new();
    let ends: HashMap<(&str, &str), chrono::DateTime<chrono::Utc>> = windows
        .iter()
        .filter_map(|w| Some(((w.token.as_str(), w.model.as_str()), w.budget_reset_at?)))
        .collect();
    for k in e.keys.values() {
        let Some(entries) = k.model_max_budget.as_object().filter(|m| !m.is_empty()) else {
            continue;
        };
        let stored = |model: &str| {
            k.model_spend
                .get(model)
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0)
        };
        let mut legacy = Vec::new();
        for model in entries.keys() {
            let Some(b) = ModelBudget::of(&k.model_max_budget, model) else {
                continue;
            };
            let scope = ScopeKey::model_per_key(&k.token, model);
            match (b.duration, ends.get(&(k.token.as_str(), model.as_str()))) {
                (None, _) => {
                    let spend = stored(model);
                    if spend != 0.0 {
                        out.push(seed(scope, spend, None, None));
                    }
                }
                (Some(d), Some(&end)) if end > now => {
                    out.push(seed(scope, stored(model), Some(end), Some(d)));
                }
                (Some(d), Some(_)) => {
                    out.push(seed(scope, 0.0, Some(d.next_reset(now)), Some(d)));
                }
                (Some(d), None) => legacy.push((model.as_str(), d, scope)),
            }
        }
        let Some(since) = legacy.iter().map(|(_, d, _)| d.window_start(now)).min() else {
            continue;
        };
        let rows = store
            .spend_logs(&SpendLogFilter {
                api_key: Some(k.token.clone()),
                start: Some(since),
                ..SpendLogFilter::default()
            })
            .await?;
        let mut by_model: HashMap<&str, Vec<(chrono::DateTime<chrono::Utc>, f64)>> = HashMap::new();
        for r in &rows {
            if let Some(g) = r.model_group.as_deref() {
                by_model.entry(g).or_default().push((r.start_time, r.spend));
            }
        }
        for (model, d, scope) in legacy {
            let start = d.window_start(now);
            let spend: f64 = by_model
                .get(model)
                .map(|v| v.iter().filter(|(t, _)| *t >= start).map(|(_, s)| s).sum())
                .unwrap_or(0.0);
            out.push(seed(scope, spend, Some(d.next_reset(now)), Some(d)));
        }
    }
    Ok(out)
}

/// Every seed the database gives: [`spend_seeds`], [`model_spend_seeds`] and the whole
/// proxy's spend, which lives only in the spend logs (its current window's sum).
///
/// Errors: the store's.
pub(super) async fn all_seeds(
    store: &dyn GovernanceStore,
    now: chrono::DateTime<chrono::Utc>,
    e: &Entities,
    windows: &[ModelBudgetWindow],
    options: &super::GovernanceOptions,
) -> Result<Vec<Seed>, StoreError> {
    let mut seeds = spend_seeds(e, &options.end_user_default);
    seeds.extend(model_spend_seeds(store, now, e, windows).await?);
    let window = options.global.budget_duration;
    let global = store
        .spend_since(window.map(|d| d.window_start(now)))
        .await?;
    seeds.push(seed(
        ScopeKey::global(),
        global,
        window.map(|d| d.next_reset(now)),
        window,
    ));
    Ok(seeds)
}
