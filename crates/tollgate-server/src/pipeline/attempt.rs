//! One attempt: prepare → send → relay, on one deployment. The attempt's call record is
//! guarded from the start ([`CallGuard`]) and settled exactly once whichever way the attempt
//! ends; the attempt returns its answer, the router's [`Outcome`] and the settlement
//! ([`Attempted`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::Response;
use bytes::Bytes;
use http::HeaderMap;
use tollgate_governance::runtime::Charge;
use tollgate_providers::Deployment;
use tollgate_providers::deployment::MockBehaviour;
use tollgate_router::{CallTiming, FailureClass, Outcome, StreamSlot};

use super::answer::{Relaying, relay};
use super::inbound::ClientTimeouts;
use super::prepare::{Attempting, Outbound, Prepared, prepare};
use super::send::{Outgoing, Reply, per_request_headers, send};
use super::settle::CallGuard;
use crate::errors::GatewayError;
use crate::errors::{GatewayFailure, MockException, classify};
use crate::gate::unreported::Unreported;
use crate::relay::{CallRecord, Settled};
use crate::request::{Endpoint, ParsedRequest};
use crate::response_session::ResponsesSession;
use crate::state::AppState;

/// One upstream attempt's inputs.
pub struct Call<'a> {
    /// The client's endpoint.
    pub endpoint: Endpoint,
    /// The client's headers.
    pub headers: &'a HeaderMap,
    /// The raw body.
    pub body: &'a Bytes,
    /// The request, parsed once.
    pub req: &'a ParsedRequest<'a>,
    /// The deployment called.
    pub dep: &'a Deployment,
    /// The model id sent upstream.
    pub upstream_model: &'a str,
    /// The attempt's model group.
    pub group: &'a str,
    /// Limits the client set.
    pub timeout_override: ClientTimeouts,
    /// `x-litellm-call-id`.
    pub call_id: &'a str,
    /// When the request arrived.
    pub started: Instant,
    /// When this attempt started.
    pub sent: Instant,
    /// The admitted attempt (governance on), settled when the call ends.
    pub charge: Option<Box<Charge>>,
    /// Wall-clock arrival (spend logs).
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// A stream's hold on its deployment (in flight until the stream ends; its completion
    /// tokens counted then).
    pub stream_slot: Option<StreamSlot>,
    /// Credentials the client sent in the body ([`crate::clientside`]).
    pub client: Option<&'a crate::clientside::ClientUpstream>,
    /// The caller: a stored Response's owner, and who may continue one.
    pub identity: &'a crate::auth::Identity,
    /// The name the answer carries as `model` instead of the upstream's (an alias the
    /// client sent; [`crate::relay::restamp`]).
    pub restamp: Option<&'a str>,
}

/// How an attempt ended.
pub struct Attempted {
    /// The client's answer (or the error it gets if no other attempt follows).
    pub response: Result<Response, GatewayError>,
    /// What the router learns: success with times and tokens, or the failure class.
    pub outcome: Outcome,
    /// The settlement of a governed call that ended here (a stream settles at its end).
    pub settled: Option<Settled>,
    /// When the attempt ended.
    pub ended: Instant,
}

/// How the answer was relayed, for the router's success outcome.
#[derive(Clone, Copy, Default)]
struct Answered {
    /// Reported (prompt, completion) tokens of a whole answer.
    tokens: (Option<u64>, u64),
    /// A stream timed by its slot at its end.
    timed_by_stream: bool,
}

/// How an attempt's stages ended, before the router's outcome is derived.
struct Ending {
    response: Result<Response, GatewayError>,
    /// The upstream's failure class and `retry-after`.
    failure: Option<(FailureClass, Option<Duration>)>,
    settled: Option<Settled>,
    answered: Answered,
}

impl Ending {
    /// An attempt that ended in `e`, failing as `class` (`None`: a gateway-side refusal).
    fn failed(e: GatewayError, class: Option<FailureClass>, settled: Option<Settled>) -> Self {
        Ending {
            response: Err(e),
            failure: class.map(|c| (c, None)),
            settled,
            answered: Answered::default(),
        }
    }
}

/// Runs one attempt (see the module docs).
pub async fn attempt(state: &Arc<AppState>, mut call: Call<'_>) -> Attempted {
    let (sent, stream) = (call.sent, call.req.stream);
    let charge = call.charge.take();
    let guard = CallGuard::new(call_record(&call, charge), &state.sink);
    let ending = stages(state, call, guard).await;
    Attempted::new(ending, sent, stream)
}

