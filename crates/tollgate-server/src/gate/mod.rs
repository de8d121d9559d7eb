//! Governance on the request path: the [`Gate`] opens the governance store and cache at start
//! and holds what the pipeline needs per attempt (prices per deployment); [`facts`] reads the
//! request; [`admit`] checks access and reserves each attempt's budgets and limits, starting
//! its spend-log row ([`spend_row`]); [`sink::GovernedSink`] settles every attempt and queues
//! that row; [`spend_headers`] writes the answer's spend and rate-limit headers.
//!
//! Governance runs when a master key is configured (virtual keys need one, as in LiteLLM); in
//! no-auth dev mode nothing is metered.

pub mod admin;
pub mod admit;
pub mod facts;
pub mod models;
pub mod shared;
pub mod sink;
pub mod spend_headers;
pub mod spend_row;
pub mod storage;
pub mod unpriced;
pub mod unreported;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tollgate_config::{Config, ModelEntry};
use tollgate_governance::admission::fleet::BatchedRedis;
use tollgate_governance::admission::redis::FailurePolicy;
use tollgate_governance::admission::{AdmissionConfig, Limits};
use tollgate_governance::pricing::{ModelPrice, PriceOverrides, PriceTable};
use tollgate_governance::runtime::{
    AccessGroups, DatabaseSeeds, EndUserDefault, Governance, GovernanceOptions,
};
use tollgate_governance::store::WriteBehind;
use tollgate_providers::Deployment;

pub use storage::StoreChoice;

/// Spend-log rows written per transaction.
pub const WRITE_BATCH: usize = 500;

