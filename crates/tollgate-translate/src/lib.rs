//! Dialect translation for the Tollgate gateway: pure functions, no I/O.
//!
//! One module per (client dialect → upstream dialect) pair; each has a `request` function
//! (client request → upstream request), a `response` function (upstream response → client
//! response) and a `StreamTranslator` (upstream SSE events → client SSE bytes), an explicit
//! state machine fed one event at a time through [`StreamTranslate`]. Each pair's
//! [`codec::Codec`] bundles the three with its upstream path, usage reader and error mapping:
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
//! client's dialect), [`options::RequestOptions`], [`images`] (image URLs ⇄ Anthropic image
//! sources), [`ids`] (response ids in the client's dialect).
//!
//! A stream is translated by framing upstream bytes with [`tollgate_protocol::SseFramer`] and
//! feeding each event; the output is ready-to-send SSE bytes in the client's dialect:
//!
//! ```
//! use bytes::BytesMut;
//! use tollgate_protocol::SseFramer;
//! use tollgate_translate::StreamTranslate;
//! use tollgate_translate::chat_to_anthropic::{StreamOptions, StreamTranslator};
//!
//! let upstream: &[&[u8]] = &[
//!     b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\nevent: mess",
//!     b"age_stop\ndata: {\"type\":\"message_stop\"}\n\n",
//! ];
//! let mut framer = SseFramer::new(1 << 20);
//! let mut t = StreamTranslator::new(StreamOptions { include_usage: true, created: 0, drop_reasoning: false });
//! let mut to_client = BytesMut::new();
//! for read in upstream {
//!     framer.push(read);
//!     while let Some(raw) = framer.next_event().unwrap() {
//!         // On Err the client-dialect error event is already in `to_client`: send it and stop.
//!         t.feed(&raw.parse().unwrap(), &mut to_client).unwrap();
//!     }
//! }
//! t.finish(&mut to_client); // at upstream EOF: an error event if the stream was cut short
//! let text = std::str::from_utf8(&to_client).unwrap();
//! assert!(text.contains(r#""delta":{"content":"Hi"}"#));
//! assert!(text.ends_with("data: [DONE]\n\n"));
//! assert_eq!((t.usage().input_tokens, t.usage().output_tokens), (5, 2));
//! assert_eq!(t.finish_reason(), Some("stop"));
//! ```
//!
//! Same-dialect traffic is passthrough: its codecs ([`codec::passthrough`]) forward the raw
//! body and relay the answer's bytes, and never translate. Fields with no mapping in the
//! target dialect are dropped (each `request` function lists them), except those whose loss
//! would change the answer (`n > 1`, audio input, file references): they are a 400
//! [`TranslateError::Unsupported`] naming the field. Mapping rules follow
//! `shared/reference/wire-formats.md` §7.

pub mod anthropic_to_chat;
mod chat_chunk;
pub mod chat_to_anthropic;
pub mod codec;
mod common;
pub mod completions_to_anthropic;
pub mod completions_to_chat;
mod error;
mod error_body;
pub mod errors;
pub mod ids;
pub mod images;
pub mod options;
pub mod responses_to_anthropic;
pub mod responses_to_chat;
mod sse_out;
mod stream;
pub mod usage;

pub use common::{finish_reason_from_stop_reason, stop_reason_from_finish_reason};
pub use error::TranslateError;
pub use images::parse_data_url;
pub use options::RequestOptions;
pub use stream::StreamTranslate;
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
