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
use tollgate_config::LoadedConfig;
use tollgate_server::errors::StartupError;
use tollgate_server::gate::{Gate, GateError, StoreChoice};
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

#[expect(
    clippy::print_stderr,
    reason = "the entry point reports a failed start on stderr"
)]
fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let done = match cli.command {
        Some(Command::CheckConfig { path, connect }) => match path.or(cli.config) {
            Some(path) => check_config(&path, connect),
            None => Err(StartupError::NoConfigToCheck),
        },
        None => run(cli),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
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

fn check_config(path: &Path, connect: bool) -> Result<(), StartupError> {
    let loaded = tollgate_server::check_config::load(path, &env)?;
    tollgate_server::check_config::run(&loaded, path, connect, &env)
}

/// Loads the config, builds the state and the runtime, then serves until shut down.
fn run(cli: Cli) -> Result<(), StartupError> {
    let path = cli.config.clone().ok_or(StartupError::NoConfig)?;
    let loaded = tollgate_server::check_config::load(&path, &env)?;
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
    let state = AppState::build(&loaded, &env)
        .and_then(|s| s.with_workers(workers.unwrap_or(1)))
        .map_err(StartupError::config)?;
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
    let runtime = builder
        .enable_all()
        .build()
        .map_err(StartupError::Runtime)?;
    let plan = Serving {
        workers,
        serving_threads,
        arenas,
    };
    runtime.block_on(serve_all(cli, loaded, path, state, plan))
}

/// Longest wait at shutdown for the settlements queued for shared counters (Redis).
const SHARED_FLUSH_DEADLINE: Duration = Duration::from_secs(5);

/// How the process serves: `workers` single-threaded workers (`None`: one work-stealing
/// runtime), on `serving_threads` threads, with `arenas` malloc arenas (`None`: the default).
struct Serving {
    workers: Option<usize>,
    serving_threads: usize,
    arenas: Option<usize>,
}

/// Binds the listener, opens governance (with a master key), serves until a signal, then
/// flushes what the last requests queued.
async fn serve_all(
    cli: Cli,
    loaded: LoadedConfig,
    path: PathBuf,
    state: AppState,
    plan: Serving,
) -> Result<(), StartupError> {
    let addr =
        listen_addr(&cli.host, cli.port)
            .await
            .ok_or_else(|| StartupError::ListenAddress {
                host: cli.host.clone(),
                port: cli.port,
            })?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| StartupError::Listen { addr, source })?;
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (state, writer) = if loaded.master_key.is_some() {
        let (state, writer) = with_governance(&loaded, &path, state, stop_rx).await?;
        (state, Some(writer))
    } else {
        (Arc::new(state), None)
    };
    // Cooldowns and deployment usage shared with the other replicas (when Redis is set).
    let routing = tollgate_server::fleet::routing::RoutingSync::start(
        &loaded.config,
        &env,
        Arc::clone(&state.router),
    );
    // Counted as check-config counts them: every model group, a wildcard one once.
    let (groups, wildcard_groups, aliases) = {
        let r = state.router.load();
        let concrete = r.groups().count();
        let wild = r.wildcard_groups().count();
        (
            concrete + wild,
            wild,
            r.public_names().count().saturating_sub(concrete),
        )
    };
    tracing::info!(
        version = tollgate_server::VERSION,
        groups,
        wildcard_groups,
        aliases,
        workers = plan.serving_threads,
        work_stealing = plan.workers.is_none(),
        auth = state.auth.requires_key(),
        malloc_arenas = %plan.arenas.map_or_else(|| "default".to_owned(), |n| n.to_string()),
        "Tollgate listening on http://{local}"
    );
    let drain = Duration::from_secs_f64(cli.drain_seconds.max(0.0));
    let listener = listener
        .into_std()
        .map_err(|source| StartupError::Listen { addr, source })?;
    let (pool, served) = serve_until_stopped(&state, listener, plan.workers, drain).await;
    if let Some(r) = routing {
        r.stop().await;
    }
    // Flush spend counters and spend logs queued by the last requests, while the workers'
    // runtimes (and the connections registered with them) still run: first the settlements
    // queued for shared counters, so the write-behind's final pass drains what they changed.
    if let Some(g) = &state.gate {
        let undelivered = g.gov.admission().flush(SHARED_FLUSH_DEADLINE).await;
        if undelivered > 0 {
            tracing::warn!(
                undelivered,
                "settlements not delivered to the shared counters before shutdown"
            );
        }
    }
    let _ = stop_tx.send(true);
    if let Some(w) = writer {
        let _ = w.await;
    }
    if let Some(p) = pool {
        p.release();
    }
    served?;
    tracing::info!("shut down");
    Ok(())
}

