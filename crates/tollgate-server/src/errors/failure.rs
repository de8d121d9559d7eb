//! [`GatewayFailure`]: every error the gateway answers itself, by cause. Each variant carries
//! the data its message needs; this file alone decides its HTTP status, OpenAI `type`, `code`,
//! `param`, message (LiteLLM's wording where LiteLLM answers the same case) and log level.
//! Callers construct a variant and convert it into a [`GatewayError`], which renders it in the
//! client's dialect ([`GatewayError::into_response_in`]).

use std::borrow::Cow;

use http::{HeaderName, HeaderValue, StatusCode, header};
use tollgate_governance::admission::Rejection;
use tollgate_governance::runtime::{BlockedEndUser, DeniedBy, KeyError};
use tollgate_protocol::model_name::ModelNameError;
use tollgate_protocol::{BodyError, ErrorEnvelope};
use tollgate_providers::UpstreamError;
use tollgate_router::{FailureClass, RouteError};
use tracing::Level;

use super::GatewayError;
use super::causes::{ClientsideRefusal, MockException};
use crate::auth::AuthError;

const BAD_REQUEST: u16 = StatusCode::BAD_REQUEST.as_u16();
const UNAUTHORIZED: u16 = StatusCode::UNAUTHORIZED.as_u16();
const FORBIDDEN: u16 = StatusCode::FORBIDDEN.as_u16();
const NOT_FOUND: u16 = StatusCode::NOT_FOUND.as_u16();
const METHOD_NOT_ALLOWED: u16 = StatusCode::METHOD_NOT_ALLOWED.as_u16();
const TOO_MANY_REQUESTS: u16 = StatusCode::TOO_MANY_REQUESTS.as_u16();
const INTERNAL_SERVER_ERROR: u16 = StatusCode::INTERNAL_SERVER_ERROR.as_u16();
const BAD_GATEWAY: u16 = StatusCode::BAD_GATEWAY.as_u16();
const GATEWAY_TIMEOUT: u16 = StatusCode::GATEWAY_TIMEOUT.as_u16();

/// OpenAI's `type` for a refused request.
const INVALID_REQUEST: &str = "invalid_request_error";

