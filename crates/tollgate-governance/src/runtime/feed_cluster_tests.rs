//! The feed on Redis servers the test starts itself on free loopback ports (run when
//! `TOLLGATE_TEST_REDIS_URL` is set, as the other Redis tests; skipped, saying so, without a
//! `redis-server` binary), stopped by their PID when the test ends:
//!
//! - on a three-primary Redis Cluster, a change published through one node is heard by a
//!   subscriber connected to another;
//! - a subscriber whose server goes away reconnects once it is back, asks for a full refresh,
//!   and hears changes again.

use std::process::{Child, Command, Stdio};
use std::time::Instant;

use super::super::feed::{ChangeFeed, ChangeKind};
use super::*;

/// A `redis-server` child, killed (by its PID) on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port whose cluster bus port (+10 000) is free too.
fn free_port(taken: &[u16]) -> u16 {
    loop {
        let p = 20_000 + rand::random::<u16>() % 20_000;
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if !taken.contains(&p) && free(p) && free(p + 10_000) {
            return p;
        }
    }
}

/// `redis-server` on `port` with `extra` arguments, once it answers `PING`; `None` (after
/// reporting the skip) without a binary.
async fn start(port: u16, extra: &[&str]) -> Option<Server> {
    let spawned = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            crate::test_support::skipped(
                &format!("feed on private Redis (no redis-server: {e})"),
                "PATH",
                "a directory holding redis-server",
            );
            return None;
        }
    };
    let s = Server { child, port };
    for _ in 0..100 {
        if ping(&s.url()) {
            return Some(s);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server on {port} did not answer");
}

fn ping(url: &str) -> bool {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
        .is_ok()
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
    let mut nodes = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..3 {
        let port = free_port(&ports);
        ports.push(port);
        let conf = dir.join(format!("nodes-{port}.conf"));
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            conf.to_str().unwrap(),
            "--dir",
            dir.to_str().unwrap(),
        ];
        let Some(s) = start(port, &args).await else {
            return;
        };
        nodes.push(s);
    }
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let created = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(created.success(), "redis-cli --cluster create failed");
    let ready = eventually(|| {
        nodes.iter().all(|n| {
            redis::Client::open(n.url())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut c))
                .is_ok_and(|i| i.contains("cluster_state:ok"))
        })
    })
    .await;
    assert!(ready, "cluster_state:ok");

    let (stop_tx, stop) = watch::channel(false);
    let requests = Arc::new(RefreshRequests::default());
    let stats = Arc::new(FeedStats::default());
    let sub = tokio::spawn(subscribe_changes(
        FeedEndpoint::Nodes(vec![nodes[2].url()]),
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
        FeedEndpoint::Nodes(vec![nodes[0].url()]),
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
    let port = free_port(&[]);
    let Some(server) = start(port, &[]).await else {
        return;
    };
    let url = server.url();
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
    let server = start(port, &[]).await.unwrap();
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
