//! The Tollgate gateway server.
//!
//! Request path (see [`pipeline`], where the stages are written down in order): inbound
//! (authenticate, parse once) → admitted (model access; per attempt, budgets and limits
//! reserved) → route → attempt loop (prepare the upstream body → send → relay: bytes pass
//! through, a copy is scanned for usage) → settled (exactly once per attempt).
//!
//! Modules: [`state`] builds everything from the LiteLLM config; [`auth`] is the
//! authentication step; [`request`] parses the body once; [`gate`] is governance (admission,
//! settlement, spend headers); [`relay`] streams or relays the upstream answer;
//! [`mock_provider`] answers `mock/` deployments in process behind the same upstream seam as
//! HTTP; [`response_session`] is a Responses API attempt's stored state; [`routes`] maps URLs
//! to handlers; [`service`] serves the inference routes directly and the rest through the
//! router; [`serve`] runs the listener with graceful shutdown.

pub mod anthropic_metadata;
pub mod auth;
pub mod check_config;
pub mod check_governance;
pub mod clientside;
pub mod errors;
pub mod fleet;
pub mod gate;
pub mod headers;
pub mod health;
pub mod malloc;
pub mod mock_provider;
pub mod model_names;
pub mod pipeline;
pub mod plan;
pub mod relay;
pub mod request;
pub mod response_owner;
pub mod response_session;
pub mod response_store;
pub mod routes;
pub mod serve;
pub mod service;
pub mod state;

/// Tollgate's version, sent as `x-litellm-version` and printed by `--version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
