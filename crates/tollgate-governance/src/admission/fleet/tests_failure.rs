//! [`BatchedRedis`] when Redis fails, on a private `redis-server` each test starts on a free
//! loopback port, stops by its PID (dropping it kills it) and starts again on the same port
//! (run when `TOLLGATE_TEST_REDIS_URL` is set, as the other Redis tests; skipped, saying so,
//! without a `redis-server` binary).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::tests::{budget, request, spend_units};
use super::{BatchedOptions, BatchedRedis, NoSeeds, Seed};
use crate::admission::money::usd_to_units;
use crate::admission::redis::tests::{open, redis_url, test_options};
use crate::admission::redis::tests_wire::{
    PrivateRedis, free_port, skip_without_binary, start_redis,
};
use crate::admission::redis::{FailurePolicy, RedisCounterStore, RedisStoreOptions};
use crate::admission::{
    Actual, CounterStoreError, Denial, Limits, ScopeKey, ScopeRequest, SharedCounters, Ticket,
};

async fn private(what: &str, port: u16, extra: &[&str]) -> Option<PrivateRedis> {
    match start_redis(port, extra).await {
        Ok(s) => Some(s),
        Err(e) => {
            skip_without_binary(what, &e);
            None
        }
    }
}

/// Store options that give up quickly on a Redis that is gone.
fn quick(prefix: &str) -> RedisStoreOptions {
    RedisStoreOptions {
        key_prefix: prefix.to_string(),
        response_timeout: Duration::from_millis(300),
        connection_timeout: Duration::from_millis(300),
        ..test_options()
    }
}

fn rpm(n: u64) -> Limits {
    Limits {
        rpm_limit: Some(n),
        ..Limits::default()
    }
}

