//! The load driver: closed-loop (fixed concurrency) and open-loop (fixed rate).
//!
//! Each of the `concurrency` workers owns one keep-alive connection. A run is
//! `warmup` followed by a measurement window of `duration`; only operations
//! that start and finish inside the window are counted, and the window closes
//! early once `max_requests` requests were counted. In open-loop mode every
//! request has an intended send time on a fixed schedule and its latency is
//! measured from that time, so a stalled server shows up as queueing delay
//! instead of being hidden (coordinated omission, Gil Tene).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use serde::Serialize;

use crate::endpoint::Endpoint;
use crate::exchange::{self, Exchange};
use crate::procstat::{ProcSampler, ProcUsage};
use crate::redis_stats::RedisUsage;
use crate::stats::{Percentiles, new_histogram, record_us};
use crate::workload::{RequestTemplate, Workload};

/// How requests are issued.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Each worker sends its next request as soon as the previous one finished.
    Closed,
    /// Requests are scheduled at `rate` per second in total, spread over the workers.
    Open {
        /// Requests per second over all workers.
        rate: f64,
    },
}

/// Parameters of one driver run.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Number of workers (= connections = requests in flight in closed loop).
    pub concurrency: usize,
    /// Time before the measurement window; its requests are not counted.
    pub warmup: Duration,
    /// Length of the measurement window.
    pub duration: Duration,
    /// The window closes once this many requests were counted.
    pub max_requests: u64,
    /// Closed or open loop.
    pub mode: Mode,
    /// Per-request timeout; a timed-out request counts as an error and the
    /// worker reconnects.
    pub request_timeout: Duration,
    /// Processes (trees) whose CPU and RSS are sampled, summed, during the window (one per
    /// gateway replica; empty = none).
    pub observe_pids: Vec<u32>,
}

/// Result of one driver run. Latencies are in µs.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Successful (2xx, complete) requests counted in the window.
    pub requests: u64,
    /// Failed requests in the window (non-2xx, connection errors, timeouts,
    /// and in open loop scheduled requests never sent before the deadline).
    pub errors: u64,
    /// First error seen, for diagnosis.
    pub first_error: Option<String>,
    /// Measured window length in seconds.
    pub window_s: f64,
    /// `requests / window_s`.
    pub rps: f64,
    /// Full request latency (send → end of body; open loop: intended send → end).
    pub latency: Percentiles,
    /// Time to response headers.
    pub ttfb: Percentiles,
    /// Streams only: time to the first SSE data event.
    pub ttft: Percentiles,
    /// Streams only: gaps between SSE data events.
    pub event_gap: Percentiles,
    /// Sessions only: wall time of a whole session.
    pub session: Percentiles,
    /// Prompt tokens of the counted requests (estimated, see `workload`).
    pub prompt_tokens: u64,
    /// Response bytes of the counted requests.
    pub response_bytes: u64,
    /// Usage of the observed process during the window.
    pub process: Option<ProcUsage>,
    /// 2xx answers of the whole run, warm-up included (what per-request counts read from a
    /// server over the whole run, such as Redis commands, divide by).
    pub completed: u64,
    /// Redis commands per completed request during the run, when the harness read a Redis
    /// ([`crate::redis_stats`]).
    pub redis: Option<RedisUsage>,
}

impl RunResult {
    /// Prompt tokens per second over the window.
    pub fn tokens_per_s(&self) -> f64 {
        if self.window_s > 0.0 {
            self.prompt_tokens as f64 / self.window_s
        } else {
            0.0
        }
    }
}

struct Shared {
    /// One per gateway replica; worker `w` sends to `endpoints[w % len]`.
    endpoints: Vec<Endpoint>,
    workload: Workload,
    spec: LoadSpec,
    t0: Instant,
    t1: Instant,
    counted: AtomicU64,
    full: AtomicBool,
}

struct WorkerStats {
    latency: Histogram<u64>,
    ttfb: Histogram<u64>,
    ttft: Histogram<u64>,
    gap: Histogram<u64>,
    session: Histogram<u64>,
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    last_done: Option<Instant>,
    tokens: u64,
    bytes: u64,
    /// 2xx answers, warm-up and after the window included.
    completed: u64,
}

impl WorkerStats {
    fn new() -> Self {
        WorkerStats {
            latency: new_histogram(),
            ttfb: new_histogram(),
            ttft: new_histogram(),
            gap: new_histogram(),
            session: new_histogram(),
            ok: 0,
            errors: 0,
            first_error: None,
            last_done: None,
            tokens: 0,
            bytes: 0,
            completed: 0,
        }
    }

    fn error(&mut self, msg: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(msg);
        }
    }
}

/// Runs one load test against `base_url` and returns its measurements.
///
/// Must be called inside a Tokio runtime. Errors: only an invalid or
/// unresolvable `base_url`; request failures are counted in the result.
pub async fn run(
    base_url: &str,
    workload: Workload,
    spec: LoadSpec,
) -> Result<RunResult, crate::error::BenchError> {
    run_spread(&[base_url], workload, spec).await
}

