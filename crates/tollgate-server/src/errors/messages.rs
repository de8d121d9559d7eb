//! The wording of each [`GatewayFailure`]: LiteLLM's, byte for byte, where LiteLLM answers the
//! same case (auth, access, budgets, mocks, "No deployments available"); OpenAI's for an
//! unknown model; the gateway's own, naming the setting to change, everywhere else.

use http::StatusCode;
use tollgate_governance::runtime::DeniedBy;
use tollgate_protocol::BodyError;
use tollgate_providers::UpstreamError;
use tollgate_providers::client::TimeoutPhase;
use tollgate_providers::clientside::APPLIED_FIELDS;
use tollgate_router::FailureClass;

use super::causes::{ClientsideRefusal, MockException};
use super::failure::GatewayFailure;

impl GatewayFailure<'_> {
    /// The human-readable message. Never contains a secret (keys are never part of a variant).
    pub fn message(&self) -> String {
        match self {
            Self::Auth(e) => e.to_string(),
            // Anthropic's wording for its one required scalar (Messages API errors).
            Self::Body(BodyError::Missing("max_tokens")) => "max_tokens: Field required".to_owned(),
            Self::Body(e) => e.to_string(),
            Self::UnreadableBody {
                status,
                detail,
                limit_bytes,
            } => unreadable_message(*status, detail, *limit_bytes),
            Self::InvalidModelName { name, param, why } => format!(
                "Invalid model name '{}' in `{param}`: {why}. Model names are `/`-separated segments without `.`, `..` or empty segments, backslashes, control characters or percent-encoded bytes.",
                name.escape_debug()
            ),
            Self::Clientside(c) => c.message(),
            Self::InvalidHeader { name } => {
                format!("The {name} header must be a non-negative integer.")
            }
            Self::InvalidJson(e) => format!("Invalid JSON: {e}"),
            Self::BlockedEndUser(e) => e.to_string(),
            Self::ModelAccessDenied {
                by: DeniedBy::Customer,
                requested,
            } => format!(
                "The requested model '{requested}' is not in the allowed models for this customer. Check the models this customer can use and try again."
            ),
            Self::ModelAccessDenied { requested, .. } => format!(
                "The requested model '{requested}' is not available for this API key, or the model name is invalid. Call `/v1/models` to view the models available to your key."
            ),
            Self::Rejected(r) => r.message.clone(),
            Self::ModelNotFound { model, available } => not_found_message(model, available),
            Self::UnknownModelId { id } => {
                format!("The model `{id}` does not exist or you do not have access to it.")
            }
            Self::NoDeployments {
                group,
                retry_after_secs,
            } => format!(
                "No deployments available for selected model={group}. Try again in {retry_after_secs} s."
            ),
            Self::Mock(m) => m.message().to_owned(),
            Self::Simulated { class, group } => simulated_message(*class, group),
            Self::Upstream {
                error,
                request_limit,
                ..
            } => upstream_message(error, *request_limit),
            Self::PreviousResponseNotFound { id } => {
                format!("Previous response with id '{id}' not found.")
            }
            Self::ResponseNotFound { id } => format!("Response with id '{id}' not found."),
            Self::HealthNeedsMasterKey => {
                "Only the master key may run health checks: each one calls every deployment."
                    .to_owned()
            }
            Self::NoHealthTarget { model } => {
                format!("No model group `{model}` with a deployment to check.")
            }
            Self::MethodNotAllowed { method, path } => {
                format!("Method {method} is not allowed on {path}")
            }
            Self::UnknownRoute { path } => format!("Unknown route: {path}"),
            Self::ManagementApiOff { path } => format!(
                "{path} is part of the management API, which runs only with a master key: \
                 set general_settings.master_key (or LITELLM_MASTER_KEY) to turn on virtual \
                 keys, teams, budgets and spend tracking (stored in an embedded SQLite file, \
                 or in Postgres with general_settings.database_url)"
            ),
        }
    }
}

/// A body that could not be read: too large for `limit_bytes`, or the reader's `detail`.
fn unreadable_message(status: StatusCode, detail: &str, limit_bytes: usize) -> String {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        format!(
            "The request body is larger than this gateway accepts ({} MiB; general_settings.max_request_size_mb).",
            limit_bytes / (1024 * 1024)
        )
    } else {
        format!("Could not read the request body: {detail}")
    }
}

/// An unknown model, naming the models the caller may use.
fn not_found_message(model: &str, available: &[String]) -> String {
    let list = if available.is_empty() {
        "none are configured".to_owned()
    } else {
        available.join(", ")
    };
    format!(
        "The model `{model}` does not exist or you do not have access to it. Models available: {list}."
    )
}

impl MockException {
    /// LiteLLM's `mock_completion` message.
    fn message(self) -> &'static str {
        match self {
            Self::RateLimit => "litellm.RateLimitError: this is a mock rate limit error",
            Self::InternalServer => {
                "litellm.InternalServerError: this is a mock internal server error"
            }
            Self::ContextWindowExceeded => {
                "litellm.ContextWindowExceededError: this is a mock context window exceeded error"
            }
        }
    }
}

/// LiteLLM's message for a `mock_testing_*fallbacks` failure of `group`.
fn simulated_message(class: FailureClass, group: &str) -> String {
    let kind = match class {
        FailureClass::ContextWindowExceeded => "ContextWindowExceededError",
        FailureClass::ContentPolicy => "ContentPolicyViolationError",
        _ => "InternalServerError",
    };
    format!("litellm.{kind}: This is a mock exception for model={group}, to trigger a fallback.")
}

/// A transport failure: a timeout names its phase, its limit (ms) and whose limit it was.
fn upstream_message(e: &UpstreamError, request_limit: bool) -> String {
    match e {
        UpstreamError::Timeout { phase, limit_ms } => {
            let what = match phase {
                TimeoutPhase::FirstByte => "did not start answering within",
                TimeoutPhase::Total => "did not finish answering within",
                TimeoutPhase::Idle => "sent nothing for",
            };
            let whose = if request_limit {
                "the request's timeout"
            } else {
                "the deployment's timeout"
            };
            format!("The upstream {what} {limit_ms} ms ({whose}).")
        }
        _ => e.to_string(),
    }
}

impl ClientsideRefusal<'_> {
    fn message(&self) -> String {
        match self {
            Self::ConflictingBase => {
                "`api_base` and `base_url` name different URLs: send one of them.".to_owned()
            }
            Self::NotListed { field, group } => format!(
                "`{field}` is not allowed in the request body for model group '{group}': its deployment does not list it in litellm_params.configurable_clientside_auth_params."
            ),
            Self::NotApplied { field, provider } => format!(
                "`{field}` is listed in configurable_clientside_auth_params, but Tollgate applies no client `{field}` for provider '{provider}': only {} are taken from a request.",
                APPLIED_FIELDS.join(", ")
            ),
            Self::BaseNeedsKey { field } => format!(
                "`{field}` needs the client's own `api_key` in the request body: the deployment's key is never sent to a host the client chose."
            ),
            Self::BadBase { field, why } => format!("`{field}` {why}."),
            Self::KeyNotHeader => "`api_key` cannot be sent as an HTTP header value.".to_owned(),
            Self::Nested { nest, field } => format!(
                "`{nest}.{field}` is not allowed in the request body: client credentials and upstreams are taken only at the top level, and only where the deployment lists them in litellm_params.configurable_clientside_auth_params."
            ),
        }
    }
}
