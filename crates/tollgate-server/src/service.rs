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
use bytes::Bytes;
use futures_util::future::Either;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
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
/// client's stream fails before the body is complete.
pub async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(BodyError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            detail: e.to_string(),
        }),
        Err(e) => Err(BodyError {
            status: StatusCode::BAD_REQUEST,
            detail: format!("Failed to buffer the request body: {e}"),
        }),
    }
}
