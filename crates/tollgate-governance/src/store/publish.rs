//! [`PublishingStore`]: a [`GovernanceStore`] that announces every write the database accepted
//! on the fleet's change feed ([`ChangeFeed`]), so no management handler can forget to.
//!
//! Each `upsert_*` / `delete_*` (keys, teams, users, end users, budget tiers, memberships,
//! organizations, tags, model deployments) is forwarded to the wrapped store; once it returned
//! `Ok`, one [`Change`] per entity it names is emitted (a key by its hash). A failed write
//! emits nothing. Emitting only queues (see [`ChangeFeed::emit`]): the management answer
//! waits for the write and nothing else. Reads, migrations and spend writes (counters, spend
//! logs: not identities) pass through untouched.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{
    BudgetTier, EndUser, GovernanceStore, Organization, ProxyModel, SecretBox, Snapshot,
    SpendGroup, SpendGroupQuery, SpendLogFilter, SpendLogRow, StoreError, Tag, Team,
    TeamMembership, User, VerificationToken,
};
use crate::admission::SpendSnapshot;
use crate::runtime::feed::{Change, ChangeFeed, ChangeKind};

/// The wrapped store and the feed its writes are announced on.
pub struct PublishingStore {
    inner: Arc<dyn GovernanceStore>,
    feed: ChangeFeed,
}

impl std::fmt::Debug for PublishingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishingStore")
            .field("origin", &self.feed.origin())
            .finish_non_exhaustive()
    }
}

impl PublishingStore {
    /// `inner`, announcing its writes on `feed`.
    pub fn new(inner: Arc<dyn GovernanceStore>, feed: ChangeFeed) -> Self {
        Self { inner, feed }
    }

    /// Emits `kind`/`id` when `r` is `Ok`; returns `r`.
    fn after<T>(
        &self,
        r: Result<T, StoreError>,
        kind: ChangeKind,
        id: &str,
    ) -> Result<T, StoreError> {
        if r.is_ok() {
            self.feed.emit(Change::new(kind, id));
        }
        r
    }

    /// Emits one change per id when `r` is `Ok`; returns `r`.
    fn after_all<T>(
        &self,
        r: Result<T, StoreError>,
        kind: ChangeKind,
        ids: &[String],
    ) -> Result<T, StoreError> {
        if r.is_ok() {
            for id in ids {
                self.feed.emit(Change::new(kind, id.as_str()));
            }
        }
        r
    }
}

