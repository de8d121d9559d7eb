//! `admit` + `settle` cost on the in-process counter store (target: a few µs).
//! Run: `cargo bench -p tollgate-governance --bench admission`.
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark setup: a failed setup aborts the run"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tollgate_governance::admission::{
    Admission, AdmissionConfig, AdmitRequest, Estimate, InMemoryCounterStore, Limits, ScopeKey,
    ScopeKind, ScopeRequest,
};
use tollgate_governance::pricing::Usage;

fn main() {
    divan::main();
}

fn scopes(n_keys: usize, i: u64) -> Vec<ScopeRequest> {
    let key = format!("key-{}", i as usize % n_keys);
    vec![
        ScopeRequest::new(
            ScopeKey::key(&key),
            Limits {
                max_budget: Some(1e9),
                rpm_limit: Some(u64::MAX),
                tpm_limit: Some(u64::MAX),
                max_parallel_requests: Some(1 << 20),
                ..Limits::default()
            },
        ),
        ScopeRequest::new(
            ScopeKey::new(ScopeKind::Team, "team-1"),
            Limits {
                max_budget: Some(1e9),
                ..Limits::default()
            },
        ),
        ScopeRequest::new(ScopeKey::new(ScopeKind::User, "user-1"), Limits::default()),
        ScopeRequest::new(
            ScopeKey::new(ScopeKind::EndUser, "customer-1"),
            Limits::default(),
        ),
        ScopeRequest::new(ScopeKey::global(), Limits::default()),
    ]
}

/// One request touching 5 scopes (key with budget + RPM + TPM + parallel limits, team budget,
/// user, end user, global): admit, then settle.
#[divan::bench(threads = [1, 2])]
fn admit_and_settle_5_scopes(bencher: divan::Bencher) {
    let adm = Admission::new(
        Arc::new(InMemoryCounterStore::default()),
        AdmissionConfig::default(),
    );
    let ids: Vec<Arc<str>> = (0..4096).map(|i| Arc::from(format!("req-{i}"))).collect();
    // the server clones scope lists out of its identity cache (Arc'd strings)
    let pre: Vec<Vec<ScopeRequest>> = (0..64).map(|k| scopes(64, k)).collect();
    let counter = AtomicU64::new(0);
    let estimate = Estimate {
        prompt_tokens: 1000,
        output_tokens: 500,
        cost_usd: 0.002,
    };
    bencher.bench(|| {
        let i = counter.fetch_add(1, Ordering::Relaxed);
        let req = AdmitRequest {
            request_id: ids[i as usize % ids.len()].clone(),
            attempt: (i / ids.len() as u64) as u32,
            scopes: pre[i as usize % pre.len()].clone(),
            estimate,
        };
        let mut r = ready(adm.admit(req)).expect("admitted");
        r.settle(&Usage::new(1000, 400), 0.0018).expect("settled");
    });
}

/// The output of an in-process admission future, which is ready at its first poll (that path
/// never awaits); panics otherwise.
fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("in-process admission awaited"),
    }
}
