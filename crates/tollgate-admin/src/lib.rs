//! # tollgate-admin
//!
//! The management API, with LiteLLM's routes, request and response JSON and status codes
//! (litellm-surface §4.3–§4.7): `/key/*`, `/team/*`, `/user/*`, `/customer/*` (and
//! `/end_user/*`), `/budget/*`, `/tag/*`,
//! `/organization/*`, `/spend/logs`, `/global/spend`, `/global/spend/report`,
//! `/model/new|delete|info`, `/v1/model/info`, `/v2/model/info`.
//!
//! Every write goes to the [`tollgate_governance::store::GovernanceStore`] first, then to the
//! in-process cache and the admission counters, so it is in force on the very next inference
//! request. No HTTP client here; the server mounts [`router`] beside its inference routes and
//! provides the caller's identity ([`Authorize`]) and the model catalogue ([`ModelRegistry`]).
//!
//! | file | routes |
//! |---|---|
//! | `keys.rs`, `key_reads.rs`, `key_service.rs` | `/key/generate|update|delete|regenerate|block|unblock`, `/key/{key}/regenerate`, `/key/{key}/reset_spend`; `/key/info`, `/key/list`; `/key/service-account/generate` |
//! | `teams.rs`, `team_delete.rs`, `team_reads.rs`, `team_members.rs`, `team_bulk.rs` | `/team/new|update|block|unblock`, `/team/delete`; `/team/info`, `/team/list`; `/team/member_add|member_update|member_delete`, `/team/bulk_member_add` |
//! | `users.rs`, `user_delete.rs`, `user_reads.rs` | `/user/new|update`; `/user/delete`; `/user/info`, `/user/list` |
//! | `customers.rs` | `/customer/*` and `/end_user/*`: `new|update|delete|block|unblock|info|list` |
//! | `budgets.rs` | `/budget/new|update|info|list|delete` |
//! | `tags.rs` | `/tag/new|update|delete|info|list` |
//! | `organizations.rs` | `/organization/new|update|delete|info|list` |
//! | `spend.rs` | `/spend/logs`, `/global/spend`, `/global/spend/report` |
//! | `models.rs`, `models_v2.rs` | `/model/info`, `/v1/model/info`, `/model/new`, `/model/delete`; `/v2/model/info` |
//!
//! Shared pieces: `access.rs` (roles → 403), `error.rs` (error JSON), `extract.rs` (bodies,
//! queries, durations), `write.rs` (store-then-cache batches), `live.rs` (live spend and budget
//! windows from the admission counters), `members.rs` (team membership rules), `team_join.rs` (adding members), `team_member_budget.rs`
//! (a team's default member budget),
//! `model_teams.rs` / `model_team_list.rs` (team-owned deployments: who writes them, the
//! team's `models` list), `key_fields.rs` / `key_view.rs` (key request fields and key JSON), `served.rs` (warnings for
//! per-model budgets no model serves).
//!
//! Errors are LiteLLM's `{"error": {"message", "type", "param": null, "code": "<status>"}}`
//! ([`ApiError`]). No raw key is ever logged, stored or returned, except the new key in the
//! `/key/generate`, `/key/regenerate` and `/user/new` responses; request bodies are never
//! logged.

mod access;
mod budgets;
mod customers;
pub mod error;
mod extract;
mod key_delete;
mod key_fields;
mod key_reads;
mod key_service;
mod key_view;
mod keys;
mod live;
mod members;
mod model_team_list;
mod model_teams;
mod models;
mod models_v2;
mod organizations;
mod proxy_budget_user;
mod served;
mod spend;
mod spend_summary;
mod tags;
mod team_bulk;
mod team_delete;
mod team_join;
mod team_member_budget;
mod team_members;
mod team_reads;
mod teams;
mod tier;
mod user_delete;
mod user_reads;
mod users;
mod write;

use std::sync::Arc;

use http::HeaderMap;
use serde_json::Value;
use tollgate_governance::runtime::{Governance, Principal};
use tollgate_governance::store::WriteBehind;

pub use error::{ApiError, ApiResult};

/// Who calls a management route.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The master key, or no master key configured (open dev mode): role `proxy_admin`.
    Admin,
    /// A virtual key. Admin rights when its user's `user_role` is `proxy_admin`; otherwise it
    /// may read only what is its own (`/key/info` of itself, `/user/info` of its user, ...),
    /// and anything else is 403.
    Key(Box<Principal>),
}

/// A refused caller: status (401) and LiteLLM's error `type` and message (never the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFailure {
    /// HTTP status.
    pub status: u16,
    /// Error `type` (`auth_error`, `token_not_found_in_db`, `expired_key`).
    pub error_type: &'static str,
    /// Message.
    pub message: String,
}

/// Identifies the caller from request headers (implemented by the server with the same
/// credential-header rules as inference routes).
pub trait Authorize: Send + Sync + 'static {
    /// The caller, or why it is refused.
    fn caller(&self, headers: &HeaderMap) -> Result<Caller, AuthFailure>;
}

/// Why [`ModelRegistry::add`] or [`ModelRegistry::delete`] refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelChangeError {
    /// 400: the body or the deployment is invalid (unknown provider, bad `api_base`, duplicate
    /// id), or the deployment comes from the config file and cannot be deleted through the API.
    #[error("{0}")]
    Invalid(String),
    /// 404: no deployment has this id.
    #[error("model with id={0} not found")]
    NotFound(String),
    /// 500: the store write failed (nothing changed).
    #[error(transparent)]
    Store(#[from] tollgate_governance::store::StoreError),
}

