//! Who may call which management route (LiteLLM's `LitellmUserRoles`, litellm-surface §4.2):
//!
//! | caller | may |
//! |---|---|
//! | master key ([`Caller::Admin`]), or a key whose user has `user_role: proxy_admin` | everything |
//! | a key whose user is `proxy_admin_viewer` | every read route (info, list, spend, model info) |
//! | any other key (`internal_user`, `internal_user_viewer`, `team`, `customer`, no user) | `GET /key/info` of itself and of its user's keys, `/key/list` of its user's keys, `/user/info` of its user, `/team/info` of its team, `/spend/logs` of itself, `/model/info` of the models it may call |
//!
//! The admin UI's session of an internal user is that user with no key of its own
//! (`tollgate-ui`'s `auth.rs`): its `user_role` decides, as for the user's keys.
//!
//! Anything else is 403 `auth_error`; an unauthenticated caller gets the [`AuthFailure`]'s
//! status (401).

use http::HeaderMap;
use tollgate_governance::runtime::Principal;

use crate::error::{ApiError, ApiResult};
use crate::{AdminContext, Caller};

/// The caller's rights on management routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `proxy_admin` (or the master key): everything.
    Admin,
    /// `proxy_admin_viewer`: every read route.
    Viewer,
    /// Anyone else: reads of what is its own.
    Member,
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    /// Rights.
    pub role: Role,
    /// The calling key, unless the master key called.
    pub principal: Option<Box<Principal>>,
}

impl Who {
    /// `created_by` / `updated_by` / `deleted_by` value: the caller's user id, else its key
    /// hash, else `litellm-proxy-master-key` (never a key).
    pub fn actor(&self) -> String {
        match &self.principal {
            None => "litellm-proxy-master-key".to_owned(),
            Some(p) => p.key.user_id.clone().unwrap_or_else(|| p.key.token.clone()),
        }
    }

    /// True for admins and viewers (may read anything).
    pub fn reads_all(&self) -> bool {
        matches!(self.role, Role::Admin | Role::Viewer)
    }

    /// The role name used in refusals.
    fn role_name(&self) -> String {
        match &self.principal {
            None => "proxy_admin".to_owned(),
            Some(p) => p
                .user
                .as_ref()
                .and_then(|u| u.user_role.clone())
                .unwrap_or_else(|| "internal_user".to_owned()),
        }
    }
}

/// Identifies the caller. Errors: the [`crate::AuthFailure`] (401).
pub(crate) fn who(ctx: &AdminContext, headers: &HeaderMap) -> ApiResult<Who> {
    match ctx.auth.caller(headers).map_err(ApiError::auth)? {
        Caller::Admin => Ok(Who {
            role: Role::Admin,
            principal: None,
        }),
        Caller::Key(p) => {
            let role = match p.user.as_ref().and_then(|u| u.user_role.as_deref()) {
                Some("proxy_admin") => Role::Admin,
                Some("proxy_admin_viewer") => Role::Viewer,
                _ => Role::Member,
            };
            Ok(Who {
                role,
                principal: Some(p),
            })
        }
    }
}

/// The caller, who must be an admin. Errors: 401, 403.
pub(crate) fn admin(ctx: &AdminContext, headers: &HeaderMap, route: &str) -> ApiResult<Who> {
    let w = who(ctx, headers)?;
    if w.role == Role::Admin {
        Ok(w)
    } else {
        Err(denied(&w, route))
    }
}

/// The caller, who must be an admin or a viewer. Errors: 401, 403.
pub(crate) fn reader(ctx: &AdminContext, headers: &HeaderMap, route: &str) -> ApiResult<Who> {
    let w = who(ctx, headers)?;
    if w.reads_all() {
        Ok(w)
    } else {
        Err(denied(&w, route))
    }
}

/// 403 for `route` (LiteLLM's wording, without the key).
pub(crate) fn denied(w: &Who, route: &str) -> ApiError {
    ApiError::forbidden(format!(
        "Only proxy admin can be used to generate, delete, update info for new keys/users/teams. Route={route}. Your role={}",
        w.role_name()
    ))
}
