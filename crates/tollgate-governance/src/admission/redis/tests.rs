//! Exactness tests against a real Redis: `TOLLGATE_TEST_REDIS_URL=redis://127.0.0.1:6379`
//! (skipped, saying so, when unset). Each test works under its own random key prefix and deletes
//! its keys when it ends, passed or failed. Scenarios that do not depend on the clock also run
//! on the in-process store, so both stores are held to the same numbers.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::{RedisCounterStore, RedisStoreOptions};
use crate::admission::money::usd_to_units;
use crate::admission::{
    Actual, AsyncCounterStore, Denial, InMemoryCounterStore, Limits, ReserveRequest, ScopeKey,
    ScopeKind, ScopeRequest, SyncCounterStore, Ticket,
};

/// Deletes every key under a test's prefix when dropped.
pub(crate) struct Cleanup {
    url: String,
    pattern: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(self.url.as_str()) else {
            return;
        };
        let Ok(mut con) = client.get_connection() else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&self.pattern)
            .query(&mut con)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<i64, _> = redis::cmd("DEL").arg(keys).query(&mut con);
        }
    }
}

/// The shared test server's URL, or `None` after reporting the skip.
pub(crate) fn redis_url(what: &str) -> Option<String> {
    let url = std::env::var("TOLLGATE_TEST_REDIS_URL").ok();
    if url.is_none() {
        crate::test_support::skipped(what, "TOLLGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379");
    }
    url
}

/// A random key prefix of its own for one test.
pub(crate) fn test_options() -> RedisStoreOptions {
    RedisStoreOptions {
        key_prefix: format!("tgtest-{:016x}", rand::random::<u64>()),
        ..RedisStoreOptions::default()
    }
}

/// A store on `url` under `opts`' prefix, and the guard that deletes its keys.
pub(crate) async fn open(url: &str, opts: RedisStoreOptions) -> (RedisCounterStore, Cleanup) {
    let cleanup = Cleanup {
        url: url.to_string(),
        pattern: super::keys::KeySpace::new(&opts.key_prefix).pattern(),
    };
    let store = RedisCounterStore::connect(url, opts).await.unwrap();
    (store, cleanup)
}

/// A Redis store for this test, or `None` (skipped).
pub(crate) async fn redis_store(what: &str) -> Option<(RedisCounterStore, Cleanup)> {
    let url = redis_url(what)?;
    Some(open(&url, test_options()).await)
}

fn memory() -> Arc<dyn AsyncCounterStore> {
    Arc::new(SyncCounterStore::new(Arc::new(
        InMemoryCounterStore::default(),
    )))
}

pub(super) fn scope(kind: ScopeKind, id: &str, limits: Limits) -> ScopeRequest {
    ScopeRequest::new(ScopeKey::new(kind, id), limits)
}

pub(super) fn req<'a>(id: &'a str, scopes: &'a [ScopeRequest], usd: f64) -> ReserveRequest<'a> {
    ReserveRequest {
        request_id: id,
        attempt: 0,
        scopes,
        cost_units: usd_to_units(usd),
        prompt_tokens: 10,
        reserve_tokens: 20,
    }
}

pub(super) async fn admit(
    s: &dyn AsyncCounterStore,
    r: &ReserveRequest<'_>,
) -> Result<Ticket, Denial> {
    s.reserve(r).await.unwrap().map(|(t, _)| t)
}

pub(super) async fn all_or_nothing(s: &dyn AsyncCounterStore) {
    let budget = |b| Limits {
        max_budget: Some(b),
        ..Limits::default()
    };
    let limited = Limits {
        max_budget: Some(5.0),
        rpm_limit: Some(1),
        tpm_limit: Some(1000),
        max_parallel_requests: Some(1),
        ..Limits::default()
    };
    let scopes = [
        scope(ScopeKind::Key, "k", limited.clone()),
        scope(ScopeKind::Team, "t", limited),
        scope(ScopeKind::Global, "", budget(1.0)),
    ];
    s.set_spend(&ScopeKey::global(), 1.0, None).await.unwrap();
    let denied = admit(s, &req("r1", &scopes, 0.1)).await.unwrap_err();
    assert_eq!(
        denied,
        Denial::Budget {
            scope: 2,
            current_units: usd_to_units(1.0),
            reserved_units: 0,
            max_units: usd_to_units(1.0),
        }
    );
    for k in [
        ScopeKey::new(ScopeKind::Key, "k"),
        ScopeKey::new(ScopeKind::Team, "t"),
    ] {
        let sp = s.spend(&k).await.unwrap();
        if let Some(sp) = sp {
            assert_eq!(
                (sp.reserved, sp.in_flight, sp.window_tokens),
                (0.0, 0, 0),
                "{k:?}"
            );
        }
    }
    // nothing was taken: the one request per window and the one slot are still free
    s.set_spend(&ScopeKey::global(), 0.0, None).await.unwrap();
    let t = admit(s, &req("r2", &scopes, 0.1)).await.unwrap();
    assert_eq!(t.scopes.len(), 3);
    for k in t.scopes.iter() {
        let sp = s.spend(k).await.unwrap().unwrap();
        assert_eq!((sp.reserved, sp.in_flight), (0.1, 1), "{k:?}");
    }
    // the first scope's RPM now refuses, before the second scope's parallel limit is looked at
    let denied = admit(s, &req("r3", &scopes, 0.1)).await.unwrap_err();
    assert!(
        matches!(
            denied,
            Denial::Requests {
                scope: 0,
                limit: 1,
                ..
            }
        ),
        "{denied:?}"
    );
}

