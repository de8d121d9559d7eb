//! The listener and its workers.
//!
//! By default Tollgate serves on one worker thread per core (`--num_workers N` sets another
//! count), each running its own single-threaded tokio runtime that accepts from the same
//! listening socket (a `dup` of it, so the kernel hands each new connection to one worker), and
//! a worker hands a connection it accepted to the worker with the fewest open connections
//! ([`balance`]). A connection, the requests on it and the upstream connections they use (each
//! worker has its own upstream pools, see [`tollgate_providers::bind_thread_to_shard`]) stay on
//! one thread: no task is handed to another thread and woken there, which on a work-stealing
//! runtime cost a futex wake-up and a context switch per request (bench/README.md, 2026-11-29
//! 21:15 profile). Shared state (router, governance, caches) is the same `Arc<AppState>` for
//! all workers. With `--work-stealing` one multi-threaded tokio runtime serves instead.
//!
//! Every accepted socket gets TCP_NODELAY. On SIGTERM/SIGINT every worker stops accepting and
//! lets in-flight requests and streams finish, up to a deadline.
//!
//! Work done inline on a worker (parsing a request body, counting a 100K-token prompt: about
//! 2 ms) delays only the connections of that worker; nothing on the request path blocks on I/O.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use crate::state::AppState;

pub mod balance;

use balance::{Balancer, OpenConnection, Seat};

/// Serves on the calling runtime (one worker) until `stop` turns true, then drains for at
/// most `drain_deadline`: the listener closes, requests in flight and streams finish, idle
/// keep-alive connections close.
///
/// Each connection is served by hyper-util's HTTP/1.1 + HTTP/2 (prior knowledge) server with
/// [`crate::service::gateway_service`].
///
/// With a `seat` (one of [`WorkerPool`]'s workers) a connection accepted here may be served
/// by another worker, and connections other workers accepted may be served here.
///
/// Always `Ok` today (the `Result` is the worker's contract with [`WorkerPool`]): accept
/// errors are logged and the loop goes on, after 1 s when the descriptor table is full (as
/// axum's server does).
pub async fn serve_worker(
    state: Arc<AppState>,
    listener: TcpListener,
    mut seat: Option<Seat>,
    mut stop: watch::Receiver<bool>,
    drain_deadline: Duration,
) -> std::io::Result<()> {
    // `with_state(())` turns every route into its final form once, not per connection.
    let router = crate::routes::router(Arc::clone(&state)).with_state(());
    let service = crate::service::gateway_service(state, router);
    let builder = Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    loop {
        let (tcp, open) = tokio::select! {
            biased;
            _ = stop.wait_for(|v| *v) => break,
            (tcp, open) = handed_off(&mut seat) => match tokio::net::TcpStream::from_std(tcp) {
                Ok(tcp) => (tcp, Some(open)),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot take over a connection from another worker");
                    continue;
                }
            },
            accepted = listener.accept() => match (accepted, &seat) {
                (Ok((tcp, _)), None) => (tcp, None),
                (Ok((tcp, _)), Some(seat)) => match seat.place(tcp) {
                    Ok(Some((tcp, open))) => (tcp, Some(open)),
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot hand a connection to another worker");
                        continue;
                    }
                },
                (Err(e), _) => {
                    accept_error(e).await;
                    continue;
                }
            },
        };
        // Without TCP_NODELAY small responses wait for the client's delayed ACK (DESIGN.md).
        let _ = tcp.set_nodelay(true);
        let conn = builder
            .serve_connection(TokioIo::new(tcp), service.clone())
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::trace!(error = %e, "connection ended with an error");
            }
            drop(open);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(drain_deadline) => {
            tracing::warn!(deadline_s = drain_deadline.as_secs_f64(), "drain deadline reached; closing remaining connections");
        }
    }
    Ok(())
}

/// The next connection another worker handed to this one; never resolves without a seat.
async fn handed_off(seat: &mut Option<Seat>) -> (std::net::TcpStream, OpenConnection) {
    match seat {
        Some(seat) => seat.handed_off().await,
        None => std::future::pending().await,
    }
}

