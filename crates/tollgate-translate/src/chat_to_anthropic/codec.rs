//! The codec of this pair ([`crate::codec::Codec`]).

use serde_json::Value;
use tollgate_protocol::usage::anthropic_response_usage;
use tollgate_protocol::{Dialect, ErrorEnvelope, Usage};

use crate::TranslateError;
use crate::codec::{Answer, Codec, RequestRule, StreamRule, upstream_json};
use crate::errors::map_upstream_error;

/// OpenAI Chat client, Anthropic Messages upstream.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatToAnthropic;

impl Codec for ChatToAnthropic {
    fn name(&self) -> &'static str {
        "chat→anthropic"
    }

    fn upstream_path(&self) -> &'static str {
        "/v1/messages"
    }

    fn request(&self) -> RequestRule {
        RequestRule::Translate(|v, opts, _| super::request(v, opts))
    }

    fn response(&self, body: &[u8], answer: &Answer<'_>) -> Result<Option<Value>, TranslateError> {
        super::response(&upstream_json(body)?, answer.context.created_at).map(Some)
    }

    fn stream(&self, answer: &Answer<'_>) -> StreamRule {
        StreamRule::Translate(Box::new(super::StreamTranslator::new(
            super::StreamOptions {
                include_usage: answer.include_usage,
                created: answer.context.created_at,
                drop_reasoning: false,
            },
        )))
    }

    fn usage(&self, body: &[u8]) -> Option<Usage> {
        anthropic_response_usage(body)
    }

    fn upstream_error(&self, status: u16, body: &[u8]) -> Option<ErrorEnvelope> {
        Some(map_upstream_error(status, body, Dialect::OpenAi))
    }
}
