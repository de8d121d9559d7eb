//! The face every per-pair stream state machine shows the relay: fed one upstream SSE event
//! at a time, it appends ready-to-send SSE bytes in the client's dialect.

use bytes::BytesMut;
use serde_json::Value;
use tollgate_protocol::ParsedEvent;

use crate::errors::STREAM_CUT_SHORT;
use crate::usage::Usage;
use crate::{StreamOutcome, TranslateError};

/// An upstream-to-client stream translator (one per dialect pair, one instance per stream).
///
/// Implementations provide [`feed_str`](Self::feed_str), [`cut_short`](Self::cut_short),
/// [`usage`](Self::usage) and [`outcome`](Self::outcome); the opening every translator shares
/// (skip events without `data:`, hand over the event name and data text) is
/// [`feed`](Self::feed), and the end at upstream EOF is [`finish`](Self::finish).
pub trait StreamTranslate: Send {
    /// Feeds one upstream SSE event (from [`tollgate_protocol::SseFramer`]); client bytes are
    /// appended to `out`. An event without a `data:` line (a comment, a bare `event:`) writes
    /// nothing. Errors: as [`feed_str`](Self::feed_str).
    fn feed(&mut self, event: &ParsedEvent<'_>, out: &mut BytesMut) -> Result<(), TranslateError> {
        if !event.has_data {
            return Ok(());
        }
        self.feed_str(event.event, &event.data, out)
    }

    /// Feeds one upstream event given as its `event:` name (if any) and `data:` text. Input
    /// after the end of the stream is ignored.
    ///
    /// Errors: [`TranslateError::InvalidStreamEvent`] for an unreadable event; the client
    /// dialect's terminal error has then been written to `out` and the stream is over.
    fn feed_str(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut BytesMut,
    ) -> Result<(), TranslateError>;

    /// Ends the stream at upstream EOF: [`cut_short`](Self::cut_short) with
    /// [`STREAM_CUT_SHORT`].
    fn finish(&mut self, out: &mut BytesMut) {
        self.cut_short(out, STREAM_CUT_SHORT);
    }

    /// Ends a stream cut short (EOF before the final event, read error, idle gap): the client
    /// dialect's terminal error carrying `message`, unless the stream had already ended.
    fn cut_short(&mut self, out: &mut BytesMut, message: &str);

    /// Usage seen so far (final cumulative values), for billing.
    fn usage(&self) -> Usage;

    /// Where the stream stands, as the client saw it.
    fn outcome(&self) -> StreamOutcome;

    /// The final Response object of a completed Responses-API stream; `None` for the other
    /// client dialects and before completion.
    fn response(&self) -> Option<&Value> {
        None
    }
}

/// What the `data:` text of one event of an OpenAI-dialect stream holds (chat and completions
/// chunks; OpenAI's streaming format: a JSON chunk per event, then `data: [DONE]`). Blank data
/// (a keep-alive) is [`ChunkData::Empty`]. Surrounding whitespace is ignored.
pub(crate) enum ChunkData<'a> {
    /// Nothing to translate.
    Empty,
    /// The upstream's end of stream.
    Done,
    /// A chunk's JSON text, trimmed.
    Chunk(&'a str),
}

impl<'a> ChunkData<'a> {
    /// Classifies `data`.
    pub(crate) fn of(data: &'a str) -> Self {
        match data.trim() {
            "" => ChunkData::Empty,
            "[DONE]" => ChunkData::Done,
            chunk => ChunkData::Chunk(chunk),
        }
    }
}
