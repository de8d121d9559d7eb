//! For a legacy Completions client (`/v1/completions`) calling an `anthropic/` deployment, by
//! chaining Completions → Chat ([`crate::completions_to_chat`]) → Anthropic
//! ([`crate::chat_to_anthropic`]), as [`crate::responses_to_anthropic`] does.

use bytes::{Buf, BytesMut};
use serde_json::Value;

use crate::usage::Usage;
use crate::{
    RequestOptions, StreamOutcome, StreamTranslate, TranslateError, chat_to_anthropic,
    completions_to_chat,
};

/// Completions request → Anthropic Messages request (errors from either step; `n > 1` is a 400).
pub fn request(req: &Value, opts: &RequestOptions) -> Result<Value, TranslateError> {
    chat_to_anthropic::request(&completions_to_chat::request(req)?, opts)
}

/// Anthropic message → `text_completion`; `created` in Unix seconds.
pub fn response(msg: &Value, created: u64) -> Result<Value, TranslateError> {
    completions_to_chat::response(&chat_to_anthropic::response(msg, created)?)
}

/// Anthropic events → `text_completion` chunks.
#[derive(Debug)]
pub struct StreamTranslator {
    inner: chat_to_anthropic::StreamTranslator,
    outer: completions_to_chat::StreamTranslator,
    scratch: BytesMut,
}

impl StreamTranslator {
    /// A translator for one stream: `include_usage` as the client asked, `created` in Unix
    /// seconds.
    pub fn new(include_usage: bool, created: u64) -> Self {
        Self {
            inner: chat_to_anthropic::StreamTranslator::new(chat_to_anthropic::StreamOptions {
                include_usage: true,
                created,
                drop_reasoning: true,
            }),
            outer: completions_to_chat::StreamTranslator::new(include_usage),
            scratch: BytesMut::with_capacity(512),
        }
    }

    /// The OpenAI `finish_reason` sent to the client, once known.
    pub fn finish_reason(&self) -> Option<&'static str> {
        self.inner.finish_reason()
    }

    fn drain(&mut self, out: &mut BytesMut) {
        while let Some(end) = self.scratch.windows(2).position(|w| w == b"\n\n") {
            let frame = self.scratch.split_to(end);
            self.scratch.advance(2);
            if let Some(data) = frame.strip_prefix(b"data: ")
                && let Ok(text) = std::str::from_utf8(data)
            {
                let _ = self.outer.feed_str(None, text, out);
            }
        }
    }
}

impl StreamTranslate for StreamTranslator {
    /// Feeds one upstream event as `event:` name and `data:` text.
    fn feed_str(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut BytesMut,
    ) -> Result<(), TranslateError> {
        let res = self.inner.feed_str(event, data, &mut self.scratch);
        self.drain(out);
        res
    }

    /// Ends a stream cut short (EOF, read error, idle gap): the client's terminal error carries
    /// `message` unless the stream had ended.
    fn cut_short(&mut self, out: &mut BytesMut, message: &str) {
        self.inner.cut_short(&mut self.scratch, message);
        self.drain(out);
        self.outer.cut_short(out, message);
    }

    /// Usage seen so far, for billing.
    fn usage(&self) -> Usage {
        self.inner.usage()
    }

    /// How the stream ended, as the client saw it.
    fn outcome(&self) -> StreamOutcome {
        self.inner.outcome()
    }
}

pub use codec::CompletionsToAnthropic;

/// The codec of this pair ([`crate::codec::Codec`]).
mod codec {
    use super::{StreamTranslator, request, response};
    use serde_json::Value;
    use tollgate_protocol::usage::anthropic_response_usage;
    use tollgate_protocol::{Dialect, ErrorEnvelope, Usage};

    use crate::TranslateError;
    use crate::codec::{Answer, Codec, RequestRule, StreamRule, upstream_json};
    use crate::errors::map_upstream_error;

    /// Legacy Completions client, Anthropic Messages upstream.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct CompletionsToAnthropic;

    impl Codec for CompletionsToAnthropic {
        fn name(&self) -> &'static str {
            "completions→anthropic"
        }

        fn upstream_path(&self) -> &'static str {
            "/v1/messages"
        }

        fn request(&self) -> RequestRule {
            RequestRule::Translate(|v, opts, _| request(v, opts))
        }

        fn response(
            &self,
            body: &[u8],
            answer: &Answer<'_>,
        ) -> Result<Option<Value>, TranslateError> {
            response(&upstream_json(body)?, answer.context.created_at).map(Some)
        }

        fn stream(&self, answer: &Answer<'_>) -> StreamRule {
            StreamRule::Translate(Box::new(StreamTranslator::new(
                answer.include_usage,
                answer.context.created_at,
            )))
        }

        fn usage(&self, body: &[u8]) -> Option<Usage> {
            anthropic_response_usage(body)
        }

        fn upstream_error(&self, status: u16, body: &[u8]) -> Option<ErrorEnvelope> {
            Some(map_upstream_error(status, body, Dialect::OpenAi))
        }
    }
}
