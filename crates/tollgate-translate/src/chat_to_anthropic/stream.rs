//! Anthropic Messages SSE events → OpenAI Chat chunks (wire-formats.md §7.4), as a state
//! machine.

use std::borrow::Cow;

use bytes::BytesMut;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::finish_reason_from_stop_reason;
use crate::errors::write_openai_stream_error;
use crate::usage::Usage;
use crate::{StreamOutcome, StreamTranslate, TranslateError, sse_out};

/// Options of one translated stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamOptions {
    /// The client asked for `stream_options.include_usage`: every chunk carries `"usage":null`
    /// and a final `choices: []` chunk carries the usage, before `[DONE]`.
    pub include_usage: bool,
    /// Unix time (seconds) reported as `created` on every chunk.
    pub created: u64,
    /// Drop thinking deltas instead of sending them as the non-standard
    /// `delta.reasoning_content` (they never go into `delta.content`).
    pub drop_reasoning: bool,
}

/// Bound on an upstream content-block index: a hostile index must not size a buffer.
const MAX_BLOCKS: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    /// A `tool_use` block and its position among the tool calls (the OpenAI `index`).
    Tool(u32),
    Thinking,
    Other,
}

/// Translates one Anthropic stream into OpenAI Chat chunks.
///
/// - `message_start` → role chunk `{"role":"assistant","content":""}`; id, model and input
///   usage are remembered.
/// - `text_delta` → `{"content"}`; `tool_use` start → a tool-call chunk with `index` counting
///   tool calls from 0 (not the block index), `id`, `name`, `arguments: ""`;
///   `input_json_delta` → `{"index","function":{"arguments"}}` for each non-empty fragment, as it
///   arrives; `ping`, `content_block_stop` and unknown events → nothing.
/// - thinking (unless [`StreamOptions::drop_reasoning`]; never in `content`): `thinking_delta`
///   → `{"reasoning_content"}`; at its `signature_delta`, the complete block
///   `{"thinking_blocks":[{"type":"thinking","thinking","signature"}]}` in one chunk, and a
///   `redacted_thinking` block likewise, so a client can send the signed blocks back on the next
///   turn (LiteLLM's convention, read by [`super::request`]).
/// - `message_delta` → `stop_reason` and usage remembered (usage values are cumulative and
///   replace the previous ones).
/// - `message_stop` → finish chunk (`delta: {}`, `finish_reason` mapped from `stop_reason`),
///   usage chunk if `include_usage`, then `data: [DONE]`.
/// - `error` → `data: {"error":{...}}` and the stream ends without `[DONE]`.
/// - EOF before `message_stop` ([`StreamTranslator::finish`]) → an error chunk too, never a
///   silent clean end.
#[derive(Debug)]
pub struct StreamTranslator {
    opts: StreamOptions,
    id: String,
    model: String,
    blocks: Vec<Block>,
    tool_calls: u32,
    /// Text of the thinking block being streamed, for its `thinking_blocks` entry.
    thinking: String,
    usage: Usage,
    stop_reason: Option<String>,
    finish_reason: Option<&'static str>,
    started: bool,
    outcome: StreamOutcome,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    content_block: Option<ContentBlock<'a>>,
    #[serde(default, borrow)]
    message: Option<MessageStart<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default, borrow)]
    error: Option<ErrorBody<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    /// `redacted_thinking` payload.
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct MessageStart<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(rename = "type", default, borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: &'a [Choice<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<&'a Value>>,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    delta: ChunkDelta<'a>,
    logprobs: Option<()>,
    finish_reason: Option<&'a str>,
}

#[derive(Serialize, Default)]
struct ChunkDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCall<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_blocks: Option<[ThinkingBlock<'a>; 1]>,
}

/// A complete Anthropic thinking block (LiteLLM's `thinking_blocks` convention).
#[derive(Serialize)]
struct ThinkingBlock<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a str>,
}

