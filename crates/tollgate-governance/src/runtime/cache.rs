//! [`IdentityCache`]: every governance entity, in process, keyed the way the request path and
//! the management API look them up. Filled once from [`crate::store::GovernanceStore::load`];
//! management writes go to the store first, then here, so a change is in force on the next
//! request. Reads take a shared lock for a few hash lookups; no lock is held across an
//! await.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};

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
}

impl IdentityCache {
    /// A cache holding `entities`.
    pub fn new(entities: Entities) -> Self {
        Self {
            inner: RwLock::new(entities),
        }
    }

    /// Shared read access (hold it briefly; never across an await).
    pub fn read(&self) -> RwLockReadGuard<'_, Entities> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a change (after it was written to the store).
    pub fn update<R>(&self, f: impl FnOnce(&mut Entities) -> R) -> R {
        let mut g = self.inner.write().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }
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
