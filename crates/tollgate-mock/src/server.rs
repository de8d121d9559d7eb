//! Accept loop: one hyper connection task per socket (HTTP/1.1 and h2c), `TCP_NODELAY` on every
//! accepted socket, and a per-connection kill switch used by `x-mock-drop-connection`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::dispatch;
use crate::state::State;

/// Request extension: notifying it makes the connection task drop the connection (no response).
#[derive(Clone)]
pub(crate) struct ConnKill(pub Arc<Notify>);

/// Serve until `cancel` fires; then every open connection is dropped too.
pub(crate) async fn serve(listener: TcpListener, state: Arc<State>, cancel: CancellationToken) {
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    loop {
        let stream = tokio::select! {
            _ = cancel.cancelled() => break,
            r = listener.accept() => match r {
                Ok((s, _peer)) => s,
                Err(_) => {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let cancel = cancel.clone();
        let builder = builder.clone();
        tokio::spawn(async move {
            let kill = Arc::new(Notify::new());
            let ext = ConnKill(kill.clone());
            let svc = service_fn(move |mut req: Request<Incoming>| {
                req.extensions_mut().insert(ext.clone());
                let state = state.clone();
                async move { Ok::<_, Infallible>(dispatch::handle(state, req).await) }
            });
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                _ = conn => {}
                _ = kill.notified() => {}
                _ = cancel.cancelled() => {}
            }
        });
    }
}
