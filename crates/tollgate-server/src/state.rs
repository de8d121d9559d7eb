//! Everything the request path needs, built from the LiteLLM config at start; the router is
//! rebuilt (config `model_list` + deployments stored through `/model/new`) and swapped whole
//! when deployments are added or removed at runtime ([`build_router`], [`SharedRouter`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use arc_swap::ArcSwap;
use tollgate_config::{Config, LoadedConfig, ModelEntry};
use tollgate_governance::pricing::PriceTable;
use tollgate_providers::{Deployment, DeploymentError, DeploymentSpec, UpstreamClient};
use tollgate_router::{
    DeploymentLimits, ModelGroup, RoutedDeployment, Router, RouterConfig, TeamModels,
};

use crate::auth::Authenticator;
use crate::relay::{CallSink, LogSink};

/// Default bound on a request body: 64 MiB (images as base64 make chat bodies large).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = tollgate_config::DEFAULT_BODY_LIMIT_MB << 20;

/// The router as the request path reads it. A request takes one snapshot
/// (`state.router.load()`: an atomic load, no lock) and uses it to the end, attempts and
/// fallbacks included; `/model/new` and `/model/delete` store a rebuilt router, which later
/// requests see while those in flight finish on theirs.
///
/// A swap starts the new router's state afresh: cooldowns, latency samples and per-minute usage
/// of every deployment reset when a deployment is added or removed. With routing state shared
/// across replicas ([`crate::fleet::routing`]) the fleet's usage and running cooldowns come
/// back at the next sync.
pub type SharedRouter = Arc<ArcSwap<Router>>;

/// Environment lookup kept for runtime rebuilds (provider keys and base URLs, `os.environ/`).
pub type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Shared state of the running gateway.
#[derive(Debug)]
pub struct AppState {
    /// Model groups and deployment selection (see [`SharedRouter`]).
    pub router: SharedRouter,
    /// The authentication step (shared with the management API).
    pub auth: Arc<Authenticator>,
    /// The pooled upstream client.
    pub client: UpstreamClient,
    /// Where finished calls are reported (settlement seam).
    pub sink: Arc<dyn CallSink>,
    /// Request body bound, bytes (`general_settings.max_request_size_mb`).
    pub max_request_bytes: usize,
    /// Set once shutdown begins: readiness answers 503.
    pub shutting_down: AtomicBool,
    /// Translated Responses API answers, for `previous_response_id` and `GET /v1/responses/{id}`.
    pub responses: Arc<dyn crate::response_store::ResponseStore>,
    /// Governance (virtual keys, budgets, limits, spend), when it runs (a master key is set).
    pub gate: Option<Arc<crate::gate::Gate>>,
    /// The management API's context (mounted when governance runs).
    pub admin: Option<crate::gate::admin::AdminHandle>,
    /// The admin UI at `/ui/` and its sessions (mounted with the management API).
    pub ui: Option<crate::gate::admin::UiHandle>,
}

impl AppState {
    /// Turns governance on: admission and settlement through `gate`.
    pub fn with_gate(mut self, gate: Arc<crate::gate::Gate>) -> Self {
        self.sink = Arc::new(crate::gate::sink::GovernedSink::new(Arc::clone(&gate.gov)));
        self.gate = Some(gate);
        self
    }

    /// Mounts the management API over `ctx`.
    pub fn with_admin(mut self, ctx: Arc<tollgate_admin::AdminContext>) -> Self {
        self.admin = Some(crate::gate::admin::AdminHandle(ctx));
        self
    }

    /// Mounts the admin UI (`/ui/`) and its session authentication.
    pub fn with_ui(mut self, ui: crate::gate::admin::UiHandle) -> Self {
        self.ui = Some(ui);
        self
    }

    /// The governance hub, if governance runs.
    pub fn gov(&self) -> Option<&tollgate_governance::runtime::Governance> {
        self.gate.as_deref().map(|g| g.gov.as_ref())
    }
}

