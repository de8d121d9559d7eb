//! [`WindowPlan`]: what a management write that sets `budget_duration` does to the budget window
//! of a scope (key, team, user, end user, team member, organization, tag, per-model budget).
//!
//! One rule for every entity, decided from the window in force before the write and the one
//! after it:
//!
//! | before | after | window |
//! |---|---|---|
//! | none | `d` | **starts now at 0**: spend in the window is 0, `budget_reset_at` = the next standardised reset of `d` ([`BudgetDuration::next_reset`]); spend before it stays in the lifetime totals (spend logs, `/global/spend`) |
//! | `d` | `d` | **untouched**: same spend, same `budget_reset_at` (re-sending an update changes nothing) |
//! | `d` | `e ≠ d` | **rescheduled**: the window's spend is kept, `budget_reset_at` = the next reset of `e` from now |
//! | any | none (field absent) | untouched |
//!
//! The last two rows are LiteLLM's `/key/update` (`prepare_key_update_data`: a given
//! `budget_duration` sets `budget_reset_at = get_budget_reset_time(duration)` and leaves `spend`
//! alone). The first two differ on purpose: LiteLLM keeps the spend accumulated before any window
//! existed inside the first window (so a key that spent 0.6 of 1.0 before gaining a 30-day window
//! has 0.4 left in it), and re-arms the reset time on every identical update (so re-sending an
//! update postpones the reset forever).
//!
//! The caller writes the plan's values into the entity row (store, cache) and then applies it
//! to the counters with [`crate::admission::Admission::arm_window`], so the next request is
//! admitted against the new window.

use chrono::{DateTime, Utc};

use crate::duration::BudgetDuration;

/// A change of a scope's budget window (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPlan {
    /// The window's period from now on.
    pub duration: BudgetDuration,
    /// When the (new or rescheduled) window ends, UTC.
    pub reset_at: DateTime<Utc>,
    /// True when the window starts now at 0 spend; false when its spend is kept.
    pub restart: bool,
}

impl WindowPlan {
    /// The plan for a write that changes a scope's window from `before` to `after` at `now`;
    /// `None` when the window is untouched (`after` is `None`, or equal to `before`).
    pub fn for_update(
        before: Option<BudgetDuration>,
        after: Option<BudgetDuration>,
        now: DateTime<Utc>,
    ) -> Option<WindowPlan> {
        let after = after?;
        if before == Some(after) {
            return None;
        }
        Some(WindowPlan {
            duration: after,
            reset_at: after.next_reset(now),
            restart: before.is_none(),
        })
    }

    /// Applies the plan to an entity row's `spend` (USD in the window) and `budget_reset_at`.
    pub fn apply_to(&self, spend: &mut f64, budget_reset_at: &mut Option<DateTime<Utc>>) {
        if self.restart {
            *spend = 0.0;
        }
        *budget_reset_at = Some(self.reset_at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{
        Admission, AdmissionConfig, AdmitRequest, Estimate, InMemoryCounterStore, Limits, ScopeKey,
        ScopeRequest,
    };
    use crate::duration::ManualClock;
    use crate::pricing::Usage;
    use crate::test_support::Ready;
    use std::sync::Arc;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_rule_table() {
        let now = t("2026-03-14T10:17:00Z");
        let d30 = BudgetDuration::Days(30);
        let d1 = BudgetDuration::Days(1);
        let start = WindowPlan::for_update(None, Some(d30), now).unwrap();
        assert_eq!(start.reset_at, t("2026-04-13T00:00:00Z"));
        assert!(start.restart);
        assert_eq!(WindowPlan::for_update(Some(d30), Some(d30), now), None);
        assert_eq!(WindowPlan::for_update(Some(d30), None, now), None);
        assert_eq!(WindowPlan::for_update(None, None, now), None);
        let moved = WindowPlan::for_update(Some(d30), Some(d1), now).unwrap();
        assert_eq!(moved.reset_at, t("2026-03-15T00:00:00Z"));
        assert!(!moved.restart);
        let (mut spend, mut at) = (0.6, None);
        start.apply_to(&mut spend, &mut at);
        assert_eq!((spend, at), (0.0, Some(t("2026-04-13T00:00:00Z"))));
        let (mut spend, mut at) = (0.6, Some(now));
        moved.apply_to(&mut spend, &mut at);
        assert_eq!((spend, at), (0.6, Some(t("2026-03-15T00:00:00Z"))));
    }

    fn admit(a: &Admission, id: &str, max: f64, d: Option<BudgetDuration>, usd: f64) -> bool {
        let scope = ScopeRequest::new(
            ScopeKey::key("h"),
            Limits {
                max_budget: Some(max),
                budget_duration: d,
                ..Limits::default()
            },
        );
        let r = a
            .admit(AdmitRequest {
                request_id: id.into(),
                attempt: 0,
                scopes: vec![scope],
                estimate: Estimate {
                    prompt_tokens: 1,
                    output_tokens: 0,
                    cost_usd: usd,
                },
            })
            .ready();
        match r {
            Ok(mut res) => {
                res.settle(&Usage::new(1, 0), usd).unwrap();
                true
            }
            Err(_) => false,
        }
    }

    /// A key that spent 0.6 of 1.0 without a window gains `30d`: the next request is admitted
    /// against a window at 0; two more requests of 0.6 fill it (0 → 0.6 → 1.2) and the next is
    /// refused. Without the restart it would be refused one request earlier (0.6 → 1.2).
    #[test]
    fn arming_a_window_on_a_scope_with_spend_starts_it_at_zero() {
        let now = t("2026-03-14T10:17:00Z");
        let clock = Arc::new(ManualClock::new(now));
        let a = Admission::with_clock(
            Arc::new(InMemoryCounterStore::default()),
            clock,
            AdmissionConfig::default(),
        );
        let d30 = Some(BudgetDuration::Days(30));
        assert!(admit(&a, "r0", 1.0, None, 0.6));
        let scope = ScopeKey::key("h");
        assert_eq!(a.spend(&scope).ready().unwrap().unwrap().spend, 0.6);
        let plan = WindowPlan::for_update(None, d30, now).unwrap();
        a.arm_window(&scope, &plan).ready().unwrap();
        let s = a.spend(&scope).ready().unwrap().unwrap();
        assert_eq!((s.spend, s.budget_reset_at), (0.0, Some(plan.reset_at)));
        assert!(admit(&a, "r1", 1.0, d30, 0.6));
        assert!(admit(&a, "r2", 1.0, d30, 0.6));
        assert!(!admit(&a, "r3", 1.0, d30, 0.6));
        assert_eq!(a.spend(&scope).ready().unwrap().unwrap().spend, 1.2);
        // the same update again plans nothing; a new duration keeps the spend
        assert_eq!(WindowPlan::for_update(d30, d30, now), None);
        let moved = WindowPlan::for_update(d30, Some(BudgetDuration::Hours(1)), now).unwrap();
        a.arm_window(&scope, &moved).ready().unwrap();
        let s = a.spend(&scope).ready().unwrap().unwrap();
        assert_eq!(
            (s.spend, s.budget_reset_at),
            (1.2, Some(t("2026-03-14T11:00:00Z")))
        );
        // the write-behind sees the window: absolute spend and the new reset time
        let dirty = a.drain_dirty().ready().unwrap();
        let snap = dirty.iter().find(|d| d.scope == scope).unwrap();
        assert_eq!(snap.budget_reset_at, Some(t("2026-03-14T11:00:00Z")));
        assert_eq!(snap.spend, 1.2);
    }
}
