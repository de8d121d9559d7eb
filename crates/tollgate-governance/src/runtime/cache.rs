//! [`IdentityCache`]: every governance entity, in process, keyed the way the request path and
//! the management API look them up. Filled once from [`crate::store::GovernanceStore::load`];
//! management writes go to the store first, then here, so a change is in force on the next
//! request. Reads take a shared lock for a few hash lookups; no lock is held across an
//! await.
//!
//! In a fleet, changes other replicas wrote arrive as a whole fresh [`Entities`] read from the
//! database ([`IdentityCache::replace`], driven by the change feed and the periodic reconcile,
//! `feed_apply.rs`). Two things make that swap safe against what only this replica knows:
//!
//! - end users first seen in this replica's traffic ([`IdentityCache::note_end_user`]) whose
//!   row is not written yet are kept until the database has them;
//! - every management write here ([`IdentityCache::update`]) bumps a generation
//!   ([`IdentityCache::generation`]); a load that started before a local write ended may miss
//!   it, so the refresher loads again instead of swapping it in
//!   ([`super::Governance::reload_identities`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use crate::store::{
    BudgetTier, EndUser, Organization, Snapshot, Tag, Team, TeamMembership, User, VerificationToken,
};

/// The cached entities. Spend fields in these rows are the values at load/write time; live
/// spend is in the admission counters ([`crate::admission::Admission::spend`]).
#[derive(Debug, Default)]
pub struct Entities {
    /// Virtual keys by `token` (hex SHA-256 of the key).
    pub keys: HashMap<String, Arc<VerificationToken>>,
    /// Teams by `team_id`.
    pub teams: HashMap<String, Arc<Team>>,
    /// Internal users by `user_id`.
    pub users: HashMap<String, Arc<User>>,
    /// End users by `user_id` (the request's `user` / `x-litellm-end-user-id`).
    pub end_users: HashMap<String, Arc<EndUser>>,
    /// Budget tiers by `budget_id`.
    pub budgets: HashMap<String, Arc<BudgetTier>>,
    /// Team memberships by `(team_id, user_id)`.
    pub memberships: HashMap<(String, String), Arc<TeamMembership>>,
    /// Organizations by `organization_id`.
    pub organizations: HashMap<String, Arc<Organization>>,
    /// Tags by `tag_name`.
    pub tags: HashMap<String, Arc<Tag>>,
}

impl Entities {
    /// Indexes a snapshot.
    pub fn from_snapshot(s: Snapshot) -> Self {
        fn index<T>(v: Vec<T>, id: impl Fn(&T) -> String) -> HashMap<String, Arc<T>> {
            v.into_iter().map(|x| (id(&x), Arc::new(x))).collect()
        }
        Entities {
            keys: index(s.keys, |k| k.token.clone()),
            teams: index(s.teams, |t| t.team_id.clone()),
            users: index(s.users, |u| u.user_id.clone()),
            end_users: index(s.end_users, |e| e.user_id.clone()),
            budgets: index(s.budgets, |b| b.budget_id.clone()),
            memberships: s
                .memberships
                .into_iter()
                .map(|m| ((m.team_id.clone(), m.user_id.clone()), Arc::new(m)))
                .collect(),
            organizations: index(s.organizations, |o| o.organization_id.clone()),
            tags: index(s.tags, |t| t.tag_name.clone()),
        }
    }

    /// The budget tier with this id, if any.
    pub fn budget(&self, id: Option<&str>) -> Option<&Arc<BudgetTier>> {
        id.and_then(|id| self.budgets.get(id))
    }
}

/// The shared cache.
#[derive(Debug, Default)]
pub struct IdentityCache {
    inner: RwLock<Entities>,
    /// Local management writes so far.
    generation: AtomicU64,
    /// End users this replica added from traffic that no load has returned yet.
    unwritten_end_users: Mutex<HashSet<String>>,
}

/// What a [`IdentityCache::replace`] changed, counted by entity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replaced {
    /// Virtual keys in the cache after the swap.
    pub keys: usize,
    /// Entities (of any kind) whose row differs from the one cached before, or that are new.
    pub changed: usize,
    /// Entities (of any kind) cached before and absent now.
    pub removed: usize,
    /// End users kept because only this replica knows them yet.
    pub kept_local: usize,
}

impl IdentityCache {
    /// A cache holding `entities`.
    pub fn new(entities: Entities) -> Self {
        Self {
            inner: RwLock::new(entities),
            generation: AtomicU64::new(0),
            unwritten_end_users: Mutex::new(HashSet::new()),
        }
    }