/// The error mocks, then prepare, send and relay.
async fn stages(state: &Arc<AppState>, call: Call<'_>, guard: CallGuard<'_>) -> Ending {
    let Call { req, dep, .. } = call;
    // LiteLLM's error mocks: a `mock_response` (the request's own, else the deployment's)
    // naming one of its exceptions fails this attempt as that upstream error would (retries,
    // cooldowns and fallbacks apply; nothing is billed).
    let dep_mock = dep.mock.as_ref().and_then(|m| m.reply.as_deref());
    let mock_text = req.mock_response.as_deref().or(dep_mock);
    if let Some(m) = mock_text.and_then(MockException::named) {
        let class = m.class();
        let e = GatewayError::from(GatewayFailure::Mock(m));
        let settled = guard.fail(e.envelope.status);
        return Ending::failed(e, Some(class), settled);
    }

    // prepare: a request's own `mock_response` is answered in process, as by a `mock/`
    // deployment (LiteLLM answers it without calling the provider)
    let request_mock = req.mock_response.as_ref().map(|reply| MockBehaviour {
        reply: Some(reply.clone()),
        ..MockBehaviour::default()
    });
    let session = ResponsesSession::new(&state.responses, call.identity, call.group);
    let attempting = Attempting {
        endpoint: call.endpoint,
        req,
        dep,
        upstream_model: call.upstream_model,
        request_mock: request_mock.is_some(),
    };
    match prepare(&attempting, session) {
        Ok(Prepared::Send(out)) => {
            let mock = request_mock.as_ref().or(dep.mock.as_ref());
            send_and_relay(state, call, out, mock, guard).await
        }
        Ok(Prepared::Answered(resp)) => Ending {
            response: Ok(resp),
            failure: None,
            settled: guard.settle(),
            answered: Answered::default(),
        },
        Err(e) => {
            // Refused before any upstream call: settled (nothing billed, the reservation
            // released); the answer's headers show the limits as admitted.
            guard.fail(e.envelope.status);
            Ending::failed(e, None, None)
        }
    }
}

/// Sends the prepared request (to `mock` when set) and relays the answer.
async fn send_and_relay(
    state: &Arc<AppState>,
    call: Call<'_>,
    mut out: Outbound<'_>,
    mock: Option<&MockBehaviour>,
    guard: CallGuard<'_>,
) -> Ending {
    let Call { req, dep, .. } = call;
    let timeouts = dep.timeouts.for_request(
        req.stream,
        call.timeout_override.total,
        call.timeout_override.stream,
    );
    let extra = per_request_headers(call.headers, dep);
    // A limit the client set below the deployment's own never counts against it.
    let client_shortened = timeouts != dep.timeouts.for_request(req.stream, None, None);
    let outgoing = Outgoing {
        path: out.path,
        mock,
        body: std::mem::take(&mut out.body),
        timeouts,
        extra: &extra,
        call_id: call.call_id,
        client_shortened,
        client_dialect: call.endpoint.dialect(),
        client_upstream: call.client,
    };
    let reply = match send(state, dep, outgoing).await {
        Ok(r) => r,
        Err((err, class)) => {
            let settled = guard.fail(err.envelope.status);
            return Ending::failed(err, Some(class), settled);
        }
    };
    let failure = match &reply {
        Reply::Full {
            status,
            headers,
            body,
        } if !status.is_success() => Some(classify(*status, headers, body)),
        _ => None,
    };
    let relaying = Relaying {
        endpoint: call.endpoint,
        req,
        dep,
        call_id: call.call_id,
        idle: timeouts.idle,
        stream_slot: call.stream_slot,
        restamp: call.restamp,
    };
    let r = relay(relaying, out, reply, guard);
    Ending {
        response: r.response,
        failure,
        settled: r.settled,
        answered: Answered {
            tokens: r.tokens,
            timed_by_stream: r.timed_by_stream,
        },
    }
}

impl Attempted {
    /// The attempt's end now, from how its stages ended.
    fn new(ending: Ending, sent: Instant, stream: bool) -> Self {
        let Ending {
            response,
            failure,
            settled,
            answered,
        } = ending;
        let now = Instant::now();
        let outcome = match (&response, failure) {
            (_, Some((class, retry_after))) => Outcome::Failure { class, retry_after },
            // A gateway-side refusal (e.g. an untranslatable field): ends the plan.
            (Err(_), None) => Outcome::Failure {
                class: FailureClass::BadRequest,
                retry_after: None,
            },
            // A relayed stream's times are recorded at its end, through its slot.
            (Ok(_), None) if answered.timed_by_stream => Outcome::Success {
                timing: CallTiming::default(),
                prompt_tokens: None,
                completion_tokens: 0,
            },
            // A streamed request answered whole: its head is its first token.
            (Ok(_), None) => Outcome::Success {
                timing: CallTiming {
                    latency: Some(now - sent),
                    ttft: stream.then(|| now - sent),
                },
                prompt_tokens: answered.tokens.0,
                completion_tokens: answered.tokens.1,
            },
        };
        Attempted {
            response,
            outcome,
            settled,
            ended: now,
        }
    }
}

/// The attempt's call record as it starts: status 200 until the answer says otherwise.
fn call_record(call: &Call<'_>, charge: Option<Box<Charge>>) -> CallRecord {
    CallRecord {
        call_id: call.call_id.to_owned(),
        call_type: call.endpoint.call_type(),
        model_group: call.req.model.clone(),
        deployment_id: call.dep.id.clone(),
        upstream_model: call.upstream_model.to_owned(),
        stream: call.req.stream,
        status: 200,
        usage: None,
        client_disconnected: false,
        upstream_failed: false,
        started: call.started,
        first_byte: None,
        ended: call.started,
        started_at: call.started_at,
        events_out: 0,
        unreported: Unreported::new(charge.is_some(), call.body, call.endpoint),
        charge,
        response_id: None,
    }
}