#[async_trait]
impl GovernanceStore for PublishingStore {
    async fn spend_groups(&self, q: &SpendGroupQuery) -> Result<Vec<SpendGroup>, StoreError> {
        self.inner.spend_groups(q).await
    }
    async fn migrate(&self) -> Result<(), StoreError> {
        self.inner.migrate().await
    }
    async fn load(&self) -> Result<Snapshot, StoreError> {
        self.inner.load().await
    }
    async fn upsert_key(&self, key: &VerificationToken) -> Result<(), StoreError> {
        let r = self.inner.upsert_key(key).await;
        self.after(r, ChangeKind::Key, &key.token)
    }
    async fn delete_keys(
        &self,
        hashes: &[String],
        deleted_by: Option<&str>,
    ) -> Result<u64, StoreError> {
        let r = self.inner.delete_keys(hashes, deleted_by).await;
        self.after_all(r, ChangeKind::Key, hashes)
    }
    async fn is_deleted_key(&self, hash: &str) -> Result<bool, StoreError> {
        self.inner.is_deleted_key(hash).await
    }
    async fn key_exists(&self, hash: &str) -> Result<bool, StoreError> {
        self.inner.key_exists(hash).await
    }
    async fn upsert_team(&self, team: &Team) -> Result<(), StoreError> {
        let r = self.inner.upsert_team(team).await;
        self.after(r, ChangeKind::Team, &team.team_id)
    }
    async fn delete_teams(&self, ids: &[String]) -> Result<u64, StoreError> {
        let r = self.inner.delete_teams(ids).await;
        self.after_all(r, ChangeKind::Team, ids)
    }
    async fn upsert_user(&self, user: &User) -> Result<(), StoreError> {
        let r = self.inner.upsert_user(user).await;
        self.after(r, ChangeKind::User, &user.user_id)
    }
    async fn delete_users(&self, ids: &[String]) -> Result<u64, StoreError> {
        let r = self.inner.delete_users(ids).await;
        self.after_all(r, ChangeKind::User, ids)
    }
    async fn upsert_end_user(&self, end_user: &EndUser) -> Result<(), StoreError> {
        let r = self.inner.upsert_end_user(end_user).await;
        self.after(r, ChangeKind::EndUser, &end_user.user_id)
    }
    async fn delete_end_users(&self, ids: &[String]) -> Result<u64, StoreError> {
        let r = self.inner.delete_end_users(ids).await;
        self.after_all(r, ChangeKind::EndUser, ids)
    }
    async fn upsert_budget(&self, budget: &BudgetTier) -> Result<(), StoreError> {
        let r = self.inner.upsert_budget(budget).await;
        self.after(r, ChangeKind::Budget, &budget.budget_id)
    }
    async fn delete_budgets(&self, ids: &[String]) -> Result<u64, StoreError> {
        let r = self.inner.delete_budgets(ids).await;
        self.after_all(r, ChangeKind::Budget, ids)
    }
    async fn upsert_membership(&self, m: &TeamMembership) -> Result<(), StoreError> {
        let r = self.inner.upsert_membership(m).await;
        self.after(
            r,
            ChangeKind::Membership,
            &format!("{}/{}", m.team_id, m.user_id),
        )
    }
    async fn delete_membership(&self, team_id: &str, user_id: &str) -> Result<u64, StoreError> {
        let r = self.inner.delete_membership(team_id, user_id).await;
        self.after(r, ChangeKind::Membership, &format!("{team_id}/{user_id}"))
    }
    async fn upsert_organization(&self, org: &Organization) -> Result<(), StoreError> {
        let r = self.inner.upsert_organization(org).await;
        self.after(r, ChangeKind::Organization, &org.organization_id)
    }
    async fn upsert_tag(&self, tag: &Tag) -> Result<(), StoreError> {
        let r = self.inner.upsert_tag(tag).await;
        self.after(r, ChangeKind::Tag, &tag.tag_name)
    }
    async fn delete_organizations(&self, ids: &[String]) -> Result<u64, StoreError> {
        let r = self.inner.delete_organizations(ids).await;
        self.after_all(r, ChangeKind::Organization, ids)
    }
    async fn delete_tags(&self, names: &[String]) -> Result<u64, StoreError> {
        let r = self.inner.delete_tags(names).await;
        self.after_all(r, ChangeKind::Tag, names)
    }
    async fn write_spend(&self, updates: &[SpendSnapshot]) -> Result<(), StoreError> {
        self.inner.write_spend(updates).await
    }
    async fn insert_spend_logs(&self, rows: &[SpendLogRow]) -> Result<u64, StoreError> {
        self.inner.insert_spend_logs(rows).await
    }
    async fn spend_logs(&self, filter: &SpendLogFilter) -> Result<Vec<SpendLogRow>, StoreError> {
        self.inner.spend_logs(filter).await
    }
    async fn spend_since(&self, since: Option<DateTime<Utc>>) -> Result<f64, StoreError> {
        self.inner.spend_since(since).await
    }
    async fn upsert_model(&self, model: &ProxyModel, key: &SecretBox) -> Result<(), StoreError> {
        let r = self.inner.upsert_model(model, key).await;
        self.after(r, ChangeKind::Model, &model.model_id)
    }
    async fn delete_model(&self, model_id: &str) -> Result<u64, StoreError> {
        let r = self.inner.delete_model(model_id).await;
        self.after(r, ChangeKind::Model, model_id)
    }
    async fn load_models(&self, key: &SecretBox) -> Result<Vec<ProxyModel>, StoreError> {
        self.inner.load_models(key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;

    #[tokio::test]
    async fn each_accepted_write_emits_its_entity_and_reads_emit_nothing() {
        let db: Arc<dyn GovernanceStore> =
            Arc::new(SqliteStore::open(":memory:").await.expect("sqlite"));
        db.migrate().await.expect("migrate");
        let (feed, mut rx) = ChangeFeed::new("r1", 64);
        let s = PublishingStore::new(db, feed.clone());
        let key = VerificationToken {
            token: "ab12".into(),
            ..Default::default()
        };
        s.upsert_key(&key).await.expect("key");
        s.upsert_team(&Team {
            team_id: "t1".into(),
            ..Default::default()
        })
        .await
        .expect("team");
        s.upsert_membership(&TeamMembership {
            team_id: "t1".into(),
            user_id: "u1".into(),
            ..Default::default()
        })
        .await
        .expect("membership");
        s.delete_keys(&["ab12".to_owned(), "cd34".to_owned()], None)
            .await
            .expect("delete");
        let _ = s.load().await.expect("load");
        let _ = s.is_deleted_key("ab12").await.expect("read");
        s.write_spend(&[]).await.expect("spend");
        let mut got = Vec::new();
        while let Ok(c) = rx.try_recv() {
            got.push((c.kind, c.id));
        }
        assert_eq!(
            got,
            vec![
                (ChangeKind::Key, "ab12".to_owned()),
                (ChangeKind::Team, "t1".to_owned()),
                (ChangeKind::Membership, "t1/u1".to_owned()),
                (ChangeKind::Key, "ab12".to_owned()),
                (ChangeKind::Key, "cd34".to_owned()),
            ]
        );
        assert_eq!(FeedStats::get(&feed.stats().emitted), 5);
    }

    #[tokio::test]
    async fn a_refused_write_emits_nothing() {
        // not migrated: every write fails (no tables)
        let db: Arc<dyn GovernanceStore> =
            Arc::new(SqliteStore::open(":memory:").await.expect("sqlite"));
        let (feed, mut rx) = ChangeFeed::new("r1", 8);
        let s = PublishingStore::new(db, feed);
        assert!(
            s.upsert_team(&Team {
                team_id: "t1".into(),
                ..Default::default()
            })
            .await
            .is_err()
        );
        assert!(rx.try_recv().is_err());
    }

    use crate::runtime::feed::FeedStats;
}
