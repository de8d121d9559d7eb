//! Model groups, deployment selection, retries, fallbacks and cooldowns.
//!
//! A **model group** is the set of deployments sharing a `model_name` (LiteLLM `model_list`).
//! [`Router::resolve`] turns the model a client asked for into a group, following
//! `router_settings.model_group_alias` and wildcard groups (`"*"`, `"openai/*"`).
//! [`Router::plan`] gives the server an [`AttemptPlan`]: which deployment to call next, when,
//! and whether to retry or fall back after each [`Outcome`]. Selection within a group uses
//! `order` tiers and the configured [`RoutingStrategy`]; failures feed per-deployment
//! cooldowns kept in a [`RouterState`] (in process by default).
//!
//! Pure logic: no I/O, no awaits; times are passed in (`now`), randomness is seeded.

pub mod config;
pub mod failure;
pub mod from_config;
pub mod group;
pub mod plan;
pub mod resolve;
mod rng;
mod select;
pub mod state;
#[cfg(test)]
mod testutil;

pub use config::{ConfigError, RetryPolicy, RouterConfig, RoutingStrategy};
pub use failure::{FailureClass, Outcome};
pub use group::{DeploymentLimits, ModelGroup, RoutedDeployment};
pub use plan::{Attempt, AttemptPlan, PlanEnd, PlanSummary, RequestPolicy};
pub use resolve::{Route, RouteError, Router};
pub use state::{CooldownRule, DeploymentSnapshot, InMemoryState, RouterState, SuccessSample};
