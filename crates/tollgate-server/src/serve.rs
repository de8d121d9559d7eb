//! The listener: TCP_NODELAY on every accepted socket, graceful shutdown on SIGTERM/SIGINT
//! (stop accepting, let in-flight requests and streams finish, up to a deadline).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::net::TcpListener;

use crate::state::AppState;

/// Serves until SIGTERM/SIGINT, then drains for at most `drain_deadline`.
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    drain_deadline: Duration,
) -> std::io::Result<()> {
    let app = crate::routes::router(Arc::clone(&state));
    let listener = listener.tap_io(|tcp| {
        // Without TCP_NODELAY small responses wait for the client's delayed ACK (DESIGN.md).
        let _ = tcp.set_nodelay(true);
    });
    let (tx, rx) = tokio::sync::watch::channel(false);
    let shutdown_state = Arc::clone(&state);
    let signal = async move {
        wait_for_signal().await;
        shutdown_state.shutting_down.store(true, Ordering::Relaxed);
        tracing::info!("shutdown signal received: draining in-flight requests");
        let _ = tx.send(true);
    };
    let server = axum::serve(listener, app).with_graceful_shutdown(signal);
    let mut rx_deadline = rx.clone();
    let deadline = async move {
        let _ = rx_deadline.wait_for(|v| *v).await;
        tokio::time::sleep(drain_deadline).await;
    };
    tokio::select! {
        r = server => r,
        _ = deadline => {
            tracing::warn!(deadline_s = drain_deadline.as_secs_f64(), "drain deadline reached; closing remaining connections");
            Ok(())
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
