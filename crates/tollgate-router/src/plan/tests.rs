use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::*;
use crate::failure::Outcome;
use crate::state::CallTiming;
use crate::testutil::{dep, drive, fail, group, limited, ok_ms, retries, router};
use crate::{DeploymentLimits, ModelGroup, RetryPolicy, RouterConfig};

fn fallbacks(pairs: &[(&str, &[&str])]) -> HashMap<String, Vec<String>> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect()
}

fn count(ids: &[String], prefix: &str) -> usize {
    ids.iter().filter(|i| i.starts_with(prefix)).count()
}

#[test]
fn client_errors_are_not_retried_nor_fall_back() {
    // Exactly one upstream call for 400/401/403/404/422, even with retries and fallbacks.
    let cfg = RouterConfig {
        fallbacks: fallbacks(&[("a", &["b"])]),
        ..Default::default()
    };
    for status in [400u16, 401, 403, 404, 422] {
        // A fresh router per status: a 401/403/404 also cools its deployment (LiteLLM's
        // default rule), which is not what this test is about.
        let r = router(
            vec![group("a", &["a1", "a2"]), group("b", &["b1"])],
            cfg.clone(),
        );
        let class = FailureClass::from_upstream(status, Some("invalid_request_error"), "bad");
        let mut plan = r.plan("a", retries(3)).unwrap();
        let (ids, _) = drive(&mut plan, Instant::now(), |_| fail(class));
        assert_eq!(ids.len(), 1, "status {status}: {ids:?}");
        let s = plan.summary();
        assert_eq!(s.attempted_retries, 0);
        assert_eq!(s.attempted_fallbacks, 0);
        assert_eq!(
            s.end,
            PlanEnd::Failed {
                class,
                retry_after: None
            }
        );
    }
}

#[test]
fn chain_a_to_b_both_rate_limited_ends_with_b() {
    // Each group entered once, with its own (1 + num_retries) attempts; b → a is no loop.
    let cfg = RouterConfig {
        fallbacks: fallbacks(&[("a", &["b"]), ("b", &["a"])]),
        disable_cooldowns: true,
        ..Default::default()
    };
    let r = router(
        vec![group("a", &["a1", "a2"]), group("b", &["b1", "b2"])],
        cfg,
    );
    let mut plan = r.plan("a", retries(2)).unwrap();
    let (ids, _) = drive(&mut plan, Instant::now(), |_| fail(FailureClass::RateLimit));
    assert_eq!(ids.len(), 6, "{ids:?}");
    assert_eq!(count(&ids[..3], "a"), 3, "{ids:?}");
    assert_eq!(count(&ids[3..], "b"), 3, "{ids:?}");
    let s = plan.summary();
    assert_eq!(s.attempts, 6);
    assert_eq!(s.attempted_retries, 4);
    assert_eq!(s.attempted_fallbacks, 1);
    assert_eq!(s.last_failure, Some(FailureClass::RateLimit));
    assert!(matches!(
        s.end,
        PlanEnd::Failed {
            class: FailureClass::RateLimit,
            ..
        }
    ));
}

