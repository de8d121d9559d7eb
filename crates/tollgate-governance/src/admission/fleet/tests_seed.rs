//! Seeding through [`BatchedRedis`] against the shared test Redis (`TOLLGATE_TEST_REDIS_URL`;
//! skipped, saying so, when unset): `seed_absent` keeps what Redis holds, and a reseed whose
//! source fails falls back and backs off until the source answers.

use std::sync::Arc;
use std::time::Duration;

use super::tests::{batched, budget, request, spend_units};
use super::{BatchedOptions, BatchedRedis, Seed};
use crate::admission::redis::FailurePolicy;
use crate::admission::redis::tests::{open, redis_url, test_options};
use crate::admission::{Actual, Limits, ScopeKey, ScopeRequest, SharedCounters};

/// `seed_absent` writes a scope Redis does not hold and leaves one it holds alone.
#[tokio::test]
async fn seed_absent_writes_only_what_redis_does_not_hold() {
    let Some((b, store, _c, _)) = batched("seed absent", BatchedOptions::default()).await else {
        return;
    };
    let (fresh, live) = (ScopeKey::key("fresh"), ScopeKey::key("live"));
    b.set_spend(&live, 4.0, None).await.unwrap();
    let at = chrono::DateTime::from_timestamp_millis(1_900_000_000_000);
    b.seed_absent(
        &fresh,
        1.25,
        at,
        Some(crate::duration::BudgetDuration::Days(30)),
    )
    .await
    .unwrap();
    b.seed_absent(&live, 9.0, None, None).await.unwrap();
    use crate::admission::AsyncCounterStore;
    let f = store.spend(&fresh).await.unwrap().unwrap();
    assert_eq!((f.spend, f.budget_reset_at), (1.25, at));
    assert_eq!(
        f.budget_duration,
        Some(crate::duration::BudgetDuration::Days(30))
    );
    assert_eq!(store.spend(&live).await.unwrap().unwrap().spend, 4.0);
    let seeds = [
        Seed {
            scope: fresh.clone(),
            spend_usd: 7.0,
            budget_reset_at: None,
            duration: None,
        },
        Seed {
            scope: ScopeKey::key("new"),
            spend_usd: 0.5,
            budget_reset_at: None,
            duration: None,
        },
    ];
    assert_eq!(store.seed_absent_many(&seeds).await.unwrap(), 1);
    assert_eq!(store.spend(&fresh).await.unwrap().unwrap().spend, 1.25);
}

/// A source that cannot answer (the database is down) until `up` is set.
#[derive(Default)]
struct BrokenSource {
    up: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl super::ReseedSource for BrokenSource {
    async fn seeds(&self) -> Result<Vec<Seed>, super::ReseedError> {
        if self.up.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(Vec::new());
        }
        Err(super::ReseedError::Source("database unreachable".into()))
    }
}

/// Redis without the fleet marker and a source that fails: a budgeted request is refused, a
/// rate-limited one admitted locally, the next requests back off instead of asking Redis
/// and the source again, and the local usage waits for the seed before it is charged.
#[tokio::test]
async fn a_failed_reseed_falls_back_and_backs_off() {
    let Some(url) = redis_url("failed reseed") else {
        return;
    };
    let (store, _c) = open(&url, test_options()).await;
    let source = Arc::new(BrokenSource::default());
    let b = BatchedRedis::start(
        store.clone(),
        source.clone(),
        FailurePolicy::default(),
        BatchedOptions::default(),
    );
    assert!(b.ensure_seeded().await.is_err());
    assert!(!store.is_seeded().await.unwrap());
    let limited = [ScopeRequest::new(
        ScopeKey::key("l"),
        Limits {
            rpm_limit: Some(3),
            ..Limits::default()
        },
    )];
    let budgeted = [ScopeRequest::new(ScopeKey::key("b"), budget(1.0))];
    let (t, _) = b
        .reserve(&request("a", &limited, 0.1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.spend_units, None, "local");
    assert!(b.reserve(&request("b", &budgeted, 0.1)).await.is_err());
    let c = b.round_trips().snapshot();
    assert_eq!(
        (c.before_call, c.local_reserves, c.refused),
        (1, 1, 1),
        "{c:?}"
    );
    b.settle(
        t,
        Actual {
            cost_units: 5,
            tokens: 2,
        },
    );
    assert_eq!(
        b.flush(Duration::from_millis(300)).await,
        1,
        "the charge waits for the seed"
    );
    use crate::admission::AsyncCounterStore;
    assert_eq!(store.spend(&ScopeKey::key("l")).await.unwrap(), None);
    source.up.store(true, std::sync::atomic::Ordering::Release);
    assert_eq!(
        b.flush(Duration::from_secs(5)).await,
        0,
        "the charge reaches Redis"
    );
    assert!(store.is_seeded().await.unwrap());
    assert_eq!(spend_units(&store, &ScopeKey::key("l")).await, (5, 0, 0));
}
