use std::time::{Duration, Instant};

use crate::plan::{PlanEnd, RequestPolicy};
use crate::testutil::{dep, drive, fail, group, limited, ok_ms, retries, router};
use crate::{
    CallTiming, DeploymentLimits, FailureClass, ModelGroup, Outcome, Router, RouterConfig,
    RoutingStrategy,
};

/// Runs one successful request and returns the deployment id called.
fn one(
    r: &Router,
    name: &str,
    now: Instant,
    policy: RequestPolicy,
    ms: impl Fn(&str) -> u64,
) -> String {
    let mut plan = r.plan(name, policy).unwrap();
    let (ids, _) = drive(&mut plan, now, |id| ok_ms(ms(id)));
    assert_eq!(ids.len(), 1);
    ids.into_iter().next().unwrap()
}

fn strategy(s: RoutingStrategy) -> RouterConfig {
    RouterConfig {
        strategy: s,
        ..Default::default()
    }
}

#[test]
fn weights_3_to_1_within_the_first_order_tier() {
    let g = ModelGroup::new(
        "g".into(),
        vec![
            dep("backup", "g", 100.0, 2),
            dep("heavy", "g", 3.0, 1),
            dep("light", "g", 1.0, 1),
        ],
    );
    let r = router(vec![g], RouterConfig::default());
    let t0 = Instant::now();
    let mut heavy = 0;
    for _ in 0..4000 {
        let id = one(&r, "g", t0, RequestPolicy::default(), |_| 5);
        assert_ne!(id, "backup", "order 2 unused while order 1 is healthy");
        heavy += usize::from(id == "heavy");
    }
    assert!(
        (2880..=3120).contains(&heavy),
        "heavy picked {heavy} of 4000"
    );
}

#[test]
fn next_order_tier_only_when_the_first_is_unavailable() {
    let g = ModelGroup::new(
        "g".into(),
        vec![dep("primary", "g", 1.0, 1), dep("secondary", "g", 1.0, 2)],
    );
    let cfg = RouterConfig {
        allowed_fails: 1,
        allowed_fails_configured: true,
        cooldown_time: Duration::from_secs(10),
        ..Default::default()
    };
    let r = router(vec![g], cfg);
    let t0 = Instant::now();
    for _ in 0..500 {
        assert_eq!(one(&r, "g", t0, RequestPolicy::default(), |_| 5), "primary");
    }
    let mut plan = r.plan("g", retries(0)).unwrap();
    drive(&mut plan, t0, |_| fail(FailureClass::ServerError));
    for _ in 0..20 {
        assert_eq!(
            one(&r, "g", t0, RequestPolicy::default(), |_| 5),
            "secondary"
        );
    }
    let back = t0 + Duration::from_secs(10);
    assert_eq!(
        one(&r, "g", back, RequestPolicy::default(), |_| 5),
        "primary"
    );
}

#[test]
fn latency_routing_moves_off_a_slowed_deployment() {
    let r = router(
        vec![group("g", &["a", "b"])],
        strategy(RoutingStrategy::LatencyBased),
    );
    let t0 = Instant::now();
    for i in 0..50u64 {
        one(
            &r,
            "g",
            t0 + Duration::from_millis(i),
            RequestPolicy::default(),
            |_| 10,
        );
    }
    // a becomes 10× slower.
    let mut on_a = 0;
    for i in 0..200u64 {
        let id = one(
            &r,
            "g",
            t0 + Duration::from_millis(100 + i),
            RequestPolicy::default(),
            |id| {
                if id == "a" { 100 } else { 10 }
            },
        );
        on_a += usize::from(id == "a");
    }
    assert!(on_a <= 20, "{on_a} of 200 still on the slow deployment");
}

