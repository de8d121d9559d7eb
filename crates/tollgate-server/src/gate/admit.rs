//! Admission: one request's governance state ([`Governed`]) and the check-and-reserve of each
//! attempt ([`Governed::admit`]): access to the attempt's model group, then every scope's
//! budget and RPM/TPM/parallel limits reserved at once, all or nothing.

use std::sync::Arc;

use http::HeaderMap;
use tollgate_governance::admission::{AdmitRequest, Estimate, Rejection, ScopeKind};
use tollgate_governance::runtime::{Charge, Principal, RequestFacts, needs_token_count};
use tollgate_providers::Deployment;
use tollgate_router::ModelGroup;

use super::{Gate, facts, spend_row};
use crate::errors::GatewayError;
use crate::errors::GatewayFailure;
use crate::request::{Endpoint, ParsedRequest};

/// Governance state of one request (governance on), built once after authentication.
pub struct Governed<'a> {
    /// The gate the request is governed by.
    pub gate: &'a Gate,
    /// The virtual key's principal; `None` for the master key.
    pub principal: Option<&'a Principal>,
    end_user: Option<String>,
    tags: Vec<String>,
    /// Counted once, at the first attempt that needs it.
    prompt_tokens: Option<u64>,
    max_output: Option<u64>,
    /// Wall-clock arrival (spend-log `startTime`).
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Whether the gateway requires a key (the master key's calls are then logged under
    /// [`spend_row::MASTER_KEY_ALIAS`]).
    requires_key: bool,
    /// The key's settled spend, USD, when the last admission reported it (shared counters:
    /// `x-litellm-key-spend` of a stream, whose headers leave before settlement, without a
    /// second round trip).
    pub admitted_key_spend: Option<f64>,
}

/// The attempt being admitted.
#[derive(Clone, Copy)]
pub struct AttemptInfo<'a> {
    /// The attempt's model group (a fallback's own group for fallbacks).
    pub group: &'a Arc<ModelGroup>,
    /// 0 for the requested group, n for its n-th fallback.
    pub fallback_index: u32,
    /// The model name routed (the key's alias resolved).
    pub routed: &'a str,
    /// The deployment called.
    pub dep: &'a Deployment,
    /// The model id sent upstream.
    pub upstream_model: &'a str,
    /// `x-litellm-call-id`.
    pub call_id: &'a str,
    /// The attempt's number within the request (0 first).
    pub seq: u32,
    /// Whether the attempt's group is owned by the calling key's team (a team model,
    /// [`tollgate_router::TeamModels`]): access to a fallback is then checked with
    /// [`Principal::team_model_denial`].
    pub team_owned: bool,
}

/// Why an attempt was not admitted.
#[derive(Debug)]
pub enum Refusal {
    /// The key may not call the model, or the end user is blocked (403 / 400).
    Denied(GatewayError),
    /// A budget or a limit refused the reservation (422 / 429).
    Rejected(Rejection),
}

impl<'a> Governed<'a> {
    /// The governance state of a request `principal` sent (its end user and tags read from
    /// the headers and body).
    pub fn new(
        gate: &'a Gate,
        principal: Option<&'a Principal>,
        headers: &HeaderMap,
        req: &ParsedRequest<'_>,
        endpoint: Endpoint,
        requires_key: bool,
    ) -> Self {
        Governed {
            gate,
            principal,
            end_user: facts::end_user(headers, req, gate.end_user_header.as_ref()),
            tags: facts::tags(headers, req),
            prompt_tokens: None,
            max_output: facts::max_output_tokens(req, endpoint),
            started_at: chrono::Utc::now(),
            requires_key,
            admitted_key_spend: None,
        }
    }

    /// The request's end user (headers, then body; [`facts::end_user`]).
    pub fn end_user(&self) -> Option<&str> {
        self.end_user.as_deref()
    }

    /// Admits one attempt: access to its group (fallbacks), then every scope's budget and
    /// limits, atomically.
    ///
    /// Errors: [`Refusal::Denied`] (403, or 400 for a blocked end user), [`Refusal::Rejected`]
    /// (also the 503 of shared counters that cannot answer).
    pub async fn admit(
        &mut self,
        req: &ParsedRequest<'_>,
        endpoint: Endpoint,
        a: AttemptInfo<'_>,
    ) -> Result<Charge, Refusal> {
        let gov = &self.gate.gov;
        if a.fallback_index > 0 {
            check_access(
                self.gate,
                self.principal,
                self.end_user.as_deref(),
                access_name(a.group, a.routed, a.fallback_index),
                a.team_owned,
                &req.model,
            )
            .map_err(Refusal::Denied)?;
        }
        let scopes = gov
            .scopes(
                self.principal,
                RequestFacts {
                    end_user: self.end_user.as_deref(),
                    tags: &self.tags,
                    model_group: &a.group.name,
                    requested: (a.fallback_index == 0).then_some(req.model.as_str()),
                    routed: (a.fallback_index == 0).then_some(a.routed),
                },
            )
            .map_err(|e| Refusal::Denied(GatewayFailure::BlockedEndUser(e).into()))?;
        let price = self.gate.price_for(a.dep, a.upstream_model);
        let prompt = if needs_token_count(&scopes) {
            *self
                .prompt_tokens
                .get_or_insert_with(|| facts::prompt_tokens(req, endpoint, a.upstream_model))
        } else {
            0
        };
        let estimate = Estimate::new(
            gov.admission().config(),
            price.as_ref(),
            prompt,
            self.max_output,
        );
        let log = spend_row::row(
            spend_row::Caller {
                key: self.principal.map(|p| &p.key),
                requires_key: self.requires_key,
                end_user: self.end_user.as_deref(),
                tags: &self.tags,
                started_at: self.started_at,
            },
            endpoint,
            &a,
        );
        let charge = gov
            .admit(
                AdmitRequest {
                    request_id: Arc::from(a.call_id),
                    attempt: a.seq,
                    scopes,
                    estimate,
                },
                price,
                log,
            )
            .await
            .map_err(Refusal::Rejected)?;
        self.admitted_key_spend = charge.reservation.spend_at_admission(ScopeKind::Key);
        Ok(charge)
    }
}

/// The name access is checked on: the model group, or for a wildcard group the concrete model
/// the client named.
pub fn access_name<'a>(group: &'a ModelGroup, routed: &'a str, fallback_index: u32) -> &'a str {
    if group.wildcard && fallback_index == 0 {
        routed
    } else {
        &group.name
    }
}

/// Checks that `p` (the virtual key, when the caller is one) and then the request's end user
/// may call `name` (`requested` is the name the client sent). `team_owned`: the group is the
/// key's team's own ([`Principal::team_model_denial`]).
///
/// Errors: 403 in LiteLLM's wording, its error type naming what denied it.
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
pub fn check_access(
    gate: &Gate,
    p: Option<&Principal>,
    end_user: Option<&str>,
    name: &str,
    team_owned: bool,
    requested: &str,
) -> Result<(), GatewayError> {
    if p.is_none() && end_user.is_none() {
        return Ok(());
    }
    let groups = gate.gov.access_groups();
    let key_denial = |p: &Principal| {
        if team_owned {
            p.team_model_denial(name, &groups)
        } else {
            p.model_denial(name, &groups)
        }
    };
    let denied = p.and_then(key_denial).or_else(|| {
        end_user.and_then(|id| {
            gate.gov
                .cache()
                .read()
                .end_user_model_denial(id, name, &groups)
        })
    });
    match denied {
        None => Ok(()),
        Some(by) => Err(GatewayFailure::ModelAccessDenied { by, requested }.into()),
    }
}
