//! Seeding the admission counters at start from what the store holds: every entity's `spend`
//! and `budget_reset_at` columns, and the per-model budgets of keys (`model_max_budget`).

use std::collections::HashMap;

use crate::admission::{Admission, ScopeKey, ScopeKind};
use crate::store::{GovernanceStore, ModelBudget, SpendLogFilter, StoreError};

use super::cache::Entities;

/// Seeds the admission counters from the stored spend of every entity.
pub(super) fn seed_spend(admission: &Admission, e: &Entities) {
    for k in e.keys.values() {
        admission.set_spend(&ScopeKey::key(&k.token), k.spend, k.budget_reset_at);
    }
    for t in e.teams.values() {
        admission.set_spend(
            &ScopeKey::new(ScopeKind::Team, t.team_id.as_str()),
            t.spend,
            t.budget_reset_at,
        );
    }
    for u in e.users.values() {
        admission.set_spend(
            &ScopeKey::new(ScopeKind::User, u.user_id.as_str()),
            u.spend,
            u.budget_reset_at,
        );
    }
    for c in e.end_users.values().filter(|c| c.spend != 0.0) {
        admission.set_spend(
            &ScopeKey::new(ScopeKind::EndUser, c.user_id.as_str()),
            c.spend,
            None,
        );
    }
    for m in e.memberships.values().filter(|m| m.spend != 0.0) {
        admission.set_spend(
            &ScopeKey::team_member(&m.team_id, &m.user_id),
            m.spend,
            None,
        );
    }
    for o in e.organizations.values().filter(|o| o.spend != 0.0) {
        admission.set_spend(
            &ScopeKey::new(ScopeKind::Organization, o.organization_id.as_str()),
            o.spend,
            None,
        );
    }
    for t in e.tags.values().filter(|t| t.spend != 0.0) {
        admission.set_spend(
            &ScopeKey::new(ScopeKind::Tag, t.tag_name.as_str()),
            t.spend,
            None,
        );
    }
}

/// Seeds the spend of every per-model budget of every key (`model_per_key` scopes):
///
/// - an entry without a window (`{"gpt-4o": 1.0}`) from the key's `model_spend` column;
/// - an entry with a `time_period` from the spend logs: the key's rows for that model group
///   since the start of the current window (one read per key that has such entries), so a
///   window that ended while the gateway was down starts again at 0. With spend logs turned off
///   (`disable_spend_logs`) such a window restarts at 0 on every start.
///
/// Errors: the store's, reading spend logs.
pub(super) async fn seed_model_spend(
    store: &dyn GovernanceStore,
    admission: &Admission,
    e: &Entities,
) -> Result<(), StoreError> {
    let now = admission.now();
    for k in e.keys.values() {
        let Some(entries) = k.model_max_budget.as_object().filter(|m| !m.is_empty()) else {
            continue;
        };
        let mut windowed = Vec::new();
        for model in entries.keys() {
            let Some(b) = ModelBudget::of(&k.model_max_budget, model) else {
                continue;
            };
            let scope = ScopeKey::model_per_key(&k.token, model);
            match b.duration {
                None => {
                    let spend = k
                        .model_spend
                        .get(model)
                        .and_then(serde_json::Value::as_f64)
                        .unwrap_or(0.0);
                    if spend != 0.0 {
                        admission.set_spend(&scope, spend, None);
                    }
                }
                Some(d) => windowed.push((model.as_str(), d, scope)),
            }
        }
        let Some(since) = windowed.iter().map(|(_, d, _)| d.window_start(now)).min() else {
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
        for (model, d, scope) in windowed {
            let start = d.window_start(now);
            let spend: f64 = by_model
                .get(model)
                .map(|v| v.iter().filter(|(t, _)| *t >= start).map(|(_, s)| s).sum())
                .unwrap_or(0.0);
            admission.set_spend(&scope, spend, Some(d.next_reset(now)));
        }
    }
    Ok(())
}
