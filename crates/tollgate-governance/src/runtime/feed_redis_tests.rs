//! The feed over a real Redis (`TOLLGATE_TEST_REDIS_URL`, skipped when unset), each test on
//! its own channel (a random prefix): two replicas' publishers and subscribers, and a
//! publisher facing a server that is not there.

use std::time::Instant;

use super::super::feed::{ChangeFeed, ChangeKind, channel};
use super::*;

fn redis_url(what: &str) -> Option<String> {
    let url = std::env::var("TOLLGATE_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        crate::test_support::skipped(what, "TOLLGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379");
    }
    url
}

/// Polls `f` every 5 ms for at most 3 s.
async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    f()
}

#[tokio::test]
async fn another_replicas_change_raises_a_refresh_and_an_own_one_does_not() {
    let Some(url) = redis_url("another_replicas_change_raises_a_refresh") else {
        return;
    };
    let prefix = format!("tg-feed-test-{:016x}", rand::random::<u64>());
    let ch = channel(&prefix);
    let endpoint = FeedEndpoint::Nodes(vec![url]);
    let (stop_tx, stop) = watch::channel(false);
    // replica B listens
    let requests = Arc::new(RefreshRequests::default());
    let b_stats = Arc::new(FeedStats::default());
    let sub = tokio::spawn(subscribe_changes(
        endpoint.clone(),
        ch.clone(),
        Arc::from("B"),
        Arc::clone(&requests),
        Arc::clone(&b_stats),
        stop,
    ));
    // the (re)subscribe itself asks for a full refresh
    assert!(
        eventually(|| {
            let (i, m) = requests.take();
            i && m
        })
        .await,
        "subscribe asks for both refreshes"
    );
    // replica A and replica B publish
    let (feed_a, rx_a) = ChangeFeed::new("A", 16);
    let pub_a = tokio::spawn(publish_changes(
        endpoint.clone(),
        ch.clone(),
        Arc::from("A"),
        rx_a,
        Arc::clone(feed_a.stats()),
    ));
    let (feed_b, rx_b) = ChangeFeed::new("B", 16);
    let pub_b = tokio::spawn(publish_changes(
        endpoint,
        ch,
        Arc::from("B"),
        rx_b,
        Arc::clone(feed_b.stats()),
    ));
    feed_b.emit(Change::new(ChangeKind::Key, "own"));
    assert!(eventually(|| FeedStats::get(&feed_b.stats().published) == 1).await);
    feed_a.emit(Change::new(ChangeKind::Model, "dep-1"));
    let t0 = Instant::now();
    assert!(eventually(|| FeedStats::get(&b_stats.received) == 1).await);
    let took = t0.elapsed();
    assert_eq!(requests.take(), (false, true), "A's model change only");
    assert!(took < Duration::from_secs(1), "heard in {took:?}");
    assert_eq!(FeedStats::get(&feed_a.stats().published), 1);
    assert_eq!(FeedStats::get(&feed_a.stats().publish_errors), 0);
    let _ = stop_tx.send(true);
    sub.await.unwrap();
    drop((feed_a, feed_b));
    pub_a.await.unwrap();
    pub_b.await.unwrap();
}

#[tokio::test]
async fn publishing_to_an_absent_server_drops_and_counts_without_waiting() {
    // a loopback port nothing listens on: bind, read the port, close
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = FeedEndpoint::Nodes(vec![format!("redis://127.0.0.1:{port}")]);
    let (feed, rx) = ChangeFeed::new("A", 16);
    let task = tokio::spawn(publish_changes(
        endpoint,
        "x:changes".into(),
        Arc::from("A"),
        rx,
        Arc::clone(feed.stats()),
    ));
    let t0 = Instant::now();
    for i in 0..10 {
        feed.emit(Change::new(ChangeKind::Team, format!("t{i}")));
    }
    assert!(t0.elapsed() < Duration::from_millis(50), "emit never waits");
    assert!(eventually(|| FeedStats::get(&feed.stats().publish_errors) == 10).await);
    assert_eq!(FeedStats::get(&feed.stats().published), 0);
    drop(feed);
    task.await.unwrap();
}
