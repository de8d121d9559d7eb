//! The identity change feed: one small [`Change`] per successful management write (entity
//! kind + id, never a secret: a key is named by its hash), sent to every replica of a fleet so
//! each refreshes its [`super::IdentityCache`] (and its routed deployments) from the database.
//!
//! - [`ChangeFeed`] is the writing side: [`crate::store::PublishingStore`] calls
//!   [`ChangeFeed::emit`] after each write the database accepted. Emitting never waits: the
//!   change is queued (bounded, [`FEED_QUEUE`]) for the publisher task, a full queue drops it
//!   (counted, logged; the periodic reconcile repairs what a lost change leaves stale).
//! - The wire form ([`Change::encode`] / [`Change::decode`]) is one JSON object per Redis
//!   pub/sub message on `<key_prefix>:changes` ([`channel`]):
//!   `{"origin":"<replica id>","kind":"key","id":"<sha-256 hex>"}`. `origin` lets a replica skip
//!   its own changes (its cache already holds them).
//! - The transport is `feed_redis.rs`; the coalescing and refresh loop is `feed_apply.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// Changes queued for publishing at most; beyond it a change is dropped (and counted).
pub const FEED_QUEUE: usize = 4096;

/// What kind of entity changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A virtual key (id: its hash).
    Key,
    /// A team (id: `team_id`).
    Team,
    /// An internal user (id: `user_id`).
    User,
    /// An end user (id: `user_id`).
    EndUser,
    /// A budget tier (id: `budget_id`).
    Budget,
    /// A team membership (id: `team_id/user_id`).
    Membership,
    /// An organization (id: `organization_id`).
    Organization,
    /// A tag (id: `tag_name`).
    Tag,
    /// A stored model deployment (id: `model_id`).
    Model,
    /// A kind a newer version announces and this one does not know: refreshes everything.
    #[serde(other)]
    Other,
}

impl ChangeKind {
    /// Whether a change of this kind is refreshed by reloading the stored deployments (the
    /// router), rather than the identity cache.
    pub fn is_model(self) -> bool {
        self == ChangeKind::Model
    }
}

/// One change: which entity a management write created, changed or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Entity kind.
    pub kind: ChangeKind,
    /// Entity id (a key's hash, never the key).
    pub id: String,
}

/// The message form of a change, with the replica it came from.
#[derive(Debug, Serialize, Deserialize)]
struct Wire<'a> {
    origin: &'a str,
    kind: ChangeKind,
    id: &'a str,
}

impl Change {
    /// A change of `kind` to `id`.
    pub fn new(kind: ChangeKind, id: impl Into<String>) -> Self {
        Self {
            kind,
            id: id.into(),
        }
    }

    /// The pub/sub payload: `{"origin","kind","id"}` (a few dozen bytes).
    pub fn encode(&self, origin: &str) -> String {
        let w = Wire {
            origin,
            kind: self.kind,
            id: &self.id,
        };
        // A struct of strings and a unit enum always serializes.
        serde_json::to_string(&w).unwrap_or_default()
    }

    /// `(origin, change)` of a payload; `None` when it is not one (a foreign publisher on the
    /// channel). A kind this version does not know decodes as [`ChangeKind::Other`].
    pub fn decode(payload: &[u8]) -> Option<(String, Change)> {
        let w: Wire<'_> = serde_json::from_slice(payload).ok()?;
        Some((w.origin.to_owned(), Change::new(w.kind, w.id)))
    }
}

/// The pub/sub channel of a fleet: `<key_prefix>:changes`.
pub fn channel(key_prefix: &str) -> String {
    format!("{key_prefix}:changes")
}

/// Counters of a feed (read by logs and tests).
#[derive(Debug, Default)]
pub struct FeedStats {
    /// Changes emitted by this replica's writes.
    pub emitted: AtomicU64,
    /// Changes dropped because the publish queue was full or closed.
    pub dropped: AtomicU64,
    /// Changes published to Redis.
    pub published: AtomicU64,
    /// Publish failures (Redis unreachable, timed out); the change is lost, the reconcile
    /// repairs.
    pub publish_errors: AtomicU64,
    /// Changes of other replicas received.
    pub received: AtomicU64,
    /// Identity refreshes done.
    pub refreshes: AtomicU64,
    /// Refreshes that failed (database unreachable); retried.
    pub refresh_errors: AtomicU64,
}

impl FeedStats {
    /// One counter's value.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// The writing side of the feed (cheap to clone). See the module docs.
#[derive(Debug, Clone)]
pub struct ChangeFeed {
    tx: mpsc::Sender<Change>,
    origin: Arc<str>,
    stats: Arc<FeedStats>,
}

impl ChangeFeed {
    /// A feed queuing at most `capacity` changes, named `origin` on the wire; returns it and
    /// the receiving end the publisher task drains.
    pub fn new(origin: impl Into<Arc<str>>, capacity: usize) -> (Self, mpsc::Receiver<Change>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let feed = Self {
            tx,
            origin: origin.into(),
            stats: Arc::new(FeedStats::default()),
        };
        (feed, rx)
    }

    /// A random replica id (16 hex digits), distinct per process.
    pub fn random_origin() -> String {
        format!("{:016x}", rand::random::<u64>())
    }

    /// This replica's id on the wire.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The counters.
    pub fn stats(&self) -> &Arc<FeedStats> {
        &self.stats
    }

    /// Queues `change` for publishing; never waits. A full or closed queue drops it (counted
    /// in [`FeedStats::dropped`], logged at warn).
    pub fn emit(&self, change: Change) {
        self.stats.emitted.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.tx.try_send(change) {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            let why = match e {
                mpsc::error::TrySendError::Full(_) => "publish queue full",
                mpsc::error::TrySendError::Closed(_) => "publisher stopped",
            };
            tracing::warn!(
                reason = why,
                "identity change not published; other replicas pick it up at the next reconcile"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_round_trips_and_names_the_origin() {
        let c = Change::new(ChangeKind::EndUser, "cust-1");
        let s = c.encode("r1");
        assert_eq!(s, r#"{"origin":"r1","kind":"end_user","id":"cust-1"}"#);
        assert_eq!(Change::decode(s.as_bytes()), Some(("r1".to_owned(), c)));
        assert_eq!(Change::decode(b"not json"), None);
        assert_eq!(
            Change::decode(br#"{"origin":"r","kind":"spaceship","id":"x"}"#),
            Some(("r".to_owned(), Change::new(ChangeKind::Other, "x")))
        );
        assert_eq!(channel("tollgate"), "tollgate:changes");
    }

    #[tokio::test]
    async fn emit_never_waits_and_counts_what_it_drops() {
        let (feed, mut rx) = ChangeFeed::new("r", 2);
        for i in 0..5 {
            feed.emit(Change::new(ChangeKind::Key, format!("h{i}")));
        }
        assert_eq!(FeedStats::get(&feed.stats().emitted), 5);
        assert_eq!(FeedStats::get(&feed.stats().dropped), 3);
        assert_eq!(rx.recv().await.map(|c| c.id), Some("h0".to_owned()));
        assert_eq!(rx.recv().await.map(|c| c.id), Some("h1".to_owned()));
        assert!(rx.try_recv().is_err());
    }
}
