//! OpenAI Chat chunks → Anthropic Messages SSE events (wire-formats.md §7.5), as a state
//! machine.

use bytes::BytesMut;
use serde::Serialize;
use serde_json::{Value, json};

use crate::chat_chunk::{ChatChunk, ChunkDelta, ToolCallDelta, tool_position};
use crate::common::stop_reason_from_finish_reason;
use crate::errors::{anthropic_type_for_openai_error, write_anthropic_stream_error};
use crate::ids::anthropic_message_id;
use crate::stream::ChunkData;
use crate::usage::Usage;
use crate::{StreamOutcome, StreamTranslate, TranslateError, sse_out};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    /// A tool_use block for the OpenAI tool call at this position.
    Tool(u32),
}

#[derive(Debug, Clone, Copy)]
struct Open {
    index: u32,
    kind: Kind,
}

/// Translates one OpenAI Chat chunk stream into Anthropic Messages events.
///
/// - First chunk → `message_start` (`content: []`, `stop_reason: null`, usage zero: OpenAI
///   reports usage only at the end), its `id` the chunk's `id` in Anthropic's form
///   ([`anthropic_message_id`]; the same id the unary translation gives the same answer).
/// - Non-empty `delta.content` → a `text` block (opened on first use, at the next block index)
///   and `text_delta`s. Empty content, `null`, and an empty `tool_calls: []` array produce
///   nothing.
/// - `delta.refusal` → text too, and `stop_reason: refusal`.
/// - `delta.reasoning_content` / `delta.reasoning` → a `thinking` block with `thinking_delta`s.
/// - A tool call at a new `index` → the open block is closed, a `tool_use` block
///   `{id, name, input: {}}` is started; every non-empty `arguments` fragment becomes an
///   `input_json_delta` on that block as it arrives, including arguments sent whole in
///   the first delta.
/// - `finish_reason` → the open block is closed; `message_delta` is held until the usage chunk
///   or `[DONE]`, then `message_delta {stop_reason, usage}` and `message_stop`. `stop` after a
///   tool call is reported as `tool_use`.
/// - `{"error": ...}` → `event: error` (type from [`anthropic_type_for_openai_error`]) and the
///   stream ends.
/// - EOF ([`StreamTranslator::finish`]) after a `finish_reason` ends cleanly; before one, an
///   `event: error` `api_error` is written, never a silent clean end.
#[derive(Debug)]
pub struct StreamTranslator {
    /// The gateway's call id, for the message id when the upstream sends none.
    call_id: String,
    id: String,
    model: String,
    started: bool,
    open: Option<Open>,
    next_block: u32,
    /// (tool-call position, block index) of every tool call seen.
    tools: Vec<(u32, u32)>,
    finish_reason: Option<String>,
    stop_reason: Option<&'static str>,
    /// The model refused (`delta.refusal`): `stop_reason` becomes `refusal`.
    refused: bool,
    usage: Usage,
    outcome: StreamOutcome,
}

#[derive(Serialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    index: u32,
    delta: DeltaBody<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum DeltaBody<'a> {
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
}

#[derive(Serialize)]
struct BlockStop {
    #[serde(rename = "type")]
    ty: &'static str,
    index: u32,
}

impl Default for StreamTranslator {
    fn default() -> Self {
        Self::new("")
    }
}

impl StreamTranslator {
    /// A translator for one stream of the call `call_id` (the gateway's `x-litellm-call-id`;
    /// the message id derives from it when the upstream's chunks carry no `id`).
    pub fn new(call_id: &str) -> Self {
        Self {
            call_id: call_id.to_owned(),
            id: String::new(),
            model: String::new(),
            started: false,
            open: None,
            next_block: 0,
            tools: Vec::new(),
            finish_reason: None,
            stop_reason: None,
            refused: false,
            usage: Usage::default(),
            outcome: StreamOutcome::InProgress,
        }
    }

