//! The server's side of the management API seams: [`ServerAuthorize`] identifies callers with
//! the inference routes' credential rules; [`ModelCatalog`]
//! lists the deployments and adds or deletes stored ones.

use std::sync::Arc;

use http::HeaderMap;
use tollgate_admin::{AuthFailure, Authorize, Caller};
use tollgate_config::LoadedConfig;
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::SecretBox;

use crate::auth::{Authenticator, Identity};
use crate::errors::GatewayFailure;
use crate::gate::models::ModelCatalog;
use crate::gate::{Gate, GateError};
use crate::state::{AppState, EnvLookup};

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
            Err(e) => Err(GatewayFailure::management_auth(e)),
        }
    }
}

/// What [`context`] builds: the management API's context and the admin UI sharing its
/// session table.
pub struct Admin {
    /// The management API's context.
    pub ctx: Arc<tollgate_admin::AdminContext>,
    /// The admin UI.
    pub ui: UiHandle,
}

/// The admin UI as the server state holds it: its routes' state and the management API's
/// CSRF check.
#[derive(Clone)]
pub struct UiHandle {
    /// The UI routes' state.
    pub ui: Arc<tollgate_ui::Ui>,
    /// The CSRF check in front of the management routes.
    pub csrf: tollgate_ui::CsrfState,
}

impl std::fmt::Debug for UiHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UiHandle")
    }
}

/// The management API's context for this server, and the admin UI: callers are identified by
/// their credential header, else by the UI's session cookie ([`tollgate_ui::SessionAuthorize`]);
/// the UI's admin login is the master key or `UI_USERNAME` / `UI_PASSWORD` from `env`. Loads the deployments stored in
/// `"LiteLLM_ProxyModelTable"` and swaps the router to include them, so they are callable from
/// the first request. Stored credentials are decrypted with `sha256(LITELLM_SALT_KEY)`, else
/// `sha256(master key)`, as LiteLLM does.
///
/// Errors: [`GateError`] when the stored models cannot be read.
pub async fn context(
    loaded: &LoadedConfig,
    state: &AppState,
    gate: &Arc<Gate>,
    env: Arc<EnvLookup>,
) -> Result<Admin, GateError> {
    let (ui_username, ui_password) = (env("UI_USERNAME"), env("UI_PASSWORD"));
    let salt = env("LITELLM_SALT_KEY")
        .filter(|s| !s.is_empty())
        .or_else(|| loaded.master_key.as_ref().map(|k| k.expose().to_owned()))
        .unwrap_or_default();
    let models = Arc::new(ModelCatalog::new(
        Arc::new(loaded.config.clone()),
        env,
        Arc::clone(&state.router),
        Arc::clone(gate),
        SecretBox::from_salt(&salt),
    ));
    let n = models.load().await?;
    if n > 0 {
        tracing::info!(
            deployments = n,
            "deployments loaded from LiteLLM_ProxyModelTable"
        );
    }
    let sessions = Arc::new(tollgate_ui::Sessions::new());
    let custom_header = state.auth.custom_header().cloned();
    let master = loaded.master_key.as_ref().map(|k| k.expose());
    let ui = Arc::new(tollgate_ui::Ui {
        sessions: Arc::clone(&sessions),
        gov: Arc::clone(&gate.gov),
        login: tollgate_ui::LoginConfig::new(
            master,
            ui_username.as_deref(),
            ui_password.as_deref(),
        ),
    });
    let ctx = Arc::new(tollgate_admin::AdminContext {
        gov: Arc::clone(&gate.gov),
        auth: Arc::new(tollgate_ui::SessionAuthorize {
            inner: ServerAuthorize {
                auth: Arc::clone(&state.auth),
                gov: Arc::clone(&gate.gov),
            },
            sessions: Arc::clone(&sessions),
            gov: Arc::clone(&gate.gov),
            custom_header: custom_header.clone(),
        }),
        models,
        write_behind: Arc::clone(&gate.write_behind),
    });
    let csrf = tollgate_ui::CsrfState {
        sessions,
        custom_header,
    };
    Ok(Admin {
        ctx,
        ui: UiHandle { ui, csrf },
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
