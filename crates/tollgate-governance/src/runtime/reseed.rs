//! [`DatabaseSeeds`]: what a Redis that lost its counters (restarted without persistence, a
//! fresh server) is seeded with again: every entity's stored `spend` / `budget_reset_at` with
//! the window it is counted under, the keys' per-model budgets, and the proxy's spend from the
//! spend logs, read from the database at that moment, exactly as a replica seeds its counters
//! at start ([`super::Governance::open_on`]).
//!
//! What this cannot restore: spend settled in Redis and not yet written behind to the
//! database when Redis lost it (at most one write-behind period, 1 s by default). The spend
//! logs keep every settled request either way.

use std::sync::Arc;

use async_trait::async_trait;

use super::GovernanceOptions;
use super::cache::Entities;
use super::seed;
use crate::admission::fleet::{ReseedError, ReseedSource, Seed};
use crate::store::GovernanceStore;

/// The database as a [`ReseedSource`].
pub struct DatabaseSeeds {
    store: Arc<dyn GovernanceStore>,
    options: GovernanceOptions,
}

impl DatabaseSeeds {
    /// Seeds read from `store`, windows and the end-user default from `options`.
    pub fn new(store: Arc<dyn GovernanceStore>, options: GovernanceOptions) -> Self {
        Self { store, options }
    }
}

impl std::fmt::Debug for DatabaseSeeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseSeeds").finish_non_exhaustive()
    }
}

#[async_trait]
impl ReseedSource for DatabaseSeeds {
    async fn seeds(&self) -> Result<Vec<Seed>, ReseedError> {
        let source = |e: crate::store::StoreError| ReseedError::Source(e.to_string());
        let mut snapshot = self.store.load().await.map_err(source)?;
        let windows = std::mem::take(&mut snapshot.model_budget_windows);
        let entities = Entities::from_snapshot(snapshot);
        seed::all_seeds(
            self.store.as_ref(),
            chrono::Utc::now(),
            &entities,
            &windows,
            &self.options,
        )
        .await
        .map_err(source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{ScopeKey, ScopeKind};
    use crate::store::{SqliteStore, Team, VerificationToken};

    #[tokio::test]
    async fn seeds_are_what_the_database_holds() {
        let store: Arc<dyn GovernanceStore> =
            Arc::new(SqliteStore::open(":memory:").await.unwrap());
        store.migrate().await.unwrap();
        store
            .upsert_key(&VerificationToken {
                token: "k1".into(),
                spend: 0.25,
                ..VerificationToken::default()
            })
            .await
            .unwrap();
        store
            .upsert_team(&Team {
                team_id: "t1".into(),
                spend: 1.5,
                ..Team::default()
            })
            .await
            .unwrap();
        let seeds = DatabaseSeeds::new(Arc::clone(&store), GovernanceOptions::default())
            .seeds()
            .await
            .unwrap();
        let find = |k: &ScopeKey| seeds.iter().find(|s| &s.scope == k).map(|s| s.spend_usd);
        assert_eq!(find(&ScopeKey::key("k1")), Some(0.25));
        assert_eq!(find(&ScopeKey::new(ScopeKind::Team, "t1")), Some(1.5));
        assert_eq!(find(&ScopeKey::global()), Some(0.0), "no spend logs yet");
        assert_eq!(seeds.len(), 3);
    }
}
