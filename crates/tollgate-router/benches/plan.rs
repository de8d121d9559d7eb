//! `plan` + `next_attempt` + `report` for a 4-deployment group with usage-based-routing-v2:
//! the router's share of one forwarded request. Run: `cargo bench -p tollgate-router`.
#![expect(
    clippy::expect_used,
    reason = "benchmark setup: a failed setup aborts the run"
)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use divan::{Bencher, black_box};
use tollgate_providers::{Deployment, DeploymentSpec};
use tollgate_router::{
    CallTiming, DeploymentLimits, FailureClass, FleetState, InMemoryState, ModelGroup, Outcome,
    RequestPolicy, RoutedDeployment, Router, RouterConfig, RouterState, RoutingStrategy, WallClock,
};

fn main() {
    divan::main();
}

fn router(strategy: RoutingStrategy, disable_cooldowns: bool) -> Router {
    router_with(strategy, disable_cooldowns, false)
}

/// The router, its state a [`FleetState`] (what a replica of a fleet runs) when `fleet`.
fn router_with(strategy: RoutingStrategy, disable_cooldowns: bool, fleet: bool) -> Router {
    let deps = (0..4)
        .map(|i| {
            let d = Deployment::build(
                DeploymentSpec {
                    id: format!("d{i}"),
                    model_group: "mock-gpt".into(),
                    provider: "openai".into(),
                    upstream_model: "gpt-4o".into(),
                    api_base: Some("http://127.0.0.1:1/v1".into()),
                    ..Default::default()
                },
                &|_| None,
            )
            .expect("valid deployment");
            let routed = RoutedDeployment {
                deployment: Arc::new(d),
                weight: 1.0,
                order: 1,
            };
            let limits = DeploymentLimits {
                rpm: Some(u64::MAX),
                tpm: Some(u64::MAX),
                ..Default::default()
            };
            (routed, limits)
        })
        .collect();
    let cfg = RouterConfig {
        strategy,
        disable_cooldowns,
        rng_seed: Some(1),
        ..Default::default()
    };
    Router::with_state(
        vec![ModelGroup::with_limits("mock-gpt".into(), deps)],
        HashMap::new(),
        cfg,
        |ids| -> Box<dyn RouterState> {
            if fleet {
                Box::new(FleetState::new(ids, WallClock::now()))
            } else {
                Box::new(InMemoryState::new(ids.len(), Instant::now()))
            }
        },
    )
}

fn policy() -> RequestPolicy {
    RequestPolicy {
        prompt_tokens: 20,
        ..Default::default()
    }
}

const OK: Outcome = Outcome::Success {
    timing: CallTiming {
        latency: Some(Duration::from_millis(3)),
        ttft: None,
    },
    prompt_tokens: Some(18),
    completion_tokens: 12,
};

/// One successful request: plan, one attempt, report.
#[divan::bench(args = [
    RoutingStrategy::UsageBased,
    RoutingStrategy::SimpleShuffle,
    RoutingStrategy::LeastBusy,
    RoutingStrategy::LatencyBased,
])]
fn success(bencher: Bencher, strategy: RoutingStrategy) {
    let r = router(strategy, false);
    let now = Instant::now();
    bencher.bench_local(|| {
        let mut plan = r
            .plan(black_box("mock-gpt"), policy())
            .expect("known group");
        while let Some(a) = plan.next_attempt(now) {
            plan.report(&a, OK, now);
        }
        black_box(plan.summary())
    });
}

/// [`success`] under usage-based-routing-v2 with the fleet-shared state: what merging the
/// others' numbers into each snapshot costs.
#[divan::bench]
fn success_usage_based_fleet_state(bencher: Bencher) {
    let r = router_with(RoutingStrategy::UsageBased, false, true);
    let now = Instant::now();
    bencher.bench_local(|| {
        let mut plan = r
            .plan(black_box("mock-gpt"), policy())
            .expect("known group");
        while let Some(a) = plan.next_attempt(now) {
            plan.report(&a, OK, now);
        }
        black_box(plan.summary())
    });
}

/// One request whose first attempt gets a 500 and whose retry (on another deployment)
/// succeeds; cooldowns off so that the loop keeps failing.
#[divan::bench]
fn one_retry_usage_based(bencher: Bencher) {
    let r = router(RoutingStrategy::UsageBased, true);
    let now = Instant::now();
    bencher.bench_local(|| {
        let mut plan = r
            .plan(black_box("mock-gpt"), policy())
            .expect("known group");
        let mut first = true;
        while let Some(a) = plan.next_attempt(now) {
            let outcome = if first {
                Outcome::Failure {
                    class: FailureClass::ServerError,
                    retry_after: None,
                }
            } else {
                OK
            };
            first = false;
            plan.report(&a, outcome, now);
        }
        black_box(plan.summary())
    });
}
