//! Entities and persistence: virtual keys, teams, users, end users, budget tiers, tags,
//! organizations, spend-log rows, and the [`GovernanceStore`] that loads and writes them.
//!
//! Nothing on a request's path touches the database: the server [`GovernanceStore::load`]s
//! everything into its in-process cache at start, management API calls write through
//! (`upsert_*`, `delete_*`) and update the cache, and spend plus spend-log rows are written
//! behind in batches by [`WriteBehind`] (flushed on graceful shutdown).
//!
//! Tables and columns are LiteLLM's ([`schema`]), so a LiteLLM database keeps working.

mod backend;
mod codec;
mod daily;
mod db_error;
mod entities;
pub mod key_extras;
mod keys;
pub mod model_budget;
mod model_window;
pub mod models;
mod pg_connect;
mod postgres;
pub mod probe;
mod publish;
pub mod schema;
pub mod secret_box;
pub mod spend_groups;
mod spend_ids;
mod sql_spend;
mod sql_store;
mod sqlite;
mod writer;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

pub use codec::{GetCol, ToRow, Val};
pub use db_error::{SQLSTATE_NO_SUCH_DATABASE, db_error_message};
pub use entities::*;
pub use keys::{SecretKey, hash_key, is_key_hash, mask_key};
pub use model_budget::{
    ModelBudget, ModelBudgetError, ModelNames, ModelScope, model_scopes, validate_model_max_budget,
};
pub use model_window::{MODEL_BUDGET_WINDOW, ModelBudgetWindow};
pub use models::ProxyModel;
pub use pg_connect::{
    DEFAULT_POOL_LIMIT, DEFAULT_POOL_TIMEOUT_SECS, PgPoolPlan, PgPoolSettings, PgUrl,
};
pub use postgres::{MIGRATION_LOCK_KEY, PostgresStore};
pub use publish::PublishingStore;
pub use secret_box::{SecretBox, SecretBoxError};
pub use spend_groups::{SpendDim, SpendGroup, SpendGroupQuery};
pub use spend_ids::attempt_id;
pub use sqlite::SqliteStore;
pub use writer::{FlushStats, SpendLogQueue, WriteBehind};

use crate::admission::{ScopeKey, ScopeKind, SpendSnapshot};

/// Errors of a [`GovernanceStore`]. Messages never contain a raw key (rows hold hashes only).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or failed (printed by [`db_error_message`]: never a source line).
    #[error("database error: {}", db_error_message(.0))]
    Db(#[from] sqlx::Error),
    /// A stored value could not be decoded (bad JSON, timestamp).
    #[error("cannot decode stored value: {0}")]
    Decode(String),
    /// The shared spend counters (Redis) could not answer while the store needed them
    /// (seeding them at start).
    #[error("spend counters: {0}")]
    Counters(#[from] crate::admission::CounterStoreError),
    /// A full reload of the identities met a management write of this replica during each of
    /// its loads (the count), so each load may have predated a write: nothing was swapped in,
    /// and nothing this replica wrote is lost; the caller tries again later.
    #[error("identities were written locally during each of {0} loads; reload skipped")]
    WrittenDuringReload(usize),
}

/// Everything the in-process cache needs, read once at start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Virtual keys.
    pub keys: Vec<VerificationToken>,
    /// Teams.
    pub teams: Vec<Team>,
    /// Internal users.
    pub users: Vec<User>,
    /// End users.
    pub end_users: Vec<EndUser>,
    /// Budget tiers.
    pub budgets: Vec<BudgetTier>,
    /// Team memberships.
    pub memberships: Vec<TeamMembership>,
    /// Organizations.
    pub organizations: Vec<Organization>,
    /// Tags.
    pub tags: Vec<Tag>,
    /// Where the per-model budget windows of keys end (Tollgate's own table, see
    /// [`ModelBudgetWindow`]).
    pub model_budget_windows: Vec<ModelBudgetWindow>,
}

/// Filter of [`GovernanceStore::spend_logs`] (`/spend/logs` query parameters).
#[derive(Debug, Clone, Default)]
pub struct SpendLogFilter {
    /// Key hash.
    pub api_key: Option<String>,
    /// Internal user id.
    pub user_id: Option<String>,
    /// Request id.
    pub request_id: Option<String>,
    /// Team id.
    pub team_id: Option<String>,
    /// End user id.
    pub end_user: Option<String>,
    /// `startTime >= start`.
    pub start: Option<DateTime<Utc>>,
    /// `startTime <= end`.
    pub end: Option<DateTime<Utc>>,
    /// At most this many rows, newest first.
    pub limit: Option<u32>,
}

