//! The inbound stage: who is calling and what they asked for, read once. [`Inbound::read`]
//! authenticates the caller and parses the body; [`Inbound::policy`] and
//! [`Inbound::timeouts`] read the request's routing and timeout options (body fields over
//! `x-litellm-*` headers).

use http::{HeaderMap, HeaderName};
use tollgate_governance::runtime::KeyError;
use tollgate_router::{RequestPolicy, RouteError, Router};

use crate::auth::{AuthError, Identity};
use crate::clientside::ClientUpstream;
use crate::errors::GatewayError;
use crate::errors::GatewayFailure;
use crate::headers::{X_LITELLM_NUM_RETRIES, X_LITELLM_STREAM_TIMEOUT, X_LITELLM_TIMEOUT};
use crate::request::{Endpoint, ParsedRequest};
use crate::state::AppState;

/// An authenticated, parsed request.
pub struct Inbound<'b> {
    /// The caller.
    pub identity: Identity,
    /// The body, parsed once (borrowing the request's bytes).
    pub req: ParsedRequest<'b>,
    /// Credentials the client sent in the body ([`crate::clientside`]).
    pub client_upstream: Option<ClientUpstream>,
    /// The key's (or its team's) alias for the requested model, if it has one.
    alias: Option<String>,
    /// The internal name of the team-owned group the key's team calls under the requested
    /// public name ([`Self::scope_team`]).
    team_model: Option<String>,
    /// Whether the routed group is owned by the key's team (by its public or internal name).
    team_owned: bool,
}

/// Limits a client set for its own request, seconds: `timeout` / `x-litellm-timeout` (every
/// phase) and, for streams, `stream_timeout` / `x-litellm-stream-timeout` (first byte and the
/// gap between events). They only ever shorten the deployment's limits.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientTimeouts {
    /// Every phase's limit, seconds.
    pub total: Option<f64>,
    /// A stream's first-byte and idle limit, seconds.
    pub stream: Option<f64>,
}

impl<'b> Inbound<'b> {
    /// Authenticates the caller (401 otherwise), parses `body` (400 on a malformed one),
    /// refuses a model name that could leave a provider's URL path, reads client-side
    /// credentials, and refuses a `previous_response_id` the caller may not continue (404).
    ///
    /// A virtual key the identity cache does not hold is looked up in the database when the
    /// replica is one of a fleet ([`tollgate_governance::runtime::Governance::principal_or_lookup`]):
    /// the only await here, and only on that miss.
    pub async fn read(
        state: &AppState,
        endpoint: Endpoint,
        headers: &HeaderMap,
        body: &'b [u8],
    ) -> Result<Self, GatewayError> {
        let identity = match state.auth.authenticate(headers, state.gov()) {
            Ok(id) => id,
            Err(AuthError::Key(KeyError::NotFound(hash))) if state.gov().is_some() => {
                looked_up(state, &hash).await?
            }
            Err(e) => return Err(GatewayError::from(e.envelope())),
        };
        let req = ParsedRequest::parse(body, endpoint)?;
        crate::model_names::check(&req.model, "model")?;
        let client_upstream = ClientUpstream::from_request(&req)?;
        crate::response_owner::check_previous(state.responses.as_ref(), endpoint, &identity, &req)?;
        let alias = identity.principal().and_then(|p| p.alias(&req.model));
        Ok(Self {
            identity,
            req,
            client_upstream,
            alias,
            team_model: None,
            team_owned: false,
        })
    }

    /// The model name routed: the internal name of the key's team's own group for the name
    /// asked for ([`Self::scope_team`]), else the key's alias for the requested model, else
    /// the model.
    pub fn routed(&self) -> &str {
        self.team_model
            .as_deref()
            .or(self.alias.as_deref())
            .unwrap_or(&self.req.model)
    }

    /// The name model access is checked on when the routed group is the key's team's own:
    /// the public name asked for (LiteLLM checks the name in the request), else the internal
    /// name asked for. `None` for every other group.
    pub fn team_access_name(&self) -> Option<&str> {
        if !self.team_owned {
            return None;
        }
        Some(self.alias.as_deref().unwrap_or(&self.req.model))
    }

