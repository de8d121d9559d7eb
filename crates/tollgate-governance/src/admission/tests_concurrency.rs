//! Admission scenario tests under concurrency: budgets never exceeded while requests are in
//! flight, and the documented overshoot bound with settlements racing admissions.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::tests::{budget, engine, est, key_scope, req};
use super::*;
use crate::pricing::Usage;
use crate::test_support::Ready;

/// 50 concurrent requests, budget covering 10 estimates. While all 50 hold their
/// reservations, exactly 10 are admitted.
#[test]
fn concurrent_admissions_never_exceed_the_budget_while_in_flight() {
    let (adm, _) = engine();
    let n = 50;
    let barrier = Arc::new(Barrier::new(n));
    let all_tried = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (adm, barrier, all_tried) = (adm.clone(), barrier.clone(), all_tried.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let r = adm
                    .admit(req(
                        &format!("r{i}"),
                        vec![key_scope(budget(0.45))],
                        est(0.045),
                    ))
                    .ready();
                all_tried.wait();
                r.map(|mut r| r.settle(&Usage::new(1, 1), 0.045).unwrap())
                    .is_ok()
            })
        })
        .collect();
    let admitted = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert_eq!(admitted, 10);
    assert_eq!(
        adm.spend(&ScopeKey::key("hash-a"))
            .ready()
            .unwrap()
            .unwrap()
            .spend,
        0.45
    );
}

/// The overshoot bound with settlement racing admissions: 50 threads × up to 20 requests each, two keys sharing
/// one team budget; actual cost between 50% and 100% of the estimate. The documented bound
/// holds on the team and on each key: final spend < max_budget + one estimate.
#[test]
fn concurrent_spend_stays_within_the_documented_bound() {
    let (adm, _) = engine();
    let team = ScopeKey::new(ScopeKind::Team, "shared");
    let estimate = 0.01;
    let team_cap = 1.0;
    let key_cap = 0.7;
    let deadline = Instant::now() + Duration::from_secs(20);
    let barrier = Arc::new(Barrier::new(50));
    let handles: Vec<_> = (0..50)
        .map(|t| {
            let (adm, team, barrier) = (adm.clone(), team.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let key = if t % 2 == 0 { "key-even" } else { "key-odd" };
                let mut admitted = 0u32;
                for i in 0..20 {
                    if Instant::now() > deadline {
                        break;
                    }
                    let scopes = vec![
                        ScopeRequest::new(ScopeKey::key(key), budget(key_cap)),
                        ScopeRequest::new(team.clone(), budget(team_cap)),
                    ];
                    if let Ok(mut r) = adm
                        .admit(req(&format!("{t}-{i}"), scopes, est(estimate)))
                        .ready()
                    {
                        admitted += 1;
                        std::thread::yield_now();
                        let actual = estimate * (0.5 + ((t * 20 + i) % 6) as f64 / 10.0);
                        r.settle(&Usage::new(1, 1), actual).unwrap();
                    }
                }
                admitted
            })
        })
        .collect();
    let admitted: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let team_spend = adm.spend(&team).ready().unwrap().unwrap();
    assert!(
        team_spend.spend < team_cap + estimate,
        "team spend {} over bound",
        team_spend.spend
    );
    assert!(
        team_spend.spend >= team_cap - estimate,
        "team budget not used: {}",
        team_spend.spend
    );
    assert_eq!((team_spend.reserved, team_spend.in_flight), (0.0, 0));
    for k in ["key-even", "key-odd"] {
        let s = adm.spend(&ScopeKey::key(k)).ready().unwrap().unwrap();
        assert!(s.spend < key_cap + estimate, "{k} spend {}", s.spend);
    }
    // at ≥ 0.5 × estimate per request, the team cap admits at most 2 × cap / estimate requests
    assert!(
        admitted as f64 <= 2.0 * team_cap / estimate + 1.0,
        "admitted {admitted}"
    );
}
