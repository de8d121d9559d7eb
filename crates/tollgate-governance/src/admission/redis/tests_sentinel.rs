//! The store behind Redis Sentinel: a primary, a replica and one Sentinel started by the test on
//! loopback ports (run when `TOLLGATE_TEST_REDIS_URL` is set, as the other Redis tests;
//! skipped, saying so, without `redis-server`). After a failover the store's next call meets
//! the demoted primary's `READONLY`, asks the Sentinel again and runs on the new primary, with
//! the counters replicated before the failover.

use std::process::Command;
use std::time::Duration;

use super::tests::{redis_url, req, test_options};
use super::tests_wire::{free_port, skip_without_binary, spawn_redis, start_redis};
use super::{RedisCounterStore, SentinelAuth};
use crate::admission::CounterStoreError;
use crate::admission::money::usd_to_units;
use crate::admission::{Actual, AsyncCounterStore, Limits, ScopeKey, ScopeRequest};

/// A directory of its own for the Sentinel's config (it rewrites it), removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Self {
        let dir =
            std::env::temp_dir().join(format!("tollgate-sentinel-{:016x}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn connection(url: &str) -> redis::Connection {
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// Polls `check` every 100 ms for up to `secs` seconds.
async fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..secs * 10 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within {secs} s");
}

#[tokio::test]
async fn after_a_sentinel_failover_the_next_call_runs_on_the_new_primary() {
    if redis_url("redis_sentinel").is_none() {
        return;
    }
    let (a, b, s) = (free_port(), free_port(), free_port());
    let primary = match start_redis(a, &[]).await {
        Ok(p) => p,
        Err(e) => return skip_without_binary("redis sentinel", &e),
    };
    let replica = start_redis(b, &["--replicaof", "127.0.0.1", &a.to_string()])
        .await
        .unwrap();
    let dir = TempDir::new();
    let conf = dir.0.join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {s}\nbind 127.0.0.1\ndir {}\nsentinel monitor tgtest 127.0.0.1 {a} 1\nsentinel down-after-milliseconds tgtest 2000\nsentinel failover-timeout tgtest 10000\n",
            dir.0.display()
        ),
    )
    .unwrap();
    let sentinel = spawn_redis(Command::new("redis-server").arg(&conf).arg("--sentinel"), s)
        .await
        .unwrap();

    let store = RedisCounterStore::connect_sentinel(
        std::slice::from_ref(&sentinel.url),
        "tgtest",
        &SentinelAuth::default(),
        test_options(),
    )
    .await
    .unwrap();
    assert!(format!("{store:?}").contains("sentinel"));
    let scopes = [ScopeRequest::new(ScopeKey::key("h"), Limits::default())];
    let (t, _) = store
        .reserve(&req("a", &scopes, 0.5))
        .await
        .unwrap()
        .unwrap();
    let actual = Actual {
        cost_units: usd_to_units(0.3),
        tokens: 1,
    };
    assert_eq!(store.settle(&t, actual).await.unwrap(), Some(vec![0.3]));

    // the replica has everything, and the Sentinel knows it
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(&mut connection(&primary.url))
        .unwrap();
    assert_eq!(acked, 1);
    // failover once the Sentinel holds the replica for a good candidate (it refuses with
    // NOGOODSLAVE until its view of the replica is fresh)
    let mut sc = connection(&sentinel.url);
    eventually(30, "the Sentinel starts a failover", || {
        redis::cmd("SENTINEL")
            .arg("FAILOVER")
            .arg("tgtest")
            .query::<String>(&mut sc)
            .is_ok()
    })
    .await;
    let role = |url: &str| -> String {
        let r: Vec<redis::Value> = redis::cmd("ROLE").query(&mut connection(url)).unwrap();
        match r.first() {
            Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            other => format!("{other:?}"),
        }
    };
    eventually(
        30,
        "the replica is promoted and the old primary demoted",
        || role(&replica.url) == "master" && role(&primary.url) == "slave",
    )
    .await;

    // the store's connection still points at the demoted primary, which closed it on its role
    // change: that call fails (the outcome of a call on a lost connection is unknown) and the
    // store asks the Sentinel again; a READONLY reply would be followed by a retry instead
    let t = match store.reserve(&req("b", &scopes, 0.5)).await {
        Ok(r) => r.unwrap().0,
        Err(CounterStoreError::Unavailable(_)) => {
            store
                .reserve(&req("c", &scopes, 0.5))
                .await
                .unwrap()
                .unwrap()
                .0
        }
        Err(e) => panic!("{e:?}"),
    };
    let sp = store.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!((sp.spend, sp.reserved, sp.in_flight), (0.3, 0.5, 1));
    assert!(store.release(&t).await.unwrap());
    drop((sentinel, replica, primary));
}
