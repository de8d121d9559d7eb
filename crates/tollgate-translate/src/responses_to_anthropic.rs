//! For an OpenAI-Responses client (`/v1/responses`) calling an `anthropic/` deployment, by
//! chaining the two translations: Responses → Chat ([`crate::responses_to_chat`]) → Anthropic
//! ([`crate::chat_to_anthropic`]) for requests, and back for responses and streams. One mapping
//! table per dialect pair stays the single source of truth; the cost is an intermediate chat
//! document (and, for streams, re-reading the intermediate chunks), measured by
//! `benches/translate.rs` (results in `bench/README.md`, "Micro-benchmark results").

use bytes::{Buf, BytesMut};
use serde_json::Value;

use crate::responses_to_chat::ResponseContext;
use crate::usage::Usage;
use crate::{
    RequestOptions, StreamOutcome, StreamTranslate, TranslateError, chat_to_anthropic,
    responses_to_chat,
};

/// Responses request → Anthropic Messages request. `history` as for
/// [`responses_to_chat::request`]; `opts` apply to the Anthropic side (`upstream_model`,
/// `default_max_tokens`). `cache_control` on input items, content parts and function tools
/// reaches Anthropic where the client put it (`ttl` included); `user` becomes
/// `metadata.user_id`; images as for [`chat_to_anthropic::request`], an unusable one a 400 naming
/// the Responses field (`input[i].content[j].image_url`). Errors from either step.
pub fn request(
    req: &Value,
    opts: &RequestOptions,
    history: &[Value],
) -> Result<Value, TranslateError> {
    let chat = responses_to_chat::request_with(req, &RequestOptions::default(), history, true)?;
    chat_to_anthropic::request(&chat, opts)
}

/// Anthropic message → Responses `response` object.
pub fn response(msg: &Value, ctx: &ResponseContext<'_>) -> Result<Value, TranslateError> {
    let chat = chat_to_anthropic::response(msg, ctx.created_at)?;
    responses_to_chat::response(&chat, ctx)
}

/// Anthropic events → Responses events: a [`chat_to_anthropic::StreamTranslator`] (usage
/// chunk on; thinking as `reasoning_content` + signed `thinking_blocks`) feeding a
/// [`responses_to_chat::StreamTranslator`], which turns thinking into `reasoning` items.
#[derive(Debug)]
pub struct StreamTranslator {
    inner: chat_to_anthropic::StreamTranslator,
    outer: responses_to_chat::StreamTranslator,
    scratch: BytesMut,
}

impl StreamTranslator {
    /// A translator for one stream; `ctx` as for [`responses_to_chat::StreamTranslator::new`].
    pub fn new(ctx: &ResponseContext<'_>) -> Self {
        Self {
            inner: chat_to_anthropic::StreamTranslator::new(chat_to_anthropic::StreamOptions {
                include_usage: true,
                created: ctx.created_at,
                drop_reasoning: false,
            }),
            outer: responses_to_chat::StreamTranslator::new(ctx),
            scratch: BytesMut::with_capacity(1024),
        }
    }

    /// The upstream's Anthropic `stop_reason`, once known.
    pub fn stop_reason(&self) -> Option<&str> {
        self.inner.stop_reason()
    }

    /// Moves the intermediate chat chunks (all `data: ...\n\n`, written by `inner`) to `outer`.
    fn drain(&mut self, out: &mut BytesMut) {
        while let Some(end) = self.scratch.windows(2).position(|w| w == b"\n\n") {
            let frame = self.scratch.split_to(end);
            self.scratch.advance(2);
            if let Some(data) = frame.strip_prefix(b"data: ")
                && let Ok(text) = std::str::from_utf8(data)
            {
                // Our own chunks always parse; an upstream failure is already in them.
                let _ = self.outer.feed_str(None, text, out);
            }
        }
    }
}

impl StreamTranslate for StreamTranslator {
    /// Feeds one upstream event as `event:` name and `data:` text.
    ///
    /// Errors: [`TranslateError::InvalidStreamEvent`] for an unreadable event, after
    /// `response.failed` has been written.
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
        match self.inner.outcome() {
            o @ (StreamOutcome::Truncated | StreamOutcome::InvalidEvent) => o,
            _ => self.outer.outcome(),
        }
    }

    /// The final Response object, once sent.
    fn response(&self) -> Option<&Value> {
        self.outer.response()
    }
}

pub use codec::ResponsesToAnthropic;

/// The codec of this pair ([`crate::codec::Codec`]).
mod codec {
    use super::{StreamTranslator, request, response};
    use serde_json::Value;
    use tollgate_protocol::usage::anthropic_response_usage;
    use tollgate_protocol::{Dialect, ErrorEnvelope, Usage};

    use crate::TranslateError;
    use crate::codec::{Answer, Codec, RequestRule, StreamRule, upstream_json};
    use crate::errors::map_upstream_error;

    /// OpenAI Responses client, Anthropic Messages upstream.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct ResponsesToAnthropic;

    impl Codec for ResponsesToAnthropic {
        fn name(&self) -> &'static str {
            "responses→anthropic"
        }

        fn upstream_path(&self) -> &'static str {
            "/v1/messages"
        }

        fn request(&self) -> RequestRule {
            RequestRule::Translate(request)
        }

        fn response(
            &self,
            body: &[u8],
            answer: &Answer<'_>,
        ) -> Result<Option<Value>, TranslateError> {
            response(&upstream_json(body)?, &answer.context).map(Some)
        }

        fn stream(&self, answer: &Answer<'_>) -> StreamRule {
            StreamRule::Translate(Box::new(StreamTranslator::new(&answer.context)))
        }

        fn usage(&self, body: &[u8]) -> Option<Usage> {
            anthropic_response_usage(body)
        }

        fn upstream_error(&self, status: u16, body: &[u8]) -> Option<ErrorEnvelope> {
            Some(map_upstream_error(status, body, Dialect::OpenAi))
        }
    }
}