/// A failure the gateway answers itself (upstream error bodies are relayed, not rebuilt).
#[derive(Debug)]
pub enum GatewayFailure<'a> {
    /// 401: no credential, a malformed one, or a key that is refused (LiteLLM's
    /// `user_api_key_auth` types; `code` `invalid_api_key`, or `401` for a virtual key).
    Auth(AuthError),
    /// 400: the body is not the request the endpoint takes (`param` and `code` name the field
    /// and the rule, as OpenAI's API does).
    Body(BodyError),
    /// The body could not be read: 413 when it is over `limit_bytes`
    /// (`general_settings.max_request_size_mb`), else the reader's `status` (400).
    UnreadableBody {
        /// The reader's status (axum's body rejection).
        status: StatusCode,
        /// The reader's own message.
        detail: &'a str,
        /// The configured limit, bytes.
        limit_bytes: usize,
    },
    /// 400 `invalid_model_name`: a model name that could leave a provider's URL path.
    InvalidModelName {
        /// The name as sent (shown escaped).
        name: &'a str,
        /// Where it was: `model` or `fallbacks`.
        param: &'static str,
        /// The rule it breaks.
        why: ModelNameError,
    },
    /// 400 `clientside_param_not_allowed`: a credential or upstream the client may not choose.
    Clientside(ClientsideRefusal<'a>),
    /// 400 `invalid_header`: a count header that is not a non-negative integer.
    InvalidHeader {
        /// The header.
        name: &'a HeaderName,
    },
    /// 400: a body that must be re-read as JSON (to translate it) is not JSON.
    InvalidJson(serde_json::Error),
    /// 400: the end user is blocked (`/customer/block`; LiteLLM's wording).
    BlockedEndUser(BlockedEndUser),
    /// 403: the key, its team, user or organization may not call the model (LiteLLM's
    /// `*_model_access_denied` types, `code` `403`).
    ModelAccessDenied {
        /// Which entity's list refuses it.
        by: DeniedBy,
        /// The model the client named.
        requested: &'a str,
    },
    /// A refused admission: budget (default 422) or limit (429), with `retry-after` and
    /// `x-ratelimit-*`; status, type and wording decided by the governance crate (LiteLLM's).
    Rejected(Rejection),
    /// 404 `model_not_found` for an inference request, naming the models the caller may use.
    ModelNotFound {
        /// The model the client named.
        model: Cow<'a, str>,
        /// The names the caller may call.
        available: Vec<String>,
    },
    /// 404 `model_not_found` for `GET /v1/models/{id}`.
    UnknownModelId {
        /// The id from the path.
        id: &'a str,
    },
    /// 429 "No deployments available" with `retry-after` (whole seconds, ≥ 1) until the first
    /// deployment returns from cooldown (LiteLLM's router wording).
    NoDeployments {
        /// The model group.
        group: Cow<'a, str>,
        /// Seconds for `retry-after`.
        retry_after_secs: u64,
    },
    /// An upstream failure a `mock_response` names, as LiteLLM's `mock_completion` raises it.
    Mock(MockException),
    /// The failure a `mock_testing_*fallbacks` request simulates when no fallback takes over:
    /// 400 `context_length_exceeded` / `content_policy_violation`, else 500 (LiteLLM's wording).
    Simulated {
        /// The simulated class.
        class: FailureClass,
        /// The model group that "failed".
        group: &'a str,
    },
    /// A transport-level upstream failure: 504 `upstream_timeout` naming whose limit it was
    /// (the request's own when `request_limit`), 502 otherwise. Logged at `warn`.
    Upstream {
        /// The transport error.
        error: &'a UpstreamError,
        /// The client set a timeout shorter than the deployment's.
        request_limit: bool,
        /// The deployment called, for the log line, when known.
        deployment: Option<&'a str>,
    },
    /// 404 `previous_response_not_found`: a `previous_response_id` the caller may not continue
    /// (unknown, expired, or another caller's; OpenAI's error for an unknown id, word for word).
    PreviousResponseNotFound {
        /// The id sent.
        id: &'a str,
    },
    /// 404 for `GET /v1/responses/{id}` the caller may not read (as for an unknown id).
    ResponseNotFound {
        /// The id from the path.
        id: &'a str,
    },
    /// 403: `GET /health` with a virtual key (each check calls every deployment).
    HealthNeedsMasterKey,
    /// 404 `model_not_found`: `GET /health?model=` names no group with a deployment.
    NoHealthTarget {
        /// The model asked for.
        model: &'a str,
    },
    /// 405 for a known path with another method.
    MethodNotAllowed {
        /// The method used.
        method: &'a http::Method,
        /// The path.
        path: &'a str,
    },
    /// 404 for an unknown path.
    UnknownRoute {
        /// The path.
        path: &'a str,
    },
    /// 400 `management_api_off`: a management path while governance is off (LiteLLM answers a
    /// management call it cannot serve with a 400 too, `no_db_connection`).
    ManagementApiOff {
        /// The path.
        path: &'a str,
    },
}

impl<'a> GatewayFailure<'a> {
    /// The failure for a route that cannot be planned: 404 naming `available()` (called only
    /// for an unknown model), or 429 when the group has no deployment.
    pub fn route(e: RouteError, available: impl FnOnce() -> Vec<String>) -> Self {
        match e {
            RouteError::ModelNotFound(model) => Self::ModelNotFound {
                model: Cow::Owned(model),
                available: available(),
            },
            RouteError::NoDeployments(model) => Self::NoDeployments {
                group: Cow::Owned(model),
                retry_after_secs: 1,
            },
        }
    }

