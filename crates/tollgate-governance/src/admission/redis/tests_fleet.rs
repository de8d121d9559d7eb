//! Redis-only tests against the shared server (`TOLLGATE_TEST_REDIS_URL`, skipped when unset):
//! two replicas racing for one budget, budget windows on the server's clock and its calendar,
//! and leases of reservations whose replica died.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::RedisStoreOptions;
use super::tests::{admit, open, redis_store, redis_url, req, scope, test_options};
use crate::admission::money::usd_to_units;
use crate::admission::{
    Actual, AsyncCounterStore, Denial, Limits, ScopeKey, ScopeKind, ScopeRequest,
};
use crate::duration::BudgetDuration;

#[tokio::test]
async fn two_replicas_times_100_concurrent_reservations_admit_exactly_the_budget() {
    let Some(url) = redis_url("two_replicas_concurrency") else {
        return;
    };
    let opts = test_options();
    let (a, _c) = open(&url, opts.clone()).await;
    let (b, _c2) = open(&url, opts).await;
    let scopes: Arc<[ScopeRequest]> = Arc::from(vec![
        scope(
            ScopeKind::Key,
            "k",
            Limits {
                max_budget: Some(1.0),
                ..Limits::default()
            },
        ),
        scope(ScopeKind::Global, "", Limits::default()),
    ]);
    let mut tasks = Vec::new();
    for (replica, store) in [a.clone(), b.clone()].into_iter().enumerate() {
        for i in 0..100 {
            let (store, scopes) = (store.clone(), scopes.clone());
            tasks.push(tokio::spawn(async move {
                let id = format!("r{replica}-{i}");
                store
                    .reserve(&req(&id, &scopes, 0.1))
                    .await
                    .unwrap()
                    .is_ok()
            }));
        }
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(
        admitted, 10,
        "a budget of 1.0 holds exactly ten estimates of 0.1"
    );
    let sp = b.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!((sp.reserved, sp.in_flight), (1.0, 10));
}

#[tokio::test]
async fn budget_windows_reset_on_the_server_clock_and_follow_management_writes() {
    let Some((s, _c)) = redis_store("budget_windows").await else {
        return;
    };
    let key = ScopeKey::key("h");
    let day = BudgetDuration::Days(1);
    let limits = Limits {
        max_budget: Some(1.0),
        budget_duration: Some(day),
        ..Limits::default()
    };
    let scopes = [ScopeRequest::new(key.clone(), limits)];
    let past = Utc::now() - chrono::Duration::hours(1);
    s.seed(&key, 1.0, Some(past), Some(day)).await.unwrap();
    let sp = s.spend(&key).await.unwrap().unwrap();
    assert_eq!(
        (sp.spend, sp.budget_reset_at.map(|t| t.timestamp())),
        (1.0, Some(past.timestamp()))
    );
    assert_eq!(sp.budget_duration, Some(day));
    // the window ended an hour ago: the next admission starts a new one at 0
    let t = admit(&s, &req("a", &scopes, 0.4)).await.unwrap();
    let sp = s.spend(&key).await.unwrap().unwrap();
    assert_eq!(sp.spend, 0.0);
    assert_eq!(sp.budget_reset_at, Some(day.next_reset(Utc::now())));
    s.settle(
        &t,
        Actual {
            cost_units: usd_to_units(0.4),
            tokens: 1,
        },
    )
    .await
    .unwrap();
    let drained = s.drain_dirty().await.unwrap();
    assert_eq!(drained.len(), 1);
    assert_eq!(
        (drained[0].spend, drained[0].added, drained[0].was_reset),
        (0.4, 0.4, true)
    );
    assert_eq!(drained[0].budget_reset_at, sp.budget_reset_at);
    assert!(s.drain_dirty().await.unwrap().is_empty(), "drained once");
    // a management write: a new window that restarts at 0
    let at = Utc::now() + chrono::Duration::hours(3);
    s.set_window(&key, BudgetDuration::Hours(6), at, true)
        .await
        .unwrap();
    let sp = s.spend(&key).await.unwrap().unwrap();
    assert_eq!(sp.spend, 0.0);
    assert_eq!(
        sp.budget_reset_at.map(|t| t.timestamp_millis()),
        Some(at.timestamp_millis())
    );
    assert_eq!(sp.budget_duration, Some(BudgetDuration::Hours(6)));
    s.set_spend(&key, 0.9, None).await.unwrap();
    s.reset_spend(&key, Some(BudgetDuration::Weeks(1)))
        .await
        .unwrap();
    let sp = s.spend(&key).await.unwrap().unwrap();
    assert_eq!(sp.spend, 0.0);
    assert_eq!(
        sp.budget_reset_at,
        Some(BudgetDuration::Weeks(1).next_reset(Utc::now()))
    );
}

#[tokio::test]
async fn the_servers_calendar_matches_the_rust_budget_resets() {
    let Some((s, _c)) = redis_store("next_reset_parity").await else {
        return;
    };
    let durations: Vec<BudgetDuration> = [
        "30s", "7m", "10m", "1h", "5h", "7h", "1d", "3d", "30d", "1w", "2w", "1mo", "3mo", "12mo",
        "13mo",
    ]
    .iter()
    .map(|d| d.parse().unwrap())
    .collect();
    let start = DateTime::parse_from_rfc3339("1999-12-31T23:59:59Z")
        .unwrap()
        .timestamp_millis();
    for i in 0..400i64 {
        // instants across 40 years, with month ends, leap days and odd milliseconds
        let at = DateTime::from_timestamp_millis(start + i * 3_155_760_013 + (i % 7) * 86_399_999)
            .unwrap();
        for d in &durations {
            assert_eq!(
                s.server_next_reset(*d, at).await.unwrap(),
                Some(d.next_reset(at)),
                "{d} at {at}"
            );
        }
    }
    for at in [
        "2024-02-29T12:00:00Z",
        "2026-03-16T00:00:00Z",
        "2026-12-31T23:59:59.999Z",
    ] {
        let at = DateTime::parse_from_rfc3339(at)
            .unwrap()
            .with_timezone(&Utc);
        for d in &durations {
            assert_eq!(
                s.server_next_reset(*d, at).await.unwrap(),
                Some(d.next_reset(at)),
                "{d} at {at}"
            );
        }
    }
}

#[tokio::test]
async fn a_reservation_past_its_lease_is_released_and_still_charged_once() {
    let Some(url) = redis_url("lease_sweep") else {
        return;
    };
    let opts = RedisStoreOptions {
        lease: Duration::from_millis(100),
        ..test_options()
    };
    let (s, _c) = open(&url, opts).await;
    let scopes = [scope(
        ScopeKind::Key,
        "k",
        Limits {
            max_parallel_requests: Some(1),
            ..Limits::default()
        },
    )];
    let lost = admit(&s, &req("lost", &scopes, 0.5)).await.unwrap();
    assert_eq!(
        admit(&s, &req("b", &scopes, 0.5)).await.unwrap_err(),
        Denial::Parallel { scope: 0, limit: 1 }
    );
    tokio::time::sleep(Duration::from_millis(150)).await;
    // the next reservation releases the one whose lease ended
    let b = admit(&s, &req("b", &scopes, 0.5)).await.unwrap();
    let sp = s.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!((sp.reserved, sp.in_flight), (0.5, 1));
    let actual = Actual {
        cost_units: usd_to_units(0.2),
        tokens: 3,
    };
    assert_eq!(s.settle(&lost, actual).await.unwrap(), Some(vec![0.2]));
    assert_eq!(s.settle(&lost, actual).await.unwrap(), None);
    let sp = s.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!(
        (sp.spend, sp.reserved, sp.in_flight),
        (0.2, 0.5, 1),
        "b's reservation untouched"
    );
    assert!(s.release(&b).await.unwrap());
}