#[tokio::test]
async fn all_or_nothing_across_three_scopes() {
    all_or_nothing(memory().as_ref()).await;
    let Some((s, _c)) = redis_store("all_or_nothing_across_three_scopes").await else {
        return;
    };
    all_or_nothing(&s).await;
}

async fn budget_values(s: &dyn AsyncCounterStore) {
    let scopes = [scope(
        ScopeKind::Key,
        "k",
        Limits {
            max_budget: Some(1.0),
            ..Limits::default()
        },
    )];
    s.set_spend(&scopes[0].key, 0.7, None).await.unwrap();
    let a = admit(s, &req("a", &scopes, 0.2)).await.unwrap();
    let _b = admit(s, &req("b", &scopes, 0.2)).await.unwrap();
    let denied = admit(s, &req("c", &scopes, 0.2)).await.unwrap_err();
    assert_eq!(
        denied,
        Denial::Budget {
            scope: 0,
            current_units: usd_to_units(1.1),
            reserved_units: usd_to_units(0.4),
            max_units: usd_to_units(1.0),
        }
    );
    let actual = Actual {
        cost_units: usd_to_units(0.05),
        tokens: 7,
    };
    assert_eq!(s.settle(&a, actual).await.unwrap(), Some(vec![0.75]));
    let sp = s.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!((sp.spend, sp.reserved, sp.in_flight), (0.75, 0.2, 1));
    // 0.75 + 0.2 < 1.0 admits one more
    assert!(admit(s, &req("c", &scopes, 0.2)).await.is_ok());
}

#[tokio::test]
async fn budget_refusal_carries_the_spend_the_reservations_and_the_cap() {
    budget_values(memory().as_ref()).await;
    let Some((s, _c)) = redis_store("budget_refusal_values").await else {
        return;
    };
    budget_values(&s).await;
}

#[tokio::test]
async fn an_rpm_window_of_n_admits_n_then_refuses_until_it_ends() {
    let Some(url) = redis_url("rpm_window") else {
        return;
    };
    let opts = RedisStoreOptions {
        rate_window_ms: 1500,
        ..test_options()
    };
    let (s, _c) = open(&url, opts).await;
    let scopes = [scope(
        ScopeKind::Key,
        "k",
        Limits {
            rpm_limit: Some(5),
            ..Limits::default()
        },
    )];
    let mut reset = None;
    for i in 0..5u64 {
        let id = format!("r{i}");
        let (t, status) = s.reserve(&req(&id, &scopes, 0.0)).await.unwrap().unwrap();
        assert_eq!(status.len(), 1);
        assert_eq!(status[0].limit_requests, Some(5));
        assert_eq!(status[0].remaining_requests, Some(4 - i));
        assert_eq!(
            (status[0].limit_tokens, status[0].remaining_tokens),
            (None, None)
        );
        // one window: every admission reports the same end
        assert_eq!(
            *reset.get_or_insert(status[0].window_reset_ms),
            status[0].window_reset_ms
        );
        s.settle(&t, Actual::default()).await.unwrap().unwrap();
    }
    let end = reset.unwrap();
    let now = Utc::now().timestamp_millis();
    assert!(
        end > now && end <= now + 1500,
        "window ends {end}, now {now}"
    );
    let denied = admit(&s, &req("r5", &scopes, 0.0)).await.unwrap_err();
    assert_eq!(
        denied,
        Denial::Requests {
            scope: 0,
            limit: 5,
            window_reset_ms: end
        }
    );
    tokio::time::sleep(Duration::from_millis(
        u64::try_from(end - Utc::now().timestamp_millis() + 50).unwrap_or(0),
    ))
    .await;
    let (_, status) = s.reserve(&req("r6", &scopes, 0.0)).await.unwrap().unwrap();
    assert_eq!(status[0].remaining_requests, Some(4), "a new window");
    assert!(status[0].window_reset_ms >= end + 1500);
}

