//! `tollgate`: the gateway binary.
//!
//! - `tollgate --config PATH [--port N] [--host ADDR] [--num_workers N] [--work-stealing]`
//!   serves (defaults: port 4000, host 0.0.0.0, one worker per core; env `PORT`, `HOST`,
//!   `CONFIG_FILE_PATH`, `NUM_WORKERS`, as LiteLLM reads them).
//! - `tollgate check-config PATH [--connect]` validates a config and prints its model groups
//!   and deployments with secrets masked, the routing settings in effect and the store
//!   (`--connect`: tried).
//! - `tollgate --version`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tollgate_server::gate::{Gate, StoreChoice};
use tollgate_server::serve;
use tollgate_server::state::AppState;

#[derive(Parser, Debug)]
#[command(
    name = "tollgate",
    version,
    about = "Tollgate: a fast, LiteLLM-compatible AI gateway"
)]
struct Cli {
    /// LiteLLM-format config.yaml.
    #[arg(long, short = 'c', env = "CONFIG_FILE_PATH", global = true)]
    config: Option<PathBuf>,
    /// Port to listen on.
    #[arg(long, env = "PORT", default_value_t = 4000)]
    port: u16,
    /// Address to bind.
    #[arg(long, env = "HOST", default_value = "0.0.0.0")]
    host: String,
    /// Serve on N worker threads (default: one per core), each a single-threaded runtime with
    /// its own upstream pools; new connections go to the worker with the fewest open.
    #[arg(long = "num_workers", alias = "num-workers", env = "NUM_WORKERS")]
    num_workers: Option<std::num::NonZeroUsize>,
    /// Serve on one work-stealing tokio runtime instead, with `--num_workers` threads (default:
    /// `TOKIO_WORKER_THREADS`, else one per core): a request may move between threads, which
    /// costs a wake-up each way, but no connection waits behind another's work.
    #[arg(long, env = "TOLLGATE_WORK_STEALING")]
    work_stealing: bool,
    /// Seconds to let in-flight requests and streams finish after SIGTERM/SIGINT.
    #[arg(long, default_value_t = 30.0)]
    drain_seconds: f64,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate a config file and print its model groups and deployments (secrets masked), the
    /// routing settings in effect and the governance store.
    CheckConfig {
        /// The config file (default: `--config` / `CONFIG_FILE_PATH`).
        path: Option<PathBuf>,
        /// Also try the store: connect (for Postgres: the database exists and accepts the
        /// credentials); nothing is created or written. Exit 1 when it cannot be used.
        #[arg(long)]
        connect: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match cli.command {
        Some(Command::CheckConfig { path, connect }) => match path.or(cli.config) {
            Some(path) => check_config(&path, connect),
            None => {
                eprintln!(
                    "error: no config file to check: tollgate check-config PATH (or --config PATH, or CONFIG_FILE_PATH)"
                );
                ExitCode::from(2)
            }
        },
        None => run(cli),
    }
}

fn init_tracing() {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .or_else(|| {
            match std::env::var("LITELLM_LOG")
                .ok()?
                .to_ascii_uppercase()
                .as_str()
            {
                "DEBUG" => Some("debug".to_owned()),
                "INFO" => Some("info".to_owned()),
                _ => None,
            }
        })
        .unwrap_or_else(|| "info".to_owned());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

fn env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

fn load(path: &Path) -> Result<tollgate_config::LoadedConfig, ExitCode> {
    match tollgate_config::load_path(path, &env) {
        Ok(l) => match tollgate_server::check_config::unserved_refusal(&l) {
            None => Ok(l),
            Some(refusal) => {
                eprintln!("error: invalid config: {refusal}");
                Err(ExitCode::from(2))
            }
        },
        Err(e) => {
            eprintln!("error: invalid config: {e}");
            Err(ExitCode::from(2))
        }
    }
}

fn check_config(path: &Path, connect: bool) -> ExitCode {
    match load(path) {
        Ok(loaded) => tollgate_server::check_config::run(&loaded, path, connect, &env),
        Err(c) => c,
    }
}

fn run(cli: Cli) -> ExitCode {
    let Some(path) = cli.config else {
        eprintln!("error: no config given: pass --config PATH (or set CONFIG_FILE_PATH)");
        return ExitCode::from(2);
    };
    let loaded = match load(&path) {
        Ok(l) => l,
        Err(c) => return c,
    };
    for (k, v) in &loaded.config.environment_variables {
        // SAFETY: single-threaded here: the runtime has not started yet.
        unsafe { std::env::set_var(k, v) };
    }
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    if loaded.master_key.is_none() {
        tracing::warn!(
            "no master key configured (general_settings.master_key or LITELLM_MASTER_KEY): every request is accepted without authentication"
        );
    }
    let unimplemented = loaded.config.unimplemented_keys();
    if !unimplemented.is_empty() {
        tracing::warn!(
            "config keys not implemented yet (ignored): {}",
            unimplemented.join(", ")
        );
    }
    // N single-threaded workers, one per core unless --num_workers says otherwise: less CPU
    // per request and lower latency than one work-stealing runtime once connections are
    // balanced over the workers (bench/README.md, 2026-11-30 13:51). --work-stealing: the
    // one runtime.
    let threads = cli.num_workers.map(|n| n.get());
    let workers = match cli.work_stealing {
        true => None,
        false => Some(threads.unwrap_or_else(cores)),
    };
    let state =
        match AppState::build(&loaded, &env).and_then(|s| s.with_workers(workers.unwrap_or(1))) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: invalid config: {e}");
                return ExitCode::from(2);
            }
        };
    // Before any serving thread exists: how many malloc arenas they may use (malloc.rs).
    let serving_threads = workers.unwrap_or_else(|| threads.unwrap_or_else(default_worker_threads));
    let arenas = tollgate_server::malloc::limit_arenas(serving_threads);
    // With workers, the main thread's runtime starts everything and runs background tasks
    // (spend-log write-behind, signals) while `serve::WorkerPool` starts the workers that
    // serve; without, one multi-threaded runtime does it all.
    let mut builder = match workers {
        Some(_) => tokio::runtime::Builder::new_current_thread(),
        None => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(serving_threads);
            b
        }
    };
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let addr = match listen_addr(&cli.host, cli.port).await {
            Some(a) => a,
            None => {
                eprintln!(
                    "error: invalid --host/--port: {}:{} (give an IP address, e.g. 127.0.0.1 or ::, or a name that resolves, e.g. localhost)",
                    cli.host, cli.port
                );
                return ExitCode::from(2);
            }
        };
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let local = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut writer = None;
        let state = if loaded.master_key.is_some() {
            let choice = match StoreChoice::from_config(&loaded.config, &path, &env) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: invalid config: general_settings.{e}");
                    return ExitCode::from(2);
                }
            };
            let gate = match Gate::open(&loaded.config, &choice, &env).await {
                Ok(g) => Arc::new(g),
                Err(e) => {
                    eprintln!("error: governance store ({}): {e}", choice.describe());
                    return ExitCode::FAILURE;
                }
            };
            // Only the encodings of configured OpenAI-family models are built (each costs
            // tens of MB resident); other models are counted as bytes/4.
            let encodings: Vec<_> = loaded
                .config
                .model_list
                .iter()
                .map(|e| tollgate_governance::tokens::Encoding::for_model(&e.litellm_params.model))
                .collect();
            tokio::task::spawn_blocking(move || encodings.into_iter().for_each(|e| e.warm_up()));
            writer = Some(gate.spawn_write_behind(stop_rx));
            tracing::info!(store = %choice.describe(), "governance on: virtual keys, budgets, limits, spend logs");
            // Deployments stored through `/model/new` join the router before the first request.
            let admin =
                match tollgate_server::gate::admin::context(&loaded, &state, &gate, Arc::new(env))
                    .await
                {
                    Ok(a) => a,
                    Err(e) => {
                        eprintln!("error: stored models ({}): {e}", choice.describe());
                        return ExitCode::FAILURE;
                    }
                };
            if let Some(w) = tollgate_server::gate::unpriced::warning(&gate.unpriced(&state.router.load())) {
                tracing::warn!("{w}");
            }
            Arc::new(state.with_gate(gate).with_admin(admin))
        } else {
            Arc::new(state)
        };
        // Counted as check-config counts them: every model group, a wildcard one once.
        let (groups, wildcard_groups, aliases) = {
            let r = state.router.load();
            let concrete = r.groups().count();
            let wild = r.wildcard_groups().count();
            (concrete + wild, wild, r.public_names().count() - concrete)
        };
        tracing::info!(
            version = tollgate_server::VERSION,
            groups,
            wildcard_groups,
            aliases,
            workers = serving_threads,
            work_stealing = workers.is_none(),
            auth = state.auth.requires_key(),
            malloc_arenas = %arenas.map_or_else(|| "default".to_owned(), |n| n.to_string()),
            "Tollgate listening on http://{local}"
        );
        let drain = Duration::from_secs_f64(cli.drain_seconds.max(0.0));
        let listener = match listener.into_std() {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let (stop_serving_tx, stop_serving) = tokio::sync::watch::channel(false);
        let stop_serving_tx = Arc::new(stop_serving_tx);
        tokio::spawn(serve::stop_on_signal(
            Arc::clone(&state),
            Arc::clone(&stop_serving_tx),
        ));
        let mut pool = None;
        let served = match workers {
            Some(n) => match serve::WorkerPool::spawn(&state, &listener, n, &stop_serving, drain) {
                Ok(mut p) => {
                    // The workers hold their own duplicates of the socket.
                    drop(listener);
                    drop(stop_serving);
                    let r = p.drained(&stop_serving_tx).await;
                    pool = Some(p);
                    r
                }
                Err(e) => {
                    eprintln!("error: cannot start {n} workers: {e}");
                    return ExitCode::FAILURE;
                }
            },
            None => match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => serve::serve_worker(Arc::clone(&state), l, None, stop_serving, drain).await,
                Err(e) => Err(e),
            },
        };
        // Flush spend counters and spend logs queued by the last requests, while the workers'
        // runtimes (and the connections registered with them) still run.
        let _ = stop_tx.send(true);
        if let Some(w) = writer {
            let _ = w.await;
        }
        if let Some(p) = pool {
            p.release();
        }
        match served {
            Ok(()) => {
                tracing::info!("shut down");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: server failed: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// The address to listen on: `host` as an IP address, else the first address the name
/// resolves to (`localhost`, as uvicorn accepts). `None` when it is neither.
async fn listen_addr(host: &str, port: u16) -> Option<SocketAddr> {
    if let Ok(a) = format!("{}:{}", bracket(host), port).parse() {
        return Some(a);
    }
    tokio::net::lookup_host((host, port)).await.ok()?.next()
}

fn bracket(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// The serving threads when `--num_workers` is not given: `TOKIO_WORKER_THREADS` when set to a
/// positive number and `--work-stealing` is on (as tokio reads it), else one per core.
fn default_worker_threads() -> usize {
    std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(cores)
}

/// The cores this process may use (cgroup quotas and affinity included, as the standard
/// library reads them); 1 when unknown.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
