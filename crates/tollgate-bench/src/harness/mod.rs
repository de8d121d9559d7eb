//! The side-by-side sweep: mock once, then per gateway start (`start.rs`: its replicas,
//! health, key, probe) → warm-up → (level × repeat: direct and gateway runs interleaved) → stop,
//! one gateway after the other or all of them in turn (`order.rs`).
//!
//! The direct baseline (client → mock) is measured in the same sweep right
//! beside every gateway run, alternating which goes first per repeat, so a
//! drift in machine load hits both sides alike.
#![expect(
    clippy::print_stderr,
    reason = "the sweep's progress is the bench CLI's stderr output"
)]

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::driver::{self, LoadSpec, Mode, RunResult};
use crate::error::BenchError;
use crate::gateway::GatewayDef;
use crate::machine::Machine;
use crate::redis_stats;
use crate::upstream::Upstream;
use crate::workload::{self, RequestStyle, Scenario, Workload};

mod order;
mod start;

pub use start::governed_headers;

/// Everything a sweep needs.
#[derive(Debug, Clone)]
pub struct HarnessConfig {
    /// The `bench/` directory (config templates are relative to it).
    pub bench_dir: PathBuf,
    /// Repository root (`{repo}` placeholder).
    pub repo_dir: PathBuf,
    /// Gateways to measure, in order.
    pub gateways: Vec<GatewayDef>,
    /// The mock upstream.
    pub upstream: Upstream,
    /// Scenario to run.
    pub scenario: Scenario,
    /// Concurrency levels (closed loop) or worker counts (open loop).
    pub levels: Vec<usize>,
    /// Repeats per level (≥ 1).
    pub repeats: usize,
    /// Warm-up before every measured run.
    pub warmup: Duration,
    /// Warm-up after a gateway became healthy, at the highest level.
    pub gateway_warmup: Duration,
    /// Measurement window per run.
    pub duration: Duration,
    /// Request cap per run.
    pub max_requests: u64,
    /// Closed or open loop.
    pub mode: Mode,
    /// Per-request timeout.
    pub request_timeout: Duration,
    /// Headers for direct requests to the mock.
    pub direct_headers: Vec<(String, String)>,
    /// Model name in OpenAI bodies.
    pub openai_model: String,
    /// Model name in Anthropic bodies.
    pub anthropic_model: String,
    /// Scratch directory for rendered configs, pid files and logs.
    pub work_dir: PathBuf,
    /// All gateways started at once and measured in turn at every level and repeat, the
    /// order rotated per repeat (`false`: one gateway after the other, all its levels first).
    pub interleave: bool,
}

/// Which side a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Client → mock.
    Direct,
    /// Client → gateway → mock.
    Gateway,
}

/// One measured run.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    /// Gateway this run belongs to (direct runs carry the gateway they were paired with).
    pub gateway: String,
    /// Concurrency level.
    pub level: usize,
    /// Repeat number, from 1.
    pub repeat: usize,
    /// Direct or through the gateway.
    pub side: Side,
    /// Measurements.
    pub result: RunResult,
}

/// What happened to one gateway in the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct GatewayOutcome {
    /// Gateway name.
    pub name: String,
    /// `measured`, `unavailable` (scenario not in capabilities), `skipped`
    /// (program not installed) or `failed` (did not start or became unhealthy).
    pub status: String,
    /// Reason for anything but `measured`.
    pub detail: String,
    /// Version line printed by the program, when it has `version_args`.
    pub version: Option<String>,
    /// Rendered config file, kept for the record.
    pub config: Option<String>,
}

/// The full outcome of a sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// Scenario run.
    pub scenario: Scenario,
    /// Machine facts.
    pub machine: Machine,
    /// Upstream base URL.
    pub upstream: String,
    /// Every run, in the order measured.
    pub runs: Vec<RunRecord>,
    /// Per-gateway status.
    pub gateways: Vec<GatewayOutcome>,
}

/// Name under which direct-only sweeps (no gateway measured) are reported.
pub const DIRECT_ONLY: &str = "direct-only";

/// Runs the sweep. Progress lines go to stderr.
///
/// Errors: the mock cannot start, or a scenario body cannot be built. A
/// gateway that fails is reported in [`Sweep::gateways`] and the sweep goes on.
pub async fn run(cfg: &HarnessConfig) -> Result<Sweep, BenchError> {
    let machine = Machine::detect();
    let upstream = cfg.upstream.start()?;
    let direct = build_workload(cfg, cfg.direct_headers.clone())?;
    let mut sweep = Sweep {
        scenario: cfg.scenario,
        machine,
        upstream: upstream.url.clone(),
        runs: Vec::new(),
        gateways: Vec::new(),
    };
    if cfg.interleave {
        sweep.gateways = order::interleaved(cfg, &upstream.url, &direct, &mut sweep.runs).await?;
    } else {
        for def in &cfg.gateways {
            let outcome =
                order::one_gateway(cfg, def, &upstream.url, &direct, &mut sweep.runs).await;
            sweep.gateways.push(outcome);
        }
    }
    if !sweep.gateways.iter().any(|g| g.status == "measured") {
        eprintln!("[bench] no gateway measured: direct-only sweep");
        for &level in &cfg.levels {
            for repeat in 1..=cfg.repeats.max(1) {
                let r = measure(cfg, &[&upstream.url], direct.clone(), level, Vec::new()).await?;
                sweep.runs.push(RunRecord {
                    gateway: DIRECT_ONLY.into(),
                    level,
                    repeat,
                    side: Side::Direct,
                    result: r,
                });
            }
        }
    }
    drop(upstream);
    Ok(sweep)
}

fn build_workload(
    cfg: &HarnessConfig,
    headers: Vec<(String, String)>,
) -> Result<Workload, BenchError> {
    workload::build(
        cfg.scenario,
        &RequestStyle {
            headers,
            openai_model: cfg.openai_model.clone(),
            anthropic_model: cfg.anthropic_model.clone(),
        },
    )
    .map_err(BenchError::Report)
}

async fn measure(
    cfg: &HarnessConfig,
    urls: &[&str],
    w: Workload,
    level: usize,
    observe: Vec<u32>,
) -> Result<RunResult, BenchError> {
    let gateway = !observe.is_empty();
    let r = driver::run_spread(
        urls,
        w,
        LoadSpec {
            concurrency: level,
            warmup: cfg.warmup,
            duration: cfg.duration,
            max_requests: cfg.max_requests,
            mode: cfg.mode,
            request_timeout: cfg.request_timeout,
            observe_pids: observe,
        },
    )
    .await?;
    eprintln!(
        "[bench]   c={level:<4} {:<8} rps={:>9.1} p50={:>8}µs p99={:>8}µs errors={}{}",
        if gateway { "gateway" } else { "direct" },
        r.rps,
        r.latency.p50,
        r.latency.p99,
        r.errors,
        r.first_error
            .as_deref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default()
    );
    Ok(r)
}

/// The Redis server's command counters, `None` without a Redis (or when it cannot be read:
/// the run is then reported without them, and the reason printed).
async fn redis_reading(url: Option<&str>) -> Option<std::collections::BTreeMap<String, u64>> {
    match redis_stats::command_calls(url?).await {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("[bench] {e}");
            None
        }
    }
}
