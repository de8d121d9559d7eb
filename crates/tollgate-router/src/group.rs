//! A model group and its weighted pick.

use std::sync::Arc;

use rand::Rng;
use tollgate_providers::Deployment;

/// A deployment of a group with its routing attributes.
#[derive(Debug, Clone)]
pub struct RoutedDeployment {
    /// The deployment.
    pub deployment: Arc<Deployment>,
    /// `litellm_params.weight` (else `rpm`, else `tpm`, else 1), for simple-shuffle.
    pub weight: f64,
    /// `litellm_params.order` priority tier: lower first (unset = after every set order).
    pub order: u32,
}

/// Per-deployment limits and prices used by strategies and pre-call checks
/// (`litellm_params.rpm`/`tpm`/`max_retries`, `model_info.max_input_tokens`, and the cost map's
/// `input_cost_per_token`/`output_cost_per_token`). All optional; the default has none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeploymentLimits {
    /// Requests per minute this deployment accepts.
    pub rpm: Option<u64>,
    /// Tokens per minute this deployment accepts.
    pub tpm: Option<u64>,
    /// Context window for the prompt, tokens.
    pub max_input_tokens: Option<u64>,
    /// USD per input token.
    pub input_cost_per_token: Option<f64>,
    /// USD per output token.
    pub output_cost_per_token: Option<f64>,
    /// `max_retries`: retries after a failure of this deployment (below the request's own
    /// `num_retries`, above the global one).
    pub max_retries: Option<u32>,
}

/// Deployments sharing a `model_name`.
#[derive(Debug)]
pub struct ModelGroup {
    /// The public name clients send.
    pub name: String,
    /// `name` as a header value (`x-litellm-model-group`), shared by every response; `None`
    /// when the name has bytes a header cannot carry.
    pub name_header: Option<http::HeaderValue>,
    /// Deployments, sorted by `order`.
    pub deployments: Vec<RoutedDeployment>,
    /// Whether `name` is a wildcard pattern.
    pub wildcard: bool,
    /// Limits, aligned with `deployments`.
    limits: Vec<DeploymentLimits>,
    /// Slot of `deployments[0]` in the router state (set by the router).
    pub(crate) slot_base: usize,
}

impl ModelGroup {
    /// A group from its deployments (sorted by `order`, stable), without limits or prices.
    pub fn new(name: String, deployments: Vec<RoutedDeployment>) -> Self {
        Self::with_limits(
            name,
            deployments
                .into_iter()
                .map(|d| (d, DeploymentLimits::default()))
                .collect(),
        )
    }

    /// A group from deployments with their limits and prices (sorted by `order`, stable).
    pub fn with_limits(
        name: String,
        mut deployments: Vec<(RoutedDeployment, DeploymentLimits)>,
    ) -> Self {
        deployments.sort_by_key(|(d, _)| d.order);
        let wildcard = name.contains('*');
        let (deployments, limits) = deployments.into_iter().unzip();
        Self {
            name_header: tollgate_providers::deployment::shared_header_value(&name),
            name,
            deployments,
            wildcard,
            limits,
            slot_base: 0,
        }
    }

    /// Limits of `deployments[index]` (defaults if out of range).
    pub fn limits(&self, index: usize) -> DeploymentLimits {
        self.limits.get(index).copied().unwrap_or_default()
    }

    /// simple-shuffle over the lowest `order` tier, weighted by `weight`, ignoring cooldowns
    /// and usage (the first version's pick; the router's own selection is
    /// [`crate::Router::route`] / [`crate::Router::plan`]). `None` for an empty group.
    pub fn pick(&self) -> Option<&RoutedDeployment> {
        let first = self.deployments.first()?;
        let tier: &[RoutedDeployment] = {
            let n = self
                .deployments
                .iter()
                .take_while(|d| d.order == first.order)
                .count();
            &self.deployments[..n]
        };
        if tier.len() == 1 {
            return Some(first);
        }
        let total: f64 = tier.iter().map(|d| d.weight.max(0.0)).sum();
        if total <= 0.0 {
            return tier.get(rand::rng().random_range(0..tier.len()));
        }
        let mut x = rand::rng().random_range(0.0..total);
        for d in tier {
            let w = d.weight.max(0.0);
            if x < w {
                return Some(d);
            }
            x -= w;
        }
        tier.last()
    }
}
