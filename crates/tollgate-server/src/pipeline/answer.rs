//! The relay stage: an upstream [`Reply`] to the client's answer. A stream is relayed event by
//! event (its call record handed to the relay, which settles it at the stream's end); a
//! whole body is relayed as bytes or translated, its usage read, the Responses state kept,
//! and the attempt settled here.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use serde_json::Value;
use tollgate_providers::Deployment;
use tollgate_router::StreamSlot;
use tollgate_translate::codec::{Answer, Codec, EventFormat, RequestRule, StreamRule};
use tollgate_translate::responses_to_chat::ResponseContext;

use super::prepare::Outbound;
use super::send::Reply;
use super::settle::CallGuard;
use super::{stream_translator, translate_error, translate_response};
use crate::errors::GatewayError;
use crate::headers::forward_upstream;
use crate::relay::Settled;
use crate::relay::first_event::Primed;
use crate::relay::handlers::{
    AnthropicPassthrough, EventHandler, OpenAiPassthrough, ResponsesPassthrough, Translated,
};
use crate::relay::restamp::{Restamped, restamp_body, set_model};
use crate::relay::stream::StreamRelay;
use crate::relay::unary::relay_body;
use crate::request::{Endpoint, ParsedRequest};

/// What the relay needs besides the reply.
pub struct Relaying<'a> {
    /// The client's endpoint.
    pub endpoint: Endpoint,
    /// The request, parsed once.
    pub req: &'a ParsedRequest<'a>,
    /// The deployment that answered.
    pub dep: &'a Deployment,
    /// `x-litellm-call-id`.
    pub call_id: &'a str,
    /// The gap allowed between a stream's events.
    pub idle: std::time::Duration,
    /// A stream's hold on its deployment (released at the stream's end).
    pub stream_slot: Option<StreamSlot>,
    /// The name the client sent, when its answer must carry it as `model`
    /// ([`crate::relay::restamp`]): an alias, answered by its own group (no fallback).
    pub restamp: Option<&'a str>,
}

/// How the relay ended for the attempt.
pub struct Relayed {
    /// The client's answer.
    pub response: Result<Response, GatewayError>,
    /// The settlement (a whole answer of a governed call; a stream settles at its end).
    pub settled: Option<Settled>,
    /// A whole answer's reported (prompt, completion) tokens, for the router's TPM.
    pub tokens: (Option<u64>, u64),
    /// The answer is a stream timed by its [`StreamSlot`] at its end.
    pub timed_by_stream: bool,
}

/// Relays `reply` (see the module docs), settling `guard` or handing it to the stream.
pub fn relay(r: Relaying<'_>, out: Outbound<'_>, reply: Reply, guard: CallGuard<'_>) -> Relayed {
    let minted = Minted {
        created: unix_now(),
        // Only Responses API answers carry a gateway-minted id.
        response_id: if r.endpoint == Endpoint::Responses {
            format!("resp_{}", r.call_id.replace('-', ""))
        } else {
            String::new()
        },
    };
    match reply {
        Reply::Stream { headers, body } => relay_stream(r, out, &headers, body, guard, &minted),
        Reply::Full {
            status,
            headers,
            body,
        } => relay_full(r, out, (status, &headers, body), guard, &minted),
    }
}

/// What a translated answer is stamped with.
struct Minted {
    /// Unix seconds.
    created: u64,
    /// `resp_…` (Responses API), else empty.
    response_id: String,
}

impl Minted {
    /// What a translation of the answer to `request` reads.
    fn answer<'c>(&'c self, r: &Relaying<'c>, request: Option<&'c Value>) -> Answer<'c> {
        Answer {
            call_id: r.call_id,
            include_usage: r.req.include_usage,
            context: ResponseContext {
                response_id: &self.response_id,
                created_at: self.created,
                completed_at: self.created,
                request: request.unwrap_or(&Value::Null),
            },
        }
    }
}