#[test]
fn latency_routing_uses_ttft_for_streams() {
    let r = router(
        vec![group("g", &["a", "b"])],
        strategy(RoutingStrategy::LatencyBased),
    );
    let t0 = Instant::now();
    // a: long total, short first token; b: the reverse.
    let sample = |id: &str| {
        let (total, ttft) = if id == "a" { (900, 20) } else { (300, 200) };
        Outcome::Success {
            timing: CallTiming {
                latency: Some(Duration::from_millis(total)),
                ttft: Some(Duration::from_millis(ttft)),
            },
            prompt_tokens: None,
            completion_tokens: 10,
        }
    };
    for _ in 0..10 {
        let mut plan = r.plan("g", RequestPolicy::default()).unwrap();
        drive(&mut plan, t0, sample);
    }
    let stream = RequestPolicy {
        stream: true,
        ..Default::default()
    };
    for _ in 0..20 {
        let mut plan = r.plan("g", stream.clone()).unwrap();
        assert_eq!(drive(&mut plan, t0, sample).0, vec!["a"]);
        let mut plan = r.plan("g", RequestPolicy::default()).unwrap();
        assert_eq!(drive(&mut plan, t0, sample).0, vec!["b"]);
    }
}

#[test]
fn lowest_latency_buffer_and_ttl() {
    let cfg = RouterConfig {
        strategy: RoutingStrategy::LatencyBased,
        lowest_latency_buffer: 0.5,
        latency_ttl: Duration::from_secs(60),
        ..Default::default()
    };
    let r = router(
        vec![group("near", &["a", "b"]), group("far", &["c", "d"])],
        cfg,
    );
    let t0 = Instant::now();
    let near = |id: &str| if id == "a" { 10 } else { 14 };
    let far = |id: &str| if id == "c" { 10 } else { 30 };
    for _ in 0..20 {
        one(&r, "near", t0, RequestPolicy::default(), near);
        one(&r, "far", t0, RequestPolicy::default(), far);
    }
    let (mut b, mut d) = (0, 0);
    for _ in 0..200 {
        b += usize::from(one(&r, "near", t0, RequestPolicy::default(), near) == "b");
        d += usize::from(one(&r, "far", t0, RequestPolicy::default(), far) == "d");
    }
    assert!(
        (50..150).contains(&b),
        "within the buffer both are used: b {b}/200"
    );
    assert_eq!(d, 0, "outside the buffer only the fastest");
    // After the ttl the samples are forgotten and d is explored again.
    let later = t0 + Duration::from_secs(61);
    let mut d_later = 0;
    for _ in 0..20 {
        d_later += usize::from(one(&r, "far", later, RequestPolicy::default(), |_| 10) == "d");
    }
    assert!(d_later > 0);
}

#[test]
fn least_busy_picks_fewest_in_flight() {
    let r = router(
        vec![group("g", &["a", "b", "c"])],
        strategy(RoutingStrategy::LeastBusy),
    );
    let t0 = Instant::now();
    let mut held = Vec::new();
    let mut plans = Vec::new();
    for _ in 0..6 {
        plans.push(r.plan("g", RequestPolicy::default()).unwrap());
    }
    for p in plans.iter_mut() {
        held.push(p.next_attempt(t0).unwrap());
    }
    let mut per = std::collections::HashMap::new();
    for a in &held {
        *per.entry(a.deployment.deployment.id.clone()).or_insert(0) += 1;
    }
    assert_eq!(per.len(), 3);
    assert!(per.values().all(|&n| n == 2), "{per:?}");
    // Release b's two: the next pick is b.
    held.retain(|a| a.deployment.deployment.id != "b");
    let mut p = r.plan("g", RequestPolicy::default()).unwrap();
    assert_eq!(p.next_attempt(t0).unwrap().deployment.deployment.id, "b");
}

