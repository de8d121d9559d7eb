//! The guard delivers each record exactly once, whichever way the attempt ends.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;

use super::CallGuard;
use crate::gate::unreported::Unreported;
use crate::relay::{CallRecord, CallSink, Settled};
use crate::request::Endpoint;

/// Keeps every delivered record; answers with the record's status as its cost, so a test
/// sees which delivery a settlement came from.
#[derive(Debug, Default)]
struct Capture(Mutex<Vec<CallRecord>>);

impl CallSink for Capture {
    fn record(&self, r: CallRecord) -> Option<Settled> {
        let cost_usd = f64::from(r.status);
        self.0.lock().unwrap().push(r);
        Some(Settled {
            cost_usd,
            key_spend: None,
            rate_limits: Vec::new(),
        })
    }
}

fn record(call_id: &str) -> CallRecord {
    let started = Instant::now();
    CallRecord {
        call_id: call_id.into(),
        call_type: "acompletion",
        model_group: "g".into(),
        deployment_id: "d".into(),
        upstream_model: "m".into(),
        stream: false,
        status: 200,
        usage: None,
        client_disconnected: false,
        upstream_failed: false,
        started,
        first_byte: None,
        ended: started,
        started_at: chrono::Utc::now(),
        events_out: 0,
        charge: None,
        response_id: None,
        unreported: Unreported::new(false, &Bytes::new(), Endpoint::ChatCompletions),
    }
}

fn sinks() -> (Arc<Capture>, Arc<dyn CallSink>) {
    let capture = Arc::new(Capture::default());
    let sink: Arc<dyn CallSink> = capture.clone();
    (capture, sink)
}

#[test]
fn settle_delivers_once_and_returns_the_settlement() {
    let (capture, sink) = sinks();
    let settled = CallGuard::new(record("a"), &sink).settle();
    assert_eq!(settled.map(|s| s.cost_usd), Some(200.0));
    let recs = capture.0.lock().unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].call_id, "a");
    assert!(!recs[0].client_disconnected);
    // A whole answer's first byte is its end.
    assert_eq!(recs[0].first_byte, Some(recs[0].ended));
}

#[test]
fn fail_delivers_once_with_the_error_status() {
    let (capture, sink) = sinks();
    let mut guard = CallGuard::new(record("b"), &sink);
    guard.record().upstream_failed = true;
    let settled = guard.fail(502);
    assert_eq!(settled.map(|s| s.cost_usd), Some(502.0));
    let recs = capture.0.lock().unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].status, 502);
    assert!(recs[0].upstream_failed);
    assert!(!recs[0].client_disconnected);
}

#[test]
fn a_dropped_guard_delivers_once_as_a_client_disconnect() {
    let (capture, sink) = sinks();
    let guard = CallGuard::new(record("c"), &sink);
    assert!(capture.0.lock().unwrap().is_empty());
    drop(guard);
    let recs = capture.0.lock().unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].call_id, "c");
    assert!(recs[0].client_disconnected);
    // Nothing reached the client: no first byte, so nothing produced is billed.
    assert_eq!(recs[0].first_byte, None);
    assert_eq!(recs[0].status, 200);
}

#[test]
fn a_guard_dropped_inside_a_cancelled_future_delivers_once() {
    let (capture, sink) = sinks();
    let pending = async {
        let _guard = CallGuard::new(record("d"), &sink);
        std::future::pending::<()>().await;
    };
    // Polled once (the guard now lives in the future), then dropped as a hang-up does.
    let mut fut = Box::pin(pending);
    let waker = futures_util::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    assert!(capture.0.lock().unwrap().is_empty());
    drop(fut);
    let recs = capture.0.lock().unwrap();
    assert_eq!(recs.len(), 1);
    assert!(recs[0].client_disconnected);
}

#[test]
fn a_record_handed_to_a_stream_is_not_delivered_by_the_guard() {
    let (capture, sink) = sinks();
    let (rec, stream_sink) = CallGuard::new(record("e"), &sink).into_stream();
    assert!(capture.0.lock().unwrap().is_empty());
    assert_eq!(rec.call_id, "e");
    // The stream relay delivers it, once, to the same sink.
    stream_sink.record(rec);
    assert_eq!(capture.0.lock().unwrap().len(), 1);
}
