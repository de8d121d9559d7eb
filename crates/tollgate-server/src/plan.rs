//! Which codec answers a request: the one table from (client endpoint, upstream) to the
//! [`Codec`] that builds the upstream body and brings the answer back. Everything after the
//! plan holds the chosen codec and calls it; nothing else looks at the dialect pair.
//!
//! Adding a wire format: a codec per new pair in `tollgate_translate` and a row here.

use tollgate_protocol::ErrorEnvelope;
use tollgate_providers::{Deployment, WireDialect};
use tollgate_translate::anthropic_to_chat::MessagesToChat;
use tollgate_translate::chat_to_anthropic::ChatToAnthropic;
use tollgate_translate::codec::{Codec, passthrough};
use tollgate_translate::completions_to_anthropic::CompletionsToAnthropic;
use tollgate_translate::responses_to_anthropic::ResponsesToAnthropic;
use tollgate_translate::responses_to_chat::ResponsesToChat;

use crate::request::Endpoint;

/// The upstream side of the pair, as far as the dialect goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// OpenAI itself: Chat Completions, Completions, Embeddings and Responses.
    OpenAi,
    /// Another OpenAI-dialect server, or the in-process mock: no `/responses` (only OpenAI
    /// itself is known to serve it).
    OpenAiCompatible,
    /// Anthropic Messages.
    Anthropic,
}

impl Upstream {
    /// The upstream `dep` is, answering in `wire`: the deployment's own dialect
    /// ([`Deployment::dialect`]), or [`WireDialect::InProcessMock`] when the request's own
    /// `mock_response` answers it.
    pub fn of(dep: &Deployment, wire: WireDialect) -> Self {
        match wire {
            WireDialect::Anthropic => Upstream::Anthropic,
            WireDialect::OpenAi if dep.provider.name == "openai" => Upstream::OpenAi,
            WireDialect::OpenAi | WireDialect::InProcessMock => Upstream::OpenAiCompatible,
        }
    }
}

/// The plan for one attempt.
#[derive(Debug, Clone, Copy)]
pub enum Plan {
    /// Call the upstream through this codec.
    Call(&'static dyn Codec),
    /// `count_tokens` for a non-Anthropic deployment: answered by the gateway's estimate.
    LocalTokenCount,
}

/// The codec table: the one place the (client endpoint, upstream) pair is matched. `None`:
/// the upstream cannot serve the endpoint.
pub fn table(endpoint: Endpoint, upstream: Upstream) -> Option<Plan> {
    use Endpoint as E;
    use Upstream as U;
    let codec: &'static dyn Codec = match (endpoint, upstream) {
        (E::ChatCompletions, U::OpenAi | U::OpenAiCompatible) => &passthrough::OPENAI_CHAT,
        (E::ChatCompletions, U::Anthropic) => &ChatToAnthropic,
        (E::Completions, U::OpenAi | U::OpenAiCompatible) => &passthrough::OPENAI_COMPLETIONS,
        (E::Completions, U::Anthropic) => &CompletionsToAnthropic,
        (E::Embeddings, U::OpenAi | U::OpenAiCompatible) => &passthrough::OPENAI_EMBEDDINGS,
        (E::Embeddings, U::Anthropic) => return None,
        (E::Messages, U::Anthropic) => &passthrough::ANTHROPIC_MESSAGES,
        (E::Messages, U::OpenAi | U::OpenAiCompatible) => &MessagesToChat,
        (E::CountTokens, U::Anthropic) => &passthrough::ANTHROPIC_COUNT_TOKENS,
        (E::CountTokens, U::OpenAi | U::OpenAiCompatible) => return Some(Plan::LocalTokenCount),
        (E::Responses, U::OpenAi) => &passthrough::RESPONSES,
        (E::Responses, U::OpenAiCompatible) => &ResponsesToChat,
        (E::Responses, U::Anthropic) => &ResponsesToAnthropic,
    };
    Some(Plan::Call(codec))
}

/// Decides the plan for `dep` answering in `upstream`'s dialect ([`Upstream::of`]). Errors:
/// an endpoint the deployment's API cannot serve (400, `param: model`).
pub fn plan(
    endpoint: Endpoint,
    dep: &Deployment,
    upstream: WireDialect,
) -> Result<Plan, ErrorEnvelope> {
    table(endpoint, Upstream::of(dep, upstream)).ok_or_else(|| {
        ErrorEnvelope::bad_request(format!(
            "Model group '{}' does not serve embeddings (provider '{}').",
            dep.model_group, dep.provider.name
        ))
        .with_param("model")
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
