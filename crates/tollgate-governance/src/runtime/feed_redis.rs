//! The change feed over Redis pub/sub, channel `<key_prefix>:changes`
//! ([`super::feed::channel`]): [`publish_changes`] sends what this replica's writes emitted,
//! [`subscribe_changes`] hears the other replicas' and raises [`RefreshRequests`].
//!
//! Each runs on its own connection (a subscribed connection can do nothing else). Pub/sub is
//! not a stream with a history: a message published while a subscriber is away is lost to it,
//! so every (re)subscribe asks for a full refresh, and the periodic reconcile
//! (`feed_apply.rs`) bounds what a silently lost message leaves stale.
//!
//! On Redis Cluster either side connects to any one node ([`FeedEndpoint::Nodes`], tried in
//! turn): a classic `PUBLISH` on one node reaches the subscribers of every node. With
//! Sentinel, both go to the primary the Sentinels name at (re)connect.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{RedisConnectionInfo, RedisError, TlsMode};
use tokio::sync::{mpsc, watch};

use super::feed::{Change, FeedStats};
use super::feed_apply::{RefreshRequests, stopped};
use crate::admission::redis::SentinelAuth;

/// Longest wait for a connection (and its `SUBSCRIBE`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait for one `PUBLISH` or `PING` reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(1);
/// First wait before reconnecting; doubled after each failure up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait before reconnecting.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How often a subscribed connection is pinged, to notice a server that went away without
/// closing it.
const PING_EVERY: Duration = Duration::from_secs(5);

/// Where the feed connects.
#[derive(Clone)]
pub enum FeedEndpoint {
    /// One server, or startup nodes of a cluster: `redis[s]://[user:password@]host:port` each,
    /// tried in turn, one at a time.
    Nodes(Vec<String>),
    /// The primary named `service_name` by these Sentinels (`redis://host:port` each).
    Sentinel {
        /// The Sentinels.
        sentinels: Vec<String>,
        /// The monitored primary's name.
        service_name: String,
        /// How to log in to the primary.
        auth: SentinelAuth,
    },
}

impl std::fmt::Debug for FeedEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // URLs may carry a password: only their number is printed.
        match self {
            FeedEndpoint::Nodes(n) => write!(f, "Nodes({} urls)", n.len()),
            FeedEndpoint::Sentinel {
                sentinels,
                service_name,
                ..
            } => write!(f, "Sentinel({} sentinels, {service_name})", sentinels.len()),
        }
    }
}

impl FeedEndpoint {
    /// A client for the `attempt`-th connection (nodes are tried round robin).
    async fn client(&self, attempt: usize) -> Result<redis::Client, RedisError> {
        match self {
            FeedEndpoint::Nodes(nodes) => {
                let url = nodes.get(attempt % nodes.len().max(1)).ok_or_else(|| {
                    RedisError::from((redis::ErrorKind::InvalidClientConfig, "no Redis node"))
                })?;
                crate::admission::redis::client(url.as_str())
            }
            FeedEndpoint::Sentinel {
                sentinels,
                service_name,
                auth,
            } => {
                let mut info = RedisConnectionInfo::default();
                if let Some(u) = &auth.username {
                    info = info.set_username(u);
                }
                if let Some(p) = &auth.password {
                    info = info.set_password(p);
                }
                let mut node = SentinelNodeConnectionInfo::default()
                    .set_redis_connection_info(info)
                    .set_tcp_settings(crate::admission::redis::tcp_settings());
                if auth.tls {
                    node = node.set_tls_mode(TlsMode::Secure);
                }
                let mut client = SentinelClient::build(
                    sentinels.iter().map(String::as_str).collect(),
                    service_name,
                    Some(node),
                    SentinelServerType::Master,
                )?;
                client.async_get_client().await
            }
        }
    }
}

fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))
}

