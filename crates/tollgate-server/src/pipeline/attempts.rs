//! The attempt loop: the router's plan tried attempt by attempt — each admitted (budgets and
//! limits reserved; a fallback group's access checked), then run ([`attempt::attempt`]), its
//! outcome reported back to the router, which decides whether a retry or a fallback
//! follows — and the last answer returned with the plan's counts and the spend headers.

use std::sync::Arc;
use std::time::Instant;

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use tollgate_governance::admission::RateLimitStatus;
use tollgate_governance::runtime::Charge;
use tollgate_router::{Attempt, AttemptPlan, FailureClass, Outcome, PlanEnd, Router, StreamSlot};

use super::attempt::{self, Call};
use super::inbound::{ClientTimeouts, Inbound};
use crate::errors::GatewayError;
use crate::errors::GatewayFailure;
use crate::gate::admit::{AttemptInfo, Governed, Refusal};
use crate::gate::spend_headers::{attempt_counts, spend_headers};
use crate::relay::Settled;
use crate::request::Endpoint;
use crate::state::AppState;

/// The request as the attempt loop sees it.
pub struct Routed<'a> {
    /// The gateway.
    pub state: &'a Arc<AppState>,
    /// The client's endpoint.
    pub endpoint: Endpoint,
    /// The client's headers.
    pub headers: &'a HeaderMap,
    /// The raw body.
    pub body: &'a Bytes,
    /// The authenticated, parsed request.
    pub inbound: &'a Inbound<'a>,
    /// `x-litellm-call-id`.
    pub call_id: &'a str,
    /// When the request arrived.
    pub started: Instant,
    /// Limits the client set.
    pub timeouts: ClientTimeouts,
    /// The router snapshot the plan was made with.
    pub router: &'a Arc<Router>,
}

/// The last attempt's deployment id and model group, as header values.
#[derive(Debug, Default)]
pub struct AttemptIds {
    /// `x-litellm-model-id`.
    pub model_id: Option<HeaderValue>,
    /// `x-litellm-model-group`.
    pub model_group: Option<HeaderValue>,
}

/// The request's answer, and the ids of the attempt that gave it.
pub struct Answer {
    /// The answer, or the error the client gets.
    pub result: Result<Response, GatewayError>,
    /// The last attempt's ids.
    pub ids: AttemptIds,
}

/// Tries `attempts` in order (see the module docs).
pub async fn run(
    r: &Routed<'_>,
    mut governed: Option<Governed<'_>>,
    mut attempts: AttemptPlan<'_>,
) -> Answer {
    let mut ids = AttemptIds::default();
    let mut last: Option<Result<Response, GatewayError>> = None;
    let mut seq: u32 = 0;
    let mut rate_limits: Vec<RateLimitStatus> = Vec::new();
    let mut settled: Option<Settled> = None;
    while let Some(mut attempt) = attempts.next_attempt(Instant::now()) {
        // Only a retry backoff sleeps: tokio's timer has 1 ms granularity, so even a deadline
        // already passed would cost the first attempt up to a millisecond.
        if attempt.not_before > Instant::now() {
            tokio::time::sleep_until(attempt.not_before.into()).await;
        }
        let dep = &attempt.deployment.deployment;
        ids.model_id.clone_from(&dep.id_header);
        ids.model_group.clone_from(&attempt.group.name_header);
        // admitted: this attempt's reservation (a fallback group is checked for access too)
        let charge = match admit(r, governed.as_mut(), &attempt, seq).await {
            Ok(c) => c,
            Err(e) if seq == 0 => {
                // refused before any upstream call: still LiteLLM's spend headers
                let mut result = Err(e);
                if let Some(g) = &governed {
                    spend_headers(&mut result, g, None, &[]);
                }
                return Answer { result, ids };
            }
            Err(e) => {
                let refused = Outcome::Failure {
                    class: FailureClass::BadRequest,
                    retry_after: None,
                };
                attempts.report(&attempt, refused, Instant::now());
                last = Some(Err(e));
                break;
            }
        };
        // LiteLLM's fallback tests: the requested group fails at once (no upstream call, no
        // retry, no cooldown, nothing charged) and its fallbacks for that failure are tried.
        if attempt.fallback_index == 0
            && let Some(class) = r.inbound.req.mock_failure
        {
            drop(charge);
            attempts.report(&attempt, Outcome::Simulated { class }, Instant::now());
            let group = &attempt.group.name;
            last = Some(Err(GatewayFailure::Simulated { class, group }.into()));
            continue;
        }
        if let Some(c) = &charge {
            rate_limits.clear();
            rate_limits.extend_from_slice(c.reservation.rate_limits());
        }
        seq += 1;
        let admitted = Admitted::start(r, &mut attempt, charge, governed.as_ref());
        let a = attempt::attempt(r.state, call(r, &attempt, admitted)).await;
        settled = a.settled;
        attempts.report(&attempt, a.outcome, a.ended);
        last = Some(a.response);
    }
    let mut result = conclude(&attempts, last, &r.inbound.req.model);
    if let Some(g) = &governed {
        spend_headers(&mut result, g, settled.as_ref(), &rate_limits);
    }
    Answer { result, ids }
}

