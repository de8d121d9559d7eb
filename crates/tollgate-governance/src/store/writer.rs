//! Write-behind of spend counters and spend-log rows.
//!
//! The request path only pushes to [`SpendLogQueue`] (a bounded in-memory queue, `std` mutex,
//! no await) and updates the counters (in-process, or queued to the shared store); [`WriteBehind::flush`] drains both into one
//! batch each, and [`WriteBehind::run`] flushes every interval and once more on shutdown.
//! When the database is down, rows stay queued up to the queue's capacity and the oldest are
//! dropped beyond it (counted in [`SpendLogQueue::dropped`]), so memory stays bounded;
//! spend counters are absolute values, so a failed batch is simply retried with the newest ones.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{GovernanceStore, SpendLogRow, StoreError};
use crate::admission::{Admission, ScopeKey, SpendSnapshot};

/// Bounded FIFO of spend-log rows waiting to be written.
#[derive(Debug)]
pub struct SpendLogQueue {
    rows: Mutex<VecDeque<SpendLogRow>>,
    capacity: usize,
    dropped: AtomicU64,
    /// Woken when a full batch is waiting, so a burst is written at once rather than held
    /// (in memory) until the next tick.
    batch_ready: tokio::sync::Notify,
}

/// Rows queued that wake the writer before its next tick.
pub const WAKE_AT_ROWS: usize = 500;

impl SpendLogQueue {
    /// A queue holding at most `capacity` rows (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            rows: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            dropped: AtomicU64::new(0),
            batch_ready: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<SpendLogRow>> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a row; when full, the oldest row is dropped and counted.
    pub fn push(&self, row: SpendLogRow) {
        let mut q = self.lock();
        if q.len() >= self.capacity {
            q.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        q.push_back(row);
        if q.len() == WAKE_AT_ROWS {
            self.batch_ready.notify_one();
        }
    }

    /// Takes up to `max` rows, oldest first.
    pub fn take(&self, max: usize) -> Vec<SpendLogRow> {
        let mut q = self.lock();
        let n = q.len().min(max);
        q.drain(..n).collect()
    }

    /// Puts rows that failed to be written back at the front (oldest dropped beyond capacity).
    pub fn requeue(&self, rows: Vec<SpendLogRow>) {
        let mut q = self.lock();
        for r in rows.into_iter().rev() {
            if q.len() >= self.capacity {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            q.push_front(r);
        }
    }

    /// Rows waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no row waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// What one flush wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushStats {
    /// Spend counters handed to the store (scopes without a spend column, e.g. global, included).
    pub spend_rows: usize,
    /// Spend-log rows inserted.
    pub log_rows: u64,
}

/// Writes spend counters and spend-log rows behind the request path.
pub struct WriteBehind {
    store: Arc<dyn GovernanceStore>,
    admission: Admission,
    logs: Arc<SpendLogQueue>,
    pending: Mutex<HashMap<ScopeKey, SpendSnapshot>>,
    batch: usize,
}

impl std::fmt::Debug for WriteBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBehind")
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl WriteBehind {
    /// Flushes `admission`'s dirty counters and `logs` into `store`, `batch` log rows per
    /// transaction.
    pub fn new(
        store: Arc<dyn GovernanceStore>,
        admission: Admission,
        logs: Arc<SpendLogQueue>,
        batch: usize,
    ) -> Self {
        Self {
            store,
            admission,
            logs,
            pending: Mutex::new(HashMap::new()),
            batch: batch.max(1),
        }
    }

    /// Writes everything queued now. On a database error the unwritten spend counters and rows
    /// are kept for the next flush and the error is returned. With shared counters the
    /// changed scopes are drained from the shared store (each to one replica); when it cannot
    /// answer, they stay dirty there and only the spend-log rows are written.
    pub async fn flush(&self) -> Result<FlushStats, StoreError> {
        // Awaited before the pending map is locked: no lock is held across an await. Shared
        // counters that cannot answer now keep their changes dirty for the next flush.
        let dirty = match self.admission.drain_dirty().await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "spend counters not drained this time");
                Vec::new()
            }
        };
        let updates: Vec<SpendSnapshot> = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            for s in dirty {
                match p.get_mut(&s.scope) {
                    Some(old) => {
                        let added = old.added + s.added;
                        let was_reset = old.was_reset || s.was_reset;
                        *old = SpendSnapshot {
                            added,
                            was_reset,
                            ..s
                        };
                    }
                    None => {
                        p.insert(s.scope.clone(), s);
                    }
                }
            }
            p.drain().map(|(_, v)| v).collect()
        };
        let mut stats = FlushStats::default();
        if !updates.is_empty() {
            if let Err(e) = self.store.write_spend(&updates).await {
                let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                for u in updates {
                    p.entry(u.scope.clone()).or_insert(u);
                }
                return Err(e);
            }
            stats.spend_rows = updates.len();
        }
        loop {
            let rows = self.logs.take(self.batch);
            if rows.is_empty() {
                break;
            }
            match self.store.insert_spend_logs(&rows).await {
                Ok(n) => stats.log_rows += n,
                Err(e) => {
                    self.logs.requeue(rows);
                    return Err(e);
                }
            }
        }
        Ok(stats)
    }

    /// Flushes every `interval` until `shutdown` turns true (or its sender is dropped), then
    /// flushes once more so nothing queued is lost. Errors are retried on the next tick.
    /// Shared (`Arc`) so readers of spend (the management API) can [`Self::flush`] first.
    pub async fn run(
        self: Arc<Self>,
        interval: Duration,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => { let _ = self.flush().await; }
                _ = self.logs.batch_ready.notified() => { let _ = self.flush().await; }
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        break;
                    }
                }
            }
        }
        let _ = self.flush().await;
    }
}
