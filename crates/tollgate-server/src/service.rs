//! The HTTP service each accepted connection is served with.
//!
//! `POST` to an inference route (`routes::INFERENCE_ROUTES`) goes straight into the pipeline:
//! the request's body is read under the same limit and with the same errors as through axum,
//! and nothing else runs before [`pipeline::handle`](crate::pipeline::handle). Every other
//! request (management API, models, health, a wrong method on an inference route) goes through
//! the axum [`Router`](axum::Router) built by [`routes::router`](crate::routes::router()).
//!
//! Why not all through axum: per request axum boxes the handler's future (the pipeline's is
//! ~7 KB), boxes the body, inserts route extensions and runs the route match, which together
//! were ~5 % of the CPU a forwarded request costs (bench/README.md, 2026-11-30 profile). Here
//! the pipeline's future lives inside the connection's own task, allocated once per connection.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::future::Either;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Body as _;
use hyper::body::Incoming;
use tower_service::Service as _;

use crate::routes::{self, BodyError};
use crate::state::AppState;

/// A hyper service: inference routes into the pipeline, everything else into `router`.
/// Cloned once per connection; per request it takes one reference count, to the state or to
/// the router, whichever branch serves it.
pub fn gateway_service(
    state: Arc<AppState>,
    router: axum::Router,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response,
    Error = Infallible,
    Future = impl Future<Output = Result<Response, Infallible>> + Send + 'static,
> + Clone
+ Send
+ 'static {
    hyper::service::service_fn(move |req: Request<Incoming>| {
        if req.method() == Method::POST
            && let Some(endpoint) = routes::inference_endpoint(req.uri().path())
        {
            let state = Arc::clone(&state);
            Either::Left(async move {
                let (parts, body) = req.into_parts();
                let body = read_body(body, state.max_request_bytes).await;
                Ok(routes::inference(state, endpoint, parts.headers, body).await)
            })
        } else {
            let mut router = router.clone();
            Either::Right(async move { router.call(req).await })
        }
    })
}

/// Reads a whole request body of at most `limit` bytes (`general_settings.max_request_size_mb`).
///
/// Errors: 413 when the body (or its `content-length`) is larger than `limit`; 400 when the
/// client's stream fails before the body is complete. Before a 413 the rest of the body is
/// read and dropped, up to [`DRAIN_AFTER_LIMIT_BYTES`] and [`DRAIN_AFTER_LIMIT`]: a connection
/// closed with unread bytes is reset, and a client still sending would see the reset instead
/// of the 413 (RFC 9112 §9.6 asks a server to close gracefully for that reason).
pub async fn read_body(mut body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    let too_large = || BodyError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        detail: "length limit exceeded".to_owned(),
    };
    if body.size_hint().lower() > limit as u64 {
        drain(body).await;
        return Err(too_large());
    }
    // One frame (the usual case) is kept as it arrived; more are copied into one buffer.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError {
            status: StatusCode::BAD_REQUEST,
            detail: format!("Failed to buffer the request body: {e}"),
        })?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        len += data.len();
        if len > limit {
            drain(body).await;
            return Err(too_large());
        }
        match (&first, &mut joined) {
            (None, _) => first = Some(data),
            (Some(f), None) => {
                let mut all = BytesMut::with_capacity(f.len() + data.len());
                all.extend_from_slice(f);
                all.extend_from_slice(&data);
                joined = Some(all);
            }
            (Some(_), Some(all)) => all.extend_from_slice(&data),
        }
    }
    Ok(match joined {
        Some(all) => all.freeze(),
        None => first.unwrap_or_default(),
    })
}

/// The most body bytes read and dropped after the limit was crossed.
pub const DRAIN_AFTER_LIMIT_BYTES: usize = 4 << 20;
/// The longest time spent reading them.
pub const DRAIN_AFTER_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads and drops what is left of `body`, within the bounds above.
async fn drain(mut body: Incoming) {
    let mut left = DRAIN_AFTER_LIMIT_BYTES;
    let _ = tokio::time::timeout(DRAIN_AFTER_LIMIT, async {
        while let Some(Ok(frame)) = body.frame().await {
            let n = frame.data_ref().map_or(0, Bytes::len);
            match left.checked_sub(n) {
                Some(l) => left = l,
                None => return,
            }
        }
    })
    .await;
}
