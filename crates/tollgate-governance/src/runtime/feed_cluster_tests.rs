//! The feed on Redis servers the test starts itself on free loopback ports (run when
//! `TOLLGATE_TEST_REDIS_URL` is set, as the other Redis tests; skipped, saying so, without a
//! `redis-server` binary), stopped by their PID when the test ends:
//!
//! - on a three-primary Redis Cluster, a change published through one node is heard by a
//!   subscriber connected to another;
//! - a subscriber whose server goes away reconnects once it is back, asks for a full refresh,
//!   and hears changes again.

use std::time::Instant;

use super::super::feed::{ChangeFeed, ChangeKind};
use super::*;
use crate::admission::redis::tests_cluster::three_primaries;
use crate::admission::redis::tests_wire::{PrivateRedis, free_port, start_redis};

/// `redis-server` on `port`, once it answers `PING`; `None` (after reporting the skip) without
/// a binary.
async fn start(port: u16) -> Option<PrivateRedis> {
    match start_redis(port, &[]).await {
        Ok(s) => Some(s),
        Err(e) => {
            crate::test_support::skipped(
                &format!("feed on private Redis (no redis-server: {e})"),
                "PATH",
                "a directory holding redis-server",
            );
            None
        }
    }
}

fn run_when_redis_tests_run(what: &str) -> bool {
    let on = std::env::var("TOLLGATE_TEST_REDIS_URL").is_ok_and(|u| !u.is_empty());
    if !on {
        crate::test_support::skipped(what, "TOLLGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379");
    }
    on
}

/// Polls `f` every 5 ms for at most 5 s.
async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    f()
}

#[tokio::test]
async fn on_a_cluster_a_change_published_on_one_node_is_heard_on_another() {
    if !run_when_redis_tests_run("feed_on_a_cluster") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("tollgate-feed-{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(nodes) = three_primaries(&dir).await else {
        return;
    };

    let (stop_tx, stop) = watch::channel(false);
    let requests = Arc::new(RefreshRequests::default());
    let stats = Arc::new(FeedStats::default());
    let sub = tokio::spawn(subscribe_changes(
        FeedEndpoint::Nodes(vec![nodes[2].url.clone()]),
        "c:changes".into(),
        Arc::from("B"),
        Arc::clone(&requests),
        Arc::clone(&stats),
        stop,
    ));
    assert!(
        eventually(|| requests.take() == (true, true)).await,
        "subscribed"
    );
    let (feed, rx) = ChangeFeed::new("A", 8);
    let publisher = tokio::spawn(publish_changes(
        FeedEndpoint::Nodes(vec![nodes[0].url.clone()]),
        "c:changes".into(),
        Arc::from("A"),
        rx,
        Arc::clone(feed.stats()),
    ));
    feed.emit(Change::new(ChangeKind::Organization, "org-1"));
    assert!(eventually(|| FeedStats::get(&stats.received) == 1).await);
    assert_eq!(requests.take(), (true, false));
    let _ = stop_tx.send(true);
    sub.await.unwrap();
    drop(feed);
    publisher.await.unwrap();
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_subscriber_reconnects_when_its_server_is_back_and_resyncs() {
    if !run_when_redis_tests_run("feed_reconnects") {
        return;
    }
    let port = free_port();
    let Some(server) = start(port).await else {
        return;
    };
    let url = server.url.clone();
    let (stop_tx, stop) = watch::channel(false);
    let requests = Arc::new(RefreshRequests::default());
    let stats = Arc::new(FeedStats::default());
    let sub = tokio::spawn(subscribe_changes(
        FeedEndpoint::Nodes(vec![url.clone()]),
        "r:changes".into(),
        Arc::from("B"),
        Arc::clone(&requests),
        Arc::clone(&stats),
        stop,
    ));
    assert!(
        eventually(|| requests.take() == (true, true)).await,
        "subscribed"
    );

    // the server goes away and comes back on the same port
    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let server = start(port).await.unwrap();
    assert!(
        eventually(|| requests.take() == (true, true)).await,
        "resubscribed and asked for a full refresh"
    );

    let (feed, rx) = ChangeFeed::new("A", 8);
    let publisher = tokio::spawn(publish_changes(
        FeedEndpoint::Nodes(vec![url]),
        "r:changes".into(),
        Arc::from("A"),
        rx,
        Arc::clone(feed.stats()),
    ));
    feed.emit(Change::new(ChangeKind::Tag, "t"));
    assert!(eventually(|| FeedStats::get(&stats.received) == 1).await);
    assert_eq!(requests.take(), (true, false));
    let _ = stop_tx.send(true);
    sub.await.unwrap();
    drop(feed);
    publisher.await.unwrap();
    drop(server);
}

/// A publisher whose connection went stale while Redis restarted sends the first change after
/// the restart anyway (it connects again on the failed send), so that change reaches the other
/// replicas at once rather than at their next reconcile.
#[tokio::test]
async fn the_first_change_after_a_redis_restart_is_not_lost() {
    if !run_when_redis_tests_run("feed_publish_after_restart") {
        return;
    }
    let port = free_port();
    let Some(server) = start(port).await else {
        return;
    };
    let url = server.url.clone();
    let (stop_tx, stop) = watch::channel(false);
    let requests = Arc::new(RefreshRequests::default());
    let stats = Arc::new(FeedStats::default());
    let sub = tokio::spawn(subscribe_changes(
        FeedEndpoint::Nodes(vec![url.clone()]),
        "p:changes".into(),
        Arc::from("B"),
        Arc::clone(&requests),
        Arc::clone(&stats),
        stop,
    ));
    assert!(eventually(|| requests.take() == (true, true)).await);
    let (feed, rx) = ChangeFeed::new("A", 8);
    let publisher = tokio::spawn(publish_changes(
        FeedEndpoint::Nodes(vec![url]),
        "p:changes".into(),
        Arc::from("A"),
        rx,
        Arc::clone(feed.stats()),
    ));
    feed.emit(Change::new(ChangeKind::Tag, "before"));
    assert!(eventually(|| FeedStats::get(&stats.received) == 1).await);

    drop(server);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let server = start(port).await.unwrap();
    assert!(
        eventually(|| requests.take() == (true, true)).await,
        "the subscriber is back"
    );
    feed.emit(Change::new(ChangeKind::Tag, "after"));
    assert!(
        eventually(|| FeedStats::get(&stats.received) == 2).await,
        "the first change after the restart arrives"
    );
    assert_eq!(FeedStats::get(&feed.stats().publish_errors), 0);
    let _ = stop_tx.send(true);
    sub.await.unwrap();
    drop(feed);
    publisher.await.unwrap();
    drop(server);
}
