//! The [`GovernanceStore`] of every [`SqlBackend`]: which rows are read and written for each
//! entity, written once for SQLite and Postgres (their differences are the backend's:
//! `sqlite.rs`, `postgres.rs`). Spend writes and spend-log reads are in `sql_spend.rs`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::backend::{SqlBackend, Stmt};
use super::codec::{GetCol, ToRow, Val};
use super::entities::*;
use super::models::{self, ProxyModel};
use super::schema::{self, Dialect, TABLES, Table};
use super::secret_box::SecretBox;
use super::spend_groups::{self, SpendGroup, SpendGroupQuery};
use super::{GovernanceStore, Snapshot, SpendLogFilter, StoreError, daily, sql_spend};
use crate::admission::SpendSnapshot;

/// `INSERT … ON CONFLICT (<primary key>) DO UPDATE` of every column of `t`, `?` placeholders.
pub(super) fn upsert_sql(t: &Table) -> String {
    let marks = vec!["?"; t.columns.len()].join(", ");
    let pk: Vec<String> = t.primary_key.iter().map(|c| format!("\"{c}\"")).collect();
    let updates: Vec<String> = t
        .columns
        .iter()
        .filter(|(n, _, _)| !t.primary_key.contains(n))
        .map(|(n, _, _)| format!("\"{n}\" = excluded.\"{n}\""))
        .collect();
    format!(
        "INSERT INTO \"{}\" ({}) VALUES ({marks}) ON CONFLICT ({}) DO UPDATE SET {}",
        t.name,
        t.column_list(),
        pk.join(", "),
        updates.join(", ")
    )
}

/// The upsert of one entity row.
pub(super) fn upsert_stmt<T: ToRow>(item: &T) -> Stmt {
    Stmt::new(upsert_sql(T::TABLE), item.to_row())
}

fn text(v: &str) -> Val {
    Val::Text(Some(v.to_owned()))
}

fn name(r: &dyn GetCol) -> Result<String, StoreError> {
    Ok(r.text("name")?.unwrap_or_default())
}

/// Moves the key row under `token` to the deleted-keys table (id `token:<deleted_at>`).
fn deleted_key_sql<B: SqlBackend>() -> String {
    format!(
        "INSERT INTO \"LiteLLM_DeletedVerificationToken\" (\"id\", \"token\", \"key_name\", \"key_alias\", \"spend\", \"max_budget\", \"user_id\", \"team_id\", \"metadata\", \"deleted_at\", \"deleted_by\") \
         SELECT \"token\" || ':' || {}, \"token\", \"key_name\", \"key_alias\", \"spend\", \"max_budget\", \"user_id\", \"team_id\", \"metadata\", ?, ? \
         FROM \"LiteLLM_VerificationToken\" WHERE \"token\" = ?",
        B::TEXT_PARAM
    )
}

async fn upsert<B: SqlBackend, T: ToRow>(b: &B, item: &T) -> Result<(), StoreError> {
    b.run(None, upsert_stmt(item)).await?;
    Ok(())
}

async fn load_table<B: SqlBackend, T: ToRow + Send>(b: &B) -> Result<Vec<T>, StoreError> {
    let sql = format!(
        "SELECT {} FROM \"{}\"",
        T::TABLE.column_list(),
        T::TABLE.name
    );
    b.rows(None, Stmt::new(sql, Vec::new()), T::from_row).await
}

async fn delete_by<B: SqlBackend>(
    b: &B,
    table: &Table,
    col: &str,
    ids: &[String],
) -> Result<u64, StoreError> {
    let mut n = 0;
    for cond in B::any_of(col, ids) {
        let sql = format!("DELETE FROM \"{}\" WHERE {}", table.name, cond.sql);
        n += b
            .run(
                None,
                Stmt {
                    sql: sql.into(),
                    ..cond
                },
            )
            .await?;
    }
    Ok(n)
}

