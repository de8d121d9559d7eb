use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use super::*;
use crate::state::CooldownTrigger;
use crate::testutil::group;
use crate::{Router, RouterConfig};

/// 10:00:30.000 UTC of some day: 30 s into a Unix minute.
const T0_MS: u64 = 1_764_669_630_000;

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("dep-{i}")).collect()
}

fn state(n: usize) -> (FleetState, Instant) {
    let t0 = Instant::now() + Duration::from_secs(120);
    (FleetState::new(&ids(n), WallClock::at(t0, T0_MS)), t0)
}

const IMMEDIATE: CooldownRule = CooldownRule {
    trigger: CooldownTrigger::Immediately,
    cooldown_time: Duration::from_secs(5),
    disabled: false,
};

#[test]
fn wall_clock_converts_both_ways() {
    let t0 = Instant::now() + Duration::from_secs(120);
    let c = WallClock::at(t0, T0_MS);
    assert_eq!(c.unix_ms(t0 + Duration::from_millis(1_234)), T0_MS + 1_234);
    assert_eq!(c.unix_ms(t0 - Duration::from_secs(1)), T0_MS);
    assert_eq!(c.instant(T0_MS + 2_000), t0 + Duration::from_secs(2));
    assert_eq!(c.instant(T0_MS - 3_000), t0 - Duration::from_secs(3));
}

#[test]
fn minutes_are_unix_minutes() {
    let (st, t0) = state(1);
    let m = T0_MS / 60_000;
    assert_eq!(st.fleet_minute(t0), m);
    // 29.999 s later is still the same Unix minute, 30 s later the next.
    assert_eq!(st.fleet_minute(t0 + Duration::from_millis(29_999)), m);
    assert_eq!(st.fleet_minute(t0 + Duration::from_secs(30)), m + 1);
    assert_eq!(st.minute_ends(t0), t0 + Duration::from_secs(30));
}

#[test]
fn a_remote_cooldown_hides_the_deployment_and_the_later_deadline_wins() {
    let (st, t0) = state(2);
    st.apply_cooldown(0, T0_MS + 3_000);
    assert_eq!(
        st.snapshot(0, t0).cooldown_until,
        Some(t0 + Duration::from_secs(3))
    );
    assert_eq!(st.snapshot(1, t0).cooldown_until, None);
    // An earlier deadline arriving later changes nothing; a later one extends it.
    st.apply_cooldown(0, T0_MS + 1_000);
    assert_eq!(
        st.snapshot(0, t0).cooldown_until,
        Some(t0 + Duration::from_secs(3))
    );
    st.apply_cooldown(0, T0_MS + 4_000);
    assert_eq!(
        st.snapshot(0, t0).cooldown_until,
        Some(t0 + Duration::from_secs(4))
    );
    // Local and remote: the later deadline of the two.
    assert_eq!(
        st.record_failure(0, t0, &IMMEDIATE),
        Some(t0 + Duration::from_secs(5))
    );
    assert_eq!(
        st.snapshot(0, t0).cooldown_until,
        Some(t0 + Duration::from_secs(5))
    );
    st.apply_cooldown(0, T0_MS + 9_000);
    assert_eq!(
        st.snapshot(0, t0).cooldown_until,
        Some(t0 + Duration::from_secs(9))
    );
    // Past its deadline, nothing.
    assert_eq!(
        st.snapshot(0, t0 + Duration::from_secs(9)).cooldown_until,
        None
    );
    // An unknown slot is ignored.
    st.apply_cooldown(7, T0_MS + 9_000);
}

#[test]
fn the_router_skips_a_deployment_another_replica_cooled_down() {
    let router = Router::with_state(
        vec![group("g", &["a", "b"])],
        HashMap::new(),
        RouterConfig::default(),
        |ids| Box::new(FleetState::new(ids, WallClock::now())),
    );
    let Some(fleet) = router.state().fleet() else {
        panic!("a fleet state");
    };
    let slot = fleet.slot_of("a").unwrap_or(usize::MAX);
    fleet.apply_cooldown(slot, fleet.unix_ms(Instant::now()) + 60_000);
    for _ in 0..50 {
        assert_eq!(router.route("g").unwrap().deployment.deployment.id, "b");
    }
    assert!(
        Router::new(vec![group("g", &["a"])], HashMap::new())
            .state()
            .fleet()
            .is_none()
    );
}

