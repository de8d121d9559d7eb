//! Batches on the wire, seen by a private `redis-server` (as `tests_wire.rs`): a batch of 256
//! settlements is one pipeline of 8 `FCALL`s (32 operations each), and the server time they
//! take, against the same settlements sent one call each.

use super::tests::{open, redis_url, req, test_options};
use super::tests_wire::{Monitor, commandstats, private_redis};
use super::{BatchOp, BatchOptions, BatchReply, OpOutcome, Resent};
use crate::admission::{Actual, AsyncCounterStore, Limits, ScopeKey, ScopeKind, ScopeRequest};

/// `usec` of `FCALL` in `INFO commandstats` (server time spent in function calls, µs).
fn fcall_usec(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_fcall:"))
        .and_then(|rest| rest.split(',').find_map(|kv| kv.strip_prefix("usec=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_batch_of_256_settlements_is_one_pipeline_of_eight_calls() {
    if redis_url("batch on the wire").is_none() {
        return;
    }
    let Some(server) = private_redis().await else {
        return;
    };
    let (store, _c) = open(&server.url, test_options()).await;
    store.mark_seeded().await.unwrap();
    let mut admin = redis::Client::open(server.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let limits = Limits {
        max_budget: Some(1000.0),
        rpm_limit: Some(100_000),
        tpm_limit: Some(100_000_000),
        ..Limits::default()
    };
    // the reservation the store's docs measure: key, team, end user, global
    let scopes = [
        ScopeRequest::new(ScopeKey::key("h"), limits.clone()),
        ScopeRequest::new(ScopeKey::new(ScopeKind::Team, "t"), limits),
        ScopeRequest::new(
            ScopeKey::new(ScopeKind::EndUser, "e"),
            Limits {
                max_budget: Some(1000.0),
                ..Limits::default()
            },
        ),
        ScopeRequest::new(ScopeKey::global(), Limits::default()),
    ];
    let actual = Actual {
        cost_units: 7,
        tokens: 3,
    };
    let mut n = 0;
    let mut reserve = async |count: usize| {
        let mut ops = Vec::with_capacity(count);
        for _ in 0..count {
            let id = format!("w{n}");
            n += 1;
            let t = store
                .reserve(&req(&id, &scopes, 0.01))
                .await
                .unwrap()
                .unwrap()
                .0;
            ops.push(BatchOp::Settle(t, actual));
        }
        ops
    };
    // on the wire: 256 settlements, one pipeline of 8 calls
    let ops = reserve(256).await;
    let port: u16 = server.url.rsplit(':').next().unwrap().parse().unwrap();
    let mut monitor = Monitor::start(port);
    monitor.client_commands(&mut admin);
    let before = commandstats(&mut admin);
    let outcomes = store
        .batch(&ops, &Resent::default(), BatchOptions::default())
        .await
        .unwrap();
    let after = commandstats(&mut admin);
    let BatchReply::Done(_, outcomes) = outcomes else {
        panic!("{outcomes:?}");
    };
    assert_eq!(outcomes, vec![OpOutcome::Applied; 256]);
    assert_eq!(monitor.client_commands(&mut admin), vec!["FCALL"; 8]);
    assert_eq!(super::tests_wire::fcalls(&before, &after), 8);
    drop(monitor);
    // server time, without MONITOR: rounds of a batch of 256 and 32 single settlements
    let (mut batched_us, mut single_us) = (0, 0);
    for _ in 0..3 {
        let ops = reserve(256).await;
        let t0 = fcall_usec(&mut admin);
        store
            .batch(&ops, &Resent::default(), BatchOptions::default())
            .await
            .unwrap();
        let t1 = fcall_usec(&mut admin);
        for op in reserve(32).await {
            if let BatchOp::Settle(t, a) = op {
                store.settle(&t, a).await.unwrap().unwrap();
            }
        }
        batched_us += t1 - t0;
        single_us += fcall_usec(&mut admin) - t1;
    }
    eprintln!(
        "server time per settlement over 4 scopes: batched {:.1} µs (calls of 32: {:.0} µs each), one call each {:.1} µs",
        batched_us as f64 / 768.0,
        batched_us as f64 / 24.0,
        single_us as f64 / 96.0
    );
    let spent = store.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!((spent.in_flight, spent.reserved), (0, 0.0));
    assert_eq!(
        super::super::money::usd_to_units(spent.spend),
        7 * (256 + 3 * (256 + 32))
    );
}
