//! Model groups and deployment selection.
//!
//! A **model group** is the set of deployments sharing a `model_name` (LiteLLM `model_list`).
//! [`Router::resolve`] turns the model a client asked for into a group, following
//! `router_settings.model_group_alias` and wildcard groups (`"*"`, `"openai/*"`), and tells the
//! upstream model id to send. [`Router::pick`] chooses a deployment of the group:
//! `simple-shuffle` (LiteLLM's default), a random pick weighted by `weight`, within the lowest
//! `order` tier.

pub mod group;
pub mod resolve;

pub use group::{ModelGroup, RoutedDeployment};
pub use resolve::{RouteError, Router};