#[derive(Serialize)]
struct ToolCall<'a> {
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    ty: Option<&'a str>,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

impl StreamTranslator {
    /// A translator for one stream.
    pub fn new(opts: StreamOptions) -> Self {
        Self {
            opts,
            id: String::new(),
            model: String::new(),
            blocks: Vec::new(),
            tool_calls: 0,
            thinking: String::new(),
            usage: Usage::default(),
            stop_reason: None,
            finish_reason: None,
            started: false,
            outcome: StreamOutcome::InProgress,
        }
    }

    /// The OpenAI `finish_reason` sent to the client, once known.
    pub fn finish_reason(&self) -> Option<&'static str> {
        self.finish_reason
    }

    /// The upstream's Anthropic `stop_reason`, once known.
    pub fn stop_reason(&self) -> Option<&str> {
        self.stop_reason.as_deref()
    }

    fn ensure_started(&mut self, out: &mut BytesMut) {
        if !self.started {
            self.started = true;
            self.delta_chunk(
                out,
                ChunkDelta {
                    role: Some("assistant"),
                    content: Some(""),
                    ..Default::default()
                },
            );
        }
    }

    fn tool_chunk(
        &self,
        out: &mut BytesMut,
        index: u32,
        id: Option<&str>,
        name: Option<&str>,
        args: &str,
    ) {
        let first = id.is_some() || name.is_some();
        let delta = ChunkDelta {
            tool_calls: Some([ToolCall {
                index,
                id: if first { Some(id.unwrap_or("")) } else { None },
                ty: first.then_some("function"),
                function: Function {
                    name: if first {
                        Some(name.unwrap_or(""))
                    } else {
                        None
                    },
                    arguments: args,
                },
            }]),
            ..Default::default()
        };
        self.delta_chunk(out, delta);
    }

    fn delta_chunk(&self, out: &mut BytesMut, delta: ChunkDelta<'_>) {
        let choice = [Choice {
            index: 0,
            delta,
            logprobs: None,
            finish_reason: None,
        }];
        self.write_chunk(out, &choice, None);
    }

    fn write_chunk(&self, out: &mut BytesMut, choices: &[Choice<'_>], usage: Option<&Value>) {
        let usage = match (usage, self.opts.include_usage) {
            (Some(u), _) => Some(Some(u)),
            (None, true) => Some(None),
            (None, false) => None,
        };
        sse_out::data(
            out,
            &Chunk {
                id: &self.id,
                object: "chat.completion.chunk",
                created: self.opts.created,
                model: &self.model,
                choices,
                usage,
            },
        );
    }

    /// Parses one event; an unreadable event or a block index of [`MAX_BLOCKS`] or more writes
    /// an error chunk, ends the stream ([`StreamOutcome::InvalidEvent`]) and is
    /// [`TranslateError::InvalidStreamEvent`].
    fn parse_event<'a>(
        &mut self,
        data: &'a str,
        out: &mut BytesMut,
    ) -> Result<Event<'a>, TranslateError> {
        let parsed = serde_json::from_str::<Event<'a>>(data)
            .map_err(|e| e.to_string())
            .and_then(|ev| match ev.index {
                Some(i) if i >= MAX_BLOCKS => Err(format!("content block index {i} out of range")),
                _ => Ok(ev),
            });
        parsed.map_err(|e| {
            let msg = format!("upstream sent an unreadable event: {e}");
            write_openai_stream_error(out, &msg, None);
            self.outcome = StreamOutcome::InvalidEvent;
            TranslateError::InvalidStreamEvent(msg)
        })
    }

    /// `message_start`: remembers id, model and input usage, then the role chunk.
    fn on_message_start(&mut self, message: Option<MessageStart<'_>>, out: &mut BytesMut) {
        if let Some(m) = message {
            if let Some(id) = m.id {
                self.id = id.into_owned();
            }
            if let Some(model) = m.model {
                self.model = model.into_owned();
            }
            if let Some(u) = &m.usage {
                self.usage = Usage::from_anthropic(u);
            }
        }
        self.ensure_started(out);
    }

    /// `content_block_start` at `index` (below [`MAX_BLOCKS`]): records the block's kind and
    /// writes what its start carries (a tool call's first chunk, a text block's initial text, a
    /// `redacted_thinking` block whole).
    fn on_block_start(&mut self, index: usize, block: &ContentBlock<'_>, out: &mut BytesMut) {
        let kind = match block.ty.as_ref() {
            "text" => Block::Text,
            "tool_use" => self.tool_start(block, out),
            "thinking" => {
                self.thinking.clear();
                Block::Thinking
            }
            "redacted_thinking" => {
                if !self.opts.drop_reasoning {
                    let tb = ThinkingBlock {
                        ty: "redacted_thinking",
                        thinking: None,
                        signature: None,
                        data: Some(block.data.as_deref().unwrap_or("")),
                    };
                    self.delta_chunk(
                        out,
                        ChunkDelta {
                            thinking_blocks: Some([tb]),
                            ..Default::default()
                        },
                    );
                }
                Block::Other
            }
            _ => Block::Other,
        };
        if kind == Block::Text
            && let Some(t) = block.text.as_deref().filter(|t| !t.is_empty())
        {
            self.text_chunk(out, t);
        }
        if self.blocks.len() <= index {
            self.blocks.resize(index + 1, Block::Other);
        }
        self.blocks[index] = kind;
    }

    /// A `tool_use` block start: the next tool-call position and its first chunk (`id`,
    /// `name`, and `arguments` = the compact JSON of a non-empty `input`, else `""`).
    fn tool_start(&mut self, block: &ContentBlock<'_>, out: &mut BytesMut) -> Block {
        let k = self.tool_calls;
        self.tool_calls += 1;
        let args = match &block.input {
            Some(Value::Object(m)) if !m.is_empty() => Value::Object(m.clone()).to_string(),
            _ => String::new(),
        };
        self.tool_chunk(out, k, block.id.as_deref(), block.name.as_deref(), &args);
        Block::Tool(k)
    }

    /// `content_block_delta` on the block at `index`: text, tool-argument fragment or thinking,
    /// by the kind its start recorded; deltas on unknown blocks write nothing.
    fn on_block_delta(&mut self, index: usize, delta: &Delta<'_>, out: &mut BytesMut) {
        match self.blocks.get(index).copied().unwrap_or(Block::Other) {
            Block::Text => {
                if let Some(t) = delta.text.as_deref().filter(|t| !t.is_empty()) {
                    self.text_chunk(out, t);
                }
            }
            Block::Tool(k) => {
                if let Some(p) = delta.partial_json.as_deref().filter(|p| !p.is_empty()) {
                    self.tool_chunk(out, k, None, None, p);
                }
            }
            Block::Thinking if !self.opts.drop_reasoning => self.thinking_delta(delta, out),
            Block::Thinking => {}
            Block::Other => {}
        }
    }

    /// A thinking block's delta: its text as `reasoning_content` (and kept for the block); at
    /// its `signature`, the complete signed block as one `thinking_blocks` entry.
    fn thinking_delta(&mut self, delta: &Delta<'_>, out: &mut BytesMut) {
        if let Some(t) = delta.thinking.as_deref().filter(|t| !t.is_empty()) {
            self.thinking.push_str(t);
            self.delta_chunk(
                out,
                ChunkDelta {
                    reasoning_content: Some(t),
                    ..Default::default()
                },
            );
        }
        if let Some(sig) = delta.signature.as_deref() {
            let tb = ThinkingBlock {
                ty: "thinking",
                thinking: Some(&self.thinking),
                signature: Some(sig),
                data: None,
            };
            self.delta_chunk(
                out,
                ChunkDelta {
                    thinking_blocks: Some([tb]),
                    ..Default::default()
                },
            );
            self.thinking.clear();
        }
    }

    /// `message_delta`: cumulative usage merged, `stop_reason` and its `finish_reason` kept.
    fn on_message_delta(
        &mut self,
        usage: Option<&Value>,
        delta: Option<Delta<'_>>,
        out: &mut BytesMut,
    ) {
        self.ensure_started(out);
        if let Some(u) = usage {
            self.usage.merge_anthropic(u);
        }
        if let Some(sr) = delta.and_then(|d| d.stop_reason) {
            self.finish_reason = Some(finish_reason_from_stop_reason(&sr));
            self.stop_reason = Some(sr.into_owned());
        }
    }

    /// `message_stop`: the finish chunk, the usage chunk if asked for, `[DONE]`.
    fn on_message_stop(&mut self, out: &mut BytesMut) {
        self.ensure_started(out);
        // One finish chunk, whatever number of (cumulative) message_delta events came.
        let finish = *self.finish_reason.get_or_insert("stop");
        let choice = [Choice {
            index: 0,
            delta: ChunkDelta::default(),
            logprobs: None,
            finish_reason: Some(finish),
        }];
        self.write_chunk(out, &choice, None);
        if self.opts.include_usage {
            let usage = self.usage.to_openai_chat();
            self.write_chunk(out, &[], Some(&usage));
        }
        sse_out::done(out);
        self.outcome = StreamOutcome::Completed;
    }

    /// `error`: an error chunk with the upstream's type and message; the stream ends.
    fn on_error(&mut self, error: Option<&ErrorBody<'_>>, out: &mut BytesMut) {
        let (ty, msg) = match error {
            Some(e) => (
                e.ty.as_deref(),
                e.message.as_deref().unwrap_or("upstream error"),
            ),
            None => (None, "upstream error"),
        };
        write_openai_stream_error(out, msg, ty);
        self.outcome = StreamOutcome::UpstreamError;
    }

    fn text_chunk(&self, out: &mut BytesMut, text: &str) {
        self.delta_chunk(
            out,
            ChunkDelta {
                content: Some(text),
                ..Default::default()
            },
        );
    }
}