/// The migration's statements, in `tx` when given: each table created if missing, each
/// missing column added, then the daily roll-ups' unique indexes (after their tables exist).
async fn migrate_steps<B: SqlBackend>(b: &B, mut tx: Option<&mut B::Tx>) -> Result<(), StoreError> {
    for t in TABLES {
        let create = Stmt::new(t.create_sql(B::DIALECT), Vec::new());
        b.run(tx.as_deref_mut(), create).await?;
        let have = b
            .rows(tx.as_deref_mut(), B::columns_stmt(t.name), name)
            .await?;
        for (col, _, _) in t.columns {
            if !have.iter().any(|h| h == col)
                && let Some(sql) = t.add_column_sql(B::DIALECT, col)
            {
                b.run(tx.as_deref_mut(), Stmt::new(sql, Vec::new())).await?;
            }
        }
    }
    for sql in daily::create_index_sql() {
        b.run(tx.as_deref_mut(), Stmt::new(sql, Vec::new())).await?;
    }
    let start_time = Stmt::new(spend_groups::START_TIME_INDEX_SQL, Vec::new());
    b.run(tx, start_time).await?;
    Ok(())
}

#[async_trait]
impl<B: SqlBackend> GovernanceStore for B {
    /// With a [`SqlDialect::MIGRATION_LOCK`](super::backend::SqlDialect::MIGRATION_LOCK)
    /// (Postgres), one transaction that takes the lock first: replicas started at once
    /// migrate one after another, each later one finding the tables the first created, and a
    /// migration that fails leaves nothing half done. Without one (SQLite), statement by
    /// statement.
    async fn migrate(&self) -> Result<(), StoreError> {
        let Some(lock) = B::MIGRATION_LOCK else {
            return migrate_steps(self, None).await;
        };
        let mut tx = self.begin().await?;
        self.run(Some(&mut tx), Stmt::new(lock, Vec::new())).await?;
        if let Some(quiet) = B::MIGRATION_QUIET {
            self.run(Some(&mut tx), Stmt::new(quiet, Vec::new()))
                .await?;
        }
        migrate_steps(self, Some(&mut tx)).await?;
        B::commit(tx).await
    }

    async fn load(&self) -> Result<Snapshot, StoreError> {
        Ok(Snapshot {
            keys: load_table(self).await?,
            teams: load_table(self).await?,
            users: load_table(self).await?,
            end_users: load_table(self).await?,
            budgets: load_table(self).await?,
            memberships: load_table(self).await?,
            organizations: load_table(self).await?,
            tags: load_table(self).await?,
            model_budget_windows: load_table(self).await?,
        })
    }

    async fn upsert_key(&self, key: &VerificationToken) -> Result<(), StoreError> {
        upsert(self, key).await
    }

    async fn delete_keys(
        &self,
        hashes: &[String],
        deleted_by: Option<&str>,
    ) -> Result<u64, StoreError> {
        let now = Val::Time(Some(Utc::now()));
        let by = Val::Text(deleted_by.map(str::to_owned));
        let moved = deleted_key_sql::<B>();
        let mut tx = self.begin().await?;
        let mut n = 0;
        for h in hashes {
            let vals = vec![now.clone(), now.clone(), by.clone(), text(h)];
            self.run(Some(&mut tx), Stmt::new(moved.clone(), vals))
                .await?;
            let delete = "DELETE FROM \"LiteLLM_VerificationToken\" WHERE \"token\" = ?";
            n += self
                .run(Some(&mut tx), Stmt::new(delete, vec![text(h)]))
                .await?;
        }
        B::commit(tx).await?;
        Ok(n)
    }

    async fn is_deleted_key(&self, hash: &str) -> Result<bool, StoreError> {
        let sql =
            "SELECT 1 AS x FROM \"LiteLLM_DeletedVerificationToken\" WHERE \"token\" = ? LIMIT 1";
        let found = self
            .rows(None, Stmt::new(sql, vec![text(hash)]), |_| Ok(()))
            .await?;
        Ok(!found.is_empty())
    }

    async fn key_exists(&self, hash: &str) -> Result<bool, StoreError> {
        let sql = "SELECT 1 AS x FROM \"LiteLLM_VerificationToken\" WHERE \"token\" = ? LIMIT 1";
        let found = self
            .rows(None, Stmt::new(sql, vec![text(hash)]), |_| Ok(()))
            .await?;
        Ok(!found.is_empty())
    }

    async fn upsert_team(&self, team: &Team) -> Result<(), StoreError> {
        upsert(self, team).await
    }

    async fn delete_teams(&self, ids: &[String]) -> Result<u64, StoreError> {
        delete_by(self, &schema::TEAM, "team_id", ids).await
    }