async fn tpm(s: &dyn AsyncCounterStore) {
    let scopes = [scope(
        ScopeKind::Team,
        "t",
        Limits {
            tpm_limit: Some(100),
            ..Limits::default()
        },
    )];
    let tokens = |id, prompt, reserve| ReserveRequest {
        prompt_tokens: prompt,
        reserve_tokens: reserve,
        ..req(id, &scopes, 0.0)
    };
    let (a, status) = s.reserve(&tokens("a", 30, 60)).await.unwrap().unwrap();
    assert_eq!(status[0].remaining_tokens, Some(40));
    assert_eq!(status[0].remaining_requests, None);
    let denied = admit(s, &tokens("b", 50, 70)).await.unwrap_err();
    assert!(
        matches!(
            denied,
            Denial::Tokens {
                scope: 0,
                limit: 100,
                used: 60,
                ..
            }
        ),
        "{denied:?}"
    );
    // settlement replaces the 60 reserved by the 25 used
    let used = Actual {
        cost_units: 0,
        tokens: 25,
    };
    s.settle(&a, used).await.unwrap().unwrap();
    assert_eq!(
        s.spend(&scopes[0].key)
            .await
            .unwrap()
            .unwrap()
            .window_tokens,
        25
    );
    let (_, status) = s.reserve(&tokens("b", 50, 70)).await.unwrap().unwrap();
    assert_eq!(status[0].remaining_tokens, Some(5));
    // 95 used: a prompt of 5 still fits, one of 6 does not
    let denied = admit(s, &tokens("c", 6, 6)).await.unwrap_err();
    assert!(
        matches!(denied, Denial::Tokens { used: 95, .. }),
        "{denied:?}"
    );
    assert!(admit(s, &tokens("c", 5, 5)).await.is_ok());
}

#[tokio::test]
async fn tpm_reserves_the_bound_and_settlement_replaces_it_by_the_actual() {
    tpm(memory().as_ref()).await;
    let Some((s, _c)) = redis_store("tpm_reserve_settle").await else {
        return;
    };
    tpm(&s).await;
}

async fn parallel(s: &dyn AsyncCounterStore) {
    let scopes = [scope(
        ScopeKind::User,
        "u",
        Limits {
            max_parallel_requests: Some(2),
            ..Limits::default()
        },
    )];
    let a = admit(s, &req("a", &scopes, 0.0)).await.unwrap();
    let b = admit(s, &req("b", &scopes, 0.0)).await.unwrap();
    let denied = admit(s, &req("c", &scopes, 0.0)).await.unwrap_err();
    assert_eq!(denied, Denial::Parallel { scope: 0, limit: 2 });
    assert!(s.settle(&a, Actual::default()).await.unwrap().is_some());
    let c = admit(s, &req("c", &scopes, 0.0)).await.unwrap();
    assert!(admit(s, &req("d", &scopes, 0.0)).await.is_err());
    assert!(s.release(&b).await.unwrap());
    let _d = admit(s, &req("d", &scopes, 0.0)).await.unwrap();
    assert_eq!(s.spend(&scopes[0].key).await.unwrap().unwrap().in_flight, 2);
    assert!(s.release(&c).await.unwrap());
    assert_eq!(s.spend(&scopes[0].key).await.unwrap().unwrap().in_flight, 1);
}

#[tokio::test]
async fn parallel_slots_are_freed_by_settle_and_release() {
    parallel(memory().as_ref()).await;
    let Some((s, _c)) = redis_store("parallel_slots").await else {
        return;
    };
    parallel(&s).await;
}

pub(super) async fn exactly_once(s: &dyn AsyncCounterStore) {
    let scopes = [
        scope(ScopeKind::Key, "k", Limits::default()),
        scope(ScopeKind::Key, "k", Limits::default()),
        scope(ScopeKind::EndUser, "e", Limits::default()),
    ];
    let t = admit(s, &req("r", &scopes, 0.3)).await.unwrap();
    assert_eq!(t.scopes.len(), 2, "a scope listed twice is counted once");
    let actual = Actual {
        cost_units: usd_to_units(0.25),
        tokens: 40,
    };
    assert_eq!(s.settle(&t, actual).await.unwrap(), Some(vec![0.25, 0.25]));
    assert_eq!(s.settle(&t, actual).await.unwrap(), None);
    assert!(!s.release(&t).await.unwrap());
    let sp = s.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!(
        (sp.spend, sp.reserved, sp.in_flight, sp.window_tokens),
        (0.25, 0.0, 0, 40)
    );
    // the same attempt twice while in flight is refused; the next attempt is a new reservation
    let t = admit(s, &req("q", &scopes, 0.1)).await.unwrap();
    assert_eq!(
        admit(s, &req("q", &scopes, 0.1)).await.unwrap_err(),
        Denial::DuplicateAttempt
    );
    let retry = ReserveRequest {
        attempt: 1,
        ..req("q", &scopes, 0.1)
    };
    let t1 = admit(s, &retry).await.unwrap();
    assert!(s.release(&t).await.unwrap());
    assert!(s.release(&t1).await.unwrap());
    assert!(!s.release(&t1).await.unwrap());
    assert_eq!(
        s.spend(&scopes[2].key).await.unwrap().unwrap().reserved,
        0.0
    );
}

#[tokio::test]
async fn settle_and_release_are_exactly_once_and_a_duplicate_attempt_is_refused() {
    exactly_once(memory().as_ref()).await;
    let Some((s, _c)) = redis_store("exactly_once").await else {
        return;
    };
    exactly_once(&s).await;
}
