//! `POST /ui/api/login`, `POST /ui/api/logout`, `GET /ui/api/session`: the UI's session
//! routes. Logins (`litellm/proxy/auth/login_utils.py`'s rules):
//!
//! - `{"master_key": "<key>"}`: the master key → `proxy_admin`;
//! - `{"username", "password"}` equal to `UI_USERNAME` (default `admin`) and `UI_PASSWORD`
//!   (default: the master key) → `proxy_admin`;
//! - `{"username": <user_email or user_id>, "password"}` of an internal user whose stored
//!   password hash (hex SHA-256, LiteLLM's `hash_token`) matches → that user, with their
//!   `user_role`. Unlike LiteLLM, the stored value itself is never accepted as the password.
//!
//! Every comparison is made on SHA-256 digests in constant time. Neither a password nor a
//! session id is ever logged.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{SecondsFormat, Utc};
use http::header::SET_COOKIE;
use http::{HeaderMap, StatusCode, Uri};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tollgate_admin::ApiError;
use tollgate_governance::store::hash_key;

use crate::auth::CSRF_HEADER;
use crate::sessions::{SESSION_TTL, Session, SessionUser};
use crate::{Ui, cookie};

/// Who may log in as an admin.
#[derive(Debug, Clone)]
pub struct LoginConfig {
    master: Option<[u8; 32]>,
    username: String,
    password: Option<[u8; 32]>,
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    bool::from(a.ct_eq(b))
}

impl LoginConfig {
    /// From the master key and the `UI_USERNAME` / `UI_PASSWORD` environment variables (empty
    /// values count as unset): the username defaults to `admin`, the password to the master key.
    pub fn new(
        master_key: Option<&str>,
        ui_username: Option<&str>,
        ui_password: Option<&str>,
    ) -> Self {
        let master_key = master_key.filter(|k| !k.is_empty());
        Self {
            master: master_key.map(digest),
            username: ui_username
                .filter(|u| !u.is_empty())
                .unwrap_or("admin")
                .to_owned(),
            password: ui_password
                .filter(|p| !p.is_empty())
                .or(master_key)
                .map(digest),
        }
    }
}

/// The login body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoginBody {
    master_key: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// The session routes.
pub(crate) fn routes() -> Router<Arc<Ui>> {
    Router::new()
        .route("/ui/api/login", post(login))
        .route("/ui/api/logout", post(logout))
        .route("/ui/api/session", get(session))
}

/// The 401 of a failed login (LiteLLM's words, plus what may be used).
fn invalid() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "auth_error",
        "Invalid credentials used to access UI. Use the master key, UI_USERNAME and UI_PASSWORD, or an internal user's e-mail (or user_id) and password.",
    )
}

/// Who `body` logs in as, or why not. Errors: 400 (neither a master key nor a username and
/// password), 401 (no match).
fn check(ui: &Ui, body: &LoginBody) -> Result<SessionUser, ApiError> {
    let cfg = &ui.login;
    if let Some(k) = &body.master_key {
        return match &cfg.master {
            Some(m) if same(m, &digest(k)) => Ok(SessionUser::Admin {
                name: "admin".to_owned(),
            }),
            _ => Err(invalid()),
        };
    }
    let (Some(name), Some(pw)) = (&body.username, &body.password) else {
        return Err(ApiError::bad_request(
            "send {\"master_key\"} or {\"username\", \"password\"}",
        ));
    };
    if let Some(p) = &cfg.password
        && same(&digest(&cfg.username), &digest(name))
        && same(p, &digest(pw))
    {
        return Ok(SessionUser::Admin {
            name: cfg.username.clone(),
        });
    }
    let given = hash_key(pw);
    let e = ui.gov.cache().read();
    e.users
        .values()
        .filter(|u| u.user_email.as_deref() == Some(name) || u.user_id == *name)
        .find(|u| {
            u.password
                .as_deref()
                .is_some_and(|h| bool::from(h.as_bytes().ct_eq(given.as_bytes())))
        })
        .map(|u| SessionUser::User {
            user_id: u.user_id.clone(),
        })
        .ok_or_else(invalid)
}