    /// The Anthropic `stop_reason` sent to the client, once sent.
    pub fn stop_reason(&self) -> Option<&'static str> {
        self.stop_reason
    }

    /// The upstream's OpenAI `finish_reason`, once seen.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    fn start(&mut self, out: &mut BytesMut) {
        self.started = true;
        sse_out::event(
            out,
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0}}}),
        );
    }

    /// Index of the open block of `kind`, opening one (and closing another) if needed.
    fn ensure_open(&mut self, out: &mut BytesMut, kind: Kind) -> u32 {
        if let Some(o) = self.open
            && o.kind == kind
        {
            return o.index;
        }
        self.close(out);
        let index = self.next_block;
        self.next_block += 1;
        let block = match kind {
            Kind::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
            _ => json!({"type": "text", "text": ""}),
        };
        sse_out::event(
            out,
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        );
        self.open = Some(Open { index, kind });
        index
    }

    fn close(&mut self, out: &mut BytesMut) {
        if let Some(o) = self.open.take() {
            sse_out::event(
                out,
                "content_block_stop",
                &BlockStop {
                    ty: "content_block_stop",
                    index: o.index,
                },
            );
        }
    }

    fn complete(&mut self, out: &mut BytesMut) {
        if !self.started {
            self.start(out);
        }
        self.close(out);
        let stop = if self.refused {
            "refusal"
        } else {
            stop_reason_from_finish_reason(
                self.finish_reason.as_deref().unwrap_or("stop"),
                !self.tools.is_empty(),
            )
        };
        self.stop_reason = Some(stop);
        sse_out::event(
            out,
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": self.usage.to_anthropic()}),
        );
        sse_out::event(out, "message_stop", &json!({"type": "message_stop"}));
        self.outcome = StreamOutcome::Completed;
    }

    /// Parses one chunk; an unreadable one writes `event: error` (`api_error`), ends the stream
    /// ([`StreamOutcome::InvalidEvent`]) and is [`TranslateError::InvalidStreamEvent`].
    fn parse_chunk<'a>(
        &mut self,
        data: &'a str,
        out: &mut BytesMut,
    ) -> Result<ChatChunk<'a>, TranslateError> {
        serde_json::from_str(data).map_err(|e| {
            let msg = format!("upstream sent an unreadable chunk: {e}");
            write_anthropic_stream_error(out, "api_error", &msg);
            self.outcome = StreamOutcome::InvalidEvent;
            TranslateError::InvalidStreamEvent(msg)
        })
    }

    /// An upstream `{"error": ...}` chunk: `event: error` typed by
    /// [`anthropic_type_for_openai_error`]; the stream ends.
    fn upstream_error(&mut self, err: &Value, out: &mut BytesMut) {
        let msg = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("upstream error");
        write_anthropic_stream_error(out, anthropic_type_for_openai_error(err), msg);
        self.outcome = StreamOutcome::UpstreamError;
    }

    /// One `delta` of choice 0: thinking, text, refusal text, then each tool-call fragment.
    fn on_delta(&mut self, delta: &ChunkDelta<'_>, out: &mut BytesMut) {
        if let Some(r) = delta.reasoning_text() {
            let i = self.ensure_open(out, Kind::Thinking);
            block_delta(out, i, DeltaBody::Thinking { thinking: r });
        }
        if let Some(t) = delta.content_text() {
            let i = self.ensure_open(out, Kind::Text);
            block_delta(out, i, DeltaBody::Text { text: &t });
        }
        if let Some(t) = delta.refusal.as_deref().filter(|t| !t.is_empty()) {
            self.refused = true;
            let i = self.ensure_open(out, Kind::Text);
            block_delta(out, i, DeltaBody::Text { text: t });
        }
        for tc in delta.tool_calls.iter().flatten() {
            let pos = tool_position(tc, self.tools.len());
            let block = match self.tools.iter().find(|(p, _)| *p == pos) {
                Some(&(_, b)) => b,
                None => self.open_tool(tc, pos, out),
            };
            if let Some(args) = tc
                .function
                .as_ref()
                .and_then(|f| f.arguments.as_deref())
                .filter(|a| !a.is_empty())
            {
                block_delta(out, block, DeltaBody::InputJson { partial_json: args });
            }
        }
    }

    /// Closes the open block and starts a `tool_use` block for the tool call at `pos`
    /// (`id` the call's, else `toolu_<message id>_<pos>`); returns its block index.
    fn open_tool(&mut self, tc: &ToolCallDelta<'_>, pos: u32, out: &mut BytesMut) -> u32 {
        self.close(out);
        let b = self.next_block;
        self.next_block += 1;
        let id = match tc.id.as_deref() {
            Some(id) => id.to_owned(),
            None => format!("toolu_{}_{pos}", self.id),
        };
        let name = tc
            .function
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .unwrap_or("");
        sse_out::event(
            out,
            "content_block_start",
            &json!({"type": "content_block_start", "index": b,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        self.tools.push((pos, b));
        self.open = Some(Open {
            index: b,
            kind: Kind::Tool(pos),
        });
        b
    }
}

impl StreamTranslate for StreamTranslator {
    /// Feeds one upstream event given as its `event:` name (unused by OpenAI) and `data:` text.
    /// Input after the end of the stream is ignored.
    ///
    /// Errors: [`TranslateError::InvalidStreamEvent`] when `data` is neither `[DONE]` nor a
    /// chunk; an `event: error` has then been written and the stream is over.
    fn feed_str(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut BytesMut,
    ) -> Result<(), TranslateError> {
        if self.outcome != StreamOutcome::InProgress {
            return Ok(());
        }
        let data = match ChunkData::of(data) {
            ChunkData::Empty => return Ok(()),
            ChunkData::Done => {
                self.complete(out);
                return Ok(());
            }
            ChunkData::Chunk(c) => c,
        };
        let chunk = self.parse_chunk(data, out)?;
        if let Some(err) = &chunk.error {
            self.upstream_error(err, out);
            return Ok(());
        }
        if !self.started {
            self.id = anthropic_message_id(chunk.id.as_deref().unwrap_or_default(), &self.call_id);
            if let Some(m) = &chunk.model {
                self.model = m.to_string();
            }
            self.start(out);
        }
        if let Some(u) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            // Cumulative when repeated: the last one wins.
            self.usage = Usage::from_openai_chat(u);
        }
        for choice in chunk.choices.iter().flatten().filter(|c| c.index == 0) {
            if let Some(delta) = &choice.delta {
                self.on_delta(delta, out);
            }
            if let Some(fr) = choice.finish() {
                self.close(out);
                self.finish_reason = Some(fr.to_string());
            }
        }
        Ok(())
    }

    /// Ends a stream cut short (EOF, read error, idle gap): a clean end if a `finish_reason`
    /// was seen (usage as known), else `event: error` (`api_error`) carrying `message` and
    /// [`StreamOutcome::Truncated`].
    fn cut_short(&mut self, out: &mut BytesMut, message: &str) {
        if self.outcome != StreamOutcome::InProgress {
            return;
        }
        if self.finish_reason.is_some() {
            self.complete(out);
        } else {
            write_anthropic_stream_error(out, "api_error", message);
            self.outcome = StreamOutcome::Truncated;
        }
    }

    /// Usage seen so far (final once the stream completed), for billing.
    fn usage(&self) -> Usage {
        self.usage
    }

    /// How the stream ended (or [`StreamOutcome::InProgress`]).
    fn outcome(&self) -> StreamOutcome {
        self.outcome
    }
}

fn block_delta(out: &mut BytesMut, index: u32, delta: DeltaBody<'_>) {
    sse_out::event(
        out,
        "content_block_delta",
        &BlockDelta {
            ty: "content_block_delta",
            index,
            delta,
        },
    );
}