#[test]
fn fleet_usage_adds_the_others_share_to_this_replicas() {
    let (st, t0) = state(2);
    st.begin(0, t0, 100);
    st.begin(0, t0, 50);
    let mut out = Vec::new();
    let minute = st.drain_usage(t0, &mut out);
    assert_eq!(minute, T0_MS / 60_000);
    assert_eq!(
        out,
        vec![UsageReport {
            slot: 0,
            rpm_delta: 2,
            tpm_delta: 150,
            in_flight: 2
        }]
    );
    // The fleet holds this replica's 2 requests / 150 tokens and another's 5 / 1,000, with 3
    // in flight elsewhere; slot 1 only the other's 1 / 10.
    st.apply_fleet(
        minute,
        &[
            FleetUsage {
                slot: 0,
                rpm_total: 7,
                tpm_total: 1_150,
                in_flight_others: 3,
            },
            FleetUsage {
                slot: 1,
                rpm_total: 1,
                tpm_total: 10,
                in_flight_others: 0,
            },
        ],
    );
    let s = st.snapshot(0, t0);
    assert_eq!((s.rpm_used, s.tpm_used, s.in_flight), (7, 1_150, 5));
    // Local usage after the sync adds to it at once.
    st.begin(0, t0, 20);
    let s = st.snapshot(0, t0);
    assert_eq!((s.rpm_used, s.tpm_used, s.in_flight), (8, 1_170, 6));
    let s = st.snapshot(1, t0);
    assert_eq!((s.rpm_used, s.tpm_used, s.in_flight), (1, 10, 0));
    // A deployment the next reading leaves out has nothing elsewhere.
    st.apply_fleet(minute, &[]);
    let s = st.snapshot(1, t0);
    assert_eq!((s.rpm_used, s.tpm_used, s.in_flight), (0, 0, 0));
}

#[test]
fn remote_numbers_of_an_earlier_minute_read_as_zero() {
    let (st, t0) = state(1);
    let minute = st.fleet_minute(t0);
    st.apply_fleet(
        minute,
        &[FleetUsage {
            slot: 0,
            rpm_total: 40,
            tpm_total: 4_000,
            in_flight_others: 2,
        }],
    );
    assert_eq!(st.snapshot(0, t0).rpm_used, 40);
    let next = t0 + Duration::from_secs(30);
    let s = st.snapshot(0, next);
    assert_eq!((s.rpm_used, s.tpm_used), (0, 0));
    // In flight is not per minute: it stays until the next reading.
    assert_eq!(s.in_flight, 2);
    // Unreachable fleet: usage and in flight forgotten, cooldowns kept.
    st.apply_cooldown(0, T0_MS + 10_000);
    st.forget_remote();
    let s = st.snapshot(0, t0);
    assert_eq!((s.rpm_used, s.tpm_used, s.in_flight), (0, 0, 0));
    assert!(s.cooldown_until.is_some());
}

