//! Admin UI sessions, kept in this process's memory: an opaque random id (the cookie's value)
//! → who logged in, the CSRF token the login answered with, and the expiry.
//!
//! Only the id's SHA-256 is kept as the map key, so a memory dump shows no usable cookie.
//! Sessions live as long as the process (a restart logs everyone out) and belong to the
//! replica that created them: a fleet behind a load balancer needs sticky sessions for the UI.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// How long a session lasts: 24 hours, the `duration` of the key LiteLLM's `/login` creates
/// for a UI session (`litellm/proxy/auth/login_utils.py`).
pub const SESSION_TTL: Duration = Duration::hours(24);

/// The most sessions kept at once; a login beyond it ends the session closest to expiry.
pub const MAX_SESSIONS: usize = 10_000;

/// Who a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionUser {
    /// Logged in with the master key or `UI_USERNAME` / `UI_PASSWORD`: `proxy_admin`, as the
    /// master key. `name` is what the UI shows (`UI_USERNAME`, or `admin`).
    Admin {
        /// Display name.
        name: String,
    },
    /// An internal user who logged in with their password: their `user_role` decides.
    User {
        /// `"LiteLLM_UserTable".user_id`.
        user_id: String,
    },
}

/// One live session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Who.
    pub user: SessionUser,
    /// The value a state-changing request authenticated by this session must carry in
    /// `x-tollgate-csrf` (64 hex characters).
    pub csrf: String,
    /// When it ends.
    pub expires: DateTime<Utc>,
}

/// The session table.
#[derive(Debug, Default)]
pub struct Sessions {
    by_digest: Mutex<HashMap<[u8; 32], Session>>,
}

/// 32 random bytes as 64 lowercase hex characters (from the thread-local CSPRNG).
fn random_token() -> String {
    let mut b = [0u8; 32];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

impl Sessions {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a session for `user` at `now`, lasting [`SESSION_TTL`]; returns its id (the
    /// cookie value, 64 hex characters) and the session. Expired sessions are dropped first.
    pub fn create(&self, user: SessionUser, now: DateTime<Utc>) -> (String, Session) {
        let id = random_token();
        let session = Session {
            user,
            csrf: random_token(),
            expires: now + SESSION_TTL,
        };
        let mut map = self
            .by_digest
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, s| s.expires > now);
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| *k)
        {
            map.remove(&oldest);
        }
        map.insert(digest(&id), session.clone());
        (id, session)
    }

    /// The live session with this id at `now` (`None` when unknown, ended or expired).
    pub fn get(&self, id: &str, now: DateTime<Utc>) -> Option<Session> {
        let map = self
            .by_digest
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.get(&digest(id)).filter(|s| s.expires > now).cloned()
    }

    /// Ends the session with this id; returns whether there was one.
    pub fn end(&self, id: &str) -> bool {
        let mut map = self
            .by_digest
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.remove(&digest(id)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_lives_until_its_expiry_or_its_end() {
        let s = Sessions::new();
        let t0 = Utc::now();
        let (id, made) = s.create(
            SessionUser::User {
                user_id: "u1".into(),
            },
            t0,
        );
        assert_eq!(id.len(), 64);
        assert_eq!(made.csrf.len(), 64);
        assert_ne!(id, made.csrf);
        assert_eq!(made.expires, t0 + Duration::hours(24));
        assert_eq!(s.get(&id, t0 + Duration::hours(23)), Some(made));
        assert_eq!(s.get(&id, t0 + Duration::hours(24)), None);
        assert_eq!(s.get("not-an-id", t0), None);
        assert!(s.end(&id));
        assert!(!s.end(&id));
        assert_eq!(s.get(&id, t0), None);
    }

    #[test]
    fn logins_beyond_the_cap_end_the_session_closest_to_expiry() {
        let s = Sessions::new();
        let t0 = Utc::now();
        let admin = || SessionUser::Admin { name: "a".into() };
        let (first, _) = s.create(admin(), t0);
        for i in 1..MAX_SESSIONS {
            s.create(admin(), t0 + Duration::milliseconds(i as i64));
        }
        assert!(s.get(&first, t0).is_some());
        let (last, _) = s.create(admin(), t0 + Duration::seconds(20));
        assert_eq!(s.get(&first, t0), None);
        assert!(s.get(&last, t0).is_some());
    }
}