/// The model catalogue behind `/model/info`, `/v1/model/info`, `/model/new`, `/model/delete`
/// (implemented by the server over its router and `"LiteLLM_ProxyModelTable"`).
#[async_trait::async_trait]
pub trait ModelRegistry: Send + Sync + 'static {
    /// One LiteLLM `/model/info` entry per deployment:
    /// `{"model_name", "litellm_params": {... secrets removed}, "model_info": {"id", "db_model", ...}}`.
    fn list(&self) -> Vec<Value>;
    /// Adds a deployment from a `/model/new` body, written by `actor` (`created_by`); it is
    /// callable once this returns. Returns the stored row with secrets removed:
    /// `{"model_id", "model_name", "litellm_params", "model_info": {"id", ...}, "created_at", ...}`.
    ///
    /// Errors: [`ModelChangeError::Invalid`], [`ModelChangeError::Store`].
    async fn add(&self, entry: Value, actor: &str) -> Result<Value, ModelChangeError>;
    /// Deletes the deployment with this `model_info.id`; it is no longer routed once this
    /// returns.
    ///
    /// Errors: [`ModelChangeError::NotFound`], [`ModelChangeError::Invalid`] (a config-file
    /// deployment), [`ModelChangeError::Store`].
    async fn delete(&self, id: &str) -> Result<(), ModelChangeError>;
    /// Changes the stored deployment `id` (LiteLLM `/model/update`): `model_name` replaced when
    /// given, `litellm_params` and `model_info` merged key by key (a `null` removes a key),
    /// written by `actor`; in force once this returns. Returns the stored row as
    /// [`Self::add`] does.
    ///
    /// Errors: [`ModelChangeError::NotFound`], [`ModelChangeError::Invalid`] (a config-file
    /// deployment, or the merged entry cannot be routed), [`ModelChangeError::Store`].
    async fn update(&self, id: &str, patch: Value, actor: &str) -> Result<Value, ModelChangeError>;
    /// Reads the stored deployments again (another replica of the fleet changed them) and
    /// routes them, as at start; returns whether anything changed (the router is rebuilt only
    /// then). The default, for registries that store nothing: `Ok(false)`.
    ///
    /// Errors: [`ModelChangeError::Store`] (nothing changed), [`ModelChangeError::Invalid`]
    /// (the router cannot be built).
    async fn reload(&self) -> Result<bool, ModelChangeError> {
        Ok(false)
    }
}

/// What the management routes work on.
pub struct AdminContext {
    /// Store, cache, admission counters, prices, spend-log queue.
    pub gov: Arc<Governance>,
    /// Caller identification.
    pub auth: Arc<dyn Authorize>,
    /// Model catalogue.
    pub models: Arc<dyn ModelRegistry>,
    /// The write-behind, flushed before spend reads so they include every settled call.
    pub write_behind: Arc<WriteBehind>,
}

/// The first path segment of every route [`router`] serves (`/key/generate` → `key`;
/// `/v1/model/info` and `/v2/model/info` count as `/model/info`). The server answers these paths with a pointer to
/// `master_key` when governance is off, rather than a bare 404.
pub const ROUTE_SEGMENTS: &[&str] = &[
    "budget",
    "customer",
    "end_user",
    "global",
    "key",
    "model",
    "organization",
    "spend",
    "tag",
    "team",
    "tollgate",
    "user",
];

/// Whether `path` (a request path, e.g. `/key/generate`) lies under one of
/// [`ROUTE_SEGMENTS`].
pub fn is_management_path(path: &str) -> bool {
    let path = path
        .strip_prefix("/v1")
        .or_else(|| path.strip_prefix("/v2"))
        .unwrap_or(path);
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    ROUTE_SEGMENTS.contains(&first)
}

/// The management API: every route above, with `ctx` as state (axum 0.8). The server merges it
/// beside its inference routes; each handler authenticates through [`AdminContext::auth`].
pub fn router(ctx: Arc<AdminContext>) -> axum::Router {
    axum::Router::new()
        .merge(keys::routes())
        .merge(key_reads::routes())
        .merge(key_service::routes())
        .merge(teams::routes())
        .merge(team_reads::routes())
        .merge(team_members::routes())
        .merge(team_delete::routes())
        .merge(team_bulk::routes())
        .merge(models_v2::routes())
        .merge(users::routes())
        .merge(user_reads::routes())
        .merge(user_delete::routes())
        .merge(customers::routes())
        .merge(budgets::routes())
        .merge(tags::routes())
        .merge(organizations::routes())
        .merge(spend::routes())
        .merge(spend_summary::routes())
        .merge(models::routes())
        .with_state(ctx)
}

#[cfg(test)]
mod route_segment_tests {
    use super::*;

    /// Every literal route path in this crate's route modules lies under `ROUTE_SEGMENTS`,
    /// so a route added later cannot be missed by the server's "management API is off" answer.
    /// (lib.rs, which only merges the modules, is skipped: this test names the pattern.)
    #[test]
    fn every_route_of_the_crate_is_a_management_path() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("lib.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for piece in text.split(".route(\"").skip(1) {
                let route = piece.split('"').next().unwrap_or("");
                assert!(is_management_path(route), "{route} in {}", path.display());
                seen += 1;
            }
        }
        assert!(seen > 40, "found only {seen} routes");
        // The customer routes are built from their two prefixes.
        assert!(is_management_path("/customer/new") && is_management_path("/end_user/info"));
    }

    #[test]
    fn inference_and_health_paths_are_not_management_paths() {
        for p in [
            "/v1/models",
            "/v1/chat/completions",
            "/health/liveliness",
            "/",
            "/models/x",
        ] {
            assert!(!is_management_path(p), "{p}");
        }
        assert!(is_management_path("/v1/model/info"));
        assert!(is_management_path("/v2/model/info"));
        assert!(is_management_path("/key/generate"));
    }
}
