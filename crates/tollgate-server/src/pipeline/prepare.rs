//! The prepare stage: an attempt's plan ([`crate::plan`]) turned into the upstream request —
//! the raw body with `model` rewritten (same dialect), or the request translated (the
//! conversation a Responses follow-up continues loaded first) — or, for `count_tokens` on a
//! deployment that cannot count, the answer itself.

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;
use tollgate_providers::{Deployment, WireDialect};
use tollgate_translate::RequestOptions;
use tollgate_translate::codec::{Codec, RequestRule};

use super::{translate_error, translate_request, with_defaults};
use crate::errors::{GatewayError, GatewayFailure};
use crate::plan::{Plan, plan};
use crate::request::{Endpoint, ParsedRequest};
use crate::response_session::ResponsesSession;

/// What the prepare stage produced.
pub enum Prepared<'s> {
    /// Answered without an upstream call.
    Answered(Response),
    /// The upstream request to send.
    Send(Outbound<'s>),
}

/// An upstream request, and what relaying its answer needs.
pub struct Outbound<'s> {
    /// Path under the deployment's base URL.
    pub path: &'static str,
    /// The upstream body.
    pub body: Bytes,
    /// The dialect pair's codec, chosen once for the attempt.
    pub codec: &'static dyn Codec,
    /// The client's request as JSON, parsed once per request (translated requests only; a
    /// translated answer's context).
    pub client_request: Option<Arc<Value>>,
    /// The Responses API state the attempt reads and writes.
    pub session: ResponsesSession<'s>,
}

/// The attempt's inputs the prepare stage reads.
pub struct Attempting<'a> {
    /// The client's endpoint.
    pub endpoint: Endpoint,
    /// The request, parsed once.
    pub req: &'a ParsedRequest<'a>,
    /// The deployment called.
    pub dep: &'a Deployment,
    /// The model id sent upstream.
    pub upstream_model: &'a str,
    /// The request's own `mock_response` is answered in process (LiteLLM answers it without
    /// calling the provider).
    pub request_mock: bool,
}

/// Builds the upstream request of attempt `a`, starting `session`.
///
/// Errors: the plan's refusal (an endpoint the deployment cannot serve), 400 for a body that
/// is not JSON, 404 for a `previous_response_id` not found, a translation's refusal.
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
pub fn prepare<'s>(
    a: &Attempting<'_>,
    mut session: ResponsesSession<'s>,
) -> Result<Prepared<'s>, GatewayError> {
    let Attempting {
        endpoint,
        req,
        dep,
        upstream_model,
        request_mock,
    } = *a;
    let upstream_dialect = if request_mock {
        WireDialect::InProcessMock
    } else {
        dep.dialect()
    };
    let plan = plan(endpoint, dep, upstream_dialect).map_err(GatewayError::from)?;
    let codec = match plan {
        Plan::LocalTokenCount => {
            let n = estimate_input_tokens(req);
            return Ok(Prepared::Answered(super::answer::json_response(
                StatusCode::OK,
                Bytes::from(format!("{{\"input_tokens\":{n}}}")),
            )));
        }
        Plan::Call(codec) => codec,
    };
    let mut client_request: Option<Arc<Value>> = None;
    let upstream_body = match codec.request() {
        RequestRule::Forward(rewrite) => {
            let mut out = Vec::new();
            req.upstream_body(
                upstream_model,
                &dep.defaults,
                dep.provider.unsupported_fields,
                rewrite.force_stream_usage,
                rewrite.anthropic_metadata,
                &mut out,
            );
            Bytes::from(out)
        }
        RequestRule::Translate(translate) => {
            // parsed once per request, whichever attempt translates first
            let value = req.json().map_err(GatewayFailure::InvalidJson)?;
            let opts = RequestOptions {
                upstream_model: Some(upstream_model.to_owned()),
                ..RequestOptions::default()
            };
            session.continue_from(&value)?;
            let translated = translate_request(translate, &value, &opts, session.history())
                .map_err(translate_error)?;
            client_request = Some(value);
            Bytes::from(with_defaults(translated, &dep.defaults).to_string())
        }
    };
    Ok(Prepared::Send(Outbound {
        path: codec.upstream_path(),
        body: upstream_body,
        codec,
        client_request,
        session,
    }))
}

/// `count_tokens` for deployments that cannot count: ceil(bytes of `system`, `messages` and
/// `tools` JSON / 4), the same bytes/4 rule the gateway uses for non-OpenAI tokenizers.
fn estimate_input_tokens(req: &ParsedRequest<'_>) -> u64 {
    let bytes: usize = ["system", "messages", "tools"]
        .iter()
        .filter_map(|f| req.body.get(f))
        .map(|r| r.get().len())
        .sum();
    bytes.div_ceil(4) as u64
}
