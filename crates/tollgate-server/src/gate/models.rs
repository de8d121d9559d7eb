//! [`ModelCatalog`]: the deployments behind `/model/info`, `/model/new`, `/model/update` and
//! `/model/delete`
//! (LiteLLM's `store_model_in_db`). Config-file deployments are listed and cannot be deleted;
//! deployments added through the API are written to `"LiteLLM_ProxyModelTable"` (credentials
//! encrypted, [`tollgate_governance::store::models`]), loaded again at start, and routed as if
//! they followed the config's `model_list`.
//!
//! Every change rebuilds the whole router from the config entries plus the stored ones
//! ([`crate::state::build_router`], the same per-entry building as at start) and swaps it into
//! [`SharedRouter`]: requests in flight finish on the router they started with, and router
//! state (cooldowns, latency samples, per-minute usage) starts afresh for every deployment.
//! Changes are serialized; the request path never waits for them.

mod listing;
mod row;

use std::collections::HashSet;
use std::sync::Arc;

use arc_swap::ArcSwap;
use serde_json::{Value, json};
use tollgate_admin::{ModelChangeError, ModelRegistry};
use tollgate_config::{Config, ModelEntry};
use tollgate_governance::store::{ProxyModel, SecretBox};
use tollgate_router::Router;

use crate::gate::{Gate, GateError};
use crate::state::{EnvLookup, SharedRouter, StateError, build_router, routed_entry};
#[cfg(test)]
use listing::public_params;
use listing::{config_entry_info, stored_info, stored_row};
use row::{entry_of, merge_object, name_team_model, parse_flag, parse_new, team_update_names};

/// A deployment added through `/model/new`: the row as stored (plaintext `litellm_params`) and
/// the typed entry the router is built from (`os.environ/` references resolved).
#[derive(Debug, Clone)]
struct Stored {
    row: ProxyModel,
    entry: ModelEntry,
}

/// The model catalogue of a governed gateway (see the module docs).
pub struct ModelCatalog {
    config: Arc<Config>,
    env: Arc<EnvLookup>,
    router: SharedRouter,
    gate: Arc<Gate>,
    key: SecretBox,
    /// `/model/info` entries of the config deployments (computed once).
    config_listing: Vec<Value>,
    /// Ids of the config deployments.
    config_ids: HashSet<String>,
    /// Stored deployments, oldest first.
    stored: ArcSwap<Vec<Stored>>,
    /// Stored rows the last load could not route (compared by [`Self::reload_if_changed`]).
    skipped: ArcSwap<Vec<ProxyModel>>,
    /// One change (store write + router swap) at a time.
    changes: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ModelCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelCatalog")
            .field("config_deployments", &self.config_ids.len())
            .field("stored_deployments", &self.stored.load().len())
            .finish_non_exhaustive()
    }
}

impl ModelCatalog {
    /// Whether models may be stored and loaded: `general_settings.store_model_in_db`, else env
    /// `STORE_MODEL_IN_DB`; on unless one of them says false. (LiteLLM's default is off; with
    /// governance on, Tollgate's is on, so `/model/new` works without extra setup.)
    fn store_enabled(&self) -> bool {
        let explicit = self
            .config
            .general_settings
            .extra
            .0
            .get("store_model_in_db")
            .and_then(|v| match v {
                Value::Bool(b) => Some(*b),
                Value::String(s) => parse_flag(s),
                _ => None,
            })
            .or_else(|| (self.env)("STORE_MODEL_IN_DB").and_then(|s| parse_flag(&s)));
        explicit != Some(false)
    }

    /// The catalogue over `config`'s deployments, swapping rebuilt routers into `router`,
    /// storing through `gate`'s store with credentials encrypted by `key`. Holds no stored
    /// deployment until [`ModelCatalog::load`].
    pub fn new(
        config: Arc<Config>,
        env: Arc<EnvLookup>,
        router: SharedRouter,
        gate: Arc<Gate>,
        key: SecretBox,
    ) -> Self {
        let config_listing = config.model_list.iter().map(config_entry_info).collect();
        let config_ids = config
            .model_list
            .iter()
            .map(ModelEntry::deployment_id)
            .collect();
        Self {
            config,
            env,
            router,
            gate,
            key,
            config_listing,
            config_ids,
            stored: ArcSwap::default(),
            skipped: ArcSwap::default(),
            changes: tokio::sync::Mutex::new(()),
        }
    }

