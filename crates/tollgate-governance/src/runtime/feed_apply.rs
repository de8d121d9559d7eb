//! When a replica refreshes what other replicas changed: [`apply_changes`], the loop that turns
//! requests ([`RefreshRequests`], raised by the feed's subscriber for each change received, and
//! once after every (re)subscribe, since changes published while it was away are lost) into
//! refreshes of a [`RefreshTarget`] (the identity cache, the routed deployments).
//!
//! - A burst is coalesced: the first request opens a window of [`ApplyOptions::coalesce`]
//!   (50 ms by default); everything requested until it closes costs one refresh of each kind
//!   asked for. Requests are flags, so none is lost and raising one never waits.
//! - Every [`ApplyOptions::reconcile`] (30 s by default; `None` = off) both are refreshed
//!   whatever was heard: the bound on staleness when a change was missed (Redis down, a write
//!   made straight to the database).
//! - A refresh that fails (database unreachable) is logged, counted, and asked again after
//!   [`ApplyOptions::retry`].
//!
//! The bound a change takes to reach a replica is then: publish + coalesce window + one load
//! (milliseconds each), or at worst the reconcile period.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{Notify, watch};

use super::feed::{ChangeKind, FeedStats};

/// Why a refresh failed (the message of the store's or router's error).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct RefreshError(pub String);

/// What the loop refreshes.
#[async_trait]
pub trait RefreshTarget: Send + Sync + 'static {
    /// Reloads every identity (keys, teams, users, end users, tiers, memberships,
    /// organizations, tags) from the database.
    ///
    /// Errors: [`RefreshError`] (the cache is then unchanged).
    async fn refresh_identities(&self) -> Result<(), RefreshError>;
    /// Reloads the stored model deployments and rebuilds the router when they changed.
    ///
    /// Errors: [`RefreshError`] (the router is then unchanged).
    async fn refresh_models(&self) -> Result<(), RefreshError>;
}

/// Timings of [`apply_changes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Window that gathers a burst of changes into one refresh.
    pub coalesce: Duration,
    /// Period of the full reconcile; `None` = off.
    pub reconcile: Option<Duration>,
    /// Wait before a failed refresh is tried again.
    pub retry: Duration,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        Self {
            coalesce: Duration::from_millis(50),
            reconcile: Some(Duration::from_secs(30)),
            retry: Duration::from_secs(1),
        }
    }
}

/// Pending refresh requests, shared by the subscriber and [`apply_changes`].
#[derive(Debug, Default)]
pub struct RefreshRequests {
    identities: AtomicBool,
    models: AtomicBool,
    notify: Notify,
}

impl RefreshRequests {
    /// Asks for the refresh a change of `kind` needs (both for [`ChangeKind::Other`]).
    pub fn request(&self, kind: ChangeKind) {
        let flag = match kind {
            ChangeKind::Other => return self.request_all(),
            k if k.is_model() => &self.models,
            _ => &self.identities,
        };
        flag.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    /// Asks for both refreshes (after a (re)subscribe: changes may have been missed).
    pub fn request_all(&self) {
        self.identities.store(true, Ordering::Release);
        self.models.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    /// `(identities, models)` asked for since the last call; clears them.
    pub(crate) fn take(&self) -> (bool, bool) {
        (
            self.identities.swap(false, Ordering::AcqRel),
            self.models.swap(false, Ordering::AcqRel),
        )
    }
}

/// Runs until `stop` turns true (or its sender is gone): refreshes `target` as `requests` and
/// the reconcile period ask (see the module docs), counting in `stats`.
pub async fn apply_changes(
    target: Arc<dyn RefreshTarget>,
    requests: Arc<RefreshRequests>,
    opts: ApplyOptions,
    stats: Arc<FeedStats>,
    mut stop: watch::Receiver<bool>,
) {
    let mut reconcile = opts.reconcile.filter(|p| !p.is_zero()).map(|p| {
        let mut i = tokio::time::interval_at(tokio::time::Instant::now() + p, p);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        i
    });
    loop {
        let full = tokio::select! {
            biased;
            _ = stopped(&mut stop) => return,
            _ = requests.notify.notified() => false,
            _ = tick(&mut reconcile) => true,
        };
        if !full {
            tokio::select! {
                biased;
                _ = stopped(&mut stop) => return,
                _ = tokio::time::sleep(opts.coalesce) => {}
            }
        }
        let (mut identities, mut models) = requests.take();
        identities |= full;
        models |= full;
        let mut failed = Vec::new();
        if identities {
            match target.refresh_identities().await {
                Ok(()) => {
                    stats.refreshes.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    stats.refresh_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "identity refresh failed; retrying");
                    failed.push(ChangeKind::Key);
                }
            }
        }
        if models && let Err(e) = target.refresh_models().await {
            stats.refresh_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "stored deployments refresh failed; retrying");
            failed.push(ChangeKind::Model);
        }
        if !failed.is_empty() {
            tokio::select! {
                biased;
                _ = stopped(&mut stop) => return,
                _ = tokio::time::sleep(opts.retry) => {}
            }
            for k in failed {
                requests.request(k);
            }
        }
    }
}

/// Resolves once `stop` is true or its sender is gone (holding no borrow of it after).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The next reconcile tick; never, when the reconcile is off.
async fn tick(i: &mut Option<tokio::time::Interval>) {
    match i {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[path = "feed_apply_tests.rs"]
mod tests;