/// A stream: relayed event by event through the handler its relay mode needs.
fn relay_stream(
    r: Relaying<'_>,
    out: Outbound<'_>,
    up: &HeaderMap,
    body: Primed,
    guard: CallGuard<'_>,
    minted: &Minted,
) -> Relayed {
    let Outbound {
        codec,
        client_request,
        session,
        ..
    } = out;
    let rule = stream_translator(codec, &minted.answer(&r, client_request.as_deref()));
    let handler: Box<dyn EventHandler> = match rule {
        StreamRule::Relay(EventFormat::OpenAiChunks) => {
            Box::new(OpenAiPassthrough::new(!r.req.include_usage))
        }
        StreamRule::Relay(EventFormat::AnthropicEvents) => Box::<AnthropicPassthrough>::default(),
        StreamRule::Relay(EventFormat::ResponsesEvents) => Box::new(ResponsesPassthrough::on_id(
            session.on_upstream_id(&r.dep.id),
        )),
        StreamRule::Translate(t) => {
            let t = Translated::new(t);
            match client_request {
                Some(cr) if r.endpoint == Endpoint::Responses => {
                    Box::new(t.on_response(session.on_translated(cr)))
                }
                _ => Box::new(t),
            }
        }
    };
    let handler = match r.restamp {
        Some(model) => Box::new(Restamped::new(handler, model.to_owned())),
        None => handler,
    };
    let timed_by_stream = r.stream_slot.is_some();
    let (record, sink) = guard.into_stream();
    let stream = StreamRelay::new(body, r.idle, handler, record, sink, r.stream_slot);
    let mut resp = sse_response(stream);
    forward_upstream(up, resp.headers_mut());
    Relayed {
        response: Ok(resp),
        settled: None,
        tokens: (None, 0),
        timed_by_stream,
    }
}

/// A whole answer: relayed as bytes, or translated (an error reshaped); settled here.
fn relay_full(
    r: Relaying<'_>,
    out: Outbound<'_>,
    (status, up, body): (StatusCode, &HeaderMap, Bytes),
    mut guard: CallGuard<'_>,
    minted: &Minted,
) -> Relayed {
    let codec = out.codec;
    read_usage(guard.record(), status, codec, &body);
    if status.is_success()
        && r.endpoint == Endpoint::Responses
        && matches!(codec.request(), RequestRule::Forward(_))
        && let Some(id) = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned))
    {
        out.session.remember_upstream(&id, &r.dep.id);
    }
    let dialect = r.endpoint.dialect();
    let answer = minted.answer(&r, out.client_request.as_deref());
    let resp = if status.is_success() {
        match translate_response(codec, &body, &answer) {
            Ok(None) => {
                let body = match r.restamp.and_then(|m| restamp_body(&body, m)) {
                    Some(restamped) => restamped,
                    None => body,
                };
                Ok(relay_body(status, up, body, dialect))
            }
            Ok(Some(mut v)) => {
                if let Some(model) = r.restamp {
                    set_model(&mut v, model);
                }
                // The spend log keys the call by the id the client saw.
                let record = guard.record();
                if record.charge.is_some() {
                    record.response_id = v["id"].as_str().map(str::to_owned);
                }
                if r.endpoint == Endpoint::Responses {
                    out.session.keep_translated(answer.context.request, &v);
                }
                Ok(json_response(StatusCode::OK, Bytes::from(v.to_string())))
            }
            Err(e) => Err(translate_error(e)),
        }
    } else {
        match codec.upstream_error(status.as_u16(), &body) {
            None => Ok(relay_body(status, up, body, dialect)),
            Some(env) => Err(upstream_error(env, up)),
        }
    };
    let record = guard.record();
    if let Err(e) = &resp {
        record.status = e.envelope.status;
    }
    let tokens = (
        record.usage.and_then(|u| u.reported_prompt_tokens()),
        record.usage.map_or(0, |u| u.completion_tokens),
    );
    Relayed {
        response: resp,
        settled: guard.settle(),
        tokens,
        timed_by_stream: false,
    }
}

/// Records a whole answer's status, and for a 2xx its usage (in the upstream's dialect), the
/// response id (governed calls) and what settlement counts unreported tokens from.
fn read_usage(
    record: &mut crate::relay::CallRecord,
    status: StatusCode,
    codec: &dyn Codec,
    body: &[u8],
) {
    record.status = status.as_u16();
    if !status.is_success() {
        return;
    }
    if record.charge.is_some() {
        record.response_id = crate::relay::response_id(body);
    }
    record.usage = codec.usage(body);
    record.unreported.answer(body, record.usage);
}

/// An upstream error reshaped into the client's dialect by the codec (`env`), with the
/// forwardable upstream headers.
fn upstream_error(env: tollgate_protocol::ErrorEnvelope, up: &HeaderMap) -> GatewayError {
    let mut e = GatewayError::from(env);
    let mut fwd = HeaderMap::new();
    forward_upstream(up, &mut fwd);
    e.headers
        .extend(fwd.into_iter().filter_map(|(k, v)| k.map(|k| (k, v))));
    e
}

/// A JSON answer with `status`.
pub fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut r = crate::relay::new_response(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn sse_response(relay: StreamRelay) -> Response {
    let mut r = crate::relay::new_response(Body::from_stream(relay));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    r
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