    /// How many local management writes ([`Self::update`]) the cache has seen.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Adds end user `id` (no limits of its own, spend 0) unless cached: it was first seen in
    /// a request, and its `"LiteLLM_EndUserTable"` row is written behind with its spend.
    /// Until a load returns that row, [`Self::replace`] keeps it.
    pub fn note_end_user(&self, id: &str) {
        // both locks, in the order replace takes them: no swap between the two inserts
        let mut unwritten = self
            .unwritten_end_users
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if g.end_users.contains_key(id) {
            return;
        }
        g.end_users.insert(
            id.to_owned(),
            Arc::new(EndUser {
                user_id: id.to_owned(),
                ..EndUser::default()
            }),
        );
        unwritten.insert(id.to_owned());
    }

    /// Swaps in `fresh` (every entity as the database holds it now), keeping the end users
    /// only this replica knows ([`Self::note_end_user`]) that `fresh` lacks and the cache
    /// still holds. Rows are compared to count what changed; unchanged rows keep their
    /// current allocation. Spend lives in the admission counters, which this does not touch.
    pub fn replace(&self, fresh: Entities) -> Replaced {
        // without a generation to compare, the swap always happens
        self.replace_if(fresh, None).unwrap_or_default()
    }

    /// [`Self::replace`], unless a local write happened since [`Self::generation`] returned
    /// `since` (checked under the write lock, so no write slips between check and swap): then
    /// `fresh` comes back unused (`Err`), as it may predate that write.
    ///
    /// Errors: `fresh` itself, when a local write came first.
    pub fn replace_unless_written_since(
        &self,
        fresh: Entities,
        since: u64,
    ) -> Result<Replaced, Box<Entities>> {
        self.replace_if(fresh, Some(since))
    }

    fn replace_if(
        &self,
        mut fresh: Entities,
        since: Option<u64>,
    ) -> Result<Replaced, Box<Entities>> {
        // Comparing every row takes time proportional to the tables: done under the shared
        // lock, which requests share too; the write lock is held only for the swap.
        let mut out = Replaced::default();
        {
            let old = self.read();
            let mut count = |(c, r): (usize, usize)| {
                out.changed += c;
                out.removed += r;
            };
            count(carry(&old.keys, &mut fresh.keys));
            count(carry(&old.teams, &mut fresh.teams));
            count(carry(&old.users, &mut fresh.users));
            count(carry(&old.end_users, &mut fresh.end_users));
            count(carry(&old.budgets, &mut fresh.budgets));
            count(carry(&old.memberships, &mut fresh.memberships));
            count(carry(&old.organizations, &mut fresh.organizations));
            count(carry(&old.tags, &mut fresh.tags));
        }
        let mut unwritten = self
            .unwritten_end_users
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if since.is_some_and(|s| s != self.generation()) {
            return Err(Box::new(fresh));
        }
        unwritten.retain(|id| {
            if fresh.end_users.contains_key(id) {
                return false;
            }
            match g.end_users.get(id) {
                Some(local) => {
                    fresh.end_users.insert(id.clone(), Arc::clone(local));
                    out.kept_local += 1;
                    true
                }
                None => false,
            }
        });
        // kept rows were counted as removed above
        out.removed = out.removed.saturating_sub(out.kept_local);
        out.keys = fresh.keys.len();
        let old = std::mem::replace(&mut *g, fresh);
        drop(g);
        drop(unwritten);
        // the old tables are freed outside the lock
        drop(old);
        Ok(out)
    }

    /// Shared read access (hold it briefly; never across an await).
    pub fn read(&self) -> RwLockReadGuard<'_, Entities> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a change (after it was written to the store); counts as a local write
    /// ([`Self::generation`]).
    pub fn update<R>(&self, f: impl FnOnce(&mut Entities) -> R) -> R {
        let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let r = f(&mut g);
        self.generation.fetch_add(1, Ordering::AcqRel);
        r
    }
}

/// Points every row of `fresh` equal to the one in `old` back at `old`'s allocation; returns
/// `(rows new or different, rows of old absent from fresh)`.
fn carry<K, T>(old: &HashMap<K, Arc<T>>, fresh: &mut HashMap<K, Arc<T>>) -> (usize, usize)
where
    K: std::hash::Hash + Eq,
    T: PartialEq,
{
    let mut changed = 0;
    for (k, v) in fresh.iter_mut() {
        match old.get(k) {
            Some(o) if **o == **v => *v = Arc::clone(o),
            _ => changed += 1,
        }
    }
    let removed = old.keys().filter(|k| !fresh.contains_key(*k)).count();
    (changed, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_is_indexed_by_primary_keys() {
        let s = Snapshot {
            keys: vec![VerificationToken {
                token: "h1".into(),
                ..Default::default()
            }],
            memberships: vec![TeamMembership {
                team_id: "t".into(),
                user_id: "u".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let c = IdentityCache::new(Entities::from_snapshot(s));
        assert!(c.read().keys.contains_key("h1"));
        assert!(
            c.read()
                .memberships
                .contains_key(&("t".to_owned(), "u".to_owned()))
        );
        c.update(|e| e.keys.remove("h1"));
        assert!(c.read().keys.is_empty());
    }
}
