//! The side-by-side sweep: mock once, then per gateway start (`start.rs`: its replicas,
//! health, key, probe) → warm-up → (level × repeat: direct and gateway runs interleaved) → stop.
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
use crate::process::Managed;
use crate::redis_stats;
use crate::upstream::Upstream;
use crate::workload::{self, RequestStyle, Scenario, Workload};

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
    for def in &cfg.gateways {
        let mut outcome = GatewayOutcome {
            name: def.name.clone(),
            status: "unavailable".into(),
            detail: String::new(),
            version: None,
            config: None,
        };
        if let Err(e) = run_gateway(
            cfg,
            def,
            &upstream.url,
            &direct,
            &mut sweep.runs,
            &mut outcome,
        )
        .await
        {
            outcome.status = "failed".into();
            outcome.detail = e.to_string();
        }
        eprintln!(
            "[bench] {}: {} {}",
            outcome.name, outcome.status, outcome.detail
        );
        sweep.gateways.push(outcome);
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

async fn run_gateway(
    cfg: &HarnessConfig,
    def: &GatewayDef,
    upstream_url: &str,
    direct: &Workload,
    runs: &mut Vec<RunRecord>,
    outcome: &mut GatewayOutcome,
) -> Result<(), BenchError> {
    if !def.supports(cfg.scenario) {
        outcome.detail = format!(
            "scenario {} is not in its capabilities ({})",
            cfg.scenario,
            def.capabilities
                .scenarios
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(());
    }
    let Some(mut gw) = start::start(cfg, def, upstream_url, outcome).await? else {
        return Ok(());
    };
    let bases: Vec<&str> = gw.bases.iter().map(String::as_str).collect();
    let top = cfg.levels.iter().copied().max().unwrap_or(1);
    eprintln!(
        "[bench] {}: healthy on {}, warming up",
        def.name,
        bases.join(" ")
    );
    let warm = driver::run_spread(
        &bases,
        gw.workload.clone(),
        LoadSpec {
            concurrency: top,
            warmup: Duration::ZERO,
            duration: cfg.gateway_warmup,
            max_requests: u64::MAX,
            mode: Mode::Closed,
            request_timeout: cfg.request_timeout,
            observe_pids: Vec::new(),
        },
    )
    .await?;
    if warm.errors > 0 {
        eprintln!(
            "[bench] {}: {} errors during warm-up (first: {})",
            def.name,
            warm.errors,
            warm.first_error.unwrap_or_default()
        );
    }
    let pids: Vec<u32> = gw.procs.iter().map(Managed::pid).collect();
    for &level in &cfg.levels {
        for repeat in 1..=cfg.repeats.max(1) {
            let direct_first = repeat % 2 == 1;
            for step in 0..2 {
                let side_direct = (step == 0) == direct_first;
                let (side, r) = if side_direct {
                    (
                        Side::Direct,
                        measure(cfg, &[upstream_url], direct.clone(), level, Vec::new()).await?,
                    )
                } else {
                    let before = redis_reading(gw.redis_url.as_deref()).await;
                    let mut r =
                        measure(cfg, &bases, gw.workload.clone(), level, pids.clone()).await?;
                    if let Some(before) = before {
                        // Settlements leave in batches within 1 s of their request: wait for
                        // them before reading what the run cost.
                        tokio::time::sleep(Duration::from_millis(1500)).await;
                        if let Some(after) = redis_reading(gw.redis_url.as_deref()).await {
                            r.redis = redis_stats::usage(&before, &after, r.completed);
                        }
                    }
                    (Side::Gateway, r)
                };
                runs.push(RunRecord {
                    gateway: def.name.clone(),
                    level,
                    repeat,
                    side,
                    result: r,
                });
            }
            for p in &mut gw.procs {
                if let Some(st) = p.exited() {
                    return Err(BenchError::Process {
                        name: def.name.clone(),
                        reason: format!("exited during the sweep ({st}); log:\n{}", p.log_tail(20)),
                    });
                }
            }
        }
    }
    for p in &mut gw.procs {
        p.stop();
    }
    outcome.status = "measured".into();
    Ok(())
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