    /// Applies team-owned model groups ([`tollgate_router::TeamModels`]; call only when the
    /// router has some): a key whose team owns a group published under the name asked for
    /// (after aliases) is routed to that group's internal name, as LiteLLM's
    /// `Router.map_team_model` does in `route_request`; a name that resolves to a group
    /// another team owns is unknown to this caller (LiteLLM's `filter_team_based_models`
    /// leaves it no deployment).
    ///
    /// Errors: [`RouteError::ModelNotFound`] for another team's group.
    pub fn scope_team(&mut self, router: &Router) -> Result<(), RouteError> {
        let teams = router.teams();
        let team = self.team_id();
        let asked = self.alias.as_deref().unwrap_or(&self.req.model);
        if let Some(internal) = team.and_then(|t| teams.internal(t, asked)) {
            self.team_model = Some(internal.to_owned());
            self.team_owned = true;
            return Ok(());
        }
        if let Ok((g, _)) = router.resolve(asked)
            && let Some(owner) = teams.owner(&g.name)
        {
            if team != Some(owner) {
                return Err(RouteError::ModelNotFound(asked.to_owned()));
            }
            self.team_owned = true;
        }
        Ok(())
    }

    /// The request's `fallbacks` under the rule of [`Self::scope_team`]: a public name of the
    /// key's team's own group becomes its internal name, a name resolving to a group another
    /// team owns is dropped (LiteLLM's `filter_team_based_models` leaves that fallback no
    /// deployment, so it is never called).
    pub fn scope_team_fallbacks(&self, router: &Router, names: &mut Vec<String>) {
        let teams = router.teams();
        let team = self.team_id();
        names.retain_mut(|n| {
            if let Some(internal) = team.and_then(|t| teams.internal(t, n)) {
                *n = internal.to_owned();
                return true;
            }
            match router.resolve(n) {
                Ok((g, _)) => teams.owner(&g.name).is_none_or(|o| team == Some(o)),
                Err(_) => true,
            }
        });
    }

    /// The calling key's team, if any.
    fn team_id(&self) -> Option<&str> {
        self.identity
            .principal()
            .and_then(|p| p.key.team_id.as_deref())
    }

    /// Retries (`num_retries`, else `x-litellm-num-retries`), fallbacks, the prompt estimate
    /// (bytes / 4 of a `body_len`-byte body) and streaming, for the router.
    ///
    /// Errors: 400 for a malformed `num_retries` or `fallbacks` field, 400 `invalid_header`
    /// for a count header that is not a non-negative integer.
    #[expect(clippy::result_large_err, reason = "the refusal path is cold")]
    pub fn policy(
        &self,
        headers: &HeaderMap,
        body_len: usize,
    ) -> Result<RequestPolicy, GatewayError> {
        let req = &self.req;
        let num_retries = match req.num_retries()? {
            Some(n) => Some(n),
            None => header_count(headers, &X_LITELLM_NUM_RETRIES)
                .map_err(|name| GatewayFailure::InvalidHeader { name })?,
        };
        Ok(RequestPolicy {
            num_retries,
            fallbacks: crate::model_names::checked_fallbacks(req.fallbacks()?)?,
            prompt_tokens: (body_len / 4) as u64,
            stream: req.stream,
        })
    }

    /// The limits the client set for this request (body fields over headers).
    pub fn timeouts(&self, headers: &HeaderMap) -> ClientTimeouts {
        let req = &self.req;
        ClientTimeouts {
            total: req
                .timeout_s
                .or_else(|| super::send::header_num(headers, &X_LITELLM_TIMEOUT)),
            stream: req
                .stream_timeout_s
                .or_else(|| super::send::header_num(headers, &X_LITELLM_STREAM_TIMEOUT))
                .filter(|_| req.stream),
        }
    }
}

/// The key with hash `hash`, which the cache did not hold, as the database answers for it.
///
/// Errors: the 401 of the key's refusal.
async fn looked_up(state: &AppState, hash: &str) -> Result<Identity, GatewayError> {
    let refused = |e: KeyError| GatewayError::from(AuthError::Key(e).envelope());
    match state.gov() {
        Some(gov) => match gov.principal_or_lookup(hash).await {
            Ok(p) => Ok(Identity::Key(Box::new(p))),
            Err(e) => Err(refused(e)),
        },
        None => Err(refused(KeyError::NotFound(hash.to_owned()))),
    }
}

/// A count header (`x-litellm-num-retries`): absent is `None`; anything but a non-negative
/// integer is an error naming the header (see [`GatewayFailure::InvalidHeader`]), not silently ignored.
fn header_count<'n>(
    headers: &HeaderMap,
    name: &'n HeaderName,
) -> Result<Option<u32>, &'n HeaderName> {
    let Some(v) = headers.get(name) else {
        return Ok(None);
    };
    match v.to_str().ok().and_then(|s| s.trim().parse().ok()) {
        Some(n) => Ok(Some(n)),
        None => Err(name),
    }
}
