//! # tollgate-ui
//!
//! The admin UI (issue 25): a framework-free front end (HTML, CSS and ES modules, no build
//! step) embedded in the binary and served at `/ui/`, and the login sessions it runs on.
//!
//! Everything the UI shows or changes goes through the public management API
//! (`tollgate-admin`): the session cookie is one more way to authenticate there, with the
//! session's role, so every call the UI makes is one a script could make with a key.
//!
//! | file | job |
//! |---|---|
//! | `assets.rs` | the embedded files: content types, `ETag`, `Cache-Control`, CSP |
//! | `login.rs` | `POST /ui/api/login`, `POST /ui/api/logout`, `GET /ui/api/session` |
//! | `sessions.rs` | the session table (random ids, expiry, CSRF tokens) |
//! | `cookie.rs` | the session cookie's attributes |
//! | `auth.rs` | the management API's side: [`SessionAuthorize`], [`csrf_guard`] |

mod assets;
mod auth;
mod cookie;
mod login;
mod sessions;

use std::sync::Arc;

use tollgate_governance::runtime::Governance;

pub use assets::{ASSETS, Asset, CSP};
pub use auth::{
    CSRF_HEADER, CsrfState, SessionAuthorize, csrf_guard, has_credential, request_session,
    user_caller,
};
pub use cookie::NAME as COOKIE_NAME;
pub use login::LoginConfig;
pub use sessions::{MAX_SESSIONS, SESSION_TTL, Session, SessionUser, Sessions};

/// What the UI routes work on.
pub struct Ui {
    /// The session table (shared with [`SessionAuthorize`] and [`csrf_guard`]).
    pub sessions: Arc<Sessions>,
    /// The internal users (login by password, roles).
    pub gov: Arc<Governance>,
    /// Who may log in as an admin.
    pub login: LoginConfig,
}

/// The UI's routes: the files at `/ui`, `/ui/`, `/ui/{*path}` and the session routes at
/// `/ui/api/*` (axum 0.8). The server merges it beside the management API.
pub fn router(ui: Arc<Ui>) -> axum::Router {
    axum::Router::new()
        .merge(login::routes())
        .merge(assets::routes())
        .with_state(ui)
}

/// `router` (the management API's) with [`csrf_guard`] in front of each of its routes.
pub fn protect(router: axum::Router, state: CsrfState) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(state, csrf_guard))
}
