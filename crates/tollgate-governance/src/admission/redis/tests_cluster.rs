//! The store on a real Redis Cluster: three primaries started by the test on loopback ports
//! (run when `TOLLGATE_TEST_REDIS_URL` is set, as the other Redis tests; skipped, saying so,
//! without `redis-server`). Every key of a store lives in the one slot of its hash tag, so each
//! call runs whole on one primary: the all-or-nothing and exactly-once scenarios hold as on one
//! server, and two replicas racing for one budget still admit exactly what it holds.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use super::tests::{all_or_nothing, exactly_once, redis_url, req, scope, test_options};
use super::tests_wire::{PrivateRedis, skip_without_binary, start_redis};
use super::{LIBRARY_NAME, RedisCounterStore};
use crate::admission::{AsyncCounterStore, Limits, ScopeKind, ScopeRequest};

/// A port whose cluster bus port (+10 000) is free too.
fn free_cluster_port(taken: &[u16]) -> u16 {
    loop {
        let p = 20_000 + rand::random::<u16>() % 20_000;
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if !taken.contains(&p) && free(p) && free(p + 10_000) {
            return p;
        }
    }
}

fn connection(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// Three primaries sharing the 16 384 slots, once the cluster says `cluster_state:ok`.
pub(crate) async fn three_primaries(dir: &std::path::Path) -> Option<Vec<PrivateRedis>> {
    let mut nodes = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..3 {
        let port = free_cluster_port(&ports);
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
        match start_redis(port, &args).await {
            Ok(n) => nodes.push(n),
            Err(e) => {
                skip_without_binary("redis cluster", &e);
                return None;
            }
        }
    }
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let created = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(created.success(), "redis-cli --cluster create failed");
    for _ in 0..200 {
        let ok = nodes.iter().all(|n| {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut connection(&n.url))
                .unwrap_or_default();
            info.contains("cluster_state:ok")
        });
        if ok {
            return Some(nodes);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the cluster did not reach cluster_state:ok");
}

#[tokio::test]
async fn on_a_three_primary_cluster_each_call_runs_whole_on_one_slot() {
    if redis_url("redis_cluster").is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("tollgate-cluster-{:016x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(nodes) = three_primaries(&dir).await else {
        return;
    };
    let urls: Vec<String> = nodes.iter().map(|n| n.url.clone()).collect();

    let s = RedisCounterStore::connect_cluster(&urls, test_options())
        .await
        .unwrap();
    for n in &nodes {
        let libs: redis::Value = redis::cmd("FUNCTION")
            .arg("LIST")
            .arg("LIBRARYNAME")
            .arg(LIBRARY_NAME)
            .query(&mut connection(&n.url))
            .unwrap();
        assert!(
            format!("{libs:?}").contains(LIBRARY_NAME),
            "loaded on {}",
            n.url
        );
    }
    all_or_nothing(&s).await;
    let s = RedisCounterStore::connect_cluster(&urls, test_options())
        .await
        .unwrap();
    exactly_once(&s).await;

    // two replicas on the cluster, 2 x 50 concurrent reservations, a budget for 10
    let opts = test_options();
    let a = RedisCounterStore::connect_cluster(&urls, opts.clone())
        .await
        .unwrap();
    let b = RedisCounterStore::connect_cluster(&urls, opts.clone())
        .await
        .unwrap();
    let budget = Limits {
        max_budget: Some(1.0),
        ..Limits::default()
    };
    let scopes: Arc<[ScopeRequest]> = Arc::from(vec![
        scope(ScopeKind::Key, "k", budget),
        scope(ScopeKind::Team, "t", Limits::default()),
        scope(ScopeKind::Global, "", Limits::default()),
    ]);
    let mut tasks = Vec::new();
    for (replica, store) in [a, b].into_iter().enumerate() {
        for i in 0..50 {
            let (store, scopes) = (store.clone(), scopes.clone());
            tasks.push(tokio::spawn(async move {
                let id = format!("r{replica}-{i}");
                store
                    .reserve(&req(&id, &scopes, 0.1))
                    .await
                    .unwrap()
                    .is_ok()
            }));
        }
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += usize::from(t.await.unwrap());
    }
    assert_eq!(admitted, 10);
    // every key of that store is on one primary
    let pattern = format!("{{{}}}:*", opts.key_prefix);
    let per_node: Vec<usize> = nodes
        .iter()
        .map(|n| {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query(&mut connection(&n.url))
                .unwrap();
            keys.len()
        })
        .collect();
    assert_eq!(
        per_node.iter().filter(|&&k| k > 0).count(),
        1,
        "{per_node:?}"
    );
    assert!(per_node.iter().sum::<usize>() >= 3 + 10, "{per_node:?}");

    // batched settlements: a pipeline of several batch calls, one round trip, on one primary
    batched_on_the_cluster(&urls).await;
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// 40 settlements through [`BatchedRedis`] on the cluster: one pipeline of two batch calls
/// (32 + 8 operations), every spend exact.
async fn batched_on_the_cluster(urls: &[String]) {
    use crate::admission::fleet::{BatchedOptions, BatchedRedis, NoSeeds};
    use crate::admission::money::usd_to_units;
    use crate::admission::{Actual, SharedCounters};
    let store = RedisCounterStore::connect_cluster(urls, test_options())
        .await
        .unwrap();
    let b = BatchedRedis::start(
        store.clone(),
        Arc::new(NoSeeds),
        super::FailurePolicy::default(),
        BatchedOptions::default(),
    );
    b.ensure_seeded().await.unwrap();
    let scopes = [scope(ScopeKind::Team, "t", Limits::default())];
    let mut tickets = Vec::new();
    for i in 0..40 {
        let id = format!("b{i}");
        let (t, _) = b.reserve(&req(&id, &scopes, 0.1)).await.unwrap().unwrap();
        tickets.push(t);
    }
    for t in tickets {
        b.settle(
            t,
            Actual {
                cost_units: usd_to_units(0.01),
                tokens: 1,
            },
        );
    }
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
    let c = b.round_trips().snapshot();
    assert_eq!(
        (c.settled_ops, c.failed_ops, c.batches),
        (40, 0, 1),
        "{c:?}"
    );
    let sp = store.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!(
        (usd_to_units(sp.spend), sp.reserved, sp.in_flight),
        (usd_to_units(0.4), 0.0, 0)
    );
}