    /// Reads the stored deployments and swaps in a router that includes them; returns how many
    /// are routed. A row that cannot be routed (unknown provider, unset `os.environ/`
    /// variable, an id the config file already uses) is skipped with a warning, as LiteLLM
    /// skips a stored model it cannot add.
    ///
    /// Errors: [`GateError::Store`] when the table cannot be read, [`GateError::Config`] when
    /// the router cannot be built.
    pub async fn load(&self) -> Result<usize, GateError> {
        if !self.store_enabled() {
            return Ok(0);
        }
        let _change = self.changes.lock().await;
        let rows = self.gate.gov.store().load_models(&self.key).await?;
        self.route_rows(rows)
    }

    /// [`Self::load`] when the stored rows differ from those routed (and skipped) now, by what
    /// routing reads: id, group name, `litellm_params`, `model_info`. Returns whether the
    /// router was rebuilt: an unchanged table leaves the router, and its state (cooldowns,
    /// latency samples), alone. This is how a replica takes in `/model/new`, `/model/update`
    /// and `/model/delete` made through another replica.
    ///
    /// Errors: as [`Self::load`].
    pub async fn reload_if_changed(&self) -> Result<bool, GateError> {
        if !self.store_enabled() {
            return Ok(false);
        }
        let _change = self.changes.lock().await;
        let rows = self.gate.gov.store().load_models(&self.key).await?;
        let known = self.stored.load();
        let skipped = self.skipped.load();
        let mut now: Vec<_> = rows.iter().map(routing_view).collect();
        let mut before: Vec<_> = known
            .iter()
            .map(|s| &s.row)
            .chain(skipped.iter())
            .map(routing_view)
            .collect();
        now.sort_unstable_by(|a, b| a.0.cmp(b.0));
        before.sort_unstable_by(|a, b| a.0.cmp(b.0));
        if now == before {
            return Ok(false);
        }
        self.route_rows(rows)?;
        Ok(true)
    }

    /// Routes `rows` (read from the store; see [`Self::load`]) and makes them current.
    fn route_rows(&self, rows: Vec<ProxyModel>) -> Result<usize, GateError> {
        let mut skipped = Vec::new();
        let mut kept: Vec<Stored> = Vec::with_capacity(rows.len());
        for row in rows {
            let id = row.model_id.clone();
            let checked =
                if self.config_ids.contains(&id) || kept.iter().any(|s| s.row.model_id == id) {
                    Err(format!("id {id} is already used"))
                } else {
                    entry_of(&row, &*self.env).and_then(|entry| {
                        routed_entry(&self.config, &entry, &*self.env)
                            .map(|_| entry)
                            .map_err(|e| e.to_string())
                    })
                };
            match checked {
                Ok(entry) => kept.push(Stored { row, entry }),
                Err(error) => {
                    tracing::warn!(
                        model_id = %id,
                        %error,
                        "stored deployment skipped (LiteLLM_ProxyModelTable)"
                    );
                    skipped.push(row);
                }
            }
        }
        let router = self
            .router_for(&kept)
            .map_err(|e| GateError::Config(e.to_string()))?;
        let n = kept.len();
        self.skipped.store(Arc::new(skipped));
        self.commit(kept, router);
        Ok(n)
    }

    /// The router over the config entries followed by `stored`.
    fn router_for(&self, stored: &[Stored]) -> Result<Router, StateError> {
        build_router(
            &self.config,
            self.config
                .model_list
                .iter()
                .chain(stored.iter().map(|s| &s.entry)),
            &*self.env,
        )
    }

    /// Makes `stored` and `router` current: prices and access groups first, so the first
    /// request on a new deployment is priced and its `model_info.access_groups` count.
    /// Routes `next` (refused if it does not build), stores `row`, then swaps the router in.
    async fn store_and_route(
        &self,
        next: Vec<Stored>,
        row: &Stored,
    ) -> Result<Value, ModelChangeError> {
        let router = self
            .router_for(&next)
            .map_err(|e| ModelChangeError::Invalid(e.to_string()))?;
        self.gate
            .gov
            .store()
            .upsert_model(&row.row, &self.key)
            .await?;
        self.commit(next, router);
        Ok(stored_row(&row.row))
    }