/// Serves `listener` until a signal and the drain: on `workers` workers, or on this runtime.
/// The worker pool comes back unreleased (even when serving failed), so the connections
/// registered with its runtimes live until the spend-log flush is done.
async fn serve_until_stopped(
    state: &Arc<AppState>,
    listener: std::net::TcpListener,
    workers: Option<usize>,
    drain: Duration,
) -> (Option<serve::WorkerPool>, Result<(), StartupError>) {
    let (stop_serving_tx, stop_serving) = tokio::sync::watch::channel(false);
    let stop_serving_tx = Arc::new(stop_serving_tx);
    tokio::spawn(serve::stop_on_signal(
        Arc::clone(state),
        Arc::clone(&stop_serving_tx),
    ));
    let Some(n) = workers else {
        let served = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => serve::serve_worker(Arc::clone(state), l, None, stop_serving, drain).await,
            Err(e) => Err(e),
        };
        return (None, served.map_err(StartupError::Serve));
    };
    match serve::WorkerPool::spawn(state, &listener, n, &stop_serving, drain) {
        Ok(mut p) => {
            // The workers hold their own duplicates of the socket.
            drop(listener);
            drop(stop_serving);
            let served = p.drained(&stop_serving_tx).await;
            (Some(p), served.map_err(StartupError::Serve))
        }
        Err(source) => (None, Err(StartupError::Workers { workers: n, source })),
    }
}

/// Opens the governance store, starts its write-behind (stopped by `stop`), loads the stored
/// deployments and mounts the management API.
async fn with_governance(
    loaded: &LoadedConfig,
    path: &Path,
    state: AppState,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(Arc<AppState>, tokio::task::JoinHandle<()>), StartupError> {
    let choice = StoreChoice::from_config(&loaded.config, path, &env)
        .map_err(|e| StartupError::config(format_args!("general_settings.{e}")))?;
    let gate = Gate::open(&loaded.config, &choice, &env)
        .await
        .map(Arc::new)
        .map_err(|error| match error {
            // Redis is not the database: its error names its own target
            GateError::SharedCounters(e) => StartupError::SharedCounters(e),
            GateError::RedisConfig(e) => StartupError::config(e),
            error => StartupError::Store {
                store: choice.describe(),
                error,
            },
        })?;
    // Only the encodings of configured OpenAI-family models are built (each costs
    // tens of MB resident); other models are counted as bytes/4.
    let encodings: Vec<_> = loaded
        .config
        .model_list
        .iter()
        .map(|e| tollgate_governance::tokens::Encoding::for_model(&e.litellm_params.model))
        .collect();
    tokio::task::spawn_blocking(move || encodings.into_iter().for_each(|e| e.warm_up()));
    let writer = gate.spawn_write_behind(stop.clone());
    tracing::info!(store = %choice.describe(), counters = %gate.counters, "governance on: virtual keys, budgets, limits, spend logs");
    // Deployments stored through `/model/new` join the router before the first request.
    let admin = tollgate_server::gate::admin::context(loaded, &state, &gate, Arc::new(env))
        .await
        .map_err(|error| StartupError::StoredModels {
            store: choice.describe(),
            error,
        })?;
    // With Redis settings: management changes reach every replica (fleet/identity.rs).
    tollgate_server::fleet::identity::start(&loaded.config, &env, &admin.ctx, stop)
        .map_err(StartupError::config)?;
    if let Some(w) = tollgate_server::gate::unpriced::warning(&gate.unpriced(&state.router.load()))
    {
        tracing::warn!("{w}");
    }
    let state = state
        .with_gate(gate)
        .with_admin(admin.ctx)
        .with_ui(admin.ui);
    Ok((Arc::new(state), writer))
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
