//! Who may address a stored Response (`GET /v1/responses/{id}`, `previous_response_id`).
//!
//! A Response belongs to the caller that created it ([`ResponseOwner`]). Another caller gets
//! exactly the answer an unknown id gets (404 `previous_response_not_found`, or "Response with
//! id '…' not found."), so an id cannot be probed for existence. The rule:
//!
//! - the master key, a key whose user has `user_role: proxy_admin`, and every caller in
//!   no-auth mode (no master key: one tenant) may address every Response, including ids the
//!   gateway does not hold (a passthrough upstream may know them);
//! - a virtual key may address the Responses it created, and those of another key of the same
//!   internal user in the same team (LiteLLM's rule: its response ids carry the creator's
//!   `user_id` and `team_id`, `litellm/proxy/hooks/responses_id_security.py`). A key without a
//!   user shares with no other key;
//! - a Response created with the master key is the admins' alone;
//! - a virtual key addressing an id the gateway does not hold (never seen, or expired from the
//!   store) gets the 404 too, also toward an upstream that stores Responses itself: the gateway
//!   cannot tell whose it is (LiteLLM refuses such "unmanaged" ids for non-admins as well).
//!
//! OpenAI scopes stored Responses to the project; behind a gateway every key shares the
//! deployment's project, so the gateway keeps the boundary per key.

use serde_json::Value;

use crate::auth::Identity;
use crate::errors::{GatewayError, GatewayFailure};
use crate::request::{Endpoint, ParsedRequest};
use crate::response_store::ResponseStore;

/// The creator of a stored Response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseOwner {
    /// Created with the master key, or in no-auth mode: admins only.
    Admin,
    /// Created with a virtual key.
    Key {
        /// The key's hash (`"LiteLLM_VerificationToken".token`).
        key_hash: String,
        /// The key's internal user, if any.
        user_id: Option<String>,
        /// The key's team, if any.
        team_id: Option<String>,
    },
}

impl ResponseOwner {
    /// The owner a Response created by `identity` gets.
    pub fn of(identity: &Identity) -> ResponseOwner {
        match identity.principal() {
            None => ResponseOwner::Admin,
            Some(p) => ResponseOwner::Key {
                key_hash: p.key.token.clone(),
                user_id: p.key.user_id.clone(),
                team_id: p.key.team_id.clone(),
            },
        }
    }

    /// Whether `identity` may read or continue a Response of this owner (see the module docs).
    pub fn admits(&self, identity: &Identity) -> bool {
        let Some(p) = identity.principal() else {
            // The master key, or no-auth mode.
            return true;
        };
        if is_proxy_admin(identity) {
            return true;
        }
        match self {
            ResponseOwner::Admin => false,
            ResponseOwner::Key {
                key_hash,
                user_id,
                team_id,
            } => {
                *key_hash == p.key.token
                    || (user_id.is_some() && *user_id == p.key.user_id && *team_id == p.key.team_id)
            }
        }
    }
}

/// Whether `identity` reads every Response: the master key, no-auth mode, or a key whose user
/// is a `proxy_admin`.
pub fn is_proxy_admin(identity: &Identity) -> bool {
    match identity {
        Identity::Open | Identity::Master => true,
        Identity::Key(p) => p
            .user
            .as_ref()
            .is_some_and(|u| u.user_role.as_deref() == Some("proxy_admin")),
    }
}

/// 404 for a `previous_response_id` the caller may not continue: unknown, expired, or another
/// caller's (OpenAI's error for an unknown id, word for word).
pub fn previous_not_found(id: &str) -> GatewayError {
    GatewayFailure::PreviousResponseNotFound { id }.into()
}

/// 404 for `GET /v1/responses/{id}` the caller may not read, the same as for an unknown id.
pub fn response_not_found(id: &str) -> GatewayError {
    GatewayFailure::ResponseNotFound { id }.into()
}

/// Refuses, before any routing, a `/v1/responses` request whose `previous_response_id` the
/// caller may not continue (see the module docs); every other request passes at the cost of
/// one endpoint comparison (and, on `/v1/responses`, one lookup of a top-level key).
///
/// Errors: [`previous_not_found`].
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
pub fn check_previous(
    store: &dyn ResponseStore,
    endpoint: Endpoint,
    identity: &Identity,
    req: &ParsedRequest<'_>,
) -> Result<(), GatewayError> {
    if endpoint != Endpoint::Responses || is_proxy_admin(identity) {
        return Ok(());
    }
    let Some(raw) = req.body.get("previous_response_id") else {
        return Ok(());
    };
    // Not a string (null, a number): the translation or the upstream refuses it as it would.
    let Ok(Value::String(id)) = serde_json::from_str::<Value>(raw.get()) else {
        return Ok(());
    };
    match store.get(&id) {
        Some(e) if e.owner.admits(identity) => Ok(()),
        _ => Err(previous_not_found(&id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tollgate_governance::runtime::Principal;
    use tollgate_governance::store::{User, VerificationToken};

    fn key(hash: &str, user: Option<&str>, team: Option<&str>, role: Option<&str>) -> Identity {
        Identity::Key(Box::new(Principal {
            key: Arc::new(VerificationToken {
                token: hash.into(),
                user_id: user.map(Into::into),
                team_id: team.map(Into::into),
                ..Default::default()
            }),
            key_tier: None,
            team: None,
            user: role.map(|r| {
                Arc::new(User {
                    user_id: user.unwrap_or_default().into(),
                    user_role: Some(r.into()),
                    ..Default::default()
                })
            }),
            membership: None,
            member_tier: None,
            organization: None,
            organization_tier: None,
        }))
    }

    #[test]
    fn a_key_reads_its_own_and_its_user_s_responses_only() {
        let a = key("hash-a", Some("u1"), Some("t1"), None);
        let owner = ResponseOwner::of(&a);
        assert!(owner.admits(&a));
        // Another key of the same user in the same team: LiteLLM's scope.
        assert!(owner.admits(&key("hash-a2", Some("u1"), Some("t1"), None)));
        for other in [
            key("hash-b", None, None, None),
            key("hash-c", Some("u2"), Some("t1"), None),
            key("hash-d", Some("u1"), Some("t2"), None),
            key("hash-e", Some("u1"), None, None),
            key("hash-f", None, Some("t1"), None),
            key("hash-g", Some("u3"), None, Some("proxy_admin_viewer")),
        ] {
            assert!(!owner.admits(&other), "{other:?}");
        }
        // A key without a user shares with nobody, not even keys without a user.
        let lone = ResponseOwner::of(&key("hash-l", None, None, None));
        assert!(!lone.admits(&key("hash-m", None, None, None)));
        assert!(lone.admits(&key("hash-l", None, None, None)));
    }

    #[test]
    fn admins_read_everything_and_admin_responses_are_theirs() {
        let admin_key = key("hash-x", Some("boss"), None, Some("proxy_admin"));
        let owner = ResponseOwner::of(&key("hash-a", Some("u1"), None, None));
        for admin in [Identity::Master, Identity::Open, admin_key] {
            assert!(owner.admits(&admin));
            assert!(ResponseOwner::Admin.admits(&admin));
        }
        assert_eq!(ResponseOwner::of(&Identity::Master), ResponseOwner::Admin);
        assert!(!ResponseOwner::Admin.admits(&key("hash-a", Some("u1"), None, None)));
    }
}
