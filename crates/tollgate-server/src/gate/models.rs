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

use std::collections::HashSet;
use std::sync::Arc;

use arc_swap::ArcSwap;
use chrono::{SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use tollgate_admin::{ModelChangeError, ModelRegistry};
use tollgate_config::env::ENV_PREFIX;
use tollgate_config::redact::{is_sensitive_key, redact_url_userinfo, redact_value};
use tollgate_config::{Config, ModelEntry};
use tollgate_governance::store::{ProxyModel, SecretBox};
use tollgate_router::Router;

use crate::gate::{Gate, GateError};
use crate::state::{EnvLookup, SharedRouter, StateError, build_router, routed_entry};

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
                Err(error) => tracing::warn!(
                    model_id = %id,
                    %error,
                    "stored deployment skipped (LiteLLM_ProxyModelTable)"
                ),
            }
        }
        let router = self
            .router_for(&kept)
            .map_err(|e| GateError::Config(e.to_string()))?;
        let n = kept.len();
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
        let merged = json!({
            "model_name": patch
                .get("model_name")
                .and_then(Value::as_str)
                .unwrap_or(&old.model_name),
            "litellm_params": merge_object(&old.litellm_params, patch.get("litellm_params")),
            "model_info": info,
        });
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
}

/// `base` with `patch`'s keys set (a `null` in `patch` removes the key).
fn merge_object(base: &Value, patch: Option<&Value>) -> Value {
    let mut out = base.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(p)) = patch {
        for (k, v) in p {
            if v.is_null() {
                out.remove(k);
            } else {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// A `/model/new` body as a row (`model_info.id` kept, else a new UUID v4) and its entry.
///
/// Errors: [`ModelChangeError::Invalid`] naming the missing or wrong field.
fn parse_new(body: Value, actor: &str, env: &EnvLookup) -> Result<Stored, ModelChangeError> {
    let invalid = |m: &str| ModelChangeError::Invalid(m.to_owned());
    let Value::Object(mut body) = body else {
        return Err(invalid("Invalid request body: expected a JSON object"));
    };
    let model_name = body
        .get("model_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("model_name is required"))?
        .to_owned();
    let params = match body.remove("litellm_params") {
        Some(Value::Object(m)) => m,
        _ => {
            return Err(invalid(
                "litellm_params is required: an object with `model`",
            ));
        }
    };
    if params
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(invalid("litellm_params.model is required"));
    }
    let mut info = match body.remove("model_info") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(invalid("model_info must be an object")),
    };
    let id = info
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    info.insert("id".into(), json!(id));
    info.remove("db_model");
    let now = Utc::now();
    let row = ProxyModel {
        model_id: id,
        model_name,
        litellm_params: Value::Object(params),
        model_info: Value::Object(info),
        created_at: Some(now),
        created_by: Some(actor.to_owned()),
        updated_at: Some(now),
        updated_by: Some(actor.to_owned()),
    };
    let entry = entry_of(&row, env).map_err(ModelChangeError::Invalid)?;
    Ok(Stored { row, entry })
}

/// The typed entry of a stored row: top-level `os.environ/NAME` values of `litellm_params`
/// resolved (LiteLLM's router resolves them when it adds a deployment), `api_base` checked to
/// be an http(s) URL, `model_info.id` = `model_id`.
///
/// Errors: a message naming the field (never a credential value).
fn entry_of(row: &ProxyModel, env: &EnvLookup) -> Result<ModelEntry, String> {
    let mut params = row.litellm_params.clone();
    if let Value::Object(m) = &mut params {
        for (k, v) in m.iter_mut() {
            if let Value::String(s) = v
                && let Some(var) = s.strip_prefix(ENV_PREFIX)
            {
                let value = env(var).ok_or_else(|| {
                    format!("litellm_params.{k}: environment variable {var} is not set")
                })?;
                *v = Value::String(value);
            }
        }
        if let Some(base) = m.get("api_base").and_then(Value::as_str) {
            check_api_base(base)?;
        }
    }
    let mut info = match &row.model_info {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    info.insert("id".into(), json!(row.model_id));
    let entry = json!({"model_name": row.model_name, "litellm_params": params, "model_info": info});
    serde_json::from_value(entry).map_err(|e| format!("invalid model: {e}"))
}

/// `api_base` must be an absolute http(s) URL with a host.
fn check_api_base(base: &str) -> Result<(), String> {
    let ok = base
        .parse::<http::Uri>()
        .ok()
        .filter(|u| matches!(u.scheme_str(), Some("http" | "https")))
        .and_then(|u| u.host().map(|h| !h.is_empty()))
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "litellm_params.api_base '{}' is not an http(s) URL",
            redact_url_userinfo(base)
        ))
    }
}

/// `litellm_params` as listed: credential-like keys (`api_key`, `aws_secret_access_key`,
/// `vertex_credentials`, …) removed, credential-like values inside the rest masked.
fn public_params(params: &Value) -> Value {
    match params {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !is_sensitive_key(k))
                .map(|(k, v)| (k.clone(), redact_value(k, v)))
                .collect(),
        ),
        _ => json!({}),
    }
}

