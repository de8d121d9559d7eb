//! Same-dialect codecs: the request's raw body forwarded (rewritten, never parsed whole),
//! the answer's bytes relayed, errors relayed with their status and body.

use serde_json::Value;
use tollgate_protocol::usage::{anthropic_response_usage, openai_response_usage, responses_usage};
use tollgate_protocol::{ErrorEnvelope, Usage};

use super::{Answer, Codec, EventFormat, RequestRule, Rewrite, StreamRule};
use crate::TranslateError;

/// A same-dialect pair: one per client endpoint, each with its own upstream path.
#[derive(Debug)]
pub struct Passthrough {
    name: &'static str,
    path: &'static str,
    rewrite: Rewrite,
    events: EventFormat,
    usage: fn(&[u8]) -> Option<Usage>,
}

const OPENAI: Rewrite = Rewrite {
    force_stream_usage: true,
    anthropic_metadata: false,
};

/// OpenAI Chat Completions to an OpenAI-dialect upstream (`/chat/completions`).
pub static OPENAI_CHAT: Passthrough = Passthrough {
    name: "chat→openai",
    path: "/chat/completions",
    rewrite: OPENAI,
    events: EventFormat::OpenAiChunks,
    usage: openai_response_usage,
};

/// Legacy Completions to an OpenAI-dialect upstream (`/completions`).
pub static OPENAI_COMPLETIONS: Passthrough = Passthrough {
    name: "completions→openai",
    path: "/completions",
    rewrite: OPENAI,
    events: EventFormat::OpenAiChunks,
    usage: openai_response_usage,
};

/// Embeddings to an OpenAI-dialect upstream (`/embeddings`).
pub static OPENAI_EMBEDDINGS: Passthrough = Passthrough {
    name: "embeddings→openai",
    path: "/embeddings",
    rewrite: OPENAI,
    events: EventFormat::OpenAiChunks,
    usage: openai_response_usage,
};

/// Anthropic Messages to an Anthropic upstream (`/v1/messages`).
pub static ANTHROPIC_MESSAGES: Passthrough = Passthrough {
    name: "messages→anthropic",
    path: "/v1/messages",
    rewrite: Rewrite {
        force_stream_usage: false,
        anthropic_metadata: true,
    },
    events: EventFormat::AnthropicEvents,
    usage: anthropic_response_usage,
};

/// Anthropic `count_tokens` to an Anthropic upstream (`/v1/messages/count_tokens`).
pub static ANTHROPIC_COUNT_TOKENS: Passthrough = Passthrough {
    name: "count_tokens→anthropic",
    path: "/v1/messages/count_tokens",
    rewrite: Rewrite {
        force_stream_usage: false,
        anthropic_metadata: false,
    },
    events: EventFormat::AnthropicEvents,
    usage: anthropic_response_usage,
};

/// OpenAI Responses to OpenAI itself (`/responses`).
pub static RESPONSES: Passthrough = Passthrough {
    name: "responses→openai",
    path: "/responses",
    rewrite: Rewrite {
        force_stream_usage: false,
        anthropic_metadata: false,
    },
    events: EventFormat::ResponsesEvents,
    usage: responses_usage,
};

impl Codec for Passthrough {
    fn name(&self) -> &'static str {
        self.name
    }

    fn upstream_path(&self) -> &'static str {
        self.path
    }

    fn request(&self) -> RequestRule {
        RequestRule::Forward(self.rewrite)
    }

    fn response(&self, _body: &[u8], _: &Answer<'_>) -> Result<Option<Value>, TranslateError> {
        Ok(None)
    }

    fn stream(&self, _: &Answer<'_>) -> StreamRule {
        StreamRule::Relay(self.events)
    }

    fn usage(&self, body: &[u8]) -> Option<Usage> {
        (self.usage)(body)
    }

    fn upstream_error(&self, _status: u16, _body: &[u8]) -> Option<ErrorEnvelope> {
        None
    }
}
