//! The load driver against an in-process upstream: counts, caps, streams, open loop.

mod support;

use std::time::Duration;

use tollgate_bench::driver::{LoadSpec, Mode, run};
use tollgate_bench::workload::{AGENTIC_TURNS, RequestStyle, Scenario, build};

fn style() -> RequestStyle {
    RequestStyle {
        headers: vec![("authorization".into(), "Bearer sk-test".into())],
        openai_model: "bench-gpt".into(),
        anthropic_model: "bench-claude".into(),
    }
}

fn spec(concurrency: usize, duration_ms: u64) -> LoadSpec {
    LoadSpec {
        concurrency,
        warmup: Duration::from_millis(50),
        duration: Duration::from_millis(duration_ms),
        max_requests: u64::MAX,
        mode: Mode::Closed,
        request_timeout: Duration::from_secs(5),
        observe_pids: Vec::new(),
    }
}

#[tokio::test]
async fn closed_loop_counts_only_the_window_and_respects_the_cap() {
    let (url, seen) = support::start(Duration::from_millis(1)).await;
    let w = build(Scenario::Forwarding, &style()).unwrap();
    let mut s = spec(4, 10_000);
    s.max_requests = 25;
    let r = run(&url, w, s).await.unwrap();
    assert_eq!(r.requests, 25, "{r:?}");
    assert_eq!(r.errors, 0);
    assert_eq!(r.latency.count, 25);
    // The cap closed the window long before its 10 s.
    assert!(r.window_s < 10.0);
    // Warm-up requests reached the server but were not counted.
    assert!(seen.chat.load(std::sync::atomic::Ordering::Relaxed) > 25);
    assert!(r.latency.p50 <= r.latency.p99 && r.latency.p99 <= r.latency.max);
    assert!(r.ttfb.p50 <= r.latency.p50);
}

#[tokio::test]
async fn streaming_times_first_event_and_gaps() {
    let (url, _) = support::start(Duration::from_millis(1)).await;
    let w = build(Scenario::Streaming, &style()).unwrap();
    let r = run(&url, w, spec(2, 300)).await.unwrap();
    assert!(r.requests > 0, "{r:?}");
    // Every counted stream had a first event and 4 events (3 chunks + [DONE]) → 3 gaps.
    assert_eq!(r.ttft.count, r.requests);
    assert_eq!(r.event_gap.count, 3 * r.requests);
    assert!(r.ttft.p50 <= r.latency.p50);
}

#[tokio::test]
async fn agentic_sessions_send_thirty_growing_turns() {
    let (url, seen) = support::start(Duration::ZERO).await;
    let w = build(Scenario::Agentic, &style()).unwrap();
    let r = run(&url, w, spec(1, 600)).await.unwrap();
    assert!(r.session.count > 0, "{r:?}");
    // Each complete session is 30 requests; partial ones at the window edges add more.
    assert!(r.requests >= r.session.count * AGENTIC_TURNS as u64);
    assert!(r.session.p50 >= r.latency.p50);
    assert!(seen.max_body.load(std::sync::atomic::Ordering::Relaxed) > 30_000);
}

#[tokio::test]
async fn anthropic_goes_to_messages() {
    let (url, seen) = support::start(Duration::ZERO).await;
    let w = build(Scenario::Anthropic, &style()).unwrap();
    let r = run(&url, w, spec(1, 100)).await.unwrap();
    assert!(r.requests > 0 && r.errors == 0, "{r:?}");
    assert_eq!(seen.chat.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert!(seen.messages.load(std::sync::atomic::Ordering::Relaxed) >= r.requests);
}

#[tokio::test]
async fn open_loop_never_exceeds_its_schedule() {
    let (url, _) = support::start(Duration::from_millis(1)).await;
    let w = build(Scenario::Forwarding, &style()).unwrap();
    let mut s = spec(4, 500);
    s.mode = Mode::Open { rate: 100.0 };
    let r = run(&url, w, s).await.unwrap();
    // 100/s for 0.5 s schedules 50 requests in the window (±1 per worker at the edges).
    assert!(r.requests > 0 && r.requests + r.errors <= 54, "{r:?}");
    assert!((r.window_s - 0.5).abs() < 1e-6);
}

#[tokio::test]
async fn errors_are_counted_not_timed() {
    let (url, _) = support::start(Duration::ZERO).await;
    // Wrong prefix: every request is a 404.
    let w = build(Scenario::Forwarding, &style()).unwrap();
    let r = run(&format!("{url}/nope"), w, spec(2, 100)).await.unwrap();
    assert_eq!(r.requests, 0);
    assert!(r.errors > 0);
    assert_eq!(r.first_error.as_deref(), Some("HTTP 404"));
    assert_eq!(r.latency.count, 0);
    assert_eq!(r.rps, 0.0);
}

#[tokio::test]
async fn refused_connections_are_errors_and_the_run_stays_bounded() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let w = build(Scenario::Forwarding, &style()).unwrap();
    let r = run(&format!("http://127.0.0.1:{port}"), w, spec(2, 100))
        .await
        .unwrap();
    assert_eq!(r.requests, 0);
    assert!(r.errors > 0);
    assert!(r.first_error.unwrap().starts_with("connect"));
}

#[tokio::test]
async fn spread_load_splits_connections_evenly_and_high_throughput_mixes_streams() {
    use std::sync::atomic::Ordering::Relaxed;
    let (a, seen_a) = support::start(Duration::from_millis(1)).await;
    let (b, seen_b) = support::start(Duration::from_millis(1)).await;
    let w = build(Scenario::HighThroughput, &style()).unwrap();
    let r = tollgate_bench::driver::run_spread(&[&a, &b], w, spec(4, 400))
        .await
        .unwrap();
    assert!(r.requests >= 6 && r.errors == 0, "{r:?}");
    let (na, nb) = (seen_a.chat.load(Relaxed), seen_b.chat.load(Relaxed));
    // Two connections each, same upstream speed: each side carries about half.
    assert!(na > 0 && nb > 0, "{na} {nb}");
    let share = na as f64 / (na + nb) as f64;
    assert!((0.3..=0.7).contains(&share), "{na} / {nb}");
    // Every other request of the rotation is streamed: about half of those counted have a
    // first event; the rest none.
    assert!(r.ttft.count > 0 && r.ttft.count < r.requests, "{r:?}");
    assert!(r.completed >= r.requests);
    assert_eq!(r.completed, na + nb, "every answer was a 2xx");
    assert!(seen_a.max_body.load(Relaxed) >= 200_000);
}
