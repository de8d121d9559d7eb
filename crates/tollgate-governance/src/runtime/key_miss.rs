//! A virtual key this replica's cache does not hold, looked up in the database.
//!
//! In a fleet, a key created through another replica reaches this one's cache through the
//! change feed, tens of milliseconds later; a client that creates a key and calls at once
//! through a load balancer would meet a 401 meanwhile. LiteLLM looks a key missing from its
//! cache up in the database (`get_key_object`, `litellm/proxy/auth/auth_checks.py`). Here,
//! once [`Governance::look_up_missing_keys`] is on (the server turns it on with the fleet's
//! identity feed):
//!
//! 1. a hash the database lacked a moment ago ([`ABSENT_FOR`]) is refused at once;
//! 2. at most [`LOOKUPS_PER_SECOND`] lookups per second go to the database, so a flood of
//!    random keys cannot turn into a flood of queries (beyond it a miss is refused, as before);
//! 3. one indexed `SELECT` asks whether the key's row exists; if it does, the cache is
//!    reloaded from the database (one reload at a time: requests waiting on it find the key
//!    the first one loaded) and the key resolved again, with everything it inherits.
//!
//! Only a miss pays for this; a key the cache holds is resolved as before, without an await.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Governance;
use super::principal::{KeyError, Principal};

/// How long a hash the database did not hold is refused without asking it again.
pub const ABSENT_FOR: Duration = Duration::from_secs(2);
/// Most absent hashes remembered.
const ABSENT_CAPACITY: u64 = 10_000;
/// Database lookups of missing keys allowed per second.
pub const LOOKUPS_PER_SECOND: u64 = 20;

/// The state of the lookups (see the module docs).
pub(super) struct KeyMisses {
    absent: moka::sync::Cache<String, ()>,
    reload: tokio::sync::Mutex<()>,
    started: Instant,
    /// `second << 32 | lookups in that second`, since `started`.
    window: AtomicU64,
}

impl KeyMisses {
    fn new() -> Self {
        Self {
            absent: moka::sync::Cache::builder()
                .max_capacity(ABSENT_CAPACITY)
                .time_to_live(ABSENT_FOR)
                .build(),
            reload: tokio::sync::Mutex::new(()),
            started: Instant::now(),
            window: AtomicU64::new(0),
        }
    }

    /// Takes one lookup of this second's allowance; false when it is spent.
    fn take_lookup(&self) -> bool {
        let second = self.started.elapsed().as_secs();
        let mut cur = self.window.load(Ordering::Relaxed);
        loop {
            let (s, n) = (cur >> 32, cur & 0xffff_ffff);
            let next = if s == second {
                if n >= LOOKUPS_PER_SECOND {
                    return false;
                }
                cur + 1
            } else {
                (second << 32) | 1
            };
            match self
                .window
                .compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => cur = seen,
            }
        }
    }
}

impl Governance {
    /// From now on, a key the cache does not hold is looked up in the database (see the
    /// module docs). Called once at start by a replica of a fleet; a second call changes
    /// nothing.
    pub fn look_up_missing_keys(&self) {
        let _ = self.misses.set(KeyMisses::new());
    }

    /// [`Self::principal`], and for a key the cache does not hold, when lookups are on, the
    /// database's answer (see the module docs).
    ///
    /// Errors: [`KeyError`] (all 401); a database that fails is logged and the key refused
    /// as not found, as without the lookup.
    pub async fn principal_or_lookup(&self, hash: &str) -> Result<Principal, KeyError> {
        match self.principal(hash) {
            Err(KeyError::NotFound(_)) => {}
            r => return r,
        }
        if self.load_missing_key(hash).await {
            self.principal(hash)
        } else {
            Err(KeyError::NotFound(hash.to_owned()))
        }
    }

    /// Whether the cache holds the key with hash `hash`, after looking it up in the database
    /// when it did not and lookups are on (see the module docs): what the management API asks
    /// before it acts on a key another replica created a moment ago. A database that fails
    /// is logged and answers false.
    pub async fn load_missing_key(&self, hash: &str) -> bool {
        let held = || self.cache.read().keys.contains_key(hash);
        if held() {
            return true;
        }
        let Some(m) = self.misses.get() else {
            return false;
        };
        if m.absent.contains_key(hash) || !m.take_lookup() {
            return false;
        }
        match self.store.key_exists(hash).await {
            Ok(true) => {}
            Ok(false) => {
                m.absent.insert(hash.to_owned(), ());
                return false;
            }
            Err(e) => {
                tracing::warn!(error = %e, "looking up a key missing from the cache failed");
                return false;
            }
        }
        // the reload may still lack the key (deleted meanwhile): ask the cache again
        self.reload_one_at_a_time(m, held, "a key found in the database")
            .await
            && held()
    }

    /// Reloads the identities from the database when lookups are on (see the module docs) and
    /// this second's allowance is not spent: what the management API does before it answers
    /// 404 for a key alias its cache does not hold, which may name a key another replica
    /// created a moment ago (an alias has no hash to ask the database about). Returns true when
    /// the cache was reloaded; a failing database is logged and answers false.
    pub async fn reload_for_missing_alias(&self) -> bool {
        let Some(m) = self.misses.get() else {
            return false;
        };
        if !m.take_lookup() {
            return false;
        }
        self.reload_one_at_a_time(m, || false, "a key alias missing from the cache")
            .await
    }

    /// One reload at a time: waits for one in progress, then reloads unless `done` (checked
    /// after the wait) says the one before already brought what is sought. True when `done`
    /// held or the reload succeeded; a failing reload is logged (`what` it was for) and false.
    async fn reload_one_at_a_time(
        &self,
        m: &KeyMisses,
        done: impl Fn() -> bool,
        what: &str,
    ) -> bool {
        let _one_reload = m.reload.lock().await;
        if done() {
            return true;
        }
        match self.reload_identities().await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(error = %e, "reloading identities for {what} failed");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_per_second_are_capped() {
        let m = KeyMisses::new();
        let granted = (0..LOOKUPS_PER_SECOND + 15)
            .filter(|_| m.take_lookup())
            .count() as u64;
        assert_eq!(granted, LOOKUPS_PER_SECOND);
        assert!(!m.take_lookup());
    }
}