/// A directory of its own for a persistent test server, removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Redis stopped mid-test: a budgeted request is refused (the server's 503), a rate-limited
/// one is admitted locally up to its limit / replicas, Redis is not called per request while
/// it is down, and once Redis is back (with its data) the local usage is charged to it:
/// the spend Redis holds is exactly what was billed.
#[tokio::test]
async fn redis_stopped_refuses_budgets_admits_limits_locally_and_charges_them_when_back() {
    if redis_url("redis stopped").is_none() {
        return;
    }
    let dir = TempDir(std::env::temp_dir().join(format!("tg-aof-{:016x}", rand::random::<u64>())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let dir_arg = dir.0.to_str().unwrap().to_string();
    let persistent = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        &dir_arg,
    ];
    let port = free_port();
    let Some(server) = private("redis stopped", port, &persistent).await else {
        return;
    };
    let (store, _c) = open(&server.url, quick("tgtest-stop")).await;
    let policy = FailurePolicy {
        replicas: 2,
        timeout: Duration::from_millis(200),
        backoff: Duration::from_millis(500),
        ..FailurePolicy::default()
    };
    let b = BatchedRedis::start(
        store.clone(),
        Arc::new(NoSeeds),
        policy,
        BatchedOptions::default(),
    );
    b.ensure_seeded().await.unwrap();
    let budgeted = [ScopeRequest::new(ScopeKey::key("b"), budget(10.0))];
    let limited = [ScopeRequest::new(ScopeKey::key("l"), rpm(10))];
    let cost = |usd| Actual {
        cost_units: usd_to_units(usd),
        tokens: 5,
    };
    let (t, _) = b
        .reserve(&request("pre-b", &budgeted, 0.1))
        .await
        .unwrap()
        .unwrap();
    b.settle(t, cost(0.1));
    let (t, _) = b
        .reserve(&request("pre-l", &limited, 0.1))
        .await
        .unwrap()
        .unwrap();
    b.settle(t, cost(0.2));
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);

    let trips_before = b.round_trips().snapshot().after_call;
    drop(server);
    let started = Instant::now();
    let refused = b.reserve(&request("b1", &budgeted, 0.1)).await;
    assert!(
        matches!(refused, Err(CounterStoreError::Unavailable(_))),
        "{refused:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(450),
        "{:?}",
        started.elapsed()
    );
    let mut local: Vec<Ticket> = Vec::new();
    for i in 0..5 {
        let id = format!("l{i}");
        let (t, _) = b
            .reserve(&request(&id, &limited, 0.1))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(t.spend_units, None, "a local ticket");
        local.push(t);
    }
    let sixth = b
        .reserve(&request("l5", &limited, 0.1))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(sixth, Denial::Requests { limit: 5, .. }),
        "{sixth:?}"
    );
    let c = b.round_trips().snapshot();
    assert_eq!(
        (c.before_call, c.refused, c.local_reserves),
        (3, 1, 5),
        "backing off: {c:?}"
    );
    for t in local {
        b.settle(t, cost(0.03));
    }
    // five charges and the undo of the failed reservation wait for Redis
    assert_eq!(b.flush(Duration::from_millis(300)).await, 6);
    // ...sent again at pauses doubling from 10 ms, not once per queued operation
    let tries = b.round_trips().snapshot().after_call - trips_before;
    assert!(
        (1..=10).contains(&tries),
        "{tries} sends while Redis was down"
    );

    let Some(_server) = private("redis stopped", port, &persistent).await else {
        return;
    };
    assert_eq!(b.flush(Duration::from_secs(10)).await, 0);
    let l = spend_units(&store, &ScopeKey::key("l")).await;
    assert_eq!(l, (usd_to_units(0.2) + 5 * usd_to_units(0.03), 0, 0));
    assert_eq!(
        spend_units(&store, &ScopeKey::key("b")).await,
        (usd_to_units(0.1), 0, 0)
    );
    // Redis answers again: reservations are shared again, with their spend
    let mut back = None;
    for i in 0..40 {
        let id = format!("back{i}");
        if let Ok(Ok((t, _))) = b.reserve(&request(&id, &budgeted, 0.1)).await
            && t.spend_units.is_some()
        {
            back = Some(t);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let back = back.expect("Redis admits again once back");
    assert_eq!(back.spend_units.as_deref(), Some(&[usd_to_units(0.1)][..]));
    b.release(back);
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
}

/// Redis restarted empty: the next reservations (of two replicas at once) find the fleet
/// marker missing, one replica seeds the scopes from the source, and both see the seeded
/// spend; a settlement of a request in flight across the restart is charged once.
#[tokio::test]
async fn redis_restarted_empty_is_seeded_again_once_for_the_fleet() {
    if redis_url("restarted empty").is_none() {
        return;
    }
    let port = free_port();
    let Some(server) = private("restarted empty", port, &[]).await else {
        return;
    };
    let seeds = vec![Seed {
        scope: ScopeKey::key("s"),
        spend_usd: 2.5,
        budget_reset_at: None,
        duration: None,
    }];
    let policy = FailurePolicy {
        timeout: Duration::from_millis(200),
        backoff: Duration::from_millis(100),
        ..FailurePolicy::default()
    };
    let replica = |store: RedisCounterStore| {
        Arc::new(BatchedRedis::start(
            store,
            Arc::new(seeds.clone()),
            policy.clone(),
            BatchedOptions::default(),
        ))
    };
    let (s1, _c) = open(&server.url, quick("tgtest-empty")).await;
    let (s2, _c2) = open(&server.url, quick("tgtest-empty")).await;
    let (b1, b2) = (replica(s1.clone()), replica(s2));
    b1.ensure_seeded().await.unwrap();
    b2.ensure_seeded().await.unwrap();
    assert_eq!(
        b1.round_trips().snapshot().reseeds + b2.round_trips().snapshot().reseeds,
        1
    );
    let scopes = [ScopeRequest::new(ScopeKey::key("s"), budget(10.0))];
    let (t, _) = b1
        .reserve(&request("a", &scopes, 0.5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.spend_units.as_deref(), Some(&[usd_to_units(2.5)][..]));
    b1.settle(
        t,
        Actual {
            cost_units: usd_to_units(0.5),
            tokens: 1,
        },
    );
    assert_eq!(b1.flush(Duration::from_secs(5)).await, 0);
    assert_eq!(
        spend_units(&s1, &ScopeKey::key("s")).await.0,
        usd_to_units(3.0)
    );

    // a request in flight across the restart: its ticket is lost with Redis's data
    let (pending, _) = b1
        .reserve(&request("p", &scopes, 0.1))
        .await
        .unwrap()
        .unwrap();
    drop(server);
    b1.settle(
        pending,
        Actual {
            cost_units: usd_to_units(0.4),
            tokens: 1,
        },
    );
    assert_eq!(b1.flush(Duration::from_millis(200)).await, 1);
    let Some(_server) = private("restarted empty", port, &[]).await else {
        return;
    };
    let mut seen = None;
    for i in 0..50 {
        let (x, y) = (format!("x{i}"), format!("y{i}"));
        let (rx, ry) = (request(&x, &scopes, 0.1), request(&y, &scopes, 0.1));
        let (r1, r2) = tokio::join!(b1.reserve(&rx), b2.reserve(&ry));
        match (r1, r2) {
            (Ok(Ok((t1, _))), Ok(Ok((t2, _)))) => {
                seen = Some((t1.spend_units.clone(), t2.spend_units.clone()));
                b1.release(t1);
                b2.release(t2);
                break;
            }
            (r1, r2) => {
                // budgets fail closed while the connections come back
                assert!(r1.is_err() || r2.is_err(), "{r1:?} {r2:?}");
                if let Ok(Ok((t, _))) = r1 {
                    b1.release(t);
                }
                if let Ok(Ok((t, _))) = r2 {
                    b2.release(t);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (sp1, sp2) = seen.expect("both replicas admit again");
    // the source's spend, plus the lost ticket's settlement once the batcher delivered it
    let (seeded, with_pending) = (usd_to_units(2.5), usd_to_units(2.9));
    for sp in [sp1, sp2] {
        let sp = sp.as_deref().unwrap()[0];
        assert!(sp == seeded || sp == with_pending, "{sp}");
    }
    let reseeds = b1.round_trips().snapshot().reseeds + b2.round_trips().snapshot().reseeds;
    assert_eq!(reseeds, 2, "once at start, once after the restart");
    assert_eq!(b1.flush(Duration::from_secs(5)).await, 0);
    assert_eq!(b2.flush(Duration::from_secs(5)).await, 0);
    assert_eq!(
        spend_units(&s1, &ScopeKey::key("s")).await,
        (usd_to_units(2.5) + usd_to_units(0.4), 0, 0),
        "the seed, and the settlement whose ticket was lost, charged once"
    );
}

/// A paused Redis: a reservation costs its timeout and is admitted locally; the batch that
/// timed out is sent again and charges once; the reservation that timed out but still took
/// effect is undone.
#[tokio::test]
async fn a_slow_redis_costs_the_timeout_and_a_batch_sent_again_charges_once() {
    if redis_url("paused redis").is_none() {
        return;
    }
    let port = free_port();
    let Some(server) = private("paused redis", port, &[]).await else {
        return;
    };
    let opts = RedisStoreOptions {
        response_timeout: Duration::from_secs(3),
        ..quick("tgtest-pause")
    };
    let (store, _c) = open(&server.url, opts).await;
    let policy = FailurePolicy {
        timeout: Duration::from_millis(150),
        backoff: Duration::from_millis(200),
        ..FailurePolicy::default()
    };
    let batch = BatchedOptions {
        send_timeout: Duration::from_millis(150),
        ..BatchedOptions::default()
    };
    let b = BatchedRedis::start(store.clone(), Arc::new(NoSeeds), policy, batch);
    b.ensure_seeded().await.unwrap();
    let scopes = [ScopeRequest::new(ScopeKey::key("p"), rpm(100))];
    let (a, _) = b
        .reserve(&request("a", &scopes, 0.1))
        .await
        .unwrap()
        .unwrap();
    let mut admin = redis::Client::open(server.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(800)
        .arg("ALL")
        .query(&mut admin)
        .unwrap();
    b.settle(
        a,
        Actual {
            cost_units: usd_to_units(0.2),
            tokens: 3,
        },
    );
    let started = Instant::now();
    let (local, _) = b
        .reserve(&request("b", &scopes, 0.1))
        .await
        .unwrap()
        .unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(140) && waited < Duration::from_millis(400),
        "{waited:?}"
    );
    assert_eq!(local.spend_units, None, "admitted locally");
    b.settle(
        local,
        Actual {
            cost_units: usd_to_units(0.1),
            tokens: 4,
        },
    );
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
    let c = b.round_trips().snapshot();
    assert!(c.after_call > c.batches, "a batch was sent again: {c:?}");
    assert_eq!(c.failed_ops, 0);
    // 0.2 settled + 0.1 charged, once each; the timed-out reservation of "b" undone
    assert_eq!(
        spend_units(&store, &ScopeKey::key("p")).await,
        (usd_to_units(0.3), 0, 0)
    );
}
