//! Admission scenario tests of budget windows: inherited schedules, manual resets, and what
//! the write-behind drains.

use chrono::{DateTime, Utc};

use super::tests::{engine, est, key_scope, req, t0};
use super::*;
use crate::duration::BudgetDuration;
use crate::pricing::Usage;
use crate::test_support::Ready;

/// A key inheriting a tier's 1-minute window is reset and reports its next reset.
#[test]
fn budget_window_resets_inherited_schedule() {
    let (adm, clock) = engine();
    let key = ScopeKey::key("hash-a");
    let tier = Limits {
        max_budget: Some(5.0),
        budget_duration: Some(BudgetDuration::Minutes(1)),
        ..Limits::default()
    };
    let eff = Limits::default().tighter(&tier);
    let mut r = adm
        .admit(req("a", vec![key_scope(eff.clone())], est(1.0)))
        .ready()
        .unwrap();
    r.settle(&Usage::new(1, 1), 5.0).unwrap();
    let s = adm.spend(&key).ready().unwrap().unwrap();
    assert_eq!(s.spend, 5.0);
    assert_eq!(s.budget_reset_at, Some(t0() + chrono::Duration::minutes(1)));
    assert!(
        adm.admit(req("b", vec![key_scope(eff.clone())], est(1.0)))
            .ready()
            .is_err()
    );
    clock.advance_ms(60_000);
    let r = adm
        .admit(req("c", vec![key_scope(eff)], est(1.0)))
        .ready()
        .unwrap();
    drop(r);
    let s = adm.spend(&key).ready().unwrap().unwrap();
    assert_eq!(s.spend, 0.0);
    assert_eq!(s.budget_reset_at, Some(t0() + chrono::Duration::minutes(2)));
}

/// A manual reset is in force for the very next request.
#[test]
fn manual_reset_unblocks_next_request() {
    let (adm, _) = engine();
    let key = ScopeKey::key("hash-a");
    let limits = Limits {
        max_budget: Some(50.0),
        budget_duration: Some(BudgetDuration::Days(1)),
        ..Limits::default()
    };
    adm.set_spend(&key, 51.0, None).ready().unwrap();
    assert!(
        adm.admit(req("a", vec![key_scope(limits.clone())], est(0.0)))
            .ready()
            .is_err()
    );
    adm.reset_spend(&key, Some(BudgetDuration::Days(1)))
        .ready()
        .unwrap();
    assert!(
        adm.admit(req("b", vec![key_scope(limits)], est(0.0)))
            .ready()
            .is_ok()
    );
    let s = adm.spend(&key).ready().unwrap().unwrap();
    assert_eq!(s.spend, 0.0);
    assert_eq!(
        s.budget_reset_at,
        Some(
            DateTime::parse_from_rfc3339("2026-03-15T00:00:00Z")
                .unwrap()
                .with_timezone(&Utc)
        )
    );
}

#[test]
fn drain_dirty_reports_absolute_spend_and_additions_once() {
    let (adm, clock) = engine();
    let key = ScopeKey::key("hash-a");
    let team = ScopeKey::new(ScopeKind::Team, "t");
    let scopes = || {
        vec![
            key_scope(Limits::default()),
            ScopeRequest::new(team.clone(), Limits::default()),
        ]
    };
    for (i, c) in [0.5, 0.25].into_iter().enumerate() {
        let mut r = adm
            .admit(req(&format!("r{i}"), scopes(), est(1.0)))
            .ready()
            .unwrap();
        r.settle(&Usage::new(1, 1), c).unwrap();
    }
    let mut d = adm.drain_dirty().ready().unwrap();
    d.sort_by(|a, b| a.scope.cmp(&b.scope));
    assert_eq!(d.len(), 2);
    assert_eq!(
        (d[0].scope.kind, d[0].spend, d[0].added, d[0].was_reset),
        (ScopeKind::Team, 0.75, 0.75, false)
    );
    assert_eq!(
        (d[1].scope.kind, d[1].spend, d[1].added),
        (ScopeKind::Key, 0.75, 0.75)
    );
    assert!(adm.drain_dirty().ready().unwrap().is_empty());
    adm.reset_spend(&key, None).ready().unwrap();
    clock.advance_ms(1);
    let d = adm.drain_dirty().ready().unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].spend, d[0].added, d[0].was_reset, d[0].budget_reset_at),
        (0.0, 0.0, true, None)
    );
}
