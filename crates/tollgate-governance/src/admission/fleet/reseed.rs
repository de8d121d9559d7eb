//! Seeding Redis again after it lost its data: [`Seed`], the [`ReseedSource`] the server
//! provides (the database behind it), and the once-per-fleet procedure.
//!
//! A checked reservation finds the fleet marker missing (Redis restarted without persistence,
//! or a fresh Redis). The replica then, holding its own reseed guard so its other requests wait
//! for the one run: reads the marker again (another replica may have finished), takes the
//! fleet's reseed lock (`SET NX PX`), reads every seed from the source, writes those whose
//! scope Redis does not hold (usage counted since the restart is kept), writes the marker and
//! drops the lock. A replica that loses the race for the lock waits for the marker. The
//! request that found the marker missing then reserves again.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::batched::Core;
use super::counts::RoundTrips;
use crate::admission::{CounterStoreError, ScopeKey};
use crate::duration::BudgetDuration;

/// One scope's counters as the database holds them.
#[derive(Debug, Clone, PartialEq)]
pub struct Seed {
    /// The scope.
    pub scope: ScopeKey,
    /// Spend in the current budget window, USD.
    pub spend_usd: f64,
    /// Next budget reset, when the scope has a window.
    pub budget_reset_at: Option<DateTime<Utc>>,
    /// The window's period.
    pub duration: Option<BudgetDuration>,
}

/// Why seeding failed.
#[derive(Debug, thiserror::Error)]
pub enum ReseedError {
    /// The source could not list the seeds (the database is unreachable...).
    #[error("reseed source failed: {0}")]
    Source(String),
    /// Redis failed while seeding.
    #[error(transparent)]
    Store(#[from] CounterStoreError),
    /// Another replica holds the reseed lock and did not write the marker within the wait.
    #[error("another replica is seeding; the fleet marker did not appear within {0:?}")]
    Waited(Duration),
}

/// Where the scopes' counters come from when Redis has lost them: the database's `spend` and
/// `budget_reset_at` columns of every key, team, user... with a budget or a window.
#[async_trait]
pub trait ReseedSource: Send + Sync + 'static {
    /// Every scope to seed.
    ///
    /// # Errors
    /// [`ReseedError::Source`] when the source cannot answer.
    async fn seeds(&self) -> Result<Vec<Seed>, ReseedError>;
}

/// A source with nothing to seed (a gateway without a database): a restart only writes the
/// marker back, and counting starts from 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSeeds;

#[async_trait]
impl ReseedSource for NoSeeds {
    async fn seeds(&self) -> Result<Vec<Seed>, ReseedError> {
        Ok(Vec::new())
    }
}

/// A fixed list of seeds (tests; a server that read them at start).
#[async_trait]
impl ReseedSource for Vec<Seed> {
    async fn seeds(&self) -> Result<Vec<Seed>, ReseedError> {
        Ok(self.clone())
    }
}

/// Seeds the fleet once (see the module docs), waiting at most `core.opts.reseed_wait` for a
/// replica that holds the lock.
pub(super) async fn reseed(core: &Core) -> Result<(), ReseedError> {
    let _one_at_a_time = core.reseeding.lock().await;
    if core.store.is_seeded().await? {
        return Ok(());
    }
    if core
        .store
        .try_lock_reseed(core.opts.reseed_lock_ttl)
        .await?
    {
        let result = seed_all(core).await;
        let unlocked = core.store.unlock_reseed().await;
        result?;
        unlocked?;
        RoundTrips::bump(&core.counts.reseeds);
        return Ok(());
    }
    let started = Instant::now();
    while started.elapsed() < core.opts.reseed_wait {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if core.store.is_seeded().await? {
            return Ok(());
        }
    }
    Err(ReseedError::Waited(core.opts.reseed_wait))
}

async fn seed_all(core: &Core) -> Result<(), ReseedError> {
    let seeds = core.source.seeds().await?;
    let written = core.store.seed_absent_many(&seeds).await?;
    core.store.mark_seeded().await?;
    tracing::info!(
        seeds = seeds.len(),
        written,
        "Redis held no counters for this fleet (a new fleet, or Redis lost its data): seeded from the database"
    );
    Ok(())
}
