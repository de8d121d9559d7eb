//! [`BatchedRedis`] against the shared test Redis (`TOLLGATE_TEST_REDIS_URL`; skipped, saying
//! so, when unset), each test under its own key prefix, deleted when it ends: batching, the
//! round trips it costs, exactly-once delivery, per-operation failures, flush, the deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{BatchedOptions, BatchedRedis, NoSeeds, RoundTripCounts};
use crate::admission::money::usd_to_units;
use crate::admission::redis::tests::{Cleanup, open, redis_url, test_options};
use crate::admission::redis::{
    BatchOp, BatchOptions, FailurePolicy, OpOutcome, RedisCounterStore, Resent,
};
use crate::admission::{
    Actual, Limits, ReserveRequest, ScopeKey, ScopeKind, ScopeRequest, SharedCounters, Ticket,
};

/// A batched store for this test on the shared Redis, seeded (no seeds), the store under it,
/// the guard deleting its keys and its key prefix; `None` (skipped) without a test Redis.
pub(super) async fn batched(
    what: &str,
    opts: BatchedOptions,
) -> Option<(Arc<BatchedRedis>, RedisCounterStore, Cleanup, String)> {
    let url = redis_url(what)?;
    let store_opts = test_options();
    let prefix = store_opts.key_prefix.clone();
    let (store, cleanup) = open(&url, store_opts).await;
    let b = BatchedRedis::start(
        store.clone(),
        Arc::new(NoSeeds),
        FailurePolicy::default(),
        opts,
    );
    b.ensure_seeded().await.unwrap();
    Some((Arc::new(b), store, cleanup, prefix))
}

pub(super) fn budget(usd: f64) -> Limits {
    Limits {
        max_budget: Some(usd),
        ..Limits::default()
    }
}

pub(super) fn request<'a>(id: &'a str, scopes: &'a [ScopeRequest], usd: f64) -> ReserveRequest<'a> {
    ReserveRequest {
        request_id: id,
        attempt: 0,
        scopes,
        cost_units: usd_to_units(usd),
        prompt_tokens: 10,
        reserve_tokens: 20,
    }
}

pub(super) async fn spend_units(s: &RedisCounterStore, k: &ScopeKey) -> (i64, i64, u64) {
    use crate::admission::AsyncCounterStore;
    let sp = s.spend(k).await.unwrap().unwrap();
    (
        usd_to_units(sp.spend),
        usd_to_units(sp.reserved),
        sp.in_flight,
    )
}

/// 64 requests reserved concurrently (64 round trips, one each), then settled concurrently:
/// the 64 settlements leave in one batch (at most two round trips), every scope's spend is the
/// exact sum, and each ticket carried its scopes' spend at admission.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_settlements_leave_in_at_most_two_round_trips() {
    let Some((b, store, _c, _)) = batched("64 settlements", BatchedOptions::default()).await else {
        return;
    };
    let team = ScopeKey::new(ScopeKind::Team, "t");
    b.set_spend(&team, 1.5, None).await.unwrap();
    let mut reserved = tokio::task::JoinSet::new();
    for i in 0..64u32 {
        let b = Arc::clone(&b);
        reserved.spawn(async move {
            let scopes = [
                ScopeRequest::new(ScopeKey::key(&format!("k{}", i % 4)), budget(10.0)),
                ScopeRequest::new(ScopeKey::new(ScopeKind::Team, "t"), budget(100.0)),
                ScopeRequest::new(ScopeKey::global(), Limits::default()),
            ];
            let id = format!("r{i}");
            let (t, _) = b
                .reserve(&request(&id, &scopes, 0.01))
                .await
                .unwrap()
                .unwrap();
            (i, t)
        });
    }
    let tickets: Vec<(u32, Ticket)> = reserved.join_all().await;
    for (_, t) in &tickets {
        let spends = t.spend_units.as_deref().unwrap();
        assert_eq!(spends.len(), 3);
        assert_eq!(
            spends[1],
            usd_to_units(1.5),
            "the team's spend at admission"
        );
        assert_eq!((spends[0], spends[2]), (0, 0));
    }
    let before = b.round_trips().snapshot();
    assert_eq!((before.before_call, before.after_call), (64, 0));
    // request i costs (i + 1) × 0.001 USD
    let mut settled = tokio::task::JoinSet::new();
    for (i, t) in tickets {
        let b = Arc::clone(&b);
        settled.spawn(async move {
            let actual = Actual {
                cost_units: usd_to_units(0.001) * i64::from(i + 1),
                tokens: 30,
            };
            b.settle(t, actual);
        });
    }
    settled.join_all().await;
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
    let after = b.round_trips().snapshot();
    eprintln!("64 concurrent settlements: {after:?}");
    let trips = after.after_call;
    assert!((1..=2).contains(&trips), "{after:?}");
    assert_eq!(
        (after.settled_ops, after.failed_ops, after.dropped),
        (64, 0, 0)
    );
    assert!(after.after_call_per_op() <= 0.1, "{after:?}");
    assert_eq!(after.before_call, 64);
    let unit = usd_to_units(0.001);
    assert_eq!(
        spend_units(&store, &team).await,
        (usd_to_units(1.5) + unit * (64 * 65 / 2), 0, 0)
    );
    for k in 0..4i64 {
        // keys k0..k3 hold requests i ≡ k (mod 4): Σ (i + 1) over those i
        let sum: i64 = (0..64).filter(|i| i % 4 == k).map(|i| i + 1).sum();
        let key = ScopeKey::key(&format!("k{k}"));
        assert_eq!(spend_units(&store, &key).await, (unit * sum, 0, 0), "k{k}");
    }
    assert_eq!(
        spend_units(&store, &ScopeKey::global()).await.0,
        unit * (64 * 65 / 2)
    );
}

