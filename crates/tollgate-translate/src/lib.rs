//! Dialect translation for the Tollgate gateway: pure functions, no I/O.
//!
//! One module per (client dialect → upstream dialect) pair; each has a `request` function
//! (client request → upstream request), a `response` function (upstream response → client
//! response) and a `StreamTranslator` (upstream SSE events → client SSE bytes), an explicit
//! state machine fed one event at a time:
//!
//! - [`chat_to_anthropic`]: OpenAI Chat client, Anthropic Messages upstream.
//! - [`anthropic_to_chat`]: Anthropic Messages client, OpenAI Chat upstream.
//! - [`responses_to_chat`]: OpenAI Responses client, OpenAI Chat upstream.
//! - [`responses_to_anthropic`]: OpenAI Responses client, Anthropic upstream, by chaining the
//!   two translations above (Responses ⇄ Chat ⇄ Anthropic).
//! - [`completions_to_chat`], [`completions_to_anthropic`]: legacy `/v1/completions` clients
//!   (one prompt → one user message), the latter chained through [`chat_to_anthropic`].
//!
//! Shared pieces: [`usage::Usage`] (normalized token counts), [`errors`] (upstream errors in the
//! client's dialect), [`options::RequestOptions`].
//!
//! Same-dialect traffic is passthrough and never comes here. Fields with no mapping in the
//! target dialect are dropped (each `request` function lists them), except those whose loss
//! would change the answer (`n > 1`, audio input, file references): they are a 400
//! [`TranslateError::Unsupported`] naming the field. Mapping rules follow
//! `shared/reference/wire-formats.md` §7.

pub mod anthropic_to_chat;
mod chat_chunk;
pub mod chat_to_anthropic;
mod common;
pub mod completions_to_anthropic;
pub mod completions_to_chat;
mod error;
pub mod errors;
pub mod options;
pub mod responses_to_anthropic;
pub mod responses_to_chat;
mod sse_out;
pub mod usage;

pub use common::{finish_reason_from_stop_reason, parse_data_url, stop_reason_from_finish_reason};
pub use error::TranslateError;
pub use options::RequestOptions;
pub use usage::Usage;

/// Where a translated stream stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOutcome {
    /// The final upstream event has not arrived yet.
    InProgress,
    /// The upstream's final event arrived; the client got a clean end.
    Completed,
    /// The upstream reported an error mid-stream; the client got it in its dialect.
    UpstreamError,
    /// The upstream ended (EOF) before its final event; the client got an error event.
    Truncated,
    /// An upstream event could not be read; the client got an error event.
    InvalidEvent,
}