/// Admits `attempt` when governance runs (`governed`); `Ok(None)` when it does not.
///
/// Errors: the refusal as the client's error (403, 400, 422 / 429).
async fn admit(
    r: &Routed<'_>,
    governed: Option<&mut Governed<'_>>,
    attempt: &Attempt<'_>,
    seq: u32,
) -> Result<Option<Charge>, GatewayError> {
    let Some(g) = governed else {
        return Ok(None);
    };
    let info = AttemptInfo {
        group: attempt.group,
        fallback_index: attempt.fallback_index,
        routed: r.inbound.routed(),
        dep: &attempt.deployment.deployment,
        upstream_model: &attempt.upstream_model,
        call_id: r.call_id,
        seq,
        // read only for fallbacks (the requested group's access was checked before planning)
        team_owned: attempt.fallback_index > 0 && team_owned(r, attempt),
    };
    match g.admit(&r.inbound.req, r.endpoint, info).await {
        Ok(c) => Ok(Some(c)),
        Err(Refusal::Denied(e)) => Err(e),
        Err(Refusal::Rejected(rejection)) => Err(GatewayFailure::Rejected(rejection).into()),
    }
}

/// Whether `attempt`'s group is the calling key's team's own (one branch when no group is
/// team-owned).
fn team_owned(r: &Routed<'_>, attempt: &Attempt<'_>) -> bool {
    let teams = r.router.teams();
    if teams.is_empty() {
        return false;
    }
    let key_team = r
        .inbound
        .identity
        .principal()
        .and_then(|p| p.key.team_id.as_deref());
    key_team.is_some() && teams.owner(&attempt.group.name) == key_team
}

/// What admission gave an attempt.
struct Admitted {
    charge: Option<Box<Charge>>,
    started_at: chrono::DateTime<chrono::Utc>,
    sent: Instant,
    stream_slot: Option<StreamSlot>,
}

impl Admitted {
    /// The attempt starts now, with `charge`; a stream holds its deployment in flight.
    fn start(
        r: &Routed<'_>,
        attempt: &mut Attempt<'_>,
        charge: Option<Charge>,
        governed: Option<&Governed<'_>>,
    ) -> Self {
        let sent = Instant::now();
        Admitted {
            // Boxed: the attempt's future and call record move it at every stage, and the
            // spend-log row inside is the widest part of them.
            charge: charge.map(Box::new),
            started_at: governed.map_or_else(chrono::Utc::now, |g| g.started_at),
            sent,
            // A stream stays in flight on its deployment until its last event.
            stream_slot: r
                .inbound
                .req
                .stream
                .then(|| attempt.hold_in_flight(Arc::clone(r.router), sent)),
        }
    }
}

/// The inputs of `attempt`, admitted as `a`.
fn call<'a>(r: &'a Routed<'_>, attempt: &'a Attempt<'_>, a: Admitted) -> Call<'a> {
    Call {
        endpoint: r.endpoint,
        headers: r.headers,
        body: r.body,
        req: &r.inbound.req,
        dep: &attempt.deployment.deployment,
        upstream_model: &attempt.upstream_model,
        group: &attempt.group.name,
        timeout_override: r.timeouts,
        call_id: r.call_id,
        started: r.started,
        sent: a.sent,
        charge: a.charge,
        started_at: a.started_at,
        stream_slot: a.stream_slot,
        client: r.inbound.client_upstream.as_ref(),
        identity: &r.inbound.identity,
        restamp: restamp_as(r, attempt),
    }
}

/// The client's model name when it reached `attempt`'s group through an alias (a key's or
/// team's `aliases`, a router `model_group_alias`): the answer then carries that name as
/// `model`, as LiteLLM restamps it. Not after a fallback (the answering model is kept, as
/// LiteLLM keeps it), not for a wildcard group (the client named the upstream model), not
/// when the client named the group itself (relayed as the upstream wrote it).
fn restamp_as<'a>(r: &'a Routed<'_>, attempt: &Attempt<'_>) -> Option<&'a str> {
    let sent = r.inbound.req.model.as_str();
    (attempt.fallback_index == 0 && !attempt.group.wildcard && attempt.group.name != sent)
        .then_some(sent)
}

/// The plan's answer: the last attempt's, else 429 "No deployments available"; with the
/// attempt counts.
#[expect(
    clippy::result_large_err,
    reason = "moved once per request, not returned through `?`"
)]
fn conclude(
    attempts: &AttemptPlan<'_>,
    last: Option<Result<Response, GatewayError>>,
    model: &str,
) -> Result<Response, GatewayError> {
    let summary = attempts.summary();
    let mut result = match (last, summary.end) {
        (Some(r), _) => r,
        (None, end @ PlanEnd::NoDeployments { group, .. }) => Err(GatewayFailure::NoDeployments {
            group: group.into(),
            retry_after_secs: end.retry_after_header_secs().unwrap_or(1),
        }
        .into()),
        (None, _) => Err(GatewayFailure::NoDeployments {
            group: model.into(),
            retry_after_secs: 1,
        }
        .into()),
    };
    attempt_counts(
        &mut result,
        summary.attempted_retries,
        summary.attempted_fallbacks,
    );
    result
}