/// The session as the UI reads it: `{"user_id", "user_role", "csrf_token", "expires_at"}`;
/// `None` for a user's session whose user was deleted since.
fn describe(ui: &Ui, s: &Session) -> Option<Value> {
    let (user_id, role) = match &s.user {
        SessionUser::Admin { name } => (name.clone(), "proxy_admin".to_owned()),
        SessionUser::User { user_id } => {
            let e = ui.gov.cache().read();
            let user = e.users.get(user_id)?;
            let role = user.user_role.clone();
            (
                user_id.clone(),
                role.unwrap_or_else(|| "internal_user".to_owned()),
            )
        }
    };
    Some(json!({
        "user_id": user_id,
        "user_role": role,
        "csrf_token": s.csrf,
        "expires_at": s.expires.to_rfc3339_opts(SecondsFormat::Secs, true),
    }))
}

/// Whether the request says its body is JSON. A page of another site can post a form to the
/// login (`text/plain` bodies can be made to parse as JSON) but cannot send this type without
/// the browser asking this origin first (CORS), which Tollgate never allows: so no other site
/// can log a visitor into a session of its choosing.
fn json_body(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// `POST /ui/api/login`: 200 with the session ([`describe`]) and its cookie. Errors: 400, 401,
/// 415 (a body not sent as `application/json`).
async fn login(State(ui): State<Arc<Ui>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    if !json_body(&headers) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "bad_request_error",
            "The login body must be JSON, sent with content-type: application/json.",
        )
        .into_response();
    }
    let parsed: LoginBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return ApiError::bad_request(format!("invalid login body: {e}")).into_response(),
    };
    let user = match check(&ui, &parsed) {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!("admin UI login refused");
            return e.into_response();
        }
    };
    let (id, s) = ui.sessions.create(user, Utc::now());
    match &s.user {
        SessionUser::Admin { name } => tracing::info!(user = %name, "admin UI login"),
        SessionUser::User { user_id } => tracing::info!(user_id = %user_id, "admin UI login"),
    }
    let Some(v) = describe(&ui, &s) else {
        // The user was deleted between the check and now.
        ui.sessions.end(&id);
        return invalid().into_response();
    };
    let mut resp = Json(v).into_response();
    if let Some(v) = cookie::set(
        &id,
        SESSION_TTL.num_seconds(),
        cookie::over_tls(&uri, &headers),
    ) {
        resp.headers_mut().insert(SET_COOKIE, v);
    }
    resp
}

/// `GET /ui/api/session`: the session of the request's cookie ([`describe`]). Errors: 401 (no
/// live session, or its user was deleted: the session is then ended).
async fn session(State(ui): State<Arc<Ui>>, headers: HeaderMap) -> Response {
    let id = cookie::session_id(&headers);
    let live = id.and_then(|id| ui.sessions.get(id, Utc::now()));
    match live.as_ref().and_then(|s| describe(&ui, s)) {
        Some(v) => Json(v).into_response(),
        None => {
            if let (Some(id), Some(_)) = (id, live) {
                ui.sessions.end(id);
            }
            ApiError::new(StatusCode::UNAUTHORIZED, "auth_error", "Not logged in.").into_response()
        }
    }
}

/// `POST /ui/api/logout`: ends the cookie's session (it is refused from then on) and clears
/// the cookie; `{"logged_out": true}`. With a live session the request must carry its
/// [`CSRF_HEADER`] (403 otherwise), as every state change does.
async fn logout(State(ui): State<Arc<Ui>>, uri: Uri, headers: HeaderMap) -> Response {
    if let Some(id) = cookie::session_id(&headers)
        && let Some(s) = ui.sessions.get(id, Utc::now())
    {
        let sent = headers
            .get(CSRF_HEADER)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if !bool::from(sent.ct_eq(s.csrf.as_bytes())) {
            return ApiError::forbidden(format!(
                "CSRF check failed: logout needs the {CSRF_HEADER} header. Route=/ui/api/logout"
            ))
            .into_response();
        }
        ui.sessions.end(id);
    }
    let mut resp = Json(json!({"logged_out": true})).into_response();
    resp.headers_mut()
        .insert(SET_COOKIE, cookie::clear(cookie::over_tls(&uri, &headers)));
    resp
}