/// [`run`] with the load spread over several replicas of one gateway: worker `w` (one
/// connection) sends to `base_urls[w % n]`, so each replica carries an equal share of the
/// connections, as behind a round-robin load balancer.
///
/// Errors: as [`run`]; also no URL at all.
pub async fn run_spread(
    base_urls: &[&str],
    workload: Workload,
    spec: LoadSpec,
) -> Result<RunResult, crate::error::BenchError> {
    let mut endpoints = Vec::with_capacity(base_urls.len());
    for u in base_urls {
        endpoints.push(Endpoint::parse(u).await?);
    }
    if endpoints.is_empty() {
        return Err(crate::error::BenchError::Report(
            "no gateway URL to send to".into(),
        ));
    }
    let concurrency = spec.concurrency.max(1);
    let start = Instant::now();
    let t0 = start + spec.warmup;
    let t1 = t0 + spec.duration;
    let shared = Arc::new(Shared {
        endpoints,
        workload,
        spec: spec.clone(),
        t0,
        t1,
        counted: AtomicU64::new(0),
        full: AtomicBool::new(false),
    });
    let pids = spec.observe_pids.clone();
    let sampler_task = (!pids.is_empty()).then(|| {
        tokio::spawn(async move {
            tokio::time::sleep_until(t0.into()).await;
            ProcSampler::start(pids)
        })
    });
    let mut tasks = Vec::with_capacity(concurrency);
    for w in 0..concurrency {
        let sh = shared.clone();
        tasks.push(tokio::spawn(async move {
            match sh.spec.mode {
                Mode::Closed => closed_worker(&sh, w).await,
                Mode::Open { rate } => open_worker(&sh, w, concurrency, rate).await,
            }
        }));
    }
    let mut total = WorkerStats::new();
    for t in tasks {
        match t.await {
            Ok(s) => merge(&mut total, s),
            Err(e) => total.error(format!("worker task: {e}")),
        }
    }
    let process = match sampler_task {
        Some(t) => t.await.ok().map(ProcSampler::stop),
        None => None,
    };
    let end = if shared.full.load(Ordering::Relaxed) {
        total.last_done.unwrap_or(t1).min(t1)
    } else {
        t1
    };
    let window_s = end.saturating_duration_since(t0).as_secs_f64();
    Ok(RunResult {
        requests: total.ok,
        errors: total.errors,
        first_error: total.first_error,
        window_s,
        rps: if window_s > 0.0 {
            total.ok as f64 / window_s
        } else {
            0.0
        },
        latency: Percentiles::of(&total.latency),
        ttfb: Percentiles::of(&total.ttfb),
        ttft: Percentiles::of(&total.ttft),
        event_gap: Percentiles::of(&total.gap),
        session: Percentiles::of(&total.session),
        prompt_tokens: total.tokens,
        response_bytes: total.bytes,
        process,
        completed: total.completed,
        redis: None,
    })
}

fn merge(into: &mut WorkerStats, s: WorkerStats) {
    // Histograms share bounds, so `add` cannot fail; a failure would only lose samples.
    let _ = into.latency.add(&s.latency);
    let _ = into.ttfb.add(&s.ttfb);
    let _ = into.ttft.add(&s.ttft);
    let _ = into.gap.add(&s.gap);
    let _ = into.session.add(&s.session);
    into.ok += s.ok;
    into.errors += s.errors;
    if into.first_error.is_none() {
        into.first_error = s.first_error;
    }
    into.last_done = match (into.last_done, s.last_done) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    into.tokens += s.tokens;
    into.bytes += s.bytes;
    into.completed += s.completed;
}

/// A worker's connection, re-opened after an error.
struct Conn<'a> {
    endpoint: &'a Endpoint,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// 2xx answers received on it, in or out of the window.
    completed: u64,
}

impl Conn<'_> {
    async fn exchange(
        &mut self,
        t: &RequestTemplate,
        timeout: Duration,
    ) -> Result<Exchange, String> {
        let fut = async {
            if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
                self.sender = Some(
                    self.endpoint
                        .connect()
                        .await
                        .map_err(|e| format!("connect: {e}"))?,
                );
            }
            let Some(sender) = self.sender.as_mut() else {
                return Err("no connection".to_string());
            };
            exchange::send(sender, self.endpoint, t, t.stream)
                .await
                .map_err(|e| e.to_string())
        };
        let r = match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(format!("timeout after {timeout:?}")),
        };
        match &r {
            Err(_) => self.sender = None,
            Ok(x) if (200..300).contains(&x.status) => self.completed += 1,
            Ok(_) => {}
        }
        r
    }
}