#[test]
fn deltas_drain_exactly_once_and_a_failed_send_is_sent_again() {
    let (st, t0) = state(2);
    let mut out = Vec::new();
    assert_eq!(st.drain_usage(t0, &mut out), T0_MS / 60_000);
    assert!(out.is_empty(), "nothing happened: nothing to send");
    st.begin(1, t0, 30);
    let m = st.drain_usage(t0, &mut out);
    assert_eq!(
        out,
        vec![UsageReport {
            slot: 1,
            rpm_delta: 1,
            tpm_delta: 30,
            in_flight: 1
        }]
    );
    out.clear();
    // Drained: the next drain has only the in-flight count.
    st.drain_usage(t0, &mut out);
    assert_eq!(
        out,
        vec![UsageReport {
            slot: 1,
            rpm_delta: 0,
            tpm_delta: 0,
            in_flight: 1
        }]
    );
    // The send failed: handed back, the next drain sends it again with what came since.
    st.restore_usage(m, &out);
    st.restore_usage(
        m,
        &[UsageReport {
            slot: 1,
            rpm_delta: 1,
            tpm_delta: 30,
            in_flight: 1,
        }],
    );
    out.clear();
    st.begin(1, t0, 5);
    st.end(1);
    st.end(1);
    st.drain_usage(t0, &mut out);
    assert_eq!(
        out,
        vec![UsageReport {
            slot: 1,
            rpm_delta: 2,
            tpm_delta: 35,
            in_flight: 0
        }]
    );
    // Reported prompt tokens below the estimate: a negative token delta.
    out.clear();
    st.settle_tokens(
        1,
        t0,
        &AttemptTokens {
            began: t0,
            prompt_estimate: 30,
            prompt_tokens: Some(10),
            completion_tokens: 0,
        },
    );
    st.drain_usage(t0, &mut out);
    assert_eq!(out[0].tpm_delta, -20);
    // A new minute: the count starts afresh; what the last one held is not sent again.
    out.clear();
    let next = t0 + Duration::from_secs(30);
    st.begin(1, next, 7);
    assert_eq!(st.drain_usage(next, &mut out), T0_MS / 60_000 + 1);
    assert_eq!(
        out,
        vec![UsageReport {
            slot: 1,
            rpm_delta: 1,
            tpm_delta: 7,
            in_flight: 1
        }]
    );
    // A late restore for the ended minute changes nothing.
    st.restore_usage(m, &out);
    out.clear();
    st.drain_usage(next, &mut out);
    assert_eq!(out[0].rpm_delta, 0);
}

#[test]
fn a_cooldown_started_here_is_drained_once_and_wakes_the_transport() {
    let (st, t0) = state(2);
    let woken = Arc::new(AtomicUsize::new(0));
    let w = Arc::clone(&woken);
    assert!(st.set_waker(Box::new(move || {
        w.fetch_add(1, Ordering::Relaxed);
    })));
    assert!(!st.set_waker(Box::new(|| {})), "set once");
    assert_eq!(
        st.record_failure(1, t0, &IMMEDIATE),
        Some(t0 + Duration::from_secs(5))
    );
    assert_eq!(woken.load(Ordering::Relaxed), 1);
    // A failure that starts no cooldown neither wakes nor sends.
    let never = CooldownRule {
        disabled: true,
        ..IMMEDIATE
    };
    assert_eq!(st.record_failure(0, t0, &never), None);
    assert_eq!(woken.load(Ordering::Relaxed), 1);
    let mut out = Vec::new();
    st.drain_cooldowns(&mut out);
    assert_eq!(out, vec![(1, T0_MS + 5_000)]);
    out.clear();
    st.drain_cooldowns(&mut out);
    assert!(out.is_empty());
    // Not published: handed back, drained again once, the later deadline kept.
    st.requeue_cooldowns(&[(1, T0_MS + 5_000)]);
    st.record_failure(1, t0 + Duration::from_secs(1), &IMMEDIATE);
    st.drain_cooldowns(&mut out);
    assert_eq!(out, vec![(1, T0_MS + 6_000)]);
    out.clear();
    st.drain_cooldowns(&mut out);
    assert!(out.is_empty());
}

#[test]
fn a_duplicate_id_stays_local() {
    let dup = vec!["x".to_owned(), "x".to_owned()];
    let t0 = Instant::now() + Duration::from_secs(120);
    let st = FleetState::new(&dup, WallClock::at(t0, T0_MS));
    assert_eq!(st.slot_of("x"), Some(0));
    st.begin(1, t0, 1);
    let mut out = Vec::new();
    st.drain_usage(t0, &mut out);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(st.snapshot(1, t0).rpm_used, 1);
}
