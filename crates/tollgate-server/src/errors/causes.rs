//! The data of the causes that have several forms: a refused client-side credential
//! ([`ClientsideRefusal`]) and the exceptions a `mock_response` names ([`MockException`]).

use std::borrow::Cow;

use tollgate_providers::egress::EgressError;
use tollgate_router::FailureClass;

/// Why a client-chosen credential or upstream is refused (always 400 naming the field).
#[derive(Debug)]
pub enum ClientsideRefusal<'a> {
    /// `api_base` and `base_url` name different URLs.
    ConflictingBase,
    /// The deployment does not list `field` in `configurable_clientside_auth_params`.
    NotListed {
        /// The field.
        field: &'a str,
        /// The deployment's model group.
        group: &'a str,
    },
    /// Listed, but Tollgate applies no client value of `field` for the provider.
    NotApplied {
        /// The field.
        field: &'a str,
        /// The provider's name.
        provider: &'a str,
    },
    /// A client base without the client's own key.
    BaseNeedsKey {
        /// `api_base` or `base_url`.
        field: &'a str,
    },
    /// A client base the egress check refuses.
    BadBase {
        /// `api_base` or `base_url`.
        field: &'a str,
        /// Why.
        why: EgressError,
    },
    /// A client key that is not a valid header value.
    KeyNotHeader,
    /// A credential field inside a nest (`metadata.api_key`).
    Nested {
        /// The nest (`metadata`, `litellm_metadata`, ...).
        nest: &'a str,
        /// The field inside it.
        field: &'a str,
    },
}

/// The exceptions a `mock_response` can name (LiteLLM's `mock_completion`); any other text is
/// the mocked answer itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MockException {
    /// `litellm.RateLimitError`: 429.
    RateLimit,
    /// `litellm.InternalServerError`: 500.
    InternalServer,
    /// `litellm.ContextWindowExceededError`: 400 `context_length_exceeded`.
    ContextWindowExceeded,
}

impl MockException {
    /// The exception `reply` names, if any.
    pub fn named(reply: &str) -> Option<Self> {
        match reply {
            "litellm.RateLimitError" => Some(Self::RateLimit),
            "litellm.InternalServerError" => Some(Self::InternalServer),
            "litellm.ContextWindowExceededError" => Some(Self::ContextWindowExceeded),
            _ => None,
        }
    }

    /// How the router counts it (retries, cooldowns and fallbacks apply as for a real one).
    pub fn class(self) -> FailureClass {
        match self {
            Self::RateLimit => FailureClass::RateLimit,
            Self::InternalServer => FailureClass::ServerError,
            Self::ContextWindowExceeded => FailureClass::ContextWindowExceeded,
        }
    }
}

impl ClientsideRefusal<'_> {
    pub(super) fn param(&self) -> Cow<'_, str> {
        Cow::Borrowed(match self {
            Self::ConflictingBase => "api_base",
            Self::KeyNotHeader => "api_key",
            Self::NotListed { field, .. }
            | Self::NotApplied { field, .. }
            | Self::BaseNeedsKey { field }
            | Self::BadBase { field, .. } => field,
            Self::Nested { nest, field } => return Cow::Owned(format!("{nest}.{field}")),
        })
    }
}