    fn commit(&self, stored: Vec<Stored>, router: Router) {
        self.gate
            .set_stored_pricing(stored.iter().map(|s| &s.entry));
        self.gate.gov.set_access_groups(crate::gate::access_groups(
            self.config
                .model_list
                .iter()
                .chain(stored.iter().map(|s| &s.entry)),
        ));
        self.stored.store(Arc::new(stored));
        self.router.store(Arc::new(router));
    }
}

#[async_trait::async_trait]
impl ModelRegistry for ModelCatalog {
    fn list(&self) -> Vec<Value> {
        let stored = self.stored.load();
        let mut out = self.config_listing.clone();
        out.extend(stored.iter().map(|s| stored_info(&s.row)));
        out
    }

    async fn add(&self, body: Value, actor: &str) -> Result<Value, ModelChangeError> {
        if !self.store_enabled() {
            return Err(ModelChangeError::Invalid(
                "Storing models is turned off (general_settings.store_model_in_db / STORE_MODEL_IN_DB is false): add the deployment to config.yaml instead.".to_owned(),
            ));
        }
        let _change = self.changes.lock().await;
        let mut body = body;
        name_team_model(&mut body);
        let new = parse_new(body, actor, &*self.env)?;
        let id = &new.row.model_id;
        let current = self.stored.load_full();
        if self.config_ids.contains(id) || current.iter().any(|s| s.row.model_id == *id) {
            return Err(ModelChangeError::Invalid(format!(
                "Model with id={id} already exists"
            )));
        }
        let mut next: Vec<Stored> = current.as_ref().clone();
        next.push(new.clone());
        self.store_and_route(next, &new).await
    }

    async fn update(&self, id: &str, patch: Value, actor: &str) -> Result<Value, ModelChangeError> {
        let _change = self.changes.lock().await;
        if self.config_ids.contains(id) {
            return Err(ModelChangeError::Invalid(format!(
                "Model with id={id} is defined in the config file and cannot be changed through the API; edit config.yaml and restart"
            )));
        }
        let current = self.stored.load_full();
        let Some(pos) = current.iter().position(|s| s.row.model_id == id) else {
            return Err(ModelChangeError::NotFound(id.to_owned()));
        };
        let old = &current[pos].row;
        let mut info = merge_object(&old.model_info, patch.get("model_info"));
        if let Value::Object(m) = &mut info {
            m.insert("id".into(), json!(id));
        }
        let asked_name = patch.get("model_name").and_then(Value::as_str);
        let mut merged = json!({
            "model_name": asked_name.unwrap_or(&old.model_name),
            "litellm_params": merge_object(&old.litellm_params, patch.get("litellm_params")),
            "model_info": info,
        });
        team_update_names(&mut merged, old, asked_name);
        let mut changed = parse_new(merged, actor, &*self.env)?;
        changed.row.created_at = old.created_at;
        changed.row.created_by = old.created_by.clone();
        let mut next: Vec<Stored> = current.as_ref().clone();
        next[pos] = changed.clone();
        self.store_and_route(next, &changed).await
    }

    async fn delete(&self, id: &str) -> Result<(), ModelChangeError> {
        let _change = self.changes.lock().await;
        if self.config_ids.contains(id) {
            return Err(ModelChangeError::Invalid(format!(
                "Model with id={id} is defined in the config file and cannot be deleted through the API; remove it from config.yaml and restart"
            )));
        }
        let current = self.stored.load_full();
        if !current.iter().any(|s| s.row.model_id == id) {
            return Err(ModelChangeError::NotFound(id.to_owned()));
        }
        let next: Vec<Stored> = current
            .iter()
            .filter(|s| s.row.model_id != id)
            .cloned()
            .collect();
        let router = self
            .router_for(&next)
            .map_err(|e| ModelChangeError::Invalid(e.to_string()))?;
        self.gate.gov.store().delete_model(id).await?;
        self.commit(next, router);
        Ok(())
    }

    async fn reload(&self) -> Result<bool, ModelChangeError> {
        self.reload_if_changed().await.map_err(|e| match e {
            GateError::Store(e) => ModelChangeError::Store(e),
            other => ModelChangeError::Invalid(other.to_string()),
        })
    }
}

/// What routing reads of a stored row (timestamps and authors left out).
fn routing_view(r: &ProxyModel) -> (&str, &str, &Value, &Value) {
    (&r.model_id, &r.model_name, &r.litellm_params, &r.model_info)
}

#[cfg(test)]
mod tests;