#[test]
fn fallback_succeeds_and_reports_group() {
    let cfg = RouterConfig {
        fallbacks: fallbacks(&[("a", &["b"])]),
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1"]), group("b", &["b1"])], cfg);
    let mut plan = r.plan("a", retries(0)).unwrap();
    let t0 = Instant::now();
    let first = plan.next_attempt(t0).unwrap();
    assert_eq!((first.retry_index, first.fallback_index), (0, 0));
    assert_eq!(first.upstream_model, "up-a1");
    plan.report(&first, fail(FailureClass::ServerError), t0);
    let second = plan.next_attempt(t0).unwrap();
    assert_eq!(second.group.name, "b");
    assert_eq!((second.retry_index, second.fallback_index), (0, 1));
    assert_eq!(second.not_before, t0);
    plan.report(&second, ok_ms(5), t0);
    assert!(plan.next_attempt(t0).is_none());
    let s = plan.summary();
    assert_eq!((s.attempts, s.attempted_fallbacks), (2, 1));
    assert_eq!(s.end, PlanEnd::Success);
}

#[test]
fn a_simulated_failure_skips_retries_and_cooldown_and_falls_back() {
    // `mock_testing_fallbacks`: LiteLLM raises before its retry loop and records nothing.
    let cfg = RouterConfig {
        fallbacks: fallbacks(&[("a", &["b"])]),
        context_window_fallbacks: fallbacks(&[("a", &["c"])]),
        allowed_fails: 1,
        allowed_fails_configured: true,
        ..Default::default()
    };
    let r = router(
        vec![
            group("a", &["a1"]),
            group("b", &["b1"]),
            group("c", &["c1"]),
        ],
        cfg,
    );
    let t0 = Instant::now();
    for (class, expect) in [
        (FailureClass::ServerError, "b"),
        (FailureClass::ContextWindowExceeded, "c"),
    ] {
        let mut plan = r.plan("a", retries(3)).unwrap();
        let first = plan.next_attempt(t0).unwrap();
        assert_eq!(first.group.name, "a");
        plan.report(&first, Outcome::Simulated { class }, t0);
        let second = plan.next_attempt(t0).unwrap();
        assert_eq!(second.group.name, expect);
        assert_eq!((second.retry_index, second.fallback_index), (0, 1));
        plan.report(&second, ok_ms(5), t0);
        let s = plan.summary();
        assert_eq!(
            (s.attempts, s.attempted_retries, s.attempted_fallbacks),
            (2, 0, 1)
        );
    }
    // With `allowed_fails: 1` the two failures, had they counted, would have cooled a1.
    let mut plan = r.plan("a", retries(0)).unwrap();
    assert_eq!(plan.next_attempt(t0).unwrap().group.name, "a");
}

#[test]
fn retry_prefers_another_deployment_without_waiting() {
    let cfg = RouterConfig {
        disable_cooldowns: true,
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1", "a2", "a3"])], cfg);
    let t0 = Instant::now();
    for _ in 0..50 {
        let mut plan = r.plan("a", retries(2)).unwrap();
        let (ids, end) = drive(&mut plan, t0, |_| fail(FailureClass::ServerError));
        assert_eq!(ids.len(), 3);
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            3,
            "each retry on an untried deployment: {ids:?}"
        );
        assert_eq!(end, t0, "switching deployment needs no backoff");
    }
}

#[test]
fn retry_on_the_same_deployment_honours_retry_after() {
    let cfg = RouterConfig {
        retry_after: Duration::from_secs(2),
        disable_cooldowns: true,
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1"])], cfg);
    let t0 = Instant::now();
    let mut plan = r.plan("a", retries(3)).unwrap();
    let a = plan.next_attempt(t0).unwrap();
    assert_eq!(a.not_before, t0);
    // Upstream retry-after 7 s wins over the 2 s minimum.
    plan.report(
        &a,
        Outcome::Failure {
            class: FailureClass::RateLimit,
            retry_after: Some(Duration::from_secs(7)),
        },
        t0,
    );
    let b = plan.next_attempt(t0).unwrap();
    assert_eq!(b.not_before, t0 + Duration::from_secs(7));
    assert_eq!(b.retry_index, 1);
    // No retry-after: exponential backoff (0.5 s × 2 jittered down ≤ 25 %) but ≥ 2 s minimum.
    let t1 = b.not_before;
    plan.report(&b, fail(FailureClass::ServerError), t1);
    let c = plan.next_attempt(t1).unwrap();
    assert_eq!(c.not_before, t1 + Duration::from_secs(2));
    // Upstream retry-after beyond max_retry_wait: no more retries in the group.
    plan.report(
        &c,
        Outcome::Failure {
            class: FailureClass::RateLimit,
            retry_after: Some(Duration::from_secs(600)),
        },
        t1,
    );
    assert!(plan.next_attempt(t1).is_none());
    assert_eq!(plan.summary().attempts, 3);
}

#[test]
fn exponential_backoff_without_minimum() {
    let cfg = RouterConfig {
        disable_cooldowns: true,
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1"])], cfg);
    let t0 = Instant::now();
    let mut plan = r.plan("a", retries(4)).unwrap();
    let mut now = t0;
    let mut waits = Vec::new();
    while let Some(a) = plan.next_attempt(now) {
        waits.push(a.not_before - now);
        now = a.not_before;
        plan.report(&a, fail(FailureClass::Timeout), now);
    }
    assert_eq!(waits.len(), 5);
    assert_eq!(waits[0], Duration::ZERO);
    for (n, w) in waits[1..].iter().enumerate() {
        let full = Duration::from_millis(500) * (1 << n);
        assert!(*w <= full && *w >= full.mul_f64(0.75), "retry {n}: {w:?}");
    }
}

#[test]
fn cooled_deployment_skipped_until_cooldown_ends() {
    let cfg = RouterConfig {
        allowed_fails: 2,
        allowed_fails_configured: true,
        cooldown_time: Duration::from_secs(5),
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1", "a2"])], cfg);
    let t0 = Instant::now();
    // Fail a1 twice (a2 answers fine).
    let mut a1_failures = 0;
    while a1_failures < 2 {
        let mut plan = r.plan("a", retries(0)).unwrap();
        let (ids, _) = drive(&mut plan, t0, |id| {
            if id == "a1" {
                fail(FailureClass::ServerError)
            } else {
                ok_ms(10)
            }
        });
        a1_failures += count(&ids, "a1");
    }
    for s in [0u64, 1, 4] {
        for _ in 0..50 {
            let now = t0 + Duration::from_secs(s) + Duration::from_millis(999);
            let mut plan = r.plan("a", retries(0)).unwrap();
            let (ids, _) = drive(&mut plan, now, |_| ok_ms(10));
            assert_eq!(ids, vec!["a2".to_string()], "during cooldown at {s}s");
        }
    }
    let after = t0 + Duration::from_secs(5);
    let mut a1_again = 0;
    for _ in 0..50 {
        let mut plan = r.plan("a", retries(0)).unwrap();
        let (ids, _) = drive(&mut plan, after, |_| ok_ms(10));
        a1_again += count(&ids, "a1");
    }
    assert!(a1_again > 10, "a1 used again after cooldown: {a1_again}/50");
}

#[test]
fn all_cooling_down_reports_time_until_first_returns() {
    let cfg = RouterConfig {
        allowed_fails: 1,
        allowed_fails_configured: true,
        cooldown_time: Duration::from_secs(60),
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1", "a2"])], cfg);
    let t0 = Instant::now();
    let mut plan = r.plan("a", retries(1)).unwrap();
    let (ids, _) = drive(&mut plan, t0, |_| fail(FailureClass::RateLimit));
    assert_eq!(ids.len(), 2);
    // a1 cooled at t0, a2 at t0 too; ask 20 s later.
    let later = t0 + Duration::from_secs(20);
    let mut plan = r.plan("a", retries(1)).unwrap();
    assert!(plan.next_attempt(later).is_none());
    assert_eq!(
        plan.summary().end,
        PlanEnd::NoDeployments {
            group: "a",
            retry_after: Duration::from_secs(40)
        }
    );
    assert_eq!(plan.summary().attempts, 0);
    assert_eq!(plan.summary().end.retry_after_header_secs(), Some(40));
    let end = |ms| PlanEnd::NoDeployments {
        group: "a",
        retry_after: Duration::from_millis(ms),
    };
    assert_eq!(end(0).retry_after_header_secs(), Some(1));
    assert_eq!(end(1).retry_after_header_secs(), Some(1));
    assert_eq!(end(1001).retry_after_header_secs(), Some(2));
    assert_eq!(PlanEnd::Success.retry_after_header_secs(), None);
}

#[test]
fn all_cooling_down_falls_back() {
    let cfg = RouterConfig {
        allowed_fails: 1,
        allowed_fails_configured: true,
        fallbacks: fallbacks(&[("a", &["b"])]),
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1"]), group("b", &["b1"])], cfg);
    let t0 = Instant::now();
    let mut plan = r.plan("a", retries(0)).unwrap();
    let (ids, _) = drive(&mut plan, t0, |id| {
        if id == "a1" {
            fail(FailureClass::Connection)
        } else {
            ok_ms(3)
        }
    });
    assert_eq!(ids, vec!["a1", "b1"]);
    let mut plan = r.plan("a", retries(0)).unwrap();
    let (ids, _) = drive(&mut plan, t0, |_| ok_ms(3));
    assert_eq!(ids, vec!["b1"], "a1 cooling: straight to the fallback");
    assert_eq!(plan.summary().attempted_fallbacks, 1);
}

#[test]
fn the_only_deployment_is_not_cooled_by_the_default_rule() {
    // LiteLLM exempts single-deployment groups unless allowed_fails (or a policy) is set:
    // cooling the only deployment would turn every error into 429 "No deployments available".
    let r = router(
        vec![group("one", &["o1"]), group("two", &["t1", "t2"])],
        RouterConfig::default(),
    );
    let t0 = Instant::now();
    for _ in 0..5 {
        let mut plan = r.plan("one", retries(2)).unwrap();
        let (ids, _) = drive(&mut plan, t0, |_| fail(FailureClass::Connection));
        assert_eq!(ids, vec!["o1", "o1", "o1"], "retried, never cooled");
    }
    assert_eq!(r.state().snapshot(0, t0).cooldown_until, None);
    // A group of two, LiteLLM's default rule: t1 (slot 1) fails every call, so it cools once
    // the minute has 5 finished calls of which more than half failed: on its fifth failure.
    let mut t1_failures = 0;
    for _ in 0..200 {
        let mut plan = r.plan("two", retries(0)).unwrap();
        drive(&mut plan, t0, |id| {
            if id == "t1" {
                t1_failures += 1;
                fail(FailureClass::Connection)
            } else {
                ok_ms(1)
            }
        });
        let cooling = r.state().snapshot(1, t0).cooldown_until.is_some();
        assert_eq!(cooling, t1_failures >= 5, "after {t1_failures} failures");
        if cooling {
            break;
        }
    }
    assert_eq!(t1_failures, 5);
    // A 429 cools a deployment of a group of two at once (t2, slot 2), and the only
    // deployment of "one" still is not cooled by one.
    let mut plan = r.plan("two", retries(0)).unwrap();
    let (ids, _) = drive(&mut plan, t0, |_| fail(FailureClass::RateLimit));
    assert_eq!(ids, vec!["t2"], "t1 is cooling");
    assert!(r.state().snapshot(2, t0).cooldown_until.is_some());
    let mut plan = r.plan("one", retries(0)).unwrap();
    drive(&mut plan, t0, |_| fail(FailureClass::RateLimit));
    assert_eq!(r.state().snapshot(0, t0).cooldown_until, None);
}

#[test]
fn client_cancellation_and_client_timeout_never_cool_down() {
    // `allowed_fails: 1`, so one counted failure would cool the only deployment.
    let cfg = RouterConfig {
        allowed_fails: 1,
        allowed_fails_configured: true,
        cooldown_time: Duration::from_secs(120),
        ..Default::default()
    };
    let r = router(vec![group("slow", &["s1"])], cfg);
    let t0 = Instant::now();
    for i in 0..100 {
        let outcome = if i % 2 == 0 {
            Outcome::ClientCancelled
        } else {
            fail(FailureClass::ClientTimeout)
        };
        let mut plan = r.plan("slow", retries(3)).unwrap();
        let (ids, _) = drive(&mut plan, t0, |_| outcome);
        assert_eq!(ids.len(), 1, "client-side endings are not retried");
    }
    assert_eq!(r.state().snapshot(0, t0).cooldown_until, None);
    let mut plan = r.plan("slow", retries(0)).unwrap();
    let (ids, _) = drive(&mut plan, t0, |_| ok_ms(1000));
    assert_eq!(ids, vec!["s1"]);
    assert_eq!(plan.summary().end, PlanEnd::Success);
    // Contrast: the gateway's own upstream timeout does count.
    let mut plan = r.plan("slow", retries(0)).unwrap();
    drive(&mut plan, t0, |_| fail(FailureClass::Timeout));
    assert!(r.state().snapshot(0, t0).cooldown_until.is_some());
}

#[test]
fn context_window_and_content_policy_fallbacks() {
    let cfg = RouterConfig {
        fallbacks: fallbacks(&[("small", &["general"])]),
        context_window_fallbacks: fallbacks(&[("small", &["large"])]),
        content_policy_fallbacks: fallbacks(&[("small", &["lenient"])]),
        ..Default::default()
    };
    let r = router(
        vec![
            group("small", &["s1"]),
            group("large", &["l1"]),
            group("general", &["g1"]),
            group("lenient", &["p1"]),
        ],
        cfg,
    );
    let t0 = Instant::now();
    let cases = [
        (FailureClass::ContextWindowExceeded, "l1"),
        (FailureClass::ContentPolicy, "p1"),
        (FailureClass::ServerError, "g1"),
    ];
    for (class, expect) in cases {
        let mut plan = r.plan("small", retries(2)).unwrap();
        let (ids, _) = drive(&mut plan, t0, |id| {
            if id == "s1" { fail(class) } else { ok_ms(5) }
        });
        let first_calls = if class.is_retryable() { 3 } else { 1 };
        assert_eq!(ids.len(), first_calls + 1, "{class:?}: {ids:?}");
        assert_eq!(ids.last().unwrap(), expect, "{class:?}");
    }
}

#[test]
fn request_fallbacks_override_and_are_bounded() {
    let names: Vec<String> = (0..8).map(|i| format!("g{i}")).collect();
    let mut groups = vec![group("a", &["a1"])];
    for n in &names {
        groups.push(group(n, &[&format!("{n}-d")]));
    }
    let cfg = RouterConfig {
        fallbacks: fallbacks(&[("a", &["g7"])]),
        max_fallbacks: 3,
        disable_cooldowns: true,
        ..Default::default()
    };
    let r = router(groups, cfg);
    // Request list with repeats, the requested group itself and an unknown name.
    let request = ["g1", "a", "g1", "nope", "g2", "g3", "g4"];
    let mut plan = r
        .plan(
            "a",
            RequestPolicy {
                num_retries: Some(1),
                fallbacks: Some(request.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            },
        )
        .unwrap();
    let (ids, _) = drive(&mut plan, Instant::now(), |_| {
        fail(FailureClass::ServerError)
    });
    assert_eq!(
        ids,
        vec!["a1", "a1", "g1-d", "g1-d", "g2-d", "g2-d", "g3-d", "g3-d"]
    );
    assert_eq!(plan.summary().attempted_fallbacks, 3);
}

#[test]
fn default_fallbacks_for_groups_without_their_own() {
    let cfg = RouterConfig {
        default_fallbacks: vec!["b".into()],
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1"]), group("b", &["b1"])], cfg);
    let mut plan = r.plan("a", retries(0)).unwrap();
    let (ids, _) = drive(&mut plan, Instant::now(), |id| {
        if id == "a1" {
            fail(FailureClass::RateLimit)
        } else {
            ok_ms(1)
        }
    });
    assert_eq!(ids, vec!["a1", "b1"]);
}

#[test]
fn a_star_rule_is_the_fallback_of_every_group_without_its_own() {
    let map = |pairs: &[(&str, &[&str])]| -> HashMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
            .collect()
    };
    let cfg = RouterConfig {
        fallbacks: map(&[("*", &["c"]), ("b", &["d"])]),
        context_window_fallbacks: map(&[("*", &["big"])]),
        ..Default::default()
    };
    let r = router(
        vec![
            group("a", &["a1"]),
            group("b", &["b1"]),
            group("c", &["c1"]),
            group("d", &["d1"]),
            group("big", &["big1"]),
        ],
        cfg,
    );
    let run = |g: &str, class: FailureClass| {
        let mut plan = r.plan(g, retries(0)).unwrap();
        let failing = format!("{g}1");
        drive(&mut plan, Instant::now(), |id| {
            if id == failing { fail(class) } else { ok_ms(1) }
        })
        .0
    };
    assert_eq!(run("a", FailureClass::ServerError), vec!["a1", "c1"]);
    // a group's own rule wins over `*`
    assert_eq!(run("b", FailureClass::ServerError), vec!["b1", "d1"]);
    // `*` is never its own group's fallback
    assert_eq!(run("c", FailureClass::ServerError), vec!["c1"]);
    assert_eq!(
        run("a", FailureClass::ContextWindowExceeded),
        vec!["a1", "big1"]
    );

    // `default_fallbacks` is LiteLLM's `{"*": ...}` appended last: it wins over `*`.
    let cfg = RouterConfig {
        fallbacks: map(&[("*", &["c"])]),
        default_fallbacks: vec!["d".into()],
        ..Default::default()
    };
    let r = router(
        vec![
            group("a", &["a1"]),
            group("c", &["c1"]),
            group("d", &["d1"]),
        ],
        cfg,
    );
    let mut plan = r.plan("a", retries(0)).unwrap();
    let (ids, _) = drive(&mut plan, Instant::now(), |id| {
        if id == "a1" {
            fail(FailureClass::ServerError)
        } else {
            ok_ms(1)
        }
    });
    assert_eq!(ids, vec!["a1", "d1"]);
}

#[test]
fn retry_policy_and_retry_precedence() {
    let mut policy = RetryPolicy::default();
    policy.set("RateLimitErrorRetries", 0).unwrap();
    policy.set("BadRequestErrorRetries", 1).unwrap();
    let cfg = RouterConfig {
        retry_policy: policy,
        num_retries: 4,
        disable_cooldowns: true,
        ..Default::default()
    };
    let limits = DeploymentLimits {
        max_retries: Some(1),
        ..Default::default()
    };
    let r = router(
        vec![group("a", &["a1"]), limited("m", &[("m1", limits)])],
        cfg,
    );
    let t0 = Instant::now();
    let calls = |name: &str, policy: RequestPolicy, class| {
        let mut plan = r.plan(name, policy).unwrap();
        drive(&mut plan, t0, |_| fail(class)).0.len()
    };
    assert_eq!(
        calls("a", RequestPolicy::default(), FailureClass::RateLimit),
        1
    );
    assert_eq!(
        calls("a", RequestPolicy::default(), FailureClass::BadRequest),
        2
    );
    // Global num_retries 4 for classes without a policy entry.
    assert_eq!(
        calls("a", RequestPolicy::default(), FailureClass::ServerError),
        5
    );
    // Deployment max_retries beats global; request num_retries beats both.
    assert_eq!(
        calls("m", RequestPolicy::default(), FailureClass::Timeout),
        2
    );
    assert_eq!(calls("m", retries(0), FailureClass::Timeout), 1);
    // Never retried without a policy entry.
    assert_eq!(calls("a", retries(5), FailureClass::Auth), 1);
    assert_eq!(calls("a", retries(5), FailureClass::NotFound), 1);
}

#[test]
fn in_flight_held_by_attempt_until_dropped() {
    let r = router(vec![group("a", &["a1"])], RouterConfig::default());
    let t0 = Instant::now();
    let mut plan = r.plan("a", retries(0)).unwrap();
    let a = plan.next_attempt(t0).unwrap();
    assert_eq!(r.state().snapshot(0, t0).in_flight, 1);
    plan.report(&a, ok_ms(1), t0);
    assert_eq!(
        r.state().snapshot(0, t0).in_flight,
        1,
        "held while streaming"
    );
    drop(a);
    assert_eq!(r.state().snapshot(0, t0).in_flight, 0);
    // A dropped plan (client gone mid-call) releases too.
    let mut plan = r.plan("a", retries(0)).unwrap();
    let a = plan.next_attempt(t0).unwrap();
    drop(a);
    drop(plan);
    assert_eq!(r.state().snapshot(0, t0).in_flight, 0);
}

#[test]
fn unreported_or_stale_attempts() {
    let r = router(vec![group("a", &["a1", "a2"])], RouterConfig::default());
    let t0 = Instant::now();
    let mut plan = r.plan("a", retries(2)).unwrap();
    let a = plan.next_attempt(t0).unwrap();
    // Asking again without a report ends the plan.
    assert!(plan.next_attempt(t0).is_none());
    plan.report(&a, fail(FailureClass::ServerError), t0);
    assert!(plan.next_attempt(t0).is_none());
    // A stale report is ignored.
    let mut p1 = r.plan("a", retries(2)).unwrap();
    let x = p1.next_attempt(t0).unwrap();
    p1.report(&x, fail(FailureClass::ServerError), t0);
    let y = p1.next_attempt(t0).unwrap();
    p1.report(&x, ok_ms(1), t0);
    assert_eq!(p1.summary().end, PlanEnd::Pending);
    p1.report(&y, ok_ms(1), t0);
    assert_eq!(p1.summary().end, PlanEnd::Success);
}

#[test]
fn unknown_model_and_empty_group() {
    let r = router(
        vec![ModelGroup::new("empty".into(), vec![])],
        RouterConfig::default(),
    );
    assert_eq!(
        r.plan("x", RequestPolicy::default()).unwrap_err(),
        RouteError::ModelNotFound("x".into())
    );
    let mut plan = r.plan("empty", RequestPolicy::default()).unwrap();
    assert!(plan.next_attempt(Instant::now()).is_none());
    assert!(matches!(
        plan.summary().end,
        PlanEnd::NoDeployments { group: "empty", .. }
    ));
}

#[test]
fn wildcard_upstream_model_in_plan() {
    let mut w = dep("w", "openai/*", 1.0, 1);
    let d = tollgate_providers::Deployment::build(
        tollgate_providers::DeploymentSpec {
            id: "w".into(),
            model_group: "openai/*".into(),
            provider: "openai".into(),
            upstream_model: "*".into(),
            api_base: Some("http://127.0.0.1:1/v1".into()),
            ..Default::default()
        },
        &|_| None,
    )
    .unwrap();
    w.deployment = std::sync::Arc::new(d);
    let r = router(
        vec![ModelGroup::new("openai/*".into(), vec![w])],
        RouterConfig::default(),
    );
    let mut plan = r.plan("openai/gpt-4.1", RequestPolicy::default()).unwrap();
    let a = plan.next_attempt(Instant::now()).unwrap();
    assert_eq!(a.upstream_model, "gpt-4.1");
}

#[test]
fn memory_flat_across_failing_plans() {
    // 10,000 plans with retries and a fallback, all failing, leave the state as it was.
    let cfg = RouterConfig {
        fallbacks: fallbacks(&[("a", &["b"])]),
        allowed_fails: 3,
        allowed_fails_configured: true,
        cooldown_time: Duration::from_secs(5),
        ..Default::default()
    };
    let r = router(
        vec![group("a", &["a1", "a2"]), group("b", &["b1", "b2"])],
        cfg,
    );
    let before = (r.state().slots(), r.state().footprint_bytes());
    let t0 = Instant::now();
    let (mut calls, mut no_deployments) = (0, 0);
    for i in 0..10_000u64 {
        // Each plan starts after the previous one's backoffs (≤ 1 s) have run out.
        let now = t0 + Duration::from_millis(i * 1500);
        let mut plan = r.plan("a", retries(2)).unwrap();
        let (ids, _) = drive(&mut plan, now, |_| fail(FailureClass::ServerError));
        calls += ids.len();
        assert!(ids.len() <= 6);
        if matches!(plan.summary().end, PlanEnd::NoDeployments { .. }) {
            no_deployments += 1;
        }
    }
    assert!(calls > 10_000, "plans did call upstreams: {calls}");
    assert!(
        no_deployments > 0,
        "some plans found every deployment cooling down"
    );
    assert_eq!((r.state().slots(), r.state().footprint_bytes()), before);
    let end = t0 + Duration::from_secs(100);
    for slot in 0..4 {
        assert_eq!(r.state().snapshot(slot, end).in_flight, 0);
    }
}

#[test]
fn plan_and_attempt_can_cross_awaits() {
    // The server holds both across `.await` in multi-threaded handlers.
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<AttemptPlan<'static>>();
    send::<Attempt<'static>>();
    sync::<Router>();
    send::<Router>();
}

#[test]
fn allowed_fails_policy_sets_the_threshold_per_error_class() {
    let mut policy = crate::AllowedFailsPolicy::default();
    policy
        .set_allowed_fails("RateLimitErrorAllowedFails", 3)
        .unwrap();
    policy
        .set_allowed_fails("AuthenticationErrorAllowedFails", 1)
        .unwrap();
    let cfg = RouterConfig {
        allowed_fails: 1,
        allowed_fails_configured: true,
        allowed_fails_policy: policy,
        cooldown_time: Duration::from_secs(60),
        ..Default::default()
    };
    let r = router(vec![group("a", &["a1"]), group("b", &["b1"])], cfg);
    let t0 = Instant::now();
    // 429s: the third within the minute cools a1 (not the first, as allowed_fails: 1 would)
    for n in 1..=3 {
        let mut plan = r.plan("a", retries(0)).unwrap();
        let (ids, _) = drive(&mut plan, t0, |_| fail(FailureClass::RateLimit));
        assert_eq!(ids, vec!["a1"], "429 number {n}");
    }
    let mut plan = r.plan("a", retries(0)).unwrap();
    assert!(
        plan.next_attempt(t0).is_none(),
        "a1 cooling after three 429s"
    );
    // a 401 normally never cools a deployment; listed in the policy, one does
    let mut plan = r.plan("b", retries(0)).unwrap();
    let (ids, _) = drive(&mut plan, t0, |_| fail(FailureClass::Auth));
    assert_eq!(ids, vec!["b1"]);
    let mut plan = r.plan("b", retries(0)).unwrap();
    assert!(plan.next_attempt(t0).is_none(), "b1 cooling after one 401");
}

#[test]
fn an_upstream_retry_after_sets_the_cooldown_and_a_timeout_is_a_latency_sample() {
    let cfg = RouterConfig {
        allowed_fails: 1,
        allowed_fails_configured: true,
        cooldown_time: Duration::from_secs(5),
        ..Default::default()
    };
    let r = router(vec![group("g", &["a", "b"])], cfg);
    let t0 = Instant::now();
    // a answers 429 with retry-after: 20 s: it cools for 20 s, not cooldown_time's 5.
    let mut plan = r.plan("g", retries(0)).unwrap();
    let attempt = plan.next_attempt(t0).unwrap();
    let slot = if attempt.deployment.deployment.id == "a" {
        0
    } else {
        1
    };
    plan.report(
        &attempt,
        Outcome::Failure {
            class: FailureClass::RateLimit,
            retry_after: Some(Duration::from_secs(20)),
        },
        t0,
    );
    assert_eq!(
        r.state().snapshot(slot, t0).cooldown_until,
        Some(t0 + Duration::from_secs(20))
    );

    // A stream that timed out after 3 s: 3 s of latency and of time to first token.
    let r = router(vec![group("g", &["a"])], RouterConfig::default());
    let stream = RequestPolicy {
        stream: true,
        num_retries: Some(0),
        ..Default::default()
    };
    let mut plan = r.plan("g", stream).unwrap();
    let attempt = plan.next_attempt(t0).unwrap();
    plan.report(
        &attempt,
        fail(FailureClass::Timeout),
        t0 + Duration::from_secs(3),
    );
    let snap = r.state().snapshot(0, t0 + Duration::from_secs(3));
    assert_eq!(snap.latency_ms.map(|(v, _)| v), Some(3_000.0));
    assert_eq!(snap.ttft_ms.map(|(v, _)| v), Some(3_000.0));
    // The client's own timeout says nothing about the deployment.
    let r = router(vec![group("g", &["a"])], RouterConfig::default());
    let mut plan = r.plan("g", retries(0)).unwrap();
    let attempt = plan.next_attempt(t0).unwrap();
    plan.report(
        &attempt,
        fail(FailureClass::ClientTimeout),
        t0 + Duration::from_secs(3),
    );
    assert_eq!(r.state().snapshot(0, t0).latency_ms, None);
}

#[test]
fn a_held_stream_reports_its_first_event_and_end_times_not_its_head() {
    let r = Arc::new(router(vec![group("a", &["a1"])], RouterConfig::default()));
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let head_only = Outcome::Success {
        timing: CallTiming::default(),
        prompt_tokens: None,
        completion_tokens: 0,
    };
    let stream = |sent: Instant| {
        let mut plan = r.plan("a", retries(0)).unwrap();
        let mut attempt = plan.next_attempt(sent).unwrap();
        let slot = attempt.hold_in_flight(Arc::clone(&r), sent);
        plan.report(&attempt, head_only, sent + ms(5));
        slot
    };
    // The head at 5 ms records no time; the first event at 300 ms and the end at 2 s do.
    let slot = stream(t0);
    let snap = r.state().snapshot(0, t0);
    assert_eq!((snap.latency_ms, snap.ttft_ms), (None, None));
    slot.record_timing(Some(t0 + ms(300)), t0 + ms(2_000), true);
    drop(slot);
    let snap = r.state().snapshot(0, t0);
    assert_eq!(snap.ttft_ms.map(|(v, _)| v), Some(300.0));
    assert_eq!(snap.latency_ms.map(|(v, _)| v), Some(2_000.0));

    // A stream that did not complete gives its time to first event, not a latency.
    let slot = stream(t0);
    slot.record_timing(Some(t0 + ms(100)), t0 + ms(400), false);
    let snap = r.state().snapshot(0, t0);
    let ttft = snap.ttft_ms.map(|(v, _)| v).unwrap();
    assert!(ttft < 300.0 && ttft > 100.0, "{ttft}");
    assert_eq!(snap.latency_ms.map(|(v, _)| v), Some(2_000.0));
    // Nor one that ended before any event.
    let slot = stream(t0);
    slot.record_timing(None, t0 + ms(50), false);
    assert_eq!(
        r.state().snapshot(0, t0).ttft_ms.map(|(v, _)| v),
        Some(ttft)
    );
}

#[test]
fn a_held_stream_stays_in_flight_and_adds_its_tokens_at_its_end() {
    let r = Arc::new(router(vec![group("a", &["a1"])], RouterConfig::default()));
    let t0 = Instant::now();
    let slot = {
        let mut plan = r.plan("a", retries(0)).unwrap();
        let mut attempt = plan.next_attempt(t0).unwrap();
        let slot = attempt.hold_in_flight(Arc::clone(&r), t0);
        plan.report(&attempt, ok_ms(5), t0);
        slot
        // The attempt and its plan end here; the stream goes on.
    };
    let snap = r.state().snapshot(0, t0);
    assert_eq!((snap.in_flight, snap.rpm_used), (1, 1));
    let before = snap.tpm_used;
    slot.settle_usage(t0, None, 1_000);
    assert_eq!(r.state().snapshot(0, t0).tpm_used, before + 1_000);
    drop(slot);
    assert_eq!(r.state().snapshot(0, t0).in_flight, 0);

    // Without a hold, the attempt's end is its drop.
    let mut plan = r.plan("a", retries(0)).unwrap();
    let attempt = plan.next_attempt(t0).unwrap();
    assert_eq!(r.state().snapshot(0, t0).in_flight, 1);
    drop(attempt);
    assert_eq!(r.state().snapshot(0, t0).in_flight, 0);
}
