//! Model groups, deployment selection, retries, fallbacks and cooldowns (LiteLLM
//! `router_settings`), as pure logic with in-process state: no I/O, no awaits; times are
//! passed in (`now`), randomness is seeded ([`RouterConfig::rng_seed`]).
//!
//! A **model group** is the set of deployments sharing a `model_name` (LiteLLM `model_list`).
//! [`Router::resolve`] turns the model a client asked for into a group, following
//! `router_settings.model_group_alias` and wildcard groups (`"*"`, `"openai/*"`).
//! [`Router::plan`] gives the server an [`AttemptPlan`]: which deployment to call next and
//! when, retrying and falling back after each reported [`Outcome`]:
//!
//! ```text
//! let mut plan = router.plan(requested, RequestPolicy { num_retries, fallbacks, prompt_tokens, stream })?;
//! while let Some(attempt) = plan.next_attempt(Instant::now()) {
//!     sleep_until(attempt.not_before).await;
//!     let outcome = call(attempt.deployment, &attempt.upstream_model).await;
//!     plan.report(&attempt, outcome, Instant::now());
//! }
//! let summary = plan.summary(); // attempted_retries / attempted_fallbacks / end
//! ```
//!
//! Selection within a group uses `order` tiers and the configured [`RoutingStrategy`];
//! failures feed per-deployment cooldowns kept in a [`RouterState`] ([`InMemoryState`] by
//! default; [`FleetState`] shares usage and cooldowns across the replicas of a fleet, its
//! remote numbers at most one sync period old, 100 ms by default in the server).
//! [`RouterConfig::from_settings`] and
//! [`DeploymentLimits::from_entry`] map the typed config file.
pub mod config;
pub mod context_window;
pub mod effective;
pub mod failure;
pub mod from_config;
pub mod group;
pub mod plan;
pub mod resolve;
mod rng;
mod select;
pub mod state;
pub mod team;
#[cfg(test)]
mod testutil;

pub use config::{AllowedFailsPolicy, ConfigError, RetryPolicy, RouterConfig, RoutingStrategy};
pub use effective::{EffectiveSetting, SettingSource, settings_in_effect};
pub use failure::{FailureClass, Outcome};
pub use group::{DeploymentLimits, ModelGroup, RoutedDeployment};
pub use plan::{Attempt, AttemptPlan, PlanEnd, PlanSummary, RequestPolicy, StreamSlot};
pub use resolve::{Route, RouteError, Router, upstream_for};
pub use state::{
    AttemptTokens, CallTiming, CooldownRule, CooldownTrigger, DeploymentSnapshot, FleetState,
    InMemoryState, RouterState, SuccessSample, WallClock,
};
pub use team::TeamModels;
