//! Which way a request goes: passthrough (client and upstream speak the same dialect) or
//! translation (they differ), decided from the endpoint and the deployment's wire dialect.

use tollgate_protocol::ErrorEnvelope;
use tollgate_providers::{Deployment, WireDialect};

use crate::request::Endpoint;

/// Same-dialect relays, by what the stream looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passthrough {
    /// OpenAI chat / completions / embeddings.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses.
    Responses,
}

/// Dialect pairs the gateway translates (client → upstream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    /// OpenAI chat client, Anthropic upstream.
    ChatToAnthropic,
    /// Legacy completions client, Anthropic upstream.
    CompletionsToAnthropic,
    /// Anthropic Messages client, OpenAI chat upstream.
    MessagesToChat,
    /// Responses client, OpenAI chat upstream.
    ResponsesToChat,
    /// Responses client, Anthropic upstream.
    ResponsesToAnthropic,
}

impl Pair {
    /// Upstream path of the translated request.
    pub fn upstream_path(self) -> &'static str {
        match self {
            Pair::ChatToAnthropic | Pair::CompletionsToAnthropic | Pair::ResponsesToAnthropic => {
                "/v1/messages"
            }
            Pair::MessagesToChat | Pair::ResponsesToChat => "/chat/completions",
        }
    }

    /// Whether the upstream speaks Anthropic.
    pub fn upstream_is_anthropic(self) -> bool {
        matches!(
            self,
            Pair::ChatToAnthropic | Pair::CompletionsToAnthropic | Pair::ResponsesToAnthropic
        )
    }
}

/// The plan for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Forward the body (rewritten) to `path` and relay the answer.
    Passthrough {
        /// Upstream path.
        path: &'static str,
        /// Relay kind.
        kind: Passthrough,
    },
    /// Translate request, response and stream.
    Translate(Pair),
    /// `count_tokens` for a non-Anthropic deployment: answered by the gateway's estimate.
    LocalTokenCount,
}

/// Decides the plan for `dep` answering in `upstream`'s dialect: the deployment's own
/// ([`Deployment::dialect`]), or [`WireDialect::InProcessMock`] when the request's own
/// `mock_response` answers it. Errors: an endpoint the deployment's API cannot serve (400).
pub fn plan(
    endpoint: Endpoint,
    dep: &Deployment,
    upstream: WireDialect,
) -> Result<Plan, ErrorEnvelope> {
    let openai_like = matches!(upstream, WireDialect::OpenAi | WireDialect::InProcessMock);
    Ok(match endpoint {
        Endpoint::ChatCompletions | Endpoint::Completions | Endpoint::Embeddings if openai_like => {
            Plan::Passthrough {
                path: endpoint.upstream_path(),
                kind: Passthrough::OpenAi,
            }
        }
        Endpoint::ChatCompletions => Plan::Translate(Pair::ChatToAnthropic),
        Endpoint::Completions => Plan::Translate(Pair::CompletionsToAnthropic),
        Endpoint::Embeddings => {
            return Err(ErrorEnvelope::bad_request(format!(
                "Model group '{}' does not serve embeddings (provider '{}').",
                dep.model_group, dep.provider.name
            ))
            .with_param("model"));
        }
        Endpoint::Messages | Endpoint::CountTokens if !openai_like => Plan::Passthrough {
            path: endpoint.upstream_path(),
            kind: Passthrough::Anthropic,
        },
        Endpoint::Messages => Plan::Translate(Pair::MessagesToChat),
        Endpoint::CountTokens => Plan::LocalTokenCount,
        // Only OpenAI itself is known to serve /responses; other OpenAI-dialect servers get
        // the Chat Completions translation.
        Endpoint::Responses if upstream == WireDialect::OpenAi && dep.provider.name == "openai" => {
            Plan::Passthrough {
                path: endpoint.upstream_path(),
                kind: Passthrough::Responses,
            }
        }
        Endpoint::Responses if openai_like => Plan::Translate(Pair::ResponsesToChat),
        Endpoint::Responses => Plan::Translate(Pair::ResponsesToAnthropic),
    })
}
