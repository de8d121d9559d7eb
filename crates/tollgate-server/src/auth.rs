//! The authentication step: credential header → [`Identity`].
//!
//! Credential headers are read in LiteLLM's order (`litellm/proxy/auth/user_api_key_auth.py`):
//! the custom header named by `general_settings.litellm_key_header_name` or
//! `x-litellm-api-key`, then `Authorization: Bearer`, then `api-key` (Azure SDKs), then
//! `x-api-key` (Anthropic SDKs). The master key is compared in constant time (on SHA-256
//! digests, so the comparison does not depend on the presented key's length either).
//!
//! A presented key that is not the master key is a virtual key: it must start with `sk-`
//! (LiteLLM refuses anything else, so a stored hash cannot be replayed as a key) and is looked
//! up by its hex SHA-256 in the governance cache ([`Governance::principal`]) — no database
//! access on the request path.

use http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tollgate_governance::runtime::{Governance, KeyError, Principal};
use tollgate_governance::store::hash_key;
use tollgate_protocol::ErrorEnvelope;

use crate::errors::GatewayFailure;

/// Who is calling.
#[derive(Debug, Clone)]
pub enum Identity {
    /// No master key is configured: every caller is let in (LiteLLM's no-auth dev mode).
    Open,
    /// The caller presented the master key (role `proxy_admin`).
    Master,
    /// A virtual key, with its team, user, budget tiers and organization.
    Key(Box<Principal>),
}

impl Identity {
    /// The virtual key's principal, if the caller is one.
    pub fn principal(&self) -> Option<&Principal> {
        match self {
            Identity::Key(p) => Some(p),
            _ => None,
        }
    }
}

/// Why authentication failed. Messages never include the presented key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AuthError {
    /// No credential header at all.
    #[error("Authentication Error, No api key passed in.")]
    Missing,
    /// `Authorization` without a recognised scheme.
    #[error("Authentication Error, Malformed API Key passed in. Ensure Key has `Bearer ` prefix.")]
    Malformed,
    /// A key that matches nothing.
    #[error("Authentication Error, Invalid API key provided.")]
    Invalid,
    /// A virtual key refused: unknown, not `sk-…`, blocked, expired.
    #[error("{0}")]
    Key(KeyError),
}

impl AuthError {
    /// The 401 error envelope ([`GatewayFailure::Auth`] decides it).
    pub fn envelope(&self) -> ErrorEnvelope {
        GatewayFailure::Auth(self.clone()).envelope()
    }
}

/// Authenticates requests.
#[derive(Debug)]
pub struct Authenticator {
    master_digest: Option<[u8; 32]>,
    custom_header: Option<http::HeaderName>,
}

impl Authenticator {
    /// `master_key`: the configured master key, if any; `custom_header`:
    /// `general_settings.litellm_key_header_name`.
    pub fn new(master_key: Option<&str>, custom_header: Option<&str>) -> Self {
        Self {
            master_digest: master_key.filter(|k| !k.is_empty()).map(digest),
            custom_header: custom_header.and_then(|h| http::HeaderName::try_from(h).ok()),
        }
    }

    /// `general_settings.litellm_key_header_name`, when set (a credential header too).
    pub fn custom_header(&self) -> Option<&http::HeaderName> {
        self.custom_header.as_ref()
    }

    /// Whether a master key is configured (and so every inference route needs a key).
    pub fn requires_key(&self) -> bool {
        self.master_digest.is_some()
    }

