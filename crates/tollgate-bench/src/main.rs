//! `tollgate-bench`: see `bench/README.md`.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the entry point: the report goes to stdout, progress and failures to stderr"
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Parser;

use tollgate_bench::cli::{self, Cli, Command, LoadArgs, SweepArgs};
use tollgate_bench::driver::{self, LoadSpec};
use tollgate_bench::gateway::GatewayDef;
use tollgate_bench::harness::{self, HarnessConfig};
use tollgate_bench::process::find_program;
use tollgate_bench::report::{self, Meta};
use tollgate_bench::upstream::{Upstream, default_mock_args};
use tollgate_bench::workload::{self, RequestStyle};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = if cli.driver_threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cli.driver_threads)
            .enable_all()
            .build()
    };
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tollgate-bench: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = match cli.command {
        Command::Sweep(a) => rt.block_on(sweep(a)),
        Command::Load(a) => rt.block_on(load(a)),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tollgate-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn load(a: LoadArgs) -> anyhow::Result<()> {
    let headers = cli::parse_headers(&a.headers).map_err(anyhow::Error::msg)?;
    let w = workload::build(
        a.common.scenario,
        &RequestStyle {
            headers,
            openai_model: a.common.model.clone(),
            anthropic_model: a.common.anthropic_model.clone(),
        },
    )
    .map_err(anyhow::Error::msg)?;
    let r = driver::run(
        &a.url,
        w,
        LoadSpec {
            concurrency: a.concurrency,
            warmup: cli::secs(a.common.warmup),
            duration: cli::secs(a.common.duration),
            max_requests: a.common.max_requests,
            mode: a.common.mode(),
            request_timeout: cli::secs(a.common.request_timeout),
            observe_pids: a.pid.into_iter().collect(),
        },
    )
    .await?;
    println!("{}", serde_json::to_string_pretty(&r)?);
    Ok(())
}

fn mock_program(a: &SweepArgs, repo: &std::path::Path) -> Option<PathBuf> {
    if let Some(p) = &a.mock_bin {
        return Some(p.clone());
    }
    let mut candidates = Vec::new();
    if let Ok(p) = std::env::var("TOLLGATE_MOCK_BIN") {
        candidates.push(p);
    }
    for profile in ["release", "debug"] {
        candidates.push(
            repo.join("target")
                .join(profile)
                .join("tollgate-mock")
                .display()
                .to_string(),
        );
    }
    candidates.push("tollgate-mock".into());
    find_program(&candidates)
}

async fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    let bench_dir = a.bench_dir.clone().unwrap_or_else(cli::find_bench_dir);
    let bench_dir = bench_dir.canonicalize().unwrap_or(bench_dir);
    let repo_dir = bench_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut defs = GatewayDef::load_dir(&bench_dir.join("gateways"))?;
    if !a.gateways.is_empty() {
        for g in &a.gateways {
            if !defs.iter().any(|d| &d.name == g) {
                anyhow::bail!(
                    "no gateway definition named {g:?} in {}",
                    bench_dir.join("gateways").display()
                );
            }
        }
        defs.retain(|d| a.gateways.contains(&d.name));
        defs.sort_by_key(|d| a.gateways.iter().position(|g| g == &d.name));
    }
    let upstream = match &a.upstream {
        Some(url) => Upstream::Existing(url.clone()),
        None => Upstream::Spawn {
            program: mock_program(&a, &repo_dir).ok_or_else(|| {
                anyhow::anyhow!(
                    "tollgate-mock not found: build it (cargo build --release -p tollgate-mock), \
                     or pass --mock-bin PATH or --upstream URL"
                )
            })?,
            args: default_mock_args(a.mock_delay_ms),
        },
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let work_dir = std::env::temp_dir().join(format!("tollgate-bench-{}", std::process::id()));
    let cfg = HarnessConfig {
        bench_dir: bench_dir.clone(),
        repo_dir: repo_dir.clone(),
        gateways: defs,
        upstream,
        scenario: a.common.scenario,
        levels: a.levels.clone(),
        repeats: a.repeats,
        warmup: cli::secs(a.common.warmup),
        gateway_warmup: cli::secs(a.gateway_warmup),
        duration: cli::secs(a.common.duration),
        max_requests: a.common.max_requests,
        mode: a.common.mode(),
        request_timeout: cli::secs(a.common.request_timeout),
        direct_headers: vec![
            ("authorization".into(), "Bearer sk-bench-upstream".into()),
            ("x-api-key".into(), "sk-bench-upstream".into()),
        ],
        openai_model: a.common.model.clone(),
        anthropic_model: a.common.anthropic_model.clone(),
        work_dir: work_dir.clone(),
        interleave: a.interleave,
    };
    let sweep = harness::run(&cfg).await?;
    let rows = report::summarise(&sweep);
    println!("{}", report::text_report(&sweep, &rows));
    if !a.no_write {
        let dir = a.results_dir.clone().unwrap_or_else(|| {
            bench_dir
                .join("results")
                .join(format!("{}-{}", cli::utc_stamp(now), a.common.scenario))
        });
        let meta = Meta {
            scenario: sweep.scenario.name(),
            machine: &sweep.machine,
            commit: git_commit(&repo_dir),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            gateways: &sweep.gateways,
            upstream: &sweep.upstream,
            started: cli::utc_stamp(now),
        };
        let files = report::write_all(&dir, &sweep, &rows, &meta)?;
        eprintln!("[bench] wrote {} files to {}", files.len(), dir.display());
    }
    let _ = std::fs::remove_dir_all(&work_dir);
    Ok(())
}

fn git_commit(repo: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut c = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dirty = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    if dirty {
        c.push_str("-dirty");
    }
    Some(c)
}