/// `model_info` as listed: the stored or configured object with `id` and `db_model`.
fn listed_info(info: Value, id: &str, db_model: bool) -> Value {
    let mut m = match info {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    m.insert("id".into(), json!(id));
    m.insert("db_model".into(), json!(db_model));
    Value::Object(m)
}

/// The `/model/info` entry of a config deployment.
fn config_entry_info(e: &ModelEntry) -> Value {
    let params = serde_json::to_value(&e.litellm_params).unwrap_or_else(|_| json!({}));
    let info = serde_json::to_value(&e.model_info).unwrap_or_else(|_| json!({}));
    json!({
        "model_name": e.model_name,
        "litellm_params": public_params(&params),
        "model_info": listed_info(info, &e.deployment_id(), false),
    })
}

/// The `/model/info` entry of a stored deployment.
fn stored_info(row: &ProxyModel) -> Value {
    json!({
        "model_name": row.model_name,
        "litellm_params": public_params(&row.litellm_params),
        "model_info": listed_info(row.model_info.clone(), &row.model_id, true),
    })
}

/// The `/model/new` answer: LiteLLM returns the created `"LiteLLM_ProxyModelTable"` row; this
/// is that row with credentials removed.
fn stored_row(row: &ProxyModel) -> Value {
    let time = |t: Option<chrono::DateTime<Utc>>| {
        t.map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
    };
    json!({
        "model_id": row.model_id,
        "model_name": row.model_name,
        "litellm_params": public_params(&row.litellm_params),
        "model_info": listed_info(row.model_info.clone(), &row.model_id, true),
        "created_at": time(row.created_at),
        "created_by": row.created_by,
        "updated_at": time(row.updated_at),
        "updated_by": row.updated_by,
    })
}

/// `true`/`false` in LiteLLM's spellings (`True`, `1`, `yes`, ...); `None` otherwise.
fn parse_flag(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn new_body_becomes_a_row_and_an_entry() {
        let env = |k: &str| (k == "UP_KEY").then(|| "sk-from-env".to_owned());
        let s = parse_new(
            json!({
                "model_name": "g",
                "litellm_params": {"model": "openai/x", "api_base": "http://127.0.0.1:9/v1", "api_key": "os.environ/UP_KEY", "rpm": 3},
                "model_info": {"id": "my-id", "mode": "chat"},
            }),
            "admin-user",
            &env,
        )
        .unwrap();
        assert_eq!(s.row.model_id, "my-id");
        // stored as given (the reference, not the value)
        assert_eq!(s.row.litellm_params["api_key"], "os.environ/UP_KEY");
        assert_eq!(s.row.model_info, json!({"id": "my-id", "mode": "chat"}));
        assert_eq!(s.row.created_by.as_deref(), Some("admin-user"));
        let p = &s.entry.litellm_params;
        assert_eq!(p.api_key.as_ref().map(|k| k.expose()), Some("sk-from-env"));
        assert_eq!(p.rpm, Some(3));
        assert_eq!(s.entry.deployment_id(), "my-id");
        let out = stored_row(&s.row);
        assert_eq!(
            out["litellm_params"],
            json!({"model": "openai/x", "api_base": "http://127.0.0.1:9/v1", "rpm": 3})
        );
        assert_eq!(
            out["model_info"],
            json!({"id": "my-id", "mode": "chat", "db_model": true})
        );
        assert_eq!(out["model_id"], "my-id");
    }

    #[test]
    fn a_missing_id_gets_a_uuid() {
        let s = parse_new(
            json!({"model_name": "g", "litellm_params": {"model": "openai/x"}}),
            "a",
            &no_env,
        )
        .unwrap();
        assert_eq!(s.row.model_id.len(), 36);
        assert_eq!(s.row.model_info["id"], json!(s.row.model_id));
    }

    #[test]
    fn invalid_bodies_are_named() {
        let err = |body: Value| match parse_new(body, "a", &no_env) {
            Err(ModelChangeError::Invalid(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            err(json!({"litellm_params": {"model": "x"}})),
            "model_name is required"
        );
        assert_eq!(
            err(json!({"model_name": "g"})),
            "litellm_params is required: an object with `model`"
        );
        assert_eq!(
            err(json!({"model_name": "g", "litellm_params": {"api_base": "http://h"}})),
            "litellm_params.model is required"
        );
        assert_eq!(
            err(
                json!({"model_name": "g", "litellm_params": {"model": "openai/x", "api_base": "not a url"}})
            ),
            "litellm_params.api_base 'not a url' is not an http(s) URL"
        );
        assert_eq!(
            err(
                json!({"model_name": "g", "litellm_params": {"model": "openai/x", "api_base": "ftp://u:pw@h/x"}})
            ),
            "litellm_params.api_base 'ftp://u:****@h/x' is not an http(s) URL"
        );
        assert_eq!(
            err(
                json!({"model_name": "g", "litellm_params": {"model": "openai/x", "api_key": "os.environ/NOPE"}})
            ),
            "litellm_params.api_key: environment variable NOPE is not set"
        );
    }

    #[test]
    fn listings_never_carry_credentials() {
        let p = public_params(&json!({
            "model": "openai/x",
            "api_key": "sk-secret-value",
            "aws_secret_access_key": "abc",
            "vertex_credentials": {"k": 1},
            "extra_headers": {"Authorization": "Bearer sk-secret-value", "X-Team": "a"},
            "max_tokens": 5,
        }));
        assert_eq!(
            p,
            json!({
                "model": "openai/x",
                "extra_headers": {"Authorization": "****alue", "X-Team": "a"},
                "max_tokens": 5,
            })
        );
        let mut e = ModelEntry::new("g", "openai/x");
        e.litellm_params.api_key = Some(tollgate_config::Secret::new("sk-secret-value"));
        e.model_info.id = Some("cfg-1".into());
        assert_eq!(
            config_entry_info(&e),
            json!({
                "model_name": "g",
                "litellm_params": {"model": "openai/x"},
                "model_info": {"id": "cfg-1", "db_model": false},
            })
        );
    }
}