#[test]
fn usage_based_lowest_tpm_and_limits() {
    let lim = |rpm, tpm| DeploymentLimits {
        rpm: Some(rpm),
        tpm: Some(tpm),
        ..Default::default()
    };
    let r = router(
        vec![limited(
            "g",
            &[("a", lim(1000, 10_000)), ("b", lim(3, 1_000_000))],
        )],
        strategy(RoutingStrategy::UsageBased),
    );
    let t0 = Instant::now();
    let policy = |tokens| RequestPolicy {
        prompt_tokens: tokens,
        ..Default::default()
    };
    // Requests of 1,000 tokens alternate towards the lower TPM: b has rpm 3.
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(one(&r, "g", t0, policy(1000), |_| 5));
    }
    assert_eq!(ids.iter().filter(|i| *i == "b").count(), 3, "{ids:?}");
    // a is at 7,000 of 10,000 tokens: 3,500 more do not fit, and b is at its rpm.
    let mut plan = r.plan("g", policy(3500)).unwrap();
    assert!(plan.next_attempt(t0).is_none());
    // The capacity comes back when the minute's counts start afresh: `retry-after` says when
    // (the router's minutes count from its creation, just before t0).
    let back = |at: Instant, tokens| {
        let mut plan = r.plan("g", policy(tokens)).unwrap();
        assert!(plan.next_attempt(at).is_none());
        match plan.summary().end {
            PlanEnd::NoDeployments { retry_after, .. } => retry_after,
            other => panic!("{other:?}"),
        }
    };
    let wait = back(t0, 3500);
    assert!(
        wait > Duration::from_secs(59) && wait <= Duration::from_secs(60),
        "{wait:?}"
    );
    let wait = back(t0 + Duration::from_secs(20), 3500);
    assert!(
        wait > Duration::from_secs(39) && wait <= Duration::from_secs(40),
        "{wait:?}"
    );
    // A prompt larger than a's whole TPM never fits a; b's rpm returns with the minute.
    let wait = back(t0 + Duration::from_secs(20), 20_000);
    assert!(
        wait > Duration::from_secs(39) && wait <= Duration::from_secs(40),
        "{wait:?}"
    );
    // Next minute: usage starts again.
    let next = t0 + Duration::from_secs(61);
    let id = one(&r, "g", next, policy(3500), |_| 5);
    assert!(id == "a" || id == "b");
}

#[test]
fn cost_based_picks_cheapest_available() {
    let price = |i, o| DeploymentLimits {
        input_cost_per_token: Some(i),
        output_cost_per_token: Some(o),
        ..Default::default()
    };
    let cfg = RouterConfig {
        strategy: RoutingStrategy::CostBased,
        allowed_fails: 1,
        allowed_fails_configured: true,
        ..Default::default()
    };
    let r = router(
        vec![limited(
            "g",
            &[
                ("pricey", price(1e-5, 3e-5)),
                ("cheap", price(1e-6, 2e-6)),
                ("unknown", DeploymentLimits::default()),
                ("mid", price(2e-6, 4e-6)),
            ],
        )],
        cfg,
    );
    let t0 = Instant::now();
    for _ in 0..20 {
        assert_eq!(one(&r, "g", t0, RequestPolicy::default(), |_| 5), "cheap");
    }
    let mut plan = r.plan("g", retries(0)).unwrap();
    drive(&mut plan, t0, |_| fail(FailureClass::RateLimit));
    assert_eq!(one(&r, "g", t0, RequestPolicy::default(), |_| 5), "mid");
}

#[test]
fn pre_call_checks_skip_small_context_and_exhausted_rpm() {
    let small = DeploymentLimits {
        max_input_tokens: Some(8_000),
        ..Default::default()
    };
    let big = DeploymentLimits {
        max_input_tokens: Some(200_000),
        rpm: Some(2),
        ..Default::default()
    };
    let with = |checks| RouterConfig {
        enable_pre_call_checks: checks,
        ..Default::default()
    };
    let long = RequestPolicy {
        prompt_tokens: 50_000,
        ..Default::default()
    };
    let r = router(
        vec![limited("g", &[("small", small), ("big", big)])],
        with(true),
    );
    let t0 = Instant::now();
    assert_eq!(one(&r, "g", t0, long.clone(), |_| 5), "big");
    assert_eq!(one(&r, "g", t0, long.clone(), |_| 5), "big");
    // big is at its rpm (2) this minute, back when the minute ends; small is too small.
    let mut plan = r.plan("g", long.clone()).unwrap();
    assert!(plan.next_attempt(t0).is_none());
    match plan.summary().end {
        PlanEnd::NoDeployments { group, retry_after } => {
            assert_eq!(group, "g");
            assert!(
                retry_after > Duration::from_secs(59) && retry_after <= Duration::from_secs(60),
                "{retry_after:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Without pre-call checks both are candidates.
    let r = router(
        vec![limited("g", &[("small", small), ("big", big)])],
        with(false),
    );
    let mut seen_small = false;
    for _ in 0..50 {
        seen_small |= one(&r, "g", t0, long.clone(), |_| 5) == "small";
    }
    assert!(seen_small);
}
