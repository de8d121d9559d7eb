//! The codec of this pair ([`crate::codec::Codec`]).

use serde_json::Value;
use tollgate_protocol::usage::openai_response_usage;
use tollgate_protocol::{Dialect, ErrorEnvelope, Usage};

use crate::TranslateError;
use crate::codec::{Answer, Codec, RequestRule, StreamRule, upstream_json};
use crate::errors::map_upstream_error;

/// Anthropic Messages client, OpenAI Chat upstream.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessagesToChat;

impl Codec for MessagesToChat {
    fn name(&self) -> &'static str {
        "messages→chat"
    }

    fn upstream_path(&self) -> &'static str {
        "/chat/completions"
    }

    fn request(&self) -> RequestRule {
        RequestRule::Translate(|v, opts, _| super::request(v, opts))
    }

    fn response(&self, body: &[u8], answer: &Answer<'_>) -> Result<Option<Value>, TranslateError> {
        super::response(&upstream_json(body)?, answer.call_id).map(Some)
    }

    fn stream(&self, answer: &Answer<'_>) -> StreamRule {
        StreamRule::Translate(Box::new(super::StreamTranslator::new(answer.call_id)))
    }

    fn usage(&self, body: &[u8]) -> Option<Usage> {
        openai_response_usage(body)
    }

    fn upstream_error(&self, status: u16, body: &[u8]) -> Option<ErrorEnvelope> {
        Some(map_upstream_error(status, body, Dialect::Anthropic))
    }
}
