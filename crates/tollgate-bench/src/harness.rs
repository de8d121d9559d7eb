//! The side-by-side sweep: mock once, then per gateway start → health →
//! warm-up → (level × repeat: direct and gateway runs interleaved) → stop.
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
use crate::gateway::{GatewayDef, Placeholders};
use crate::machine::Machine;
use crate::process::{self, Launch, Managed};
use crate::upstream::Upstream;
use crate::workload::{self, RequestStyle, Scenario, Workload};

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
                let r = measure(cfg, &upstream.url, direct.clone(), level, None).await?;
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
    url: &str,
    w: Workload,
    level: usize,
    observe: Option<u32>,
) -> Result<RunResult, BenchError> {
    let r = driver::run(
        url,
        w,
        LoadSpec {
            concurrency: level,
            warmup: cfg.warmup,
            duration: cfg.duration,
            max_requests: cfg.max_requests,
            mode: cfg.mode,
            request_timeout: cfg.request_timeout,
            observe_pid: observe,
        },
    )
    .await?;
    eprintln!(
        "[bench]   c={level:<4} {:<8} rps={:>9.1} p50={:>8}µs p99={:>8}µs errors={}{}",
        if observe.is_some() {
            "gateway"
        } else {
            "direct"
        },
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
    let ph = placeholders(cfg, def, upstream_url)?;
    // `$NAME` candidates are read from the environment (skipped when unset or empty).
    let candidates: Vec<String> = def
        .program
        .iter()
        .filter_map(|p| match p.strip_prefix('$') {
            Some(var) => std::env::var(var).ok().filter(|v| !v.is_empty()),
            None => Some(ph.render(p)),
        })
        .collect();
    let Some(program) = process::find_program(&candidates) else {
        outcome.status = "skipped".into();
        outcome.detail = format!("not installed (looked for {})", candidates.join(", "));
        return Ok(());
    };
    outcome.version = process::version_of(&program, &def.version_args, Duration::from_secs(60));
    let workdir = PathBuf::from(ph.render("{workdir}"));
    std::fs::create_dir_all(&workdir)
        .map_err(|e| BenchError::io(format!("create {}", workdir.display()), e))?;
    if let Some(t) = &def.config_template {
        let src = cfg.bench_dir.join(t);
        let text = std::fs::read_to_string(&src)
            .map_err(|e| BenchError::io(format!("read {}", src.display()), e))?;
        let rendered = ph.render(&text);
        let dst = PathBuf::from(ph.render("{config}"));
        std::fs::write(&dst, &rendered)
            .map_err(|e| BenchError::io(format!("write {}", dst.display()), e))?;
        outcome.config = Some(rendered);
    }
    let mut proc_ = Managed::spawn(&Launch {
        name: def.name.clone(),
        program: program.display().to_string(),
        args: def.args.iter().map(|a| ph.render(a)).collect(),
        env: def
            .env
            .iter()
            .map(|(k, v)| (k.clone(), ph.render(v)))
            .collect(),
        cwd: Some(workdir.clone()),
        log: Some(workdir.join(format!("{}.log", def.name))),
    })?;
    let headers = def.header_pairs(&ph);
    process::wait_healthy(
        &mut proc_,
        &ph.render(&def.health_url),
        &headers,
        Duration::from_secs_f64(def.startup_timeout_s),
    )
    .await?;
    let base = ph.render(&def.base_url);
    let headers = if cfg.scenario == Scenario::Governed {
        governed_headers(def, &base, headers).await?
    } else {
        headers
    };
    let gw = build_workload(cfg, headers)?;
    probe(
        def,
        &base,
        &gw,
        cfg.request_timeout.max(Duration::from_secs(60)),
        &proc_,
    )
    .await?;
    let top = cfg.levels.iter().copied().max().unwrap_or(1);
    eprintln!("[bench] {}: healthy on {base}, warming up", def.name);
    let warm = driver::run(
        &base,
        gw.clone(),
        LoadSpec {
            concurrency: top,
            warmup: Duration::ZERO,
            duration: cfg.gateway_warmup,
            max_requests: u64::MAX,
            mode: Mode::Closed,
            request_timeout: cfg.request_timeout,
            observe_pid: None,
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
    for &level in &cfg.levels {
        for repeat in 1..=cfg.repeats.max(1) {
            let direct_first = repeat % 2 == 1;
            for step in 0..2 {
                let side_direct = (step == 0) == direct_first;
                let (side, r) = if side_direct {
                    (
                        Side::Direct,
                        measure(cfg, upstream_url, direct.clone(), level, None).await?,
                    )
                } else {
                    (
                        Side::Gateway,
                        measure(cfg, &base, gw.clone(), level, Some(proc_.pid())).await?,
                    )
                };
                runs.push(RunRecord {
                    gateway: def.name.clone(),
                    level,
                    repeat,
                    side,
                    result: r,
                });
            }
            if let Some(st) = proc_.exited() {
                return Err(BenchError::Process {
                    name: def.name.clone(),
                    reason: format!(
                        "exited during the sweep ({st}); log:\n{}",
                        proc_.log_tail(20)
                    ),
                });
            }
        }
    }
    proc_.stop();
    outcome.status = "measured".into();
    Ok(())
}

/// Sends the workload's first request once through the gateway and fails
/// with the status and body when it is not 2xx: a misconfigured gateway is
/// reported instead of being measured as a fast error source.
async fn probe(
    def: &GatewayDef,
    base: &str,
    w: &Workload,
    timeout: Duration,
    proc_: &Managed,
) -> Result<(), BenchError> {
    let t = match w {
        Workload::Single { templates, .. } => templates.first(),
        Workload::Session { turns } => turns.first(),
    };
    let Some(t) = t else { return Ok(()) };
    let headers: Vec<(String, String)> = t
        .headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .filter(|(k, _)| k != "content-type")
        .collect();
    let url = format!("{base}{}", t.path);
    let call = crate::client::call(t.method.clone(), &url, &headers, Some(t.body.clone()));
    let fail = |reason: String| BenchError::Process {
        name: def.name.clone(),
        reason: format!("probe {url}: {reason}; log:\n{}", proc_.log_tail(20)),
    };
    match tokio::time::timeout(timeout, call).await {
        Err(_) => Err(fail(format!("no answer within {timeout:?}"))),
        Ok(Err(e)) => Err(fail(e)),
        Ok(Ok((status, _))) if (200..300).contains(&status) => Ok(()),
        Ok(Ok((status, body))) => {
            let text = String::from_utf8_lossy(&body);
            Err(fail(format!(
                "HTTP {status}: {}",
                text.chars().take(300).collect::<String>()
            )))
        }
    }
}

fn placeholders(
    cfg: &HarnessConfig,
    def: &GatewayDef,
    upstream_url: &str,
) -> Result<Placeholders, BenchError> {
    let port = process::free_port()?;
    let host = upstream_url.trim_start_matches("http://").to_string();
    let upstream_port = host
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap_or_default();
    let workdir = cfg.work_dir.join(&def.name);
    let config_name = def
        .config_template
        .as_deref()
        .and_then(|t| std::path::Path::new(t).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    let mut ph = Placeholders::default();
    ph.values.insert("port", port.to_string());
    ph.values.insert("upstream", upstream_url.to_string());
    ph.values.insert("upstream_host", host);
    ph.values.insert("upstream_port", upstream_port);
    ph.values.insert("workdir", workdir.display().to_string());
    ph.values
        .insert("config", workdir.join(config_name).display().to_string());
    ph.values
        .insert("bench", cfg.bench_dir.display().to_string());
    ph.values.insert("repo", cfg.repo_dir.display().to_string());
    Ok(ph)
}

/// Creates a virtual key as the definition's `[governed]` section says and
/// returns the headers with `authorization` replaced by that key.
///
/// Errors: [`BenchError::Governed`] when the section is missing, the call
/// fails or answers non-2xx, or the response lacks the key field.
pub async fn governed_headers(
    def: &GatewayDef,
    base: &str,
    mut headers: Vec<(String, String)>,
) -> Result<Vec<(String, String)>, BenchError> {
    let err = |reason: String| BenchError::Governed {
        name: def.name.clone(),
        reason,
    };
    let setup = def
        .governed
        .as_ref()
        .ok_or_else(|| err("no [governed] section".into()))?;
    let (status, body) = crate::client::call(
        http::Method::POST,
        &format!("{base}{}", setup.path),
        &headers,
        Some(bytes::Bytes::from(setup.body.clone())),
    )
    .await
    .map_err(err)?;
    if !(200..300).contains(&status) {
        return Err(err(format!("{} answered HTTP {status}", setup.path)));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| err(format!("response is not JSON: {e}")))?;
    let key = v[setup.key_field.as_str()].as_str().ok_or_else(|| {
        err(format!(
            "response has no string field {:?}",
            setup.key_field
        ))
    })?;
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
    headers.push(("authorization".into(), format!("Bearer {key}")));
    Ok(headers)
}