/// Publishes every change of `rx` on `channel` as `origin`, until every sender is gone.
/// Never holds a change back: while Redis cannot be reached (a connection failed less than
/// the back-off ago, or fails now) the change is dropped and counted in
/// [`FeedStats::publish_errors`] (logged at warn), and the next one tries again once the
/// back-off has passed.
pub async fn publish_changes(
    endpoint: FeedEndpoint,
    channel: String,
    origin: Arc<str>,
    mut rx: mpsc::Receiver<Change>,
    stats: Arc<FeedStats>,
) {
    let mut conn: Option<redis::aio::MultiplexedConnection> = None;
    let mut attempt = 0usize;
    let mut backoff = MIN_BACKOFF;
    let mut retry_at: Option<tokio::time::Instant> = None;
    while let Some(change) = rx.recv().await {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => {
                if retry_at.is_some_and(|t| tokio::time::Instant::now() < t) {
                    stats.publish_errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let connected = tokio::time::timeout(CONNECT_TIMEOUT, async {
                    let client = endpoint.client(attempt).await?;
                    client.get_multiplexed_async_connection().await
                })
                .await
                .unwrap_or_else(|_| Err(timed_out()));
                match connected {
                    Ok(c) => {
                        backoff = MIN_BACKOFF;
                        retry_at = None;
                        conn.insert(c)
                    }
                    Err(e) => {
                        attempt = attempt.wrapping_add(1);
                        retry_at = Some(tokio::time::Instant::now() + backoff);
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        stats.publish_errors.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(error = %e, "change feed: cannot reach Redis to publish; other replicas pick the change up at their next reconcile");
                        continue;
                    }
                }
            }
        };
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(&channel).arg(change.encode(&origin));
        let mut sent = publish(c, &cmd).await;
        if sent.is_err() {
            // A connection that went stale while idle (Redis restarted since the last change)
            // fails on its first use: connect again at once and send this change again, so the
            // first change after an outage is not left to the reconcile.
            let fresh = tokio::time::timeout(CONNECT_TIMEOUT, async {
                let client = endpoint.client(attempt).await?;
                client.get_multiplexed_async_connection().await
            })
            .await
            .unwrap_or_else(|_| Err(timed_out()));
            conn = fresh.ok();
            if let Some(c) = conn.as_mut() {
                sent = publish(c, &cmd).await;
            }
        }
        match sent {
            Ok(_) => {
                stats.published.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                conn = None;
                attempt = attempt.wrapping_add(1);
                stats.publish_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "change feed: publish failed; other replicas pick the change up at their next reconcile");
            }
        }
    }
}

/// One `PUBLISH`, bounded by [`REPLY_TIMEOUT`].
async fn publish(
    c: &mut redis::aio::MultiplexedConnection,
    cmd: &redis::Cmd,
) -> Result<i64, redis::RedisError> {
    tokio::time::timeout(REPLY_TIMEOUT, cmd.query_async::<i64>(c))
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

/// Subscribes to `channel` and raises a refresh in `requests` for every change another
/// replica (not `origin`) published, and for both kinds after every (re)subscribe. Reconnects
/// with back-off ([`MIN_BACKOFF`] doubling to [`MAX_BACKOFF`]) when the connection fails, is
/// lost, or stops answering pings. Runs until `stop` turns true (or its sender is gone).
pub async fn subscribe_changes(
    endpoint: FeedEndpoint,
    channel: String,
    origin: Arc<str>,
    requests: Arc<RefreshRequests>,
    stats: Arc<FeedStats>,
    mut stop: watch::Receiver<bool>,
) {
    let mut attempt = 0usize;
    let mut backoff = MIN_BACKOFF;
    let mut failures = 0u32;
    loop {
        let subscribed = tokio::time::timeout(CONNECT_TIMEOUT, async {
            let client = endpoint.client(attempt).await?;
            let mut ps = client.get_async_pubsub().await?;
            ps.subscribe(&channel).await?;
            Ok::<_, RedisError>(ps)
        })
        .await
        .unwrap_or_else(|_| Err(timed_out()));
        match subscribed {
            Ok(ps) => {
                backoff = MIN_BACKOFF;
                failures = 0;
                tracing::debug!(%channel, "change feed subscribed");
                requests.request_all();
                let (mut sink, mut stream) = ps.split();
                let mut ping = tokio::time::interval(PING_EVERY);
                ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ping.tick().await;
                loop {
                    tokio::select! {
                        biased;
                        _ = stopped(&mut stop) => return,
                        m = stream.next() => match m {
                            Some(msg) => heard(msg.get_payload_bytes(), &origin, &requests, &stats),
                            None => break,
                        },
                        _ = ping.tick() => {
                            let pong = tokio::time::timeout(REPLY_TIMEOUT, sink.ping::<redis::Value>()).await;
                            if !matches!(pong, Ok(Ok(_))) {
                                break;
                            }
                        }
                    }
                }
                tracing::warn!("change feed: subscription lost; reconnecting");
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                // the first failure of a run at warn, the rest at debug: Redis down for an
                // hour must not write thousands of lines
                if failures == 1 {
                    tracing::warn!(error = %e, "change feed: cannot subscribe; retrying (the periodic reconcile still runs)");
                } else {
                    tracing::debug!(error = %e, failures, "change feed: cannot subscribe");
                }
            }
        }
        attempt = attempt.wrapping_add(1);
        tokio::select! {
            biased;
            _ = stopped(&mut stop) => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One message: a change of another replica raises its refresh; one of this replica, or
/// one that does not parse, is ignored.
fn heard(payload: &[u8], origin: &str, requests: &RefreshRequests, stats: &FeedStats) {
    match Change::decode(payload) {
        Some((from, change)) if from != origin => {
            stats.received.fetch_add(1, Ordering::Relaxed);
            requests.request(change.kind);
        }
        Some(_) => {}
        None => tracing::debug!("change feed: ignored a message that is not a change"),
    }
}

#[cfg(test)]
#[path = "feed_redis_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "feed_cluster_tests.rs"]
mod cluster_tests;