/// A failed `accept`: the peer's own reset or abort is skipped; anything else (a full
/// descriptor table, out of memory) is logged and retried after 1 s rather than spinning.
async fn accept_error(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Exit status when a second signal cuts the drain short (128 + SIGINT, as shells report an
/// interrupted program).
pub const FORCED_EXIT_CODE: i32 = 130;

/// Waits for SIGTERM/SIGINT, then marks the state as shutting down and turns `stop` true.
/// A second SIGTERM/SIGINT during the drain exits the process at once with
/// [`FORCED_EXIT_CODE`] (as uvicorn, which serves LiteLLM, does): one stuck client must not
/// make Ctrl-C wait for the whole drain deadline. Spend-log rows still queued are then lost;
/// the log says so.
pub async fn stop_on_signal(state: Arc<AppState>, stop: Arc<watch::Sender<bool>>) {
    wait_for_signal().await;
    state.shutting_down.store(true, Ordering::Relaxed);
    tracing::info!(
        "shutdown signal received: draining in-flight requests (a second signal exits at once)"
    );
    let _ = stop.send(true);
    wait_for_signal().await;
    tracing::warn!(
        "second shutdown signal: exiting without waiting for in-flight requests; spend-log rows not yet written are lost"
    );
    std::process::exit(FORCED_EXIT_CODE);
}

/// The worker threads. The main thread does not serve: its runtime runs startup, signals and
/// background work (the spend-log write-behind builds and binds batches of hundreds of rows),
/// which on a serving thread would delay that worker's connections — a single-threaded runtime
/// has no other thread to steal them (governed sweep, bench/README.md 2026-11-30).
///
/// Each worker keeps its runtime running after it has drained, until [`WorkerPool::release`]:
/// connections it opened (to the upstream, to Postgres) are registered with its runtime, and
/// the final spend-log flush may still use a pooled one.
pub struct WorkerPool {
    threads: Vec<JoinHandle<()>>,
    drained: Vec<oneshot::Receiver<std::io::Result<()>>>,
    release: watch::Sender<bool>,
}

impl WorkerPool {
    /// Starts workers `0..workers`, each on its own thread with a single-threaded runtime,
    /// accepting from a duplicate of `listener` and using upstream shard `i`.
    ///
    /// Errors: the listener cannot be duplicated or a thread cannot be spawned.
    pub fn spawn(
        state: &Arc<AppState>,
        listener: &std::net::TcpListener,
        workers: usize,
        stop: &watch::Receiver<bool>,
        drain_deadline: Duration,
    ) -> std::io::Result<Self> {
        let (release, _) = watch::channel(false);
        let mut pool = WorkerPool {
            threads: Vec::new(),
            drained: Vec::new(),
            release,
        };
        for (i, seat) in Balancer::seats(workers).into_iter().enumerate() {
            let listener = listener.try_clone()?;
            let state = Arc::clone(state);
            let stop = stop.clone();
            let mut release = pool.release.subscribe();
            let (drained_tx, drained_rx) = oneshot::channel();
            let thread = std::thread::Builder::new()
                .name(format!("tollgate-worker-{i}"))
                .spawn(move || {
                    tollgate_providers::bind_thread_to_shard(i);
                    let runtime = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(r) => r,
                        Err(e) => {
                            let _ = drained_tx.send(Err(e));
                            return;
                        }
                    };
                    runtime.block_on(async move {
                        let served = match TcpListener::from_std(listener) {
                            Ok(l) => serve_worker(state, l, Some(seat), stop, drain_deadline).await,
                            Err(e) => Err(e),
                        };
                        let _ = drained_tx.send(served);
                        let _ = release.wait_for(|v| *v).await;
                    });
                })?;
            pool.threads.push(thread);
            pool.drained.push(drained_rx);
        }
        Ok(pool)
    }

    /// Waits until every worker has drained; the first worker error, if any. A worker that
    /// fails turns `stop` true so that the others drain too.
    pub async fn drained(&mut self, stop: &watch::Sender<bool>) -> std::io::Result<()> {
        use futures_util::StreamExt;
        let mut pending: futures_util::stream::FuturesUnordered<_> =
            self.drained.drain(..).collect();
        let mut result = Ok(());
        while let Some(r) = pending.next().await {
            if let Ok(Err(e)) = r {
                let _ = stop.send(true);
                if result.is_ok() {
                    result = Err(e);
                }
            }
        }
        result
    }

    /// Lets the workers' runtimes end and joins their threads.
    pub fn release(self) {
        let _ = self.release.send(true);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