impl StreamTranslate for StreamTranslator {
    /// Feeds one upstream event given as its `event:` name and `data:` text. Events after the
    /// end of the stream are ignored.
    ///
    /// Errors: [`TranslateError::InvalidStreamEvent`] when `data` is not an Anthropic event;
    /// an error chunk has then already been written to `out` and the stream is over.
    fn feed_str(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut BytesMut,
    ) -> Result<(), TranslateError> {
        if self.outcome != StreamOutcome::InProgress || data.trim().is_empty() {
            return Ok(());
        }
        let ev = self.parse_event(data, out)?;
        match ev.ty.as_ref() {
            "message_start" => self.on_message_start(ev.message, out),
            "content_block_start" => {
                self.ensure_started(out);
                if let (Some(index), Some(block)) = (ev.index, ev.content_block) {
                    self.on_block_start(index, &block, out);
                }
            }
            "content_block_delta" => {
                self.ensure_started(out);
                if let (Some(index), Some(delta)) = (ev.index, ev.delta) {
                    self.on_block_delta(index, &delta, out);
                }
            }
            "message_delta" => self.on_message_delta(ev.usage.as_ref(), ev.delta, out),
            "message_stop" => self.on_message_stop(out),
            "error" => self.on_error(ev.error.as_ref(), out),
            _ => {} // ping, content_block_stop, and event types added later
        }
        Ok(())
    }

    /// Ends a stream cut short (EOF, read error, idle gap): if `message_stop` never came,
    /// writes an error chunk (`server_error`) carrying `message` and sets
    /// [`StreamOutcome::Truncated`].
    fn cut_short(&mut self, out: &mut BytesMut, message: &str) {
        if self.outcome == StreamOutcome::InProgress {
            write_openai_stream_error(out, message, None);
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
