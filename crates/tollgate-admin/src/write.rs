//! [`Batch`]: the rows one management call writes, applied store first, then cache.
//!
//! Every row goes to the [`tollgate_governance::store::GovernanceStore`] first; if any write
//! fails the call answers 500 and the cache is left as it was (rows already written are
//! picked up by the next start's load). Only once every write succeeded are the rows put in the
//! [`tollgate_governance::runtime::IdentityCache`], in one update, so the next inference request
//! sees the whole change. Order: upserts of budget tiers (referenced by the others), teams,
//! users, memberships, end users, keys; then deletes of keys, memberships, end users, users,
//! teams, budget tiers (LiteLLM's foreign keys point that way).

use std::sync::Arc;

use tollgate_governance::runtime::Governance;
use tollgate_governance::store::{
    BudgetTier, EndUser, Team, TeamMembership, User, VerificationToken,
};

use crate::error::ApiResult;

/// Rows to upsert and ids to delete.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub budgets: Vec<BudgetTier>,
    pub teams: Vec<Team>,
    pub users: Vec<User>,
    pub memberships: Vec<TeamMembership>,
    pub end_users: Vec<EndUser>,
    pub keys: Vec<VerificationToken>,
    /// Key hashes to move to `"LiteLLM_DeletedVerificationToken"`.
    pub delete_keys: Vec<String>,
    /// `(team_id, user_id)`.
    pub delete_memberships: Vec<(String, String)>,
    pub delete_end_users: Vec<String>,
    pub delete_users: Vec<String>,
    pub delete_teams: Vec<String>,
    pub delete_budgets: Vec<String>,
    /// `deleted_by` of deleted keys (a user id or the master-key alias, never a key).
    pub deleted_by: Option<String>,
}

impl Batch {
    /// Writes the batch to the store, then to the cache. Errors: 500 on a store error (cache
    /// untouched).
    pub async fn commit(self, gov: &Governance) -> ApiResult<()> {
        let s = gov.store();
        for b in &self.budgets {
            s.upsert_budget(b).await?;
        }
        for t in &self.teams {
            s.upsert_team(t).await?;
        }
        for u in &self.users {
            s.upsert_user(u).await?;
        }
        for m in &self.memberships {
            s.upsert_membership(m).await?;
        }
        for c in &self.end_users {
            s.upsert_end_user(c).await?;
        }
        for k in &self.keys {
            s.upsert_key(k).await?;
        }
        if !self.delete_keys.is_empty() {
            s.delete_keys(&self.delete_keys, self.deleted_by.as_deref())
                .await?;
        }
        for (t, u) in &self.delete_memberships {
            s.delete_membership(t, u).await?;
        }
        if !self.delete_end_users.is_empty() {
            s.delete_end_users(&self.delete_end_users).await?;
        }
        if !self.delete_users.is_empty() {
            s.delete_users(&self.delete_users).await?;
        }
        if !self.delete_teams.is_empty() {
            s.delete_teams(&self.delete_teams).await?;
        }
        if !self.delete_budgets.is_empty() {
            s.delete_budgets(&self.delete_budgets).await?;
        }
        gov.cache().update(|e| {
            for b in self.budgets {
                e.budgets.insert(b.budget_id.clone(), Arc::new(b));
            }
            for t in self.teams {
                e.teams.insert(t.team_id.clone(), Arc::new(t));
            }
            for u in self.users {
                e.users.insert(u.user_id.clone(), Arc::new(u));
            }
            for m in self.memberships {
                e.memberships
                    .insert((m.team_id.clone(), m.user_id.clone()), Arc::new(m));
            }
            for c in self.end_users {
                e.end_users.insert(c.user_id.clone(), Arc::new(c));
            }
            for k in self.keys {
                e.keys.insert(k.token.clone(), Arc::new(k));
            }
            for h in &self.delete_keys {
                e.keys.remove(h);
            }
            for id in self.delete_memberships {
                e.memberships.remove(&id);
            }
            for id in &self.delete_end_users {
                e.end_users.remove(id);
            }
            for id in &self.delete_users {
                e.users.remove(id);
            }
            for id in &self.delete_teams {
                e.teams.remove(id);
            }
            for id in &self.delete_budgets {
                e.budgets.remove(id);
            }
        });
        Ok(())
    }
}