    /// Identifies the caller from the request headers: the master key, else a virtual key
    /// found in `gov`'s cache (when governance runs).
    ///
    /// Errors: [`AuthError`] (every variant is a 401; messages never carry the key).
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        gov: Option<&Governance>,
    ) -> Result<Identity, AuthError> {
        let Some(master) = &self.master_digest else {
            return Ok(Identity::Open);
        };
        let key = presented_key(headers, self.custom_header.as_ref())?;
        if bool::from(digest(key).ct_eq(master)) {
            return Ok(Identity::Master);
        }
        let Some(gov) = gov else {
            return Err(AuthError::Invalid);
        };
        if !key.starts_with("sk-") {
            return Err(AuthError::Key(KeyError::not_virtual(key)));
        }
        match gov.principal(&hash_key(key)) {
            Ok(p) => Ok(Identity::Key(Box::new(p))),
            Err(e) => Err(AuthError::Key(e)),
        }
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// The key presented by the caller, from the first credential header present.
pub fn presented_key<'h>(
    headers: &'h HeaderMap,
    custom: Option<&http::HeaderName>,
) -> Result<&'h str, AuthError> {
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let litellm = match custom {
        Some(h) => headers.get(h).and_then(|v| v.to_str().ok()),
        None => None,
    }
    .or_else(|| value("x-litellm-api-key"));
    if let Some(v) = litellm {
        let v = v.trim();
        return non_empty(strip_scheme(v).unwrap_or(v));
    }
    if let Some(v) = value("authorization") {
        return match strip_scheme(v.trim()) {
            Some(k) => non_empty(k),
            None => Err(AuthError::Malformed),
        };
    }
    if let Some(v) = value("api-key").or_else(|| value("x-api-key")) {
        return non_empty(v.trim());
    }
    Err(AuthError::Missing)
}

/// The credential after a `Bearer` or `Basic` scheme, matched without regard to case (RFC 9110
/// §11.1: the scheme is a case-insensitive token), e.g. `BEARER sk-1` gives `sk-1`.
fn strip_scheme(v: &str) -> Option<&str> {
    let (scheme, rest) = v.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("basic"))
        .then(|| rest.trim())
}

fn non_empty(k: &str) -> Result<&str, AuthError> {
    if k.is_empty() {
        Err(AuthError::Missing)
    } else {
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn every_credential_header_is_accepted() {
        let a = Authenticator::new(Some("sk-master"), None);
        for h in [
            headers(&[("authorization", "Bearer sk-master")]),
            headers(&[("x-api-key", "sk-master")]),
            headers(&[("api-key", "sk-master")]),
            headers(&[("x-litellm-api-key", "sk-master")]),
            headers(&[("x-litellm-api-key", "Bearer sk-master")]),
            // RFC 9110 §11.1: the scheme is case-insensitive.
            headers(&[("authorization", "BEARER sk-master")]),
            headers(&[("authorization", "bEaReR   sk-master")]),
            headers(&[("x-litellm-api-key", "BASIC sk-master")]),
        ] {
            assert!(
                matches!(a.authenticate(&h, None), Ok(Identity::Master)),
                "{h:?}"
            );
        }
    }

    #[test]
    fn failures_are_401_without_the_key() {
        let a = Authenticator::new(Some("sk-master"), None);
        assert_eq!(
            a.authenticate(&HeaderMap::new(), None).unwrap_err(),
            AuthError::Missing
        );
        assert_eq!(
            a.authenticate(&headers(&[("authorization", "sk-master")]), None)
                .unwrap_err(),
            AuthError::Malformed
        );
        assert_eq!(
            a.authenticate(&headers(&[("authorization", "Token sk-master")]), None)
                .unwrap_err(),
            AuthError::Malformed
        );
        let err = a
            .authenticate(
                &headers(&[("authorization", "Bearer sk-wrong-CANARY")]),
                None,
            )
            .unwrap_err();
        assert_eq!(err, AuthError::Invalid);
        let env = err.envelope();
        assert_eq!(env.status, 401);
        assert!(!env.message.contains("CANARY"));
    }

    #[test]
    fn custom_header_and_open_mode() {
        let a = Authenticator::new(Some("k"), Some("x-my-key"));
        assert!(matches!(
            a.authenticate(&headers(&[("x-my-key", "k")]), None),
            Ok(Identity::Master)
        ));
        let open = Authenticator::new(None, None);
        assert!(!open.requires_key());
        assert!(matches!(
            open.authenticate(&HeaderMap::new(), None),
            Ok(Identity::Open)
        ));
    }
}