/// Persistence of governance entities and spend. Implemented by [`SqliteStore`] (embedded
/// default) and [`PostgresStore`] (LiteLLM's database), both from the [`schema`] catalogue.
#[async_trait]
pub trait GovernanceStore: Send + Sync + 'static {
    /// Creates missing tables and adds missing columns; never alters or drops existing ones.
    async fn migrate(&self) -> Result<(), StoreError>;
    /// Reads every entity (start-up cache fill).
    async fn load(&self) -> Result<Snapshot, StoreError>;
    /// Inserts or replaces a key row (by `token`, the hash).
    async fn upsert_key(&self, key: &VerificationToken) -> Result<(), StoreError>;
    /// Moves keys (by hash) to `"LiteLLM_DeletedVerificationToken"`; returns how many existed.
    async fn delete_keys(
        &self,
        hashes: &[String],
        deleted_by: Option<&str>,
    ) -> Result<u64, StoreError>;
    /// True when a key with this hash was deleted (`/key/info` reports `status: deleted`).
    async fn is_deleted_key(&self, hash: &str) -> Result<bool, StoreError>;
    /// True when `"LiteLLM_VerificationToken"` holds a key with this hash: one indexed
    /// lookup, for a key this replica's cache does not know yet.
    async fn key_exists(&self, hash: &str) -> Result<bool, StoreError>;
    /// Inserts or replaces a team.
    async fn upsert_team(&self, team: &Team) -> Result<(), StoreError>;
    /// Deletes teams; returns the count.
    async fn delete_teams(&self, ids: &[String]) -> Result<u64, StoreError>;
    /// Inserts or replaces a user.
    async fn upsert_user(&self, user: &User) -> Result<(), StoreError>;
    /// Deletes users; returns the count.
    async fn delete_users(&self, ids: &[String]) -> Result<u64, StoreError>;
    /// Inserts or replaces an end user.
    async fn upsert_end_user(&self, end_user: &EndUser) -> Result<(), StoreError>;
    /// Deletes end users; returns the count.
    async fn delete_end_users(&self, ids: &[String]) -> Result<u64, StoreError>;
    /// Inserts or replaces a budget tier.
    async fn upsert_budget(&self, budget: &BudgetTier) -> Result<(), StoreError>;
    /// Deletes budget tiers; returns the count.
    async fn delete_budgets(&self, ids: &[String]) -> Result<u64, StoreError>;
    /// Inserts or replaces a team membership.
    async fn upsert_membership(&self, m: &TeamMembership) -> Result<(), StoreError>;
    /// Deletes a team membership; returns the count.
    async fn delete_membership(&self, team_id: &str, user_id: &str) -> Result<u64, StoreError>;
    /// Inserts or replaces an organization.
    async fn upsert_organization(&self, org: &Organization) -> Result<(), StoreError>;
    /// Inserts or replaces a tag.
    async fn upsert_tag(&self, tag: &Tag) -> Result<(), StoreError>;
    /// Deletes organizations by `organization_id`; returns the count.
    async fn delete_organizations(&self, ids: &[String]) -> Result<u64, StoreError>;
    /// Deletes tags by `tag_name`; returns the count.
    async fn delete_tags(&self, names: &[String]) -> Result<u64, StoreError>;
    /// Writes a batch of spend counters (absolute `spend`, `budget_reset_at`) in one transaction.
    async fn write_spend(&self, updates: &[SpendSnapshot]) -> Result<(), StoreError>;
    /// Inserts a batch of spend-log rows in one transaction, each attempt exactly once however
    /// often the batch is retried: a row whose `request_id` another call already wrote (an
    /// upstream repeating its response ids) is stored under its [`attempt_id`] instead, one
    /// whose own attempt is stored is skipped (see `spend_ids.rs`). In the same transaction,
    /// the rows actually inserted are added to LiteLLM's daily roll-ups (`"LiteLLM_Daily{User,Team,Organization,EndUser,Tag}Spend"`,
    /// see `daily.rs`). Returns rows inserted.
    async fn insert_spend_logs(&self, rows: &[SpendLogRow]) -> Result<u64, StoreError>;
    /// Reads spend-log rows, newest first.
    async fn spend_logs(&self, filter: &SpendLogFilter) -> Result<Vec<SpendLogRow>, StoreError>;
    /// Sum of spend-log `spend` (USD) with `startTime >= since` (all rows when `None`): the
    /// whole proxy's spend, which has no column of its own (LiteLLM's `/global/spend` sums the
    /// logs too). Seeds the global budget counter at start.
    async fn spend_since(&self, since: Option<DateTime<Utc>>) -> Result<f64, StoreError>;
    /// Spend-log totals (USD, tokens, rows) grouped by `q.by` over `q`'s `startTime` range,
    /// computed by the database (`GROUP BY`, see `spend_groups.rs`), ordered by the groups.
    async fn spend_groups(&self, q: &SpendGroupQuery) -> Result<Vec<SpendGroup>, StoreError>;
    /// Inserts or replaces a model deployment (`"LiteLLM_ProxyModelTable"`, by `model_id`),
    /// every string value of its `litellm_params` encrypted with `key` as LiteLLM does
    /// ([`models::sealed`]).
    async fn upsert_model(&self, model: &ProxyModel, key: &SecretBox) -> Result<(), StoreError>;
    /// Deletes a model deployment by `model_id`; returns the count (0 = unknown id).
    async fn delete_model(&self, model_id: &str) -> Result<u64, StoreError>;
    /// Reads every stored model deployment, oldest first, `litellm_params` decrypted with `key`
    /// (values that do not decrypt are kept as stored: [`models::opened`]).
    async fn load_models(&self, key: &SecretBox) -> Result<Vec<ProxyModel>, StoreError>;
}