/// Why governance could not start.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// `database_url` is not usable.
    #[error("{0}")]
    Config(String),
    /// The database failed (opening, migrating, loading).
    #[error(transparent)]
    Store(#[from] tollgate_governance::store::StoreError),
    /// The Redis keys of the config cannot be used (an invalid port or node list...).
    #[error(transparent)]
    RedisConfig(#[from] tollgate_config::RedisConfigError),
    /// The Redis the config names for the shared counters cannot be used.
    #[error(transparent)]
    SharedCounters(#[from] shared::SharedCountersError),
    /// The price map given by `LITELLM_MODEL_COST_MAP_URL` could not be read.
    #[error("price map {source_name}: {message}")]
    Prices {
        /// File or URL.
        source_name: String,
        /// Why.
        message: String,
    },
}

/// A gateway told it is one of several replicas (`TOLLGATE_REPLICAS` above 1) but given no
/// Redis would count every budget and limit alone, N times the fleet's: it does not start.
/// (A Redis variable left empty, or an `os.environ/` reference to an unset one, is how this
/// happens.)
///
/// Errors: [`GateError::Config`] saying so.
fn refuse_a_fleet_without_redis(replicas: Option<String>) -> Result<(), GateError> {
    match replicas.as_deref().map(str::trim).map(str::parse::<u32>) {
        Some(Ok(n)) if n > 1 => Err(GateError::Config(format!(
            "TOLLGATE_REPLICAS={n} says this gateway is one of {n} replicas, but no Redis is configured (REDIS_URL, REDIS_HOST, REDIS_CLUSTER_NODES, REDIS_SENTINEL_NODES, router_settings.redis_*, or litellm_settings.cache_params with type redis): each replica would count budgets and limits on its own. Configure the fleet's Redis, or unset TOLLGATE_REPLICAS for a single gateway."
        ))),
        _ => Ok(()),
    }
}

/// How one deployment is priced.
#[derive(Debug, Clone)]
struct DeploymentPricing {
    /// `model_info.base_model`, when set: the price-map entry to use whatever the request.
    base_model: Option<String>,
    overrides: PriceOverrides,
}

/// Governance as the pipeline uses it.
pub struct Gate {
    /// The governance hub (store, cache, counters, prices, spend-log queue).
    pub gov: Arc<Governance>,
    /// The write-behind (run by [`Gate::spawn_write_behind`]; flushed by spend reads).
    pub write_behind: Arc<WriteBehind>,
    /// Config deployments, by deployment id.
    pricing: HashMap<String, DeploymentPricing>,
    /// Deployments added through `/model/new`, by id: read only for an id the config does not
    /// have, so config deployments never pay for the extra load.
    stored_pricing: ArcSwap<HashMap<String, DeploymentPricing>>,
    /// `general_settings.user_header_name`: a header naming the end user ([`facts::end_user`]).
    pub end_user_header: Option<http::HeaderName>,
    /// Where the budget and limit counters live, for the start-up log: `in-process`, or the
    /// Redis target with its password masked ([`shared::describe`]) and key prefix.
    pub counters: String,
    /// The shared counters when they live in Redis: their round-trip and queue counters
    /// (`/health/readiness`) and the shutdown flush.
    pub batched: Option<Arc<BatchedRedis>>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

impl Gate {
    /// Opens the store `choice`, migrates it, loads every entity, and prepares prices: the
    /// built-in table, then the LiteLLM-format map named by env `LITELLM_MODEL_COST_MAP_URL`
    /// (a file path, `file://` or `http(s)://` URL; it may also be set in the config's
    /// `environment_variables`), then each deployment's `*_cost_per_token` overrides
    /// (`litellm_params` over `model_info`). When the config names a Redis (LiteLLM's keys,
    /// [`tollgate_config::redis_settings`]), the counters live there, shared by every replica
    /// ([`shared::shared_counters`]); else in this process.
    ///
    /// Errors: [`GateError`] (also a Redis that cannot be reached at start).
    pub async fn open(
        config: &Config,
        choice: &StoreChoice,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, GateError> {
        let mut prices = PriceTable::builtin();
        if let Some(src) = env("LITELLM_MODEL_COST_MAP_URL").filter(|s| !s.is_empty()) {
            prices.merge(load_price_map(&src).await?);
        }
        let end_user_header = end_user_header(config)?;
        let redis = tollgate_config::redis_settings(config, env)?;
        let store = choice.open(&storage::pool_settings(config)).await?;
        let options = options(config);
        let (batched, counters) = match &redis {
            Some(r) => {
                // The file's `environment_variables` first, then the process's (as every
                // other setting the environment gives).
                let lookup = |k: &str| config.env_var(k, env);
                let policy = FailurePolicy::from_env(&lookup)
                    .map_err(|e| GateError::Config(e.to_string()))?;
                let source = Arc::new(DatabaseSeeds::new(Arc::clone(&store), options.clone()));
                (
                    Some(shared::shared_counters(r, source, policy).await?),
                    format!(
                        "redis {} (key prefix {})",
                        shared::describe(r),
                        r.key_prefix
                    ),
                )
            }
            None => {
                refuse_a_fleet_without_redis(config.env_var("TOLLGATE_REPLICAS", env))?;
                (None, "in-process".to_owned())
            }
        };
        let shared = batched
            .clone()
            .map(|b| b as Arc<dyn tollgate_governance::admission::SharedCounters>);
        let gov = Arc::new(Governance::open_on(store, prices, options, shared).await?);
        if let (Some(r), Some(b)) = (&redis, &batched) {
            shared::seed_if_empty(r, b).await?;
        }
        if let Some(id) = &gov.options().end_user_default.budget_id
            && !gov.cache().read().budgets.contains_key(id)
        {
            tracing::warn!(
                budget_id = %id,
                "litellm_settings.max_end_user_budget_id names no budget tier yet; create it with /budget/new (until then only max_end_user_budget applies)"
            );
        }
        let write_behind = Arc::new(gov.write_behind(WRITE_BATCH));
        let pricing = config_pricing(config);
        Ok(Gate {
            gov,
            write_behind,
            pricing,
            stored_pricing: ArcSwap::default(),
            end_user_header,
            counters,
            batched,
        })
    }

    /// Starts the write-behind: flushes every second until `shutdown` turns true, then once
    /// more (graceful shutdown loses nothing queued).
    pub fn spawn_write_behind(
        &self,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let wb = Arc::clone(&self.write_behind);
        tokio::spawn(wb.run(std::time::Duration::from_secs(1), shutdown))
    }

    /// The price of calling `upstream_model` on `dep`; `None` = unpriced (billed 0; the
    /// spend-log row still has the tokens).
    pub fn price_for(&self, dep: &Deployment, upstream_model: &str) -> Option<ModelPrice> {
        let stored;
        let p = match self.pricing.get(&dep.id) {
            Some(p) => Some(p),
            None => {
                stored = self.stored_pricing.load();
                stored.get(&dep.id)
            }
        };
        price_with(self.gov.prices(), p, dep, upstream_model)
    }

    /// The deployments of `router` (config and stored ones) spend through which is recorded
    /// as $0 ([`unpriced`]).
    pub fn unpriced(&self, router: &tollgate_router::Router) -> Vec<unpriced::Unpriced> {
        unpriced::unpriced(router, |d| self.price_for(d, &d.upstream_model).is_some())
    }
}

/// The price of `upstream_model` on `dep` in `table`, with the deployment's pricing `p`
/// (`model_info.base_model` looked up instead when set; `*_cost_per_token` overrides on top).
fn price_with(
    table: &PriceTable,
    p: Option<&DeploymentPricing>,
    dep: &Deployment,
    upstream_model: &str,
) -> Option<ModelPrice> {
    let model = p
        .and_then(|p| p.base_model.as_deref())
        .unwrap_or(upstream_model);
    let none = PriceOverrides::default();
    let overrides = p.map_or(&none, |p| &p.overrides);
    table.price_for(Some(dep.provider.name), model, overrides)
}

/// The pricing of every config deployment, by deployment id.
fn config_pricing(config: &Config) -> HashMap<String, DeploymentPricing> {
    config
        .model_list
        .iter()
        .map(|e| (e.deployment_id(), deployment_pricing(e)))
        .collect()
}

impl Gate {
    /// Prices the deployments stored through `/model/new` (`*_cost_per_token` of their
    /// `litellm_params` over `model_info`, `model_info.base_model`), replacing the previous set.
    pub fn set_stored_pricing<'a>(&self, entries: impl IntoIterator<Item = &'a ModelEntry>) {
        let map = entries
            .into_iter()
            .map(|e| (e.deployment_id(), deployment_pricing(e)))
            .collect();
        self.stored_pricing.store(Arc::new(map));
    }
}

/// `general_settings.user_header_name` as a header name (case-insensitive, as LiteLLM compares
/// it); unset or blank → `None`. Errors: [`GateError::Config`] for a name no HTTP header can have.
fn end_user_header(config: &Config) -> Result<Option<http::HeaderName>, GateError> {
    let Some(name) = config
        .general_settings
        .user_header_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    else {
        return Ok(None);
    };
    http::HeaderName::try_from(name.to_ascii_lowercase())
        .map(Some)
        .map_err(|_| {
            GateError::Config(format!(
                "general_settings.user_header_name: `{name}` is not a valid HTTP header name"
            ))
        })
}

/// The governance options the gateway runs `config` with (also what `check-config` prints).
pub(crate) fn options(config: &Config) -> GovernanceOptions {
    let ls = &config.litellm_settings;
    let mut admission = AdmissionConfig::default();
    if let Some(s) = ls
        .budget_exceeded_status_code
        .filter(|s| (400..600).contains(s))
    {
        admission.budget_exceeded_status = s;
    }
    GovernanceOptions {
        admission,
        global: Limits {
            max_budget: ls.max_budget,
            budget_duration: ls.budget_duration.as_deref().and_then(|d| d.parse().ok()),
            ..Limits::default()
        },
        end_user_default: EndUserDefault {
            max_budget: ls
                .max_end_user_budget
                .filter(|b| b.is_finite() && *b >= 0.0),
            budget_id: ls.max_end_user_budget_id.clone().filter(|s| !s.is_empty()),
        },
        access_groups: access_groups(&config.model_list),
        spend_logs: config.general_settings.disable_spend_logs != Some(true),
        ..GovernanceOptions::default()
    }
}

/// The access groups (`model_info.access_groups`) of a set of deployments: group name →
/// model names.
pub fn access_groups<'a>(entries: impl IntoIterator<Item = &'a ModelEntry>) -> AccessGroups {
    AccessGroups::from_pairs(entries.into_iter().flat_map(|e| {
        e.model_info
            .access_groups
            .iter()
            .map(move |g| (g.as_str(), e.model_name.as_str()))
    }))
}

fn deployment_pricing(e: &ModelEntry) -> DeploymentPricing {
    let p = &e.litellm_params;
    let i = &e.model_info;
    let extra_f64 = |name: &str| {
        p.extra
            .0
            .get(name)
            .or_else(|| i.extra.0.get(name))
            .and_then(serde_json::Value::as_f64)
    };
    DeploymentPricing {
        base_model: i.base_model.clone().filter(|s| !s.is_empty()),
        overrides: PriceOverrides {
            input_cost_per_token: p.input_cost_per_token.or(i.input_cost_per_token),
            output_cost_per_token: p.output_cost_per_token.or(i.output_cost_per_token),
            cache_read_input_token_cost: p
                .cache_read_input_token_cost
                .or_else(|| extra_f64("cache_read_input_token_cost")),
            cache_creation_input_token_cost: p
                .cache_creation_input_token_cost
                .or_else(|| extra_f64("cache_creation_input_token_cost")),
            output_cost_per_reasoning_token: extra_f64("output_cost_per_reasoning_token"),
            input_cost_per_request: extra_f64("input_cost_per_request"),
        },
    }
}

async fn load_price_map(src: &str) -> Result<PriceTable, GateError> {
    let err = |message: String| GateError::Prices {
        source_name: src.to_owned(),
        message,
    };
    if src.starts_with("http://") || src.starts_with("https://") {
        // LiteLLM's own map is ~1.5 MB; 64 MiB bounds a wrong URL serving something endless.
        let body =
            tollgate_providers::client::fetch(src, 64 << 20, std::time::Duration::from_secs(30))
                .await
                .map_err(|e| err(e.to_string()))?;
        let text = std::str::from_utf8(&body).map_err(|e| err(e.to_string()))?;
        return PriceTable::from_litellm_json(text).map_err(|e| err(e.to_string()));
    }
    let path = src.strip_prefix("file://").unwrap_or(src);
    PriceTable::load_litellm_file(Path::new(path)).map_err(|e| err(e.to_string()))
}