/// Outcome of one operation, recorded only when it lies inside the window.
fn record_exchange(
    sh: &Shared,
    st: &mut WorkerStats,
    t: &RequestTemplate,
    r: &Result<Exchange, String>,
    latency: Duration,
    done: Instant,
) -> bool {
    match r {
        Ok(x) if (200..300).contains(&x.status) => {
            // Claim a slot first so concurrent workers never count past the cap.
            let n = sh.counted.fetch_add(1, Ordering::Relaxed) + 1;
            if n > sh.spec.max_requests {
                sh.full.store(true, Ordering::Relaxed);
                return false;
            }
            if n == sh.spec.max_requests {
                sh.full.store(true, Ordering::Relaxed);
            }
            record_us(&mut st.latency, latency.as_micros() as u64);
            record_us(&mut st.ttfb, x.ttfb.as_micros() as u64);
            if let Some(f) = x.first_event {
                record_us(&mut st.ttft, f.as_micros() as u64);
            }
            for g in &x.event_gaps {
                record_us(&mut st.gap, g.as_micros() as u64);
            }
            st.ok += 1;
            st.tokens += t.prompt_tokens;
            st.bytes += x.body_bytes;
            st.last_done = Some(done);
            true
        }
        Ok(x) => {
            st.error(format!("HTTP {}", x.status));
            false
        }
        Err(e) => {
            st.error(e.clone());
            false
        }
    }
}

fn stop_now(sh: &Shared, now: Instant) -> bool {
    now >= sh.t1 || sh.full.load(Ordering::Relaxed)
}

async fn closed_worker(sh: &Shared, w: usize) -> WorkerStats {
    let mut st = WorkerStats::new();
    let mut conn = Conn {
        endpoint: &sh.endpoints[w % sh.endpoints.len()],
        sender: None,
        completed: 0,
    };
    let timeout = sh.spec.request_timeout;
    let mut i = 0usize;
    while !stop_now(sh, Instant::now()) {
        match &sh.workload {
            Workload::Single { templates } => {
                let t = &templates[i % templates.len()];
                i += 1;
                let start = Instant::now();
                let r = conn.exchange(t, timeout).await;
                let done = Instant::now();
                if start >= sh.t0 && done <= sh.t1 {
                    record_exchange(sh, &mut st, t, &r, done - start, done);
                }
                if r.is_err() {
                    // Do not spin on a refused connection.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            Workload::Session { turns } => {
                let session_start = Instant::now();
                let mut all_ok = true;
                for t in turns.iter() {
                    let start = Instant::now();
                    let r = conn.exchange(t, timeout).await;
                    let done = Instant::now();
                    let ok = if start >= sh.t0 && done <= sh.t1 {
                        record_exchange(sh, &mut st, t, &r, done - start, done)
                    } else {
                        r.is_ok()
                    };
                    if !ok || stop_now(sh, done) {
                        all_ok = false;
                        if r.is_err() {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                        break;
                    }
                }
                let done = Instant::now();
                if all_ok && session_start >= sh.t0 && done <= sh.t1 {
                    record_us(&mut st.session, (done - session_start).as_micros() as u64);
                }
            }
        }
    }
    st.completed = conn.completed;
    st
}

async fn open_worker(sh: &Shared, w: usize, workers: usize, rate: f64) -> WorkerStats {
    let mut st = WorkerStats::new();
    let mut conn = Conn {
        endpoint: &sh.endpoints[w % sh.endpoints.len()],
        sender: None,
        completed: 0,
    };
    let rate = if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        1.0
    };
    let interval = Duration::from_secs_f64(workers as f64 / rate);
    let start = sh.t0 - sh.spec.warmup;
    let mut intended = start + Duration::from_secs_f64(w as f64 / rate);
    // Requests still queued at this point are reported as errors, not waited for.
    let deadline = sh.t1 + sh.spec.duration.max(Duration::from_secs(1));
    let timeout = sh.spec.request_timeout;
    let mut i = w;
    let mut tokens_cycle: Vec<&RequestTemplate> = Vec::new();
    match &sh.workload {
        Workload::Single { templates } => tokens_cycle.extend(templates.iter()),
        Workload::Session { turns } => tokens_cycle.extend(turns.iter()),
    }
    while intended < sh.t1 && !sh.full.load(Ordering::Relaxed) {
        if Instant::now() >= deadline {
            let left = sh
                .t1
                .saturating_duration_since(intended.max(sh.t0))
                .as_secs_f64()
                / interval.as_secs_f64();
            for _ in 0..left.ceil() as u64 {
                st.error("not sent before the deadline (server saturated)".into());
            }
            break;
        }
        tokio::time::sleep_until(intended.into()).await;
        let t = tokens_cycle[i % tokens_cycle.len()];
        i += 1;
        let r = conn.exchange(t, timeout).await;
        let done = Instant::now();
        if intended >= sh.t0 {
            record_exchange(sh, &mut st, t, &r, done - intended, done);
        }
        intended += interval;
    }
    st.completed = conn.completed;
    st
}