    async fn upsert_user(&self, user: &User) -> Result<(), StoreError> {
        upsert(self, user).await
    }

    async fn delete_users(&self, ids: &[String]) -> Result<u64, StoreError> {
        delete_by(self, &schema::USER, "user_id", ids).await
    }

    async fn upsert_end_user(&self, end_user: &EndUser) -> Result<(), StoreError> {
        upsert(self, end_user).await
    }

    async fn delete_end_users(&self, ids: &[String]) -> Result<u64, StoreError> {
        delete_by(self, &schema::END_USER, "user_id", ids).await
    }

    async fn upsert_budget(&self, budget: &BudgetTier) -> Result<(), StoreError> {
        upsert(self, budget).await
    }

    async fn delete_budgets(&self, ids: &[String]) -> Result<u64, StoreError> {
        delete_by(self, &schema::BUDGET, "budget_id", ids).await
    }

    async fn upsert_membership(&self, m: &TeamMembership) -> Result<(), StoreError> {
        upsert(self, m).await
    }

    async fn delete_membership(&self, team_id: &str, user_id: &str) -> Result<u64, StoreError> {
        let sql =
            "DELETE FROM \"LiteLLM_TeamMembership\" WHERE \"team_id\" = ? AND \"user_id\" = ?";
        self.run(None, Stmt::new(sql, vec![text(team_id), text(user_id)]))
            .await
    }

    async fn upsert_organization(&self, org: &Organization) -> Result<(), StoreError> {
        upsert(self, org).await
    }

    async fn upsert_tag(&self, tag: &Tag) -> Result<(), StoreError> {
        upsert(self, tag).await
    }

    async fn delete_organizations(&self, ids: &[String]) -> Result<u64, StoreError> {
        delete_by(self, &schema::ORGANIZATION, "organization_id", ids).await
    }

    async fn delete_tags(&self, names: &[String]) -> Result<u64, StoreError> {
        delete_by(self, &schema::TAG, "tag_name", names).await
    }

    async fn write_spend(&self, updates: &[SpendSnapshot]) -> Result<(), StoreError> {
        sql_spend::write_spend(self, updates).await
    }

    async fn insert_spend_logs(&self, rows: &[SpendLogRow]) -> Result<u64, StoreError> {
        sql_spend::insert_spend_logs(self, rows).await
    }

    async fn spend_logs(&self, f: &SpendLogFilter) -> Result<Vec<SpendLogRow>, StoreError> {
        self.rows(None, sql_spend::spend_logs_stmt(f), SpendLogRow::from_row)
            .await
    }

    async fn spend_since(&self, since: Option<DateTime<Utc>>) -> Result<f64, StoreError> {
        let sum = self
            .rows(None, sql_spend::spend_since_stmt::<B>(since), |r| {
                r.float("total")
            })
            .await?;
        Ok(sum.into_iter().next().flatten().unwrap_or(0.0))
    }

    async fn spend_groups(&self, q: &SpendGroupQuery) -> Result<Vec<SpendGroup>, StoreError> {
        // SQLite reads the whole table for a range over most of the logs (`scan_whole`)
        let whole = B::DIALECT == Dialect::Sqlite && (q.start.is_some() || q.end.is_some()) && {
            let span = self
                .rows(None, spend_groups::span_stmt(), spend_groups::decode_span)
                .await?;
            spend_groups::scan_whole(q, span.into_iter().next().flatten())
        };
        self.rows(
            None,
            spend_groups::stmt::<B>(q, whole),
            spend_groups::decode,
        )
        .await
    }

    async fn upsert_model(&self, model: &ProxyModel, key: &SecretBox) -> Result<(), StoreError> {
        upsert(self, &models::sealed(model, key)).await
    }

    async fn delete_model(&self, model_id: &str) -> Result<u64, StoreError> {
        let ids = [model_id.to_owned()];
        delete_by(self, &models::PROXY_MODEL, "model_id", &ids).await
    }

    async fn load_models(&self, key: &SecretBox) -> Result<Vec<ProxyModel>, StoreError> {
        let mut rows: Vec<ProxyModel> = load_table(self).await?;
        models::sort(&mut rows);
        Ok(rows.into_iter().map(|m| models::opened(m, key)).collect())
    }
}
