//! The engine over shared counters ([`SharedCounters`]), without Redis: [`Unbatched`] over
//! [`SyncCounterStore`] over [`InMemoryCounterStore`], wrapped to record what the engine
//! queues and to report the spend at admission as a shared store does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::*;
use crate::duration::BudgetDuration;
use crate::pricing::Usage;

type Inner = Unbatched<SyncCounterStore<InMemoryCounterStore>>;

/// Records every queued settlement and release; reports each scope's settled spend at
/// admission in the ticket (as the Redis store does); fails every reservation when `down`.
struct Recording {
    store: Arc<InMemoryCounterStore>,
    inner: Inner,
    report_spend: bool,
    down: bool,
    settled: Mutex<Vec<(Arc<str>, u32, Actual)>>,
    released: Mutex<Vec<(Arc<str>, u32)>>,
}

impl Recording {
    fn new(report_spend: bool, down: bool) -> Arc<Self> {
        let store = Arc::new(InMemoryCounterStore::default());
        let inner = Unbatched::new(Arc::new(SyncCounterStore::new(store.clone())));
        Arc::new(Self {
            store,
            inner,
            report_spend,
            down,
            settled: Mutex::default(),
            released: Mutex::default(),
        })
    }
}

#[async_trait]
impl SharedCounters for Recording {
    async fn reserve(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError> {
        if self.down {
            return Err(CounterStoreError::Unavailable("connection refused".into()));
        }
        let r = self.inner.reserve(req).await?;
        Ok(r.map(|(mut ticket, rate)| {
            if self.report_spend {
                let units: Vec<i64> = ticket
                    .scopes
                    .iter()
                    .map(|s| {
                        CounterStore::spend(self.store.as_ref(), s)
                            .map_or(0, |s| money::usd_to_units(s.spend))
                    })
                    .collect();
                ticket.spend_units = Some(units.into());
            }
            (ticket, rate)
        }))
    }

    fn settle(&self, ticket: Ticket, actual: Actual) {
        self.settled
            .lock()
            .unwrap()
            .push((ticket.request_id.clone(), ticket.attempt, actual));
        self.inner.settle(ticket, actual);
    }

    fn release(&self, ticket: Ticket) {
        self.released
            .lock()
            .unwrap()
            .push((ticket.request_id.clone(), ticket.attempt));
        self.inner.release(ticket);
    }

    async fn flush(&self, deadline: Duration) -> usize {
        self.inner.flush(deadline).await
    }

    async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError> {
        self.inner.set_spend(scope, spend_usd, at).await
    }

    async fn seed_absent(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        at: Option<DateTime<Utc>>,
        d: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        self.inner.seed_absent(scope, spend_usd, at, d).await
    }

    async fn reset_spend(
        &self,
        scope: &ScopeKey,
        d: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        self.inner.reset_spend(scope, d).await
    }

    async fn set_window(
        &self,
        scope: &ScopeKey,
        d: BudgetDuration,
        at: DateTime<Utc>,
        restart: bool,
    ) -> Result<(), CounterStoreError> {
        self.inner.set_window(scope, d, at, restart).await
    }

    async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError> {
        self.inner.spend(scope).await
    }

    async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError> {
        self.inner.drain_dirty().await
    }
}

fn scopes() -> Vec<ScopeRequest> {
    vec![
        ScopeRequest::new(
            ScopeKey::key("hash-a"),
            Limits {
                max_budget: Some(1.0),
                tpm_limit: Some(1000),
                ..Limits::default()
            },
        ),
        ScopeRequest::new(ScopeKey::new(ScopeKind::Team, "t1"), Limits::default()),
    ]
}

fn req(id: &str) -> AdmitRequest {
    AdmitRequest {
        request_id: id.into(),
        attempt: 0,
        scopes: scopes(),
        estimate: Estimate {
            prompt_tokens: 100,
            output_tokens: 200,
            cost_usd: 0.05,
        },
    }
}

/// Lets the spawned deliveries of [`Unbatched`] run.
async fn delivered() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn settle_queues_exactly_once_and_spend_after_is_spend_at_admission_plus_cost() {
    let rec = Recording::new(true, false);
    let adm = Admission::shared(rec.clone(), AdmissionConfig::default());
    assert!(adm.is_shared());
    let key = ScopeKey::key("hash-a");
    adm.seed(&key, 0.25, None, None).await.unwrap();
    let mut r = adm.admit(req("r1")).await.unwrap();
    assert_eq!(r.spend_at_admission(ScopeKind::Key), Some(0.25));
    assert_eq!(r.spend_at_admission(ScopeKind::Team), Some(0.0));
    // tokens: 1000 limit, 300 reserved → 700 left at admission; 120 used → 880 left
    assert_eq!(r.rate_limits()[0].remaining_tokens, Some(700));
    assert_eq!(r.rate_limits_after(120)[0].remaining_tokens, Some(880));
    let s = r.settle(&Usage::new(100, 20), 0.0125).unwrap();
    assert_eq!(s.cost_usd, 0.0125);
    assert_eq!(s.spend_of(ScopeKind::Key), Some(0.2625));
    assert_eq!(s.spend_of(ScopeKind::Team), Some(0.0125));
    assert_eq!(
        r.settle(&Usage::new(1, 1), 9.0),
        Err(SettleError::AlreadySettled)
    );
    drop(r);
    let settled = rec.settled.lock().unwrap().clone();
    assert_eq!(
        settled,
        vec![(
            Arc::from("r1"),
            0,
            Actual {
                cost_units: money::usd_to_units(0.0125),
                tokens: 120
            }
        )]
    );
    assert!(
        rec.released.lock().unwrap().is_empty(),
        "a settled reservation is not released on drop"
    );
    delivered().await;
    let k = adm.spend(&key).await.unwrap().unwrap();
    assert_eq!((k.spend, k.reserved, k.in_flight), (0.2625, 0.0, 0));
    assert_eq!(
        adm.local_spend(&key),
        None,
        "no in-process reading of shared counters"
    );
}

#[tokio::test]
async fn drop_and_release_queue_one_release_and_charge_nothing() {
    let rec = Recording::new(true, false);
    let adm = Admission::shared(rec.clone(), AdmissionConfig::default());
    let r = adm.admit(req("dropped")).await.unwrap();
    delivered().await;
    let k = adm.spend(&ScopeKey::key("hash-a")).await.unwrap().unwrap();
    assert_eq!((k.reserved, k.in_flight), (0.05, 1));
    drop(r);
    let r2 = adm.admit(req("released")).await.unwrap();
    assert!(r2.release());
    assert_eq!(
        rec.released.lock().unwrap().clone(),
        vec![(Arc::from("dropped"), 0), (Arc::from("released"), 0)]
    );
    assert!(rec.settled.lock().unwrap().is_empty());
    delivered().await;
    let k = adm.spend(&ScopeKey::key("hash-a")).await.unwrap().unwrap();
    assert_eq!((k.spend, k.reserved, k.in_flight), (0.0, 0.0, 0));
}

#[tokio::test]
async fn without_the_spend_at_admission_the_spend_after_is_unknown() {
    let rec = Recording::new(false, false);
    let adm = Admission::shared(rec, AdmissionConfig::default());
    let mut r = adm.admit(req("r")).await.unwrap();
    assert_eq!(r.spend_at_admission(ScopeKind::Key), None);
    let s = r.settle(&Usage::new(100, 20), 0.01).unwrap();
    assert_eq!((s.cost_usd, s.spend_of(ScopeKind::Key)), (0.01, None));
}

#[tokio::test]
async fn a_store_that_cannot_answer_refuses_with_503_and_reserves_nothing() {
    let rec = Recording::new(true, true);
    let adm = Admission::shared(rec.clone(), AdmissionConfig::default());
    let rej = adm.admit(req("r")).await.unwrap_err();
    assert_eq!(
        (rej.status, rej.error_type, rej.reason.clone()),
        (503, "service_unavailable", RejectReason::StoreUnavailable)
    );
    assert_eq!(
        rej.headers,
        vec![("retry-after".to_owned(), "1".to_owned())]
    );
    assert!(
        rej.message
            .contains("budget and rate-limit store is unavailable")
    );
    assert_eq!(
        CounterStore::spend(rec.store.as_ref(), &ScopeKey::key("hash-a")),
        None
    );
    assert!(rec.settled.lock().unwrap().is_empty() && rec.released.lock().unwrap().is_empty());
}

#[tokio::test]
async fn start_up_seeding_keeps_what_the_shared_store_holds() {
    let rec = Recording::new(true, false);
    let adm = Admission::shared(rec, AdmissionConfig::default());
    let key = ScopeKey::key("hash-a");
    adm.set_spend(&key, 0.7, None).await.unwrap();
    adm.seed(&key, 0.1, None, None).await.unwrap();
    assert_eq!(adm.spend(&key).await.unwrap().unwrap().spend, 0.7);
    let fresh = ScopeKey::key("fresh");
    adm.seed(&fresh, 0.3, None, None).await.unwrap();
    assert_eq!(adm.spend(&fresh).await.unwrap().unwrap().spend, 0.3);
}

#[tokio::test]
async fn a_request_with_no_scope_reserves_settles_and_releases_without_the_store() {
    // `down`: any call reaching the store would fail the admission with 503
    let rec = Recording::new(true, true);
    let adm = Admission::shared(rec.clone(), AdmissionConfig::default());
    let unscoped = |id: &str| AdmitRequest {
        scopes: Vec::new(),
        ..req(id)
    };
    let mut r = adm.admit(unscoped("open")).await.unwrap();
    assert!(r.rate_limits().is_empty() && r.rate_limit_headers().is_empty());
    let s = r.settle(&Usage::new(100, 20), 0.0125).unwrap();
    assert_eq!((s.cost_usd, s.spend_after.len()), (0.0125, 0));
    assert_eq!(
        r.settle(&Usage::new(1, 1), 9.0),
        Err(SettleError::AlreadySettled)
    );
    assert!(adm.admit(unscoped("released")).await.unwrap().release());
    drop(adm.admit(unscoped("dropped")).await.unwrap());
    assert!(rec.settled.lock().unwrap().is_empty() && rec.released.lock().unwrap().is_empty());
}
