//! The server's side of the management API seams: [`ServerAuthorize`] identifies callers with
//! the inference routes' credential rules, [`ConfigModels`] lists the configured deployments.

use std::sync::Arc;

use http::HeaderMap;
use serde_json::{Value, json};
use tollgate_admin::{AuthFailure, Authorize, Caller, ModelRegistry};
use tollgate_config::Config;
use tollgate_governance::runtime::Governance;

use crate::auth::{AuthError, Authenticator, Identity};

/// Callers of management routes: master key → admin; virtual keys → their principal.
pub struct ServerAuthorize {
    /// The authentication step shared with inference routes.
    pub auth: Arc<Authenticator>,
    /// The governance hub (virtual-key cache).
    pub gov: Arc<Governance>,
}

impl Authorize for ServerAuthorize {
    fn caller(&self, headers: &HeaderMap) -> Result<Caller, AuthFailure> {
        match self.auth.authenticate(headers, Some(&self.gov)) {
            Ok(Identity::Open | Identity::Master) => Ok(Caller::Admin),
            Ok(Identity::Key(p)) => Ok(Caller::Key(p)),
            Err(e) => Err(AuthFailure {
                status: 401,
                error_type: match &e {
                    AuthError::Key(k) => k.error_type(),
                    _ => "auth_error",
                },
                message: e.to_string(),
            }),
        }
    }
}

/// The deployments of the config, as `/model/info` lists them (credentials removed).
/// Models cannot be added or removed at runtime yet: `/model/new` and `/model/delete` answer
/// 400 saying so.
pub struct ConfigModels {
    entries: Vec<Value>,
}

impl ConfigModels {
    /// From the config's `model_list`.
    pub fn new(config: &Config) -> Self {
        let entries = config
            .model_list
            .iter()
            .map(|e| {
                let p = &e.litellm_params;
                let mut info = serde_json::to_value(&e.model_info).unwrap_or(json!({}));
                if let Value::Object(m) = &mut info {
                    m.insert("id".into(), json!(e.deployment_id()));
                    m.insert("db_model".into(), json!(false));
                }
                json!({
                    "model_name": e.model_name,
                    "litellm_params": {
                        "model": p.model,
                        "api_base": p.api_base,
                        "custom_llm_provider": p.provider(),
                        "rpm": p.rpm,
                        "tpm": p.tpm,
                        "timeout": p.timeout,
                        "stream_timeout": p.stream_timeout,
                        "input_cost_per_token": p.input_cost_per_token,
                        "output_cost_per_token": p.output_cost_per_token,
                    },
                    "model_info": info,
                })
            })
            .collect();
        Self { entries }
    }
}

impl ModelRegistry for ConfigModels {
    fn list(&self) -> Vec<Value> {
        self.entries.clone()
    }

    fn add(&self, _entry: Value) -> Result<Value, String> {
        Err("Adding models at runtime is not supported yet: add the deployment to config.yaml `model_list` and restart.".to_owned())
    }

    fn delete(&self, _id: &str) -> bool {
        false
    }
}

/// The management API's context for this server.
pub fn context(
    config: &Config,
    state: &crate::state::AppState,
    gate: &Arc<crate::gate::Gate>,
) -> Arc<tollgate_admin::AdminContext> {
    Arc::new(tollgate_admin::AdminContext {
        gov: Arc::clone(&gate.gov),
        auth: Arc::new(ServerAuthorize {
            auth: Arc::clone(&state.auth),
            gov: Arc::clone(&gate.gov),
        }),
        models: Arc::new(ConfigModels::new(config)),
        write_behind: Arc::clone(&gate.write_behind),
    })
}

/// The management API's context, as the server state holds it.
#[derive(Clone)]
pub struct AdminHandle(pub Arc<tollgate_admin::AdminContext>);

impl std::fmt::Debug for AdminHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminHandle")
    }
}