/// The same batch sent twice (the first reply lost to a timeout, say): the second changes
/// nothing, settlement, release and charge alike.
#[tokio::test]
async fn a_batch_sent_again_charges_once() {
    let Some(url) = redis_url("batch sent again") else {
        return;
    };
    let (store, _c) = open(&url, test_options()).await;
    use crate::admission::AsyncCounterStore;
    use crate::admission::redis::BatchReply;
    let scopes = [ScopeRequest::new(ScopeKey::key("h"), budget(10.0))];
    let (a, _) = store
        .reserve(&request("a", &scopes, 0.5))
        .await
        .unwrap()
        .unwrap();
    let (b, _) = store
        .reserve(&request("b", &scopes, 0.5))
        .await
        .unwrap()
        .unwrap();
    let local = Ticket {
        request_id: Arc::from("c"),
        ..a.clone()
    };
    let actual = Actual {
        cost_units: usd_to_units(0.25),
        tokens: 40,
    };
    let ops = [
        BatchOp::Settle(a, actual),
        BatchOp::Release(b),
        BatchOp::Charge(local, actual),
    ];
    let one_per_call = BatchOptions { ops_per_call: 1 };
    // without the fleet marker nothing runs: a charge must not create a scope before the seed
    let fresh = Resent::default();
    let unseeded = store.batch(&ops, &fresh, one_per_call).await.unwrap();
    assert_eq!(unseeded, BatchReply::Unseeded);
    assert_eq!(
        spend_units(&store, &scopes[0].key).await,
        (0, usd_to_units(1.0), 2)
    );
    store.mark_seeded().await.unwrap();
    let first = store.batch(&ops, &fresh, one_per_call).await.unwrap();
    let BatchReply::Done(generation, outcomes) = first else {
        panic!("{first:?}");
    };
    assert_eq!(outcomes, vec![OpOutcome::Applied; 3]);
    let resent = Resent {
        count: 3,
        generation: Some(generation.clone()),
    };
    let again = store
        .batch(&ops, &resent, BatchOptions::default())
        .await
        .unwrap();
    assert_eq!(
        again,
        BatchReply::Done(generation, vec![OpOutcome::AlreadyDone; 3])
    );
    let sp = store.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!(
        usd_to_units(sp.spend),
        usd_to_units(0.5),
        "one settlement, one charge"
    );
    assert_eq!((sp.reserved, sp.in_flight, sp.window_tokens), (0.0, 0, 80));
}