/// Why the state could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A deployment is unusable.
    #[error(transparent)]
    Deployment(#[from] DeploymentError),
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(#[from] tollgate_providers::UpstreamError),
    /// `router_settings` are invalid (unknown strategy, bad retry policy).
    #[error("router_settings: {0}")]
    Router(#[from] tollgate_router::ConfigError),
}

impl AppState {
    /// Builds the state. `env` looks up provider env vars (API keys, base URLs).
    pub fn build(
        loaded: &LoadedConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, StateError> {
        let config = &loaded.config;
        let groups = model_groups(config, &config.model_list, env)?;
        let client = UpstreamClient::new(
            groups
                .iter()
                .flat_map(|(_, v)| v.iter().map(|(r, _)| r.deployment.as_ref())),
        )?;
        let router = router_of(config, groups, env)?;
        let auth = Arc::new(Authenticator::new(
            loaded.master_key.as_ref().map(|k| k.expose()),
            config.general_settings.litellm_key_header_name.as_deref(),
        ));
        Ok(AppState {
            router: Arc::new(ArcSwap::from_pointee(router)),
            auth,
            client,
            sink: Arc::new(LogSink),
            max_request_bytes: mb(config.general_settings.max_request_size_mb)
                .unwrap_or(DEFAULT_MAX_REQUEST_BYTES),
            shutting_down: AtomicBool::new(false),
            responses: Arc::new(crate::response_store::MemoryResponseStore::default()),
            gate: None,
            admin: None,
            ui: None,
        })
    }

    /// The same state with one upstream pool per worker thread (see [`crate::serve`]).
    ///
    /// Errors: [`StateError::Client`] when a client cannot be built.
    pub fn with_workers(mut self, workers: usize) -> Result<Self, StateError> {
        self.client = self.client.with_shards(workers)?;
        Ok(self)
    }
}

/// Deployments by model group, in order of first appearance.
type Groups = Vec<(String, Vec<(RoutedDeployment, DeploymentLimits)>)>;

/// What one `model_list` entry (from the config file or stored through `/model/new`) adds to
/// the router: the provider deployment, its simple-shuffle weight (`weight`, else `rpm`, else
/// `tpm`, else 1), its `order` tier and its own `rpm`/`tpm` limits.
///
/// Errors: [`DeploymentError`] (unknown provider, missing `api_base`, invalid header).
pub fn routed_entry(
    config: &Config,
    entry: &ModelEntry,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(RoutedDeployment, DeploymentLimits), DeploymentError> {
    let d = Arc::new(Deployment::build(deployment_spec(config, entry), env)?);
    let p = &entry.litellm_params;
    let routed = RoutedDeployment {
        deployment: d,
        weight: p
            .weight
            .or(p.rpm.map(|r| r as f64))
            .or(p.tpm.map(|t| t as f64))
            .unwrap_or(1.0),
        order: p.order.unwrap_or(u32::MAX),
    };
    let mut limits = DeploymentLimits::from_entry(entry);
    if cost_based(config)
        && (limits.input_cost_per_token.is_none() || limits.output_cost_per_token.is_none())
    {
        price_from_builtin_table(&mut limits, &routed.deployment, entry);
    }
    Ok((routed, limits))
}

/// Whether `cost-based-routing` is the routing strategy (the only user of a deployment's
/// prices in the router).
fn cost_based(config: &Config) -> bool {
    config
        .router_settings
        .routing_strategy
        .as_deref()
        .map(str::trim)
        == Some("cost-based-routing")
}

/// Fills the prices a deployment's config leaves unset from the built-in price table, looked
/// up as spend tracking looks them up (`model_info.base_model`, else the upstream model, under
/// the provider's name first), so `cost-based-routing` ranks a `gpt-4o-mini` below a `gpt-4o`
/// without prices in the config, as LiteLLM's does from its cost map. A map loaded from
/// `LITELLM_MODEL_COST_MAP_URL` prices spend but is not read here (it loads later, with the
/// store).
fn price_from_builtin_table(limits: &mut DeploymentLimits, d: &Deployment, entry: &ModelEntry) {
    let model = entry
        .model_info
        .base_model
        .as_deref()
        .filter(|m| !m.is_empty())
        .unwrap_or(&d.upstream_model);
    if let Some(p) = PriceTable::builtin().lookup(Some(d.provider.name), model) {
        limits.input_cost_per_token.get_or_insert(p.input_per_token);
        limits
            .output_cost_per_token
            .get_or_insert(p.output_per_token);
    }
}

fn model_groups<'a>(
    config: &Config,
    entries: impl IntoIterator<Item = &'a ModelEntry>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Groups, DeploymentError> {
    let mut groups: Groups = Vec::new();
    for entry in entries {
        let dep = routed_entry(config, entry, env)?;
        match groups.iter_mut().find(|(n, _)| *n == entry.model_name) {
            Some((_, v)) => v.push(dep),
            None => groups.push((entry.model_name.clone(), vec![dep])),
        }
    }
    Ok(groups)
}

/// The router over `groups`; its state is shared with the fleet when Redis settings resolve
/// ([`crate::fleet::routing`]).
fn router_of(
    config: &Config,
    groups: Groups,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Router, StateError> {
    let aliases: HashMap<String, String> = config
        .router_settings
        .model_group_alias
        .iter()
        .map(|(alias, target)| (alias.clone(), target.group().to_owned()))
        .collect();
    let router_config =
        RouterConfig::from_settings(&config.router_settings, &config.litellm_settings)?;
    let shared = crate::fleet::routing::settings(config, env).is_some();
    Ok(Router::with_state(
        groups
            .into_iter()
            .map(|(name, deps)| ModelGroup::with_limits(name, deps))
            .collect(),
        aliases,
        router_config,
        crate::fleet::routing::router_state(shared),
    ))
}

/// The router over `entries` (the config's `model_list`, then stored deployments) with the
/// config's aliases and `router_settings`: what the gateway builds at start, and rebuilds when
/// `/model/new` or `/model/delete` change the deployments. Its state (cooldowns, latency,
/// usage) starts empty.
///
/// Entries with `model_info.team_id` become team-owned groups ([`team_owned`]).
///
/// Errors: [`StateError::Deployment`] for an unusable entry, [`StateError::Router`].
pub fn build_router<'a>(
    config: &Config,
    entries: impl IntoIterator<Item = &'a ModelEntry> + Clone,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Router, StateError> {
    let teams = TeamModels::from_triples(entries.clone().into_iter().filter_map(team_owned));
    Ok(router_of(config, model_groups(config, entries, env)?, env)?.with_team_models(teams))
}

/// `(group name, team id, public name)` of an entry one team owns: `model_info.team_id` set,
/// the public name `model_info.team_public_model_name`, else the group name (LiteLLM's
/// `_add_team_model_to_db` stores the name the team sent there).
pub fn team_owned(e: &ModelEntry) -> Option<(String, String, String)> {
    let info = &e.model_info.extra.0;
    let team = info
        .get("team_id")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.is_empty())?;
    let public = info
        .get("team_public_model_name")
        .and_then(serde_json::Value::as_str)
        .filter(|p| !p.is_empty())
        .unwrap_or(&e.model_name);
    Some((e.model_name.clone(), team.to_owned(), public.to_owned()))
}

fn mb(v: Option<f64>) -> Option<usize> {
    v.filter(|m| m.is_finite() && *m > 0.0)
        .map(|m| (m * 1024.0 * 1024.0) as usize)
}

/// Maps one `model_list` entry to a provider deployment spec. Timeouts fall back from the
/// deployment to `router_settings` to `litellm_settings.request_timeout`.
fn deployment_spec(config: &Config, entry: &ModelEntry) -> DeploymentSpec {
    let p = &entry.litellm_params;
    let provider = match p.provider() {
        "*" => "openai",
        other => other,
    };
    let upstream_model = if p.model == "*" {
        "*".to_owned()
    } else {
        p.upstream_model().to_owned()
    };
    let mock_response = p.mock_response.as_ref().map(|v| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    DeploymentSpec {
        id: entry.deployment_id(),
        model_group: entry.model_name.clone(),
        provider: provider.to_owned(),
        upstream_model,
        api_base: p.api_base.clone(),
        api_key: p.api_key.as_ref().map(|k| k.expose().to_owned()),
        organization: p.organization.clone(),
        extra_headers: p
            .extra_headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        defaults: p.request_defaults(),
        timeout_s: p
            .timeout
            .or(config.router_settings.timeout)
            .or(config.litellm_settings.request_timeout),
        stream_timeout_s: p.stream_timeout.or(config.router_settings.stream_timeout),
        max_response_bytes: mb(config.general_settings.max_response_size_mb).unwrap_or(0),
        mock_response,
        mode: entry.model_info.mode.clone(),
        clientside_auth_params: p.configurable_clientside_auth_params.clone(),
    }
}

#[cfg(test)]
mod limit_tests {
    /// `check-config` reports the config crate's default; the request and response bounds the
    /// gateway enforces are that same number of MiB.
    #[test]
    fn body_limit_defaults_agree() {
        let mib = tollgate_config::DEFAULT_BODY_LIMIT_MB << 20;
        assert_eq!(super::DEFAULT_MAX_REQUEST_BYTES, mib);
        assert_eq!(
            tollgate_providers::deployment::DEFAULT_MAX_RESPONSE_BYTES,
            mib
        );
    }
}