    /// A refused credential on a management route (`/key/*`, ...): 401 with LiteLLM's
    /// management `type` (`auth_error` unless the key itself is refused) and the same message.
    pub fn management_auth(e: AuthError) -> tollgate_admin::AuthFailure {
        tollgate_admin::AuthFailure {
            status: UNAUTHORIZED,
            error_type: match &e {
                AuthError::Key(k) => k.error_type(),
                _ => "auth_error",
            },
            message: e.to_string(),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Self::Auth(_) => UNAUTHORIZED,
            Self::UnreadableBody { status, .. } => status.as_u16(),
            Self::ModelAccessDenied { .. } | Self::HealthNeedsMasterKey => FORBIDDEN,
            Self::Rejected(r) => r.status,
            Self::ModelNotFound { .. }
            | Self::UnknownModelId { .. }
            | Self::NoHealthTarget { .. }
            | Self::PreviousResponseNotFound { .. }
            | Self::ResponseNotFound { .. }
            | Self::UnknownRoute { .. } => NOT_FOUND,
            Self::NoDeployments { .. } | Self::Mock(MockException::RateLimit) => TOO_MANY_REQUESTS,
            Self::Mock(MockException::InternalServer) => INTERNAL_SERVER_ERROR,
            Self::Simulated { class, .. } => match class {
                FailureClass::ContextWindowExceeded | FailureClass::ContentPolicy => BAD_REQUEST,
                _ => INTERNAL_SERVER_ERROR,
            },
            Self::Upstream { error, .. } => match error {
                UpstreamError::Timeout { .. } => GATEWAY_TIMEOUT,
                _ => BAD_GATEWAY,
            },
            Self::MethodNotAllowed { .. } => METHOD_NOT_ALLOWED,
            Self::Body(_)
            | Self::InvalidModelName { .. }
            | Self::Clientside(_)
            | Self::InvalidHeader { .. }
            | Self::InvalidJson(_)
            | Self::BlockedEndUser(_)
            | Self::Mock(MockException::ContextWindowExceeded)
            | Self::ManagementApiOff { .. } => BAD_REQUEST,
        }
    }