/// A settlement whose ticket Redis no longer holds: sent for the first time (or sent before
/// in another fleet generation), the ticket was lost with Redis's data and the actual usage
/// is charged; sent again in the same generation, it may have been applied and changes
/// nothing.
#[tokio::test]
async fn a_settlement_whose_ticket_was_lost_is_charged_unless_it_may_have_been_applied() {
    let Some(url) = redis_url("lost ticket") else {
        return;
    };
    let opts = test_options();
    let prefix = opts.key_prefix.clone();
    let (store, _c) = open(&url, opts).await;
    use crate::admission::AsyncCounterStore;
    use crate::admission::redis::BatchReply;
    store.mark_seeded().await.unwrap();
    let generation: Arc<str> = Arc::from(store.fleet_generation().await.unwrap().unwrap());
    let scopes = [ScopeRequest::new(ScopeKey::key("h"), budget(10.0))];
    let mut admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let actual = Actual {
        cost_units: 30,
        tokens: 4,
    };
    let mut lost = |id: &str| {
        let _: i64 = redis::cmd("DEL")
            .arg(format!("{{{prefix}}}:t:0:{id}"))
            .query(&mut admin)
            .unwrap();
    };
    let mut outcome = async |id: &str, resent: Resent| {
        let (t, _) = store
            .reserve(&request(id, &scopes, 0.1))
            .await
            .unwrap()
            .unwrap();
        lost(id);
        let ops = [BatchOp::Settle(t, actual)];
        match store
            .batch(&ops, &resent, BatchOptions::default())
            .await
            .unwrap()
        {
            BatchReply::Done(_, o) => o,
            BatchReply::Unseeded => panic!("seeded"),
        }
    };
    assert_eq!(
        outcome("first", Resent::default()).await,
        [OpOutcome::Applied]
    );
    let same = Resent {
        count: 1,
        generation: Some(generation),
    };
    assert_eq!(outcome("again", same).await, [OpOutcome::AlreadyDone]);
    let other = Resent {
        count: 1,
        generation: Some(Arc::from("an older generation")),
    };
    assert_eq!(outcome("older", other).await, [OpOutcome::Applied]);
    let sp = store.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!(
        (usd_to_units(sp.spend), sp.window_tokens),
        (60, 8 + 3 * 20),
        "two charges of 30 units and 4 tokens; the lost reservations still hold 20 tokens each"
    );
}

/// A scope hash overwritten by something else (a string): that ticket's settlement fails,
/// alone; the batch's other settlements are delivered and counted.
#[tokio::test]
async fn one_bad_operation_fails_only_its_owner() {
    let Some((b, store, _c, prefix)) = batched("one bad op", BatchedOptions::default()).await
    else {
        return;
    };
    let Some(url) = redis_url("one bad op") else {
        return;
    };
    let mut tickets = Vec::new();
    for id in ["a", "b", "c"] {
        let scopes = [ScopeRequest::new(ScopeKey::key(id), budget(10.0))];
        let (t, _) = b
            .reserve(&request(id, &scopes, 0.1))
            .await
            .unwrap()
            .unwrap();
        tickets.push(t);
    }
    let mut admin = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(format!("{{{prefix}}}:s:api_key:b"))
        .arg("not a hash")
        .query(&mut admin)
        .unwrap();
    let actual = Actual {
        cost_units: usd_to_units(0.07),
        tokens: 9,
    };
    for t in tickets {
        b.settle(t, actual);
    }
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
    let c = b.round_trips().snapshot();
    assert_eq!((c.settled_ops, c.failed_ops, c.batches), (2, 1, 1), "{c:?}");
    for id in ["a", "c"] {
        assert_eq!(
            spend_units(&store, &ScopeKey::key(id)).await,
            (usd_to_units(0.07), 0, 0)
        );
    }
}

