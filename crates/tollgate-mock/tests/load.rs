//! Throughput check of the mock binary (ignored by default; run in release):
//! `cargo test --release -p tollgate-mock --test load -- --ignored --nocapture`.
//! Spawns the binary with `--no-record`, drives it from this process with N concurrent
//! keep-alive connections for a bounded time, and prints requests/s and latency percentiles.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};

async fn run(base: &str, concurrency: usize, stream: bool, secs: u64) -> (f64, Vec<Duration>) {
    let body = Bytes::from(
        serde_json::to_vec(&serde_json::json!({"model": "bench-gpt", "stream": stream,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "system", "content": "You are a helpful assistant."},
                         {"role": "user", "content": "Write a haiku about gateways and latency budgets."}]}))
        .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let url = format!("{base}/v1/chat/completions");
    let mut tasks = Vec::new();
    let started = Instant::now();
    for _ in 0..concurrency {
        let (stop, url, body) = (stop.clone(), url.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let c = client();
            let mut lat = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let req = http::Request::post(&url)
                    .header("content-type", "application/json")
                    .body(Full::new(body.clone()))
                    .unwrap();
                let resp = c.request(req).await.unwrap();
                assert_eq!(resp.status(), 200);
                resp.into_body().collect().await.unwrap();
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    (all.len() as f64 / elapsed, all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load measurement; run explicitly in release"]
async fn throughput() {
    let delay = std::env::var("MOCK_LOAD_DELAY_MS").unwrap_or_else(|_| "0".into());
    let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate-mock"))
        .args(["--port", "0", "--no-record", "--delay-ms", &delay])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("tollgate-mock listening on ")
        .unwrap()
        .to_owned();
    let pid = child.id();
    let cpu = move || -> f64 {
        // utime + stime (fields 14, 15) in clock ticks (100 Hz on Linux).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit(')').next().unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
            + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        ticks / 100.0
    };
    for (concurrency, stream) in [(64, false), (256, false), (64, true), (256, true)] {
        let cpu0 = cpu();
        let (rps, lat) = run(&base, concurrency, stream, 3).await;
        let mock_cpu = cpu() - cpu0;
        println!(
            "  mock CPU {mock_cpu:.2} s over ~3 s = {:.0} req per mock-CPU-second",
            rps * 3.0 / mock_cpu.max(0.01)
        );
        let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
        println!(
            "delay={delay}ms conc={concurrency:>3} stream={stream:<5} {rps:>8.0} req/s  p50={:?} p99={:?}",
            pct(0.5),
            pct(0.99)
        );
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}