    /// The OpenAI error `type` (the Anthropic one follows from the status:
    /// [`tollgate_protocol::anthropic_type`]).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Auth(AuthError::Key(k)) => k.error_type(),
            Self::Auth(_) => "authentication_error",
            Self::ModelAccessDenied { by, .. } => by.error_type(),
            Self::Rejected(r) => r.error_type,
            Self::NoDeployments { .. } | Self::Mock(MockException::RateLimit) => "rate_limit_error",
            Self::Upstream {
                error: UpstreamError::Timeout { .. },
                ..
            } => "timeout",
            Self::Mock(MockException::InternalServer) | Self::Upstream { .. } => "server_error",
            Self::Simulated { .. } if self.status() == INTERNAL_SERVER_ERROR => "server_error",
            Self::HealthNeedsMasterKey => "auth_error",
            _ => INVALID_REQUEST,
        }
    }

    /// The OpenAI error `code`, when the failure has one.
    pub fn code(&self) -> Option<Cow<'static, str>> {
        let code = match self {
            Self::Auth(AuthError::Key(_)) => "401",
            Self::Auth(_) => "invalid_api_key",
            Self::Body(BodyError::Missing(_)) => "missing_required_parameter",
            Self::Body(BodyError::WrongType { .. }) => "invalid_type",
            Self::Body(BodyError::EmptyArray(_)) => "empty_array",
            Self::InvalidModelName { .. } => "invalid_model_name",
            Self::Clientside(_) => "clientside_param_not_allowed",
            Self::InvalidHeader { .. } => "invalid_header",
            Self::ModelAccessDenied { .. } => "403",
            Self::Rejected(r) => return Some(Cow::Owned(r.status.to_string())),
            Self::ModelNotFound { .. }
            | Self::UnknownModelId { .. }
            | Self::NoHealthTarget { .. } => "model_not_found",
            Self::Mock(MockException::ContextWindowExceeded) => "context_length_exceeded",
            Self::Simulated { class, .. } => match class {
                FailureClass::ContextWindowExceeded => "context_length_exceeded",
                FailureClass::ContentPolicy => "content_policy_violation",
                _ => return None,
            },
            Self::Upstream { error, .. } => match error {
                UpstreamError::Timeout { .. } => "upstream_timeout",
                UpstreamError::TooLarge { .. } => "upstream_response_too_large",
                UpstreamError::Connect(_) | UpstreamError::Read(_) | UpstreamError::Build(_) => {
                    "upstream_unreachable"
                }
            },
            Self::ManagementApiOff { .. } => "management_api_off",
            Self::PreviousResponseNotFound { .. } => "previous_response_not_found",
            _ => return None,
        };
        Some(Cow::Borrowed(code))
    }

    /// The OpenAI error `param`: the request field (or header) at fault, when there is one.
    pub fn param(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(match self {
            Self::Body(BodyError::Missing(f) | BodyError::EmptyArray(f)) => f,
            Self::Body(BodyError::WrongType { field, .. }) => field,
            Self::InvalidModelName { param, .. } => param,
            Self::Clientside(c) => return Some(c.param()),
            Self::ModelAccessDenied { .. }
            | Self::ModelNotFound { .. }
            | Self::UnknownModelId { .. } => "model",
            Self::PreviousResponseNotFound { .. } => "previous_response_id",
            Self::Auth(AuthError::Key(KeyError::NotFound(_))) => "key",
            Self::ResponseNotFound { .. } => "response_id",
            _ => return None,
        }))
    }

    /// The log level: `warn` for what an operator must look at (an upstream that cannot be
    /// reached or is too slow); `debug` for refusals of the client's own request, so a flood of
    /// them writes nothing at the default level.
    pub fn level(&self) -> Level {
        match self {
            Self::Upstream { .. } => Level::WARN,
            _ => Level::DEBUG,
        }
    }

    /// Response headers the failure adds (`retry-after`, `x-ratelimit-*`).
    fn headers(&mut self) -> Vec<(HeaderName, HeaderValue)> {
        match self {
            Self::NoDeployments {
                retry_after_secs, ..
            } => vec![(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs))],
            Self::Rejected(r) => std::mem::take(&mut r.headers)
                .into_iter()
                .filter_map(|(k, v)| {
                    Some((
                        HeaderName::try_from(k).ok()?,
                        HeaderValue::try_from(v).ok()?,
                    ))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The envelope: status, type, message, param and code.
    pub fn envelope(&self) -> ErrorEnvelope {
        ErrorEnvelope {
            status: self.status(),
            message: self.message(),
            kind: self.kind().to_owned(),
            param: self.param().map(Cow::into_owned),
            code: self.code().map(Cow::into_owned),
        }
    }

    /// Writes the one log line of this failure, at [`Self::level`].
    fn log(&self, e: &ErrorEnvelope) {
        let deployment = match self {
            Self::Upstream { deployment, .. } => *deployment,
            _ => None,
        };
        let (status, code, message) = (e.status, e.code.as_deref(), e.message.as_str());
        macro_rules! at {
            ($m:ident) => {
                tracing::$m!(status, code, deployment, "gateway error: {message}")
            };
        }
        match self.level() {
            Level::ERROR => at!(error),
            Level::WARN => at!(warn),
            Level::INFO => at!(info),
            Level::DEBUG => at!(debug),
            _ => at!(trace),
        }
    }
}

impl From<GatewayFailure<'_>> for GatewayError {
    /// Decides the envelope and headers, and logs the failure (the one place failures are
    /// logged).
    fn from(mut f: GatewayFailure<'_>) -> Self {
        let envelope = f.envelope();
        f.log(&envelope);
        GatewayError {
            headers: f.headers(),
            envelope,
        }
    }
}
