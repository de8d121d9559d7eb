//! How the management API accepts a UI session: [`SessionAuthorize`] turns the session cookie
//! into a [`Caller`] when the request carries no credential header, and [`csrf_guard`] refuses
//! a cookie-authenticated request that changes state without the session's CSRF token.
//!
//! A request with any credential header (`Authorization`, `x-litellm-api-key`, `api-key`,
//! `x-api-key`, the configured `litellm_key_header_name`) is authenticated by that header
//! alone, exactly as without the UI: the cookie is then ignored.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use http::{HeaderMap, HeaderName, Method};
use subtle::ConstantTimeEq;
use tollgate_admin::{ApiError, AuthFailure, Authorize, Caller};
use tollgate_governance::runtime::{Governance, Principal};
use tollgate_governance::store::VerificationToken;

use crate::cookie;
use crate::sessions::{Session, SessionUser, Sessions};

/// The header a cookie-authenticated state-changing request carries the CSRF token in.
pub const CSRF_HEADER: &str = "x-tollgate-csrf";

/// The credential headers of the gateway (`litellm/proxy/auth/user_api_key_auth.py`'s order
/// does not matter here: any of them present means "not a cookie request").
const CREDENTIAL_HEADERS: [&str; 4] =
    ["authorization", "x-litellm-api-key", "api-key", "x-api-key"];

/// Whether `headers` carry any credential header (the four above or `custom`).
pub fn has_credential(headers: &HeaderMap, custom: Option<&HeaderName>) -> bool {
    CREDENTIAL_HEADERS.iter().any(|h| headers.contains_key(*h))
        || custom.is_some_and(|h| headers.contains_key(h))
}

/// The live session a request without credential headers is authenticated by, if any.
pub fn request_session(
    sessions: &Sessions,
    headers: &HeaderMap,
    custom: Option<&HeaderName>,
) -> Option<Session> {
    if has_credential(headers, custom) {
        return None;
    }
    sessions.get(cookie::session_id(headers)?, Utc::now())
}

/// An [`Authorize`] that also accepts the UI's session cookie. Admin sessions are
/// [`Caller::Admin`]; a user's session is that user with no key of its own (its `user_role`
/// decides, as for the user's keys: `tollgate-admin`'s `access.rs`).
pub struct SessionAuthorize<A> {
    /// The credential-header authentication (the gateway's own).
    pub inner: A,
    /// The session table.
    pub sessions: Arc<Sessions>,
    /// The user rows.
    pub gov: Arc<Governance>,
    /// `general_settings.litellm_key_header_name`, when set.
    pub custom_header: Option<HeaderName>,
}

/// The 401 of a cookie whose session ended.
fn ended() -> AuthFailure {
    AuthFailure {
        status: 401,
        error_type: "auth_error",
        message: "Authentication Error, the admin UI session has ended (logged out or expired). Log in again.".to_owned(),
    }
}

impl<A: Authorize> Authorize for SessionAuthorize<A> {
    fn caller(&self, headers: &HeaderMap) -> Result<Caller, AuthFailure> {
        if has_credential(headers, self.custom_header.as_ref())
            || cookie::session_id(headers).is_none()
        {
            return self.inner.caller(headers);
        }
        let session = request_session(&self.sessions, headers, self.custom_header.as_ref())
            .ok_or_else(ended)?;
        match session.user {
            SessionUser::Admin { .. } => Ok(Caller::Admin),
            SessionUser::User { user_id } => user_caller(&self.gov, &user_id),
        }
    }
}

/// The caller of a user's session: the user, through a key row that exists only here
/// (`token` `ui-session:<user_id>`, never a stored hash, so it owns no key).
///
/// Errors: 401 when the user was deleted since the login.
pub fn user_caller(gov: &Governance, user_id: &str) -> Result<Caller, AuthFailure> {
    let user = gov
        .cache()
        .read()
        .users
        .get(user_id)
        .cloned()
        .ok_or_else(ended)?;
    Ok(Caller::Key(Box::new(Principal {
        key: Arc::new(VerificationToken {
            token: format!("ui-session:{user_id}"),
            user_id: Some(user_id.to_owned()),
            ..VerificationToken::default()
        }),
        key_tier: None,
        team: None,
        user: Some(user),
        membership: None,
        member_tier: None,
        organization: None,
        organization_tier: None,
    })))
}

/// What [`csrf_guard`] needs.
#[derive(Clone)]
pub struct CsrfState {
    /// The session table.
    pub sessions: Arc<Sessions>,
    /// `general_settings.litellm_key_header_name`, when set.
    pub custom_header: Option<HeaderName>,
}

/// Middleware for the management routes: a request that may change state (any method but
/// `GET`, `HEAD`, `OPTIONS`) authenticated by a live session cookie must carry the session's
/// CSRF token in [`CSRF_HEADER`], else it is refused with 403 `auth_error` before the route
/// runs. Requests with a credential header, safe methods, and cookies of no live session (the
/// route then answers 401) pass unchanged.
pub async fn csrf_guard(State(st): State<CsrfState>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let Some(session) = request_session(&st.sessions, req.headers(), st.custom_header.as_ref())
    else {
        return next.run(req).await;
    };
    let sent = req
        .headers()
        .get(CSRF_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if bool::from(sent.ct_eq(session.csrf.as_bytes())) {
        return next.run(req).await;
    }
    ApiError::forbidden(format!(
        "CSRF check failed: a request authenticated by the admin UI session cookie that changes state must carry the {CSRF_HEADER} header with the csrf_token the login answered. Route={}",
        req.uri().path()
    ))
    .into_response()
}