/// Where a scope's spend is stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpendTarget {
    pub table: &'static str,
    pub where_clause: &'static str,
    pub keys: Vec<String>,
    pub has_reset_at: bool,
    pub insert_if_missing: Option<&'static str>,
}

/// `(key hash, model group)` of a per-model-per-key scope, whose spend is the `model group`
/// entry of the key's `model_spend` JSON column (`{"gpt-4o": <USD>}`); `None` for other scopes.
pub(crate) fn model_spend_target(scope: &ScopeKey) -> Option<(&str, &str)> {
    match scope.kind {
        // key hashes are hex, so the first '/' ends the hash (model groups may hold '/')
        ScopeKind::ModelPerKey => scope.id.split_once('/'),
        _ => None,
    }
}

/// The row holding a scope's spend; `None` for scopes without a spend column of their own
/// (global spend is derived from spend logs, as in LiteLLM; per-model-per-key spend is an entry
/// of the key's `model_spend`, see [`model_spend_target`]).
pub(crate) fn spend_target(scope: &ScopeKey) -> Option<SpendTarget> {
    let id = scope.id.to_string();
    let simple = |table, col| SpendTarget {
        table,
        where_clause: col,
        keys: vec![id.clone()],
        has_reset_at: true,
        insert_if_missing: None,
    };
    Some(match scope.kind {
        ScopeKind::Key => simple("LiteLLM_VerificationToken", "\"token\" = ?"),
        ScopeKind::Team => simple("LiteLLM_TeamTable", "\"team_id\" = ?"),
        ScopeKind::User => simple("LiteLLM_UserTable", "\"user_id\" = ?"),
        ScopeKind::Organization => SpendTarget {
            has_reset_at: false,
            ..simple("LiteLLM_OrganizationTable", "\"organization_id\" = ?")
        },
        ScopeKind::EndUser => SpendTarget {
            has_reset_at: false,
            insert_if_missing: Some(
                "INSERT INTO \"LiteLLM_EndUserTable\" (\"user_id\", \"spend\", \"blocked\") VALUES (?, 0, false) ON CONFLICT (\"user_id\") DO NOTHING",
            ),
            ..simple("LiteLLM_EndUserTable", "\"user_id\" = ?")
        },
        ScopeKind::Tag => SpendTarget {
            has_reset_at: false,
            insert_if_missing: Some(
                "INSERT INTO \"LiteLLM_TagTable\" (\"tag_name\", \"spend\") VALUES (?, 0) ON CONFLICT (\"tag_name\") DO NOTHING",
            ),
            ..simple("LiteLLM_TagTable", "\"tag_name\" = ?")
        },
        ScopeKind::TeamMember => {
            let (team, user) = scope.id.split_once('/')?;
            SpendTarget {
                table: "LiteLLM_TeamMembership",
                where_clause: "\"user_id\" = ? AND \"team_id\" = ?",
                keys: vec![user.to_owned(), team.to_owned()],
                has_reset_at: false,
                insert_if_missing: Some(
                    "INSERT INTO \"LiteLLM_TeamMembership\" (\"user_id\", \"team_id\", \"spend\") VALUES (?, ?, 0) ON CONFLICT (\"user_id\", \"team_id\") DO NOTHING",
                ),
            }
        }
        ScopeKind::ModelPerKey | ScopeKind::TagPerKey | ScopeKind::Global => return None,
    })
}

#[cfg(test)]
mod model_spend_tests;
#[cfg(test)]
mod pg_bouncer_tests;
#[cfg(test)]
mod pg_fleet_tests;
#[cfg(test)]
mod pg_tests;
#[cfg(test)]
mod spend_groups_tests;
#[cfg(test)]
mod spend_ids_tests;
#[cfg(test)]
mod tests;
