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

/// Deployments sharing a `model_name`.
#[derive(Debug)]
pub struct ModelGroup {
    /// The public name clients send.
    pub name: String,
    /// Deployments, sorted by `order`.
    pub deployments: Vec<RoutedDeployment>,
    /// Whether `name` is a wildcard pattern.
    pub wildcard: bool,
}

impl ModelGroup {
    /// A group from its deployments (sorted by `order`, stable).
    pub fn new(name: String, mut deployments: Vec<RoutedDeployment>) -> Self {
        deployments.sort_by_key(|d| d.order);
        let wildcard = name.contains('*');
        Self {
            name,
            deployments,
            wildcard,
        }
    }

    /// simple-shuffle: a random deployment of the lowest `order` tier, weighted by `weight`.
    /// `None` for an empty group.
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
