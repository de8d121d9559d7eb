//! Builders shared by the unit tests.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tollgate_providers::{Deployment, DeploymentSpec};

use crate::plan::{AttemptPlan, RequestPolicy};
use crate::{
    CallTiming, DeploymentLimits, FailureClass, ModelGroup, Outcome, RoutedDeployment, Router,
    RouterConfig,
};

/// A deployment `id` of `group` on a loopback base.
pub fn dep(id: &str, group: &str, weight: f64, order: u32) -> RoutedDeployment {
    let d = Deployment::build(
        DeploymentSpec {
            id: id.into(),
            model_group: group.into(),
            provider: "openai".into(),
            upstream_model: format!("up-{id}"),
            api_base: Some("http://127.0.0.1:1/v1".into()),
            ..Default::default()
        },
        &|_| None,
    )
    .unwrap();
    RoutedDeployment {
        deployment: Arc::new(d),
        weight,
        order,
    }
}

/// A group of equal-weight, same-order deployments.
pub fn group(name: &str, ids: &[&str]) -> ModelGroup {
    ModelGroup::new(
        name.into(),
        ids.iter().map(|id| dep(id, name, 1.0, 1)).collect(),
    )
}

/// A group with limits per deployment.
pub fn limited(name: &str, deps: &[(&str, DeploymentLimits)]) -> ModelGroup {
    ModelGroup::with_limits(
        name.into(),
        deps.iter()
            .map(|(id, l)| (dep(id, name, 1.0, 1), *l))
            .collect(),
    )
}

/// A router over `groups` with a fixed seed.
pub fn router(groups: Vec<ModelGroup>, mut cfg: RouterConfig) -> Router {
    cfg.rng_seed = Some(42);
    Router::with_config(groups, HashMap::new(), cfg)
}

/// A failure outcome without `retry-after`.
pub fn fail(class: FailureClass) -> Outcome {
    Outcome::Failure {
        class,
        retry_after: None,
    }
}

/// A success with the given latency in ms.
pub fn ok_ms(ms: u64) -> Outcome {
    Outcome::Success {
        timing: CallTiming::unary(Duration::from_millis(ms)),
        prompt_tokens: None,
        completion_tokens: 0,
    }
}

/// Runs a plan to its end: each attempt "ends" at its `not_before`, answered by `answer`.
/// Returns the deployment ids called, in order, and the time after the last attempt.
pub fn drive<'a>(
    plan: &mut AttemptPlan<'a>,
    start: Instant,
    mut answer: impl FnMut(&str) -> Outcome,
) -> (Vec<String>, Instant) {
    let mut now = start;
    let mut ids = Vec::new();
    let mut guard = 0;
    while let Some(a) = plan.next_attempt(now) {
        guard += 1;
        assert!(guard < 1000, "plan does not end");
        now = now.max(a.not_before);
        let id = a.deployment.deployment.id.clone();
        let outcome = answer(&id);
        ids.push(id);
        plan.report(&a, outcome, now);
    }
    (ids, now)
}

/// The default policy with `num_retries`.
pub fn retries(n: u32) -> RequestPolicy {
    RequestPolicy {
        num_retries: Some(n),
        ..Default::default()
    }
}
