//! One codec per (client dialect, upstream dialect) pair: everything the gateway does
//! differently for a pair, behind one trait the pipeline chooses once per attempt.
//!
//! A [`Codec`] knows its upstream path, how the upstream request body is built
//! ([`RequestRule`]: the raw body forwarded, or the parsed request translated), how a 2xx
//! answer ([`Codec::response`]) and a stream ([`StreamRule`]) reach the client, how usage is
//! read from the upstream's answer ([`Codec::usage`]) and how an upstream error is reshaped
//! ([`Codec::upstream_error`]). Translating pairs live in their own modules
//! ([`crate::chat_to_anthropic::ChatToAnthropic`] and the like); same-dialect pairs are the
//! [`passthrough`] codecs. Every codec is a unit value or a `static`: choosing one is taking a
//! `&'static dyn Codec`, nothing is allocated.

pub mod passthrough;

use serde_json::Value;
use tollgate_protocol::ErrorEnvelope;

use crate::responses_to_chat::ResponseContext;
use crate::{RequestOptions, StreamTranslate, TranslateError};

/// What the answer's translation needs to know about the call.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The gateway's call id (`x-litellm-call-id`): a translated Messages answer's id when
    /// the upstream sends none.
    pub call_id: &'a str,
    /// The client asked for the final usage chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// The answer's id, times and the client's request (Responses API answers);
    /// `created_at` (Unix seconds) is every translated answer's `created`.
    pub context: ResponseContext<'a>,
}

/// How a same-dialect request's raw body is rewritten before it is forwarded (the gateway
/// always rewrites `model`, drops its own fields and adds the deployment's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite {
    /// A stream whose client did not ask for usage gets `stream_options.include_usage`
    /// forced on (OpenAI dialect), so usage is always captured.
    pub force_stream_usage: bool,
    /// Anthropic Messages: `metadata` is Anthropic's own field (only `user_id` forwarded).
    pub anthropic_metadata: bool,
}

/// A translating pair's request function: the client request, the options, and the stored
/// conversation a Responses request continues (`previous_response_id`; empty otherwise).
pub type TranslateRequest = fn(&Value, &RequestOptions, &[Value]) -> Result<Value, TranslateError>;

/// How the upstream request body is built.
#[derive(Debug, Clone, Copy)]
pub enum RequestRule {
    /// Same dialect: the client's raw body, rewritten as described; the body is never
    /// parsed whole.
    Forward(Rewrite),
    /// Dialects differ: the client's request, parsed once, translated by this function.
    Translate(TranslateRequest),
}

/// The event format of a same-dialect stream, which tells the relay how to find its usage
/// and its end while the bytes pass through unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFormat {
    /// OpenAI chat / completions chunks (`data: {...}`, `data: [DONE]`).
    OpenAiChunks,
    /// Anthropic Messages events (`message_start` … `message_stop`).
    AnthropicEvents,
    /// OpenAI Responses events (`response.created` … `response.completed`).
    ResponsesEvents,
}

/// How a 2xx event stream reaches the client.
pub enum StreamRule {
    /// Same dialect: the upstream's bytes, relayed as they arrive.
    Relay(EventFormat),
    /// Dialects differ: translated event by event (one state machine per stream).
    Translate(Box<dyn StreamTranslate>),
}

impl std::fmt::Debug for StreamRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamRule::Relay(format) => f.debug_tuple("Relay").field(format).finish(),
            StreamRule::Translate(_) => f.write_str("Translate"),
        }
    }
}

/// Everything dialect-specific about one (client, upstream) pair.
pub trait Codec: Sync + std::fmt::Debug {
    /// A short name for logs and tests: `client→upstream`, e.g. `chat→anthropic`.
    fn name(&self) -> &'static str;

    /// The path the request is sent to, relative to the deployment's base URL.
    fn upstream_path(&self) -> &'static str;

    /// How the upstream request body is built.
    fn request(&self) -> RequestRule;

    /// A 2xx upstream body in the client's dialect: `Ok(None)` when it is relayed as it is
    /// (same dialect; the body is not parsed). Errors: the upstream's body is not JSON or not
    /// its dialect's answer ([`TranslateError::InvalidResponse`]), or cannot be expressed in
    /// the client's dialect.
    fn response(&self, body: &[u8], answer: &Answer<'_>) -> Result<Option<Value>, TranslateError>;

    /// How a 2xx event stream reaches the client.
    fn stream(&self, answer: &Answer<'_>) -> StreamRule;

    /// Usage of a 2xx upstream body, in the upstream's dialect (token counts as reported).
    fn usage(&self, body: &[u8]) -> Option<tollgate_protocol::Usage>;

    /// An upstream error (status ≥ 400, `body` as sent) in the client's dialect, status kept:
    /// `None` when the error is relayed as it is (same dialect).
    fn upstream_error(&self, status: u16, body: &[u8]) -> Option<ErrorEnvelope>;
}

/// Parses a translating pair's upstream answer. Errors: not JSON.
pub(crate) fn upstream_json(body: &[u8]) -> Result<Value, TranslateError> {
    serde_json::from_slice(body)
        .map_err(|e| TranslateError::InvalidResponse(format!("not JSON: {e}")))
}