/// A long linger does not hold up a shutdown: flush sends what is queued now and returns 0.
#[tokio::test]
async fn flush_on_shutdown_delivers_everything_queued() {
    let opts = BatchedOptions {
        interval: Duration::from_secs(30),
        max_batch: 1000,
        ..BatchedOptions::default()
    };
    let Some((b, store, _c, _)) = batched("flush", opts).await else {
        return;
    };
    let scopes = [ScopeRequest::new(ScopeKey::key("h"), budget(100.0))];
    let mut tickets = Vec::new();
    for i in 0..100 {
        let id = format!("f{i}");
        tickets.push(
            b.reserve(&request(&id, &scopes, 0.01))
                .await
                .unwrap()
                .unwrap()
                .0,
        );
    }
    let released = tickets.split_off(90);
    for t in tickets {
        b.settle(
            t,
            Actual {
                cost_units: 3,
                tokens: 1,
            },
        );
    }
    for t in released {
        b.release(t);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(b.round_trips().snapshot().after_call, 0, "still lingering");
    let started = Instant::now();
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(spend_units(&store, &scopes[0].key).await, (270, 0, 0));
    let c = b.round_trips().snapshot();
    assert_eq!((c.settled_ops, c.batches), (100, 1));
}

/// Settlements arriving one every millisecond for over a second: each is delivered within
/// the 1 s deadline (none late), in batches of several.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_settlement_is_delivered_within_the_deadline() {
    let Some((b, store, _c, _)) = batched("deadline", BatchedOptions::default()).await else {
        return;
    };
    let scopes = [ScopeRequest::new(ScopeKey::key("h"), Limits::default())];
    let mut tickets = Vec::new();
    for i in 0..1200 {
        let id = format!("d{i}");
        tickets.push(
            b.reserve(&request(&id, &scopes, 0.0))
                .await
                .unwrap()
                .unwrap()
                .0,
        );
    }
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    for t in tickets {
        tick.tick().await;
        b.settle(
            t,
            Actual {
                cost_units: 1,
                tokens: 1,
            },
        );
    }
    let spread = started.elapsed();
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
    let c: RoundTripCounts = b.round_trips().snapshot();
    assert!(spread >= Duration::from_millis(1100), "{spread:?}");
    assert_eq!((c.settled_ops, c.late_ops), (1200, 0), "{c:?}");
    assert!(c.max_delivery_ms < 1000, "{c:?}");
    assert!(
        c.batches < 1200 / 2,
        "batches carry several settlements: {c:?}"
    );
    assert_eq!(spend_units(&store, &scopes[0].key).await, (1200, 0, 0));
}

/// At load: 64 workers, each reserving (awaited) and settling (queued) 50 requests in turn
/// (bounded: 3 200 requests, 60 s at most). One round trip per request before the call;
/// after it, at most 0.1 per request (a batch carries 10 settlements or more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_c64_the_settlements_cost_at_most_a_tenth_of_a_round_trip_each() {
    let Some((b, store, _c, _)) = batched("c64 load", BatchedOptions::default()).await else {
        return;
    };
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..64u32 {
        let b = Arc::clone(&b);
        workers.spawn(async move {
            let scopes = [
                ScopeRequest::new(ScopeKey::key(&format!("k{}", w % 8)), budget(1000.0)),
                ScopeRequest::new(ScopeKey::new(ScopeKind::Team, "t"), budget(1000.0)),
            ];
            for i in 0..50u32 {
                if started.elapsed() > Duration::from_secs(60) {
                    return i;
                }
                let id = format!("w{w}-{i}");
                let (t, _) = b
                    .reserve(&request(&id, &scopes, 0.001))
                    .await
                    .unwrap()
                    .unwrap();
                b.settle(
                    t,
                    Actual {
                        cost_units: 11,
                        tokens: 2,
                    },
                );
            }
            50
        });
    }
    let done: u32 = workers.join_all().await.into_iter().sum();
    assert_eq!(b.flush(Duration::from_secs(5)).await, 0);
    let elapsed = started.elapsed();
    let c = b.round_trips().snapshot();
    eprintln!(
        "c=64, {done} requests in {elapsed:?}: {:.3} round trips before the call and {:.4} after it per request, {:.1} settlements a batch; {c:?}",
        c.before_call as f64 / f64::from(done),
        c.after_call as f64 / f64::from(done),
        c.settled_ops as f64 / c.batches.max(1) as f64
    );
    assert_eq!(done, 3200, "the load finished within its bound");
    assert_eq!((c.before_call, c.settled_ops, c.late_ops), (3200, 3200, 0));
    assert!(c.after_call_per_op() <= 0.1, "{c:?}");
    let team = ScopeKey::new(ScopeKind::Team, "t");
    assert_eq!(spend_units(&store, &team).await, (11 * 3200, 0, 0));
}
