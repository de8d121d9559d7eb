//! OpenAI Chat chunks → OpenAI Responses stream events, as a state machine.

use bytes::BytesMut;
use serde::Serialize;
use serde_json::{Value, json};

use super::response::{
    ResponseContext, call_item, call_item_id, message_item, message_item_id, reasoning_item,
    reasoning_item_id, response_object, status_for,
};
use crate::stream::ChunkData;
use crate::usage::Usage;
use crate::{StreamOutcome, StreamTranslate, TranslateError, sse_out};

mod feed;

#[derive(Debug)]
enum Item {
    Reasoning {
        id: String,
        text: String,
        /// Signed thinking blocks, returned as `encrypted_content`.
        blocks: Vec<Value>,
        /// Whether the summary part was announced (there was reasoning text).
        has_part: bool,
    },
    Message {
        text: String,
        refusal: bool,
    },
    Call {
        pos: u32,
        /// `fc_...` item id.
        item_id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

/// Translates one Chat chunk stream into Responses events, each with a `sequence_number`
/// counting from 0 (wire-formats.md §3):
///
/// - first chunk → `response.created` and `response.in_progress` (status `in_progress`);
/// - text → `response.output_item.added` (message), `response.content_part.added`,
///   `response.output_text.delta` per non-empty content delta; refusals → `response.refusal.delta`;
/// - a tool call at a new `index` → `response.output_item.added` (function_call with
///   `call_id` and `name`), then `response.function_call_arguments.delta` per non-empty
///   fragment as it arrives;
/// - an item ends when the next one starts or at `finish_reason`: `response.output_text.done`,
///   `response.content_part.done` / `response.function_call_arguments.done`, then
///   `response.output_item.done` with the full item;
/// - `[DONE]` (or EOF after a `finish_reason`) → `response.completed` (or
///   `response.incomplete` for `length`/`content_filter`) with every output item and usage;
/// - an upstream `{"error"}` chunk, an unreadable chunk, or EOF before `finish_reason` →
///   `response.failed` with `response.error {code, message}`.
///
/// Reasoning (`delta.reasoning_content` / `delta.reasoning`) becomes a `reasoning` item:
/// `response.output_item.added`, `response.reasoning_summary_part.added`,
/// `response.reasoning_summary_text.delta`s, the matching `.done` events; signed thinking blocks
/// (`delta.thinking_blocks`, from an Anthropic upstream) end up in its `encrypted_content`.
#[derive(Debug)]
pub struct StreamTranslator {
    response_id: String,
    /// `msg_...` id of the message item.
    msg_id: String,
    created_at: u64,
    completed_at: u64,
    request: Value,
    seq: u64,
    started: bool,
    items: Vec<Item>,
    /// Index in `items` of the item still open.
    open: Option<usize>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    outcome: StreamOutcome,
    final_response: Option<Value>,
}

#[derive(Serialize)]
struct TextDelta<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    item_id: &'a str,
    output_index: usize,
    content_index: u32,
    delta: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<[(); 0]>,
    sequence_number: u64,
}

#[derive(Serialize)]
struct ResponseEvent<'a> {
    #[serde(rename = "type")]
    ty: &'a str,
    response: &'a Value,
    sequence_number: u64,
}

impl StreamTranslator {
    /// A translator for one stream. `ctx` is as for [`super::response`]; `completed_at` is
    /// reported on the final event (the caller passes the clock).
    pub fn new(ctx: &ResponseContext<'_>) -> Self {
        Self {
            response_id: ctx.response_id.to_owned(),
            msg_id: message_item_id(ctx.response_id),
            created_at: ctx.created_at,
            completed_at: ctx.completed_at,
            request: ctx.request.clone(),
            seq: 0,
            started: false,
            items: Vec::new(),
            open: None,
            finish_reason: None,
            usage: None,
            outcome: StreamOutcome::InProgress,
            final_response: None,
        }
    }

    /// The upstream's chat `finish_reason`, once seen.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    fn call_count(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i, Item::Call { .. }))
            .count()
    }

    /// Writes event `ty`: `{"type": ty, ...body, "sequence_number": n}`.
    fn emit(&mut self, out: &mut BytesMut, ty: &str, body: Value) {
        let mut m = serde_json::Map::new();
        m.insert("type".into(), ty.into());
        if let Value::Object(fields) = body {
            m.extend(fields);
        }
        m.insert("sequence_number".into(), self.seq.into());
        self.seq += 1;
        sse_out::event(out, ty, &m);
    }

    /// Writes a lifecycle event carrying the whole Response, serialized straight from `r`.
    fn emit_response(&mut self, out: &mut BytesMut, ty: &str, r: &Value) {
        sse_out::event(
            out,
            ty,
            &ResponseEvent {
                ty,
                response: r,
                sequence_number: self.seq,
            },
        );
        self.seq += 1;
    }

    fn ctx(&self) -> ResponseContext<'_> {
        ResponseContext {
            response_id: &self.response_id,
            created_at: self.created_at,
            completed_at: self.completed_at,
            request: &self.request,
        }
    }

    fn ensure_started(&mut self, out: &mut BytesMut) {
        if self.started {
            return;
        }
        self.started = true;
        let r = response_object(
            &self.ctx(),
            "in_progress",
            Vec::new(),
            None,
            None,
            None,
            false,
        );
        self.emit_response(out, "response.created", &r);
        self.emit_response(out, "response.in_progress", &r);
    }

    /// Index of the open reasoning item, opening one (and closing another item) if needed.
    fn open_reasoning(&mut self, out: &mut BytesMut) -> usize {
        if let Some(i) = self.open
            && matches!(self.items[i], Item::Reasoning { .. })
        {
            return i;
        }
        self.close(out);
        let i = self.items.len();
        let id = reasoning_item_id(&self.response_id, i);
        self.emit(
            out,
            "response.output_item.added",
            json!({"output_index": i, "item": {"id": id, "type": "reasoning", "summary": []}}),
        );
        self.items.push(Item::Reasoning {
            id,
            text: String::new(),
            blocks: Vec::new(),
            has_part: false,
        });
        self.open = Some(i);
        i
    }

    fn reasoning_text(&mut self, out: &mut BytesMut, t: &str) {
        let i = self.open_reasoning(out);
        let Item::Reasoning {
            id, text, has_part, ..
        } = &mut self.items[i]
        else {
            return;
        };
        text.push_str(t);
        let first = !*has_part;
        *has_part = true;
        let id = id.clone();
        if first {
            self.emit(
                out,
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": i, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            );
        }
        self.emit(
            out,
            "response.reasoning_summary_text.delta",
            json!({"item_id": id, "output_index": i, "summary_index": 0, "delta": t}),
        );
    }

    /// Attaches signed thinking blocks to the open reasoning item, else to the last one, else
    /// to a new one (a `redacted_thinking` block has no text before it).
    fn reasoning_blocks(&mut self, out: &mut BytesMut, new_blocks: &[Value]) {
        let open_is_reasoning = self
            .open
            .is_some_and(|i| matches!(self.items[i], Item::Reasoning { .. }));
        let last = self
            .items
            .iter()
            .rposition(|it| matches!(it, Item::Reasoning { .. }));
        let i = match (open_is_reasoning, last) {
            (false, Some(i)) => i,
            _ => self.open_reasoning(out),
        };
        if let Item::Reasoning { blocks, .. } = &mut self.items[i] {
            blocks.extend(new_blocks.iter().cloned());
        }
    }

    fn text(&mut self, out: &mut BytesMut, t: &str, refusal: bool) {
        let idx = match self.open {
            Some(i) if matches!(&self.items[i], Item::Message { refusal: r, .. } if *r == refusal) => {
                i
            }
            _ => {
                self.close(out);
                let i = self.items.len();
                let id = self.msg_id.clone();
                self.emit(
                    out,
                    "response.output_item.added",
                    json!({"output_index": i, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
                );
                let part = if refusal {
                    json!({"type": "refusal", "refusal": ""})
                } else {
                    json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []})
                };
                self.emit(
                    out,
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "part": part}),
                );
                self.items.push(Item::Message {
                    text: String::new(),
                    refusal,
                });
                self.open = Some(i);
                i
            }
        };
        if let Item::Message { text, .. } = &mut self.items[idx] {
            text.push_str(t);
        }
        let ty = if refusal {
            "response.refusal.delta"
        } else {
            "response.output_text.delta"
        };
        self.seq += 1;
        sse_out::event(
            out,
            ty,
            &TextDelta {
                ty,
                item_id: &self.msg_id,
                output_index: idx,
                content_index: 0,
                delta: t,
                logprobs: (!refusal).then_some([]),
                sequence_number: self.seq - 1,
            },
        );
    }

    fn close(&mut self, out: &mut BytesMut) {
        let Some(i) = self.open.take() else { return };
        let item = self.item_json(i, "completed");
        match &self.items[i] {
            Item::Reasoning {
                id, text, has_part, ..
            } => {
                if *has_part {
                    let (id, text) = (id.clone(), text.clone());
                    self.emit(
                        out,
                        "response.reasoning_summary_text.done",
                        json!({"item_id": id, "output_index": i, "summary_index": 0, "text": text}),
                    );
                    self.emit(
                        out,
                        "response.reasoning_summary_part.done",
                        json!({"item_id": id, "output_index": i, "summary_index": 0,
                               "part": {"type": "summary_text", "text": text}}),
                    );
                }
            }
            Item::Message { text, refusal } => {
                let id = self.msg_id.clone();
                let (done_ty, done) = if *refusal {
                    (
                        "response.refusal.done",
                        json!({"item_id": id, "output_index": i, "content_index": 0, "refusal": text}),
                    )
                } else {
                    (
                        "response.output_text.done",
                        json!({"item_id": id, "output_index": i, "content_index": 0, "text": text, "logprobs": []}),
                    )
                };
                let part = item["content"][0].clone();
                self.emit(out, done_ty, done);
                self.emit(
                    out,
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": i, "content_index": 0, "part": part}),
                );
            }
            Item::Call {
                call_id, arguments, ..
            } => {
                let body = json!({"item_id": call_item_id(call_id), "output_index": i, "arguments": arguments});
                self.emit(out, "response.function_call_arguments.done", body);
            }
        }
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": i, "item": item}),
        );
    }

    fn item_json(&self, i: usize, status: &str) -> Value {
        match &self.items[i] {
            Item::Reasoning {
                id, text, blocks, ..
            } => reasoning_item(id, text, blocks),
            Item::Message { text, refusal } => message_item(&self.msg_id, text, *refusal, status),
            Item::Call {
                call_id,
                name,
                arguments,
                ..
            } => call_item(call_id, name, arguments, status),
        }
    }

    fn complete(&mut self, out: &mut BytesMut) {
        self.ensure_started(out);
        self.close(out);
        let (status, reason) = status_for(self.finish_reason.as_deref().unwrap_or("stop"));
        let output = (0..self.items.len())
            .map(|i| self.item_json(i, "completed"))
            .collect();
        let usage = self.usage.unwrap_or_default();
        let r = response_object(
            &self.ctx(),
            status,
            output,
            Some(&usage),
            reason,
            None,
            true,
        );
        let ty = if status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.emit_response(out, ty, &r);
        self.final_response = Some(r);
        self.outcome = StreamOutcome::Completed;
    }

    fn fail(&mut self, out: &mut BytesMut, code: &str, message: &str, outcome: StreamOutcome) {
        self.ensure_started(out);
        let output = (0..self.items.len())
            .map(|i| self.item_json(i, "incomplete"))
            .collect();
        let r = response_object(
            &self.ctx(),
            "failed",
            output,
            self.usage.as_ref(),
            None,
            Some(json!({"code": code, "message": message})),
            false,
        );
        self.emit_response(out, "response.failed", &r);
        self.final_response = Some(r);
        self.outcome = outcome;
    }
}

impl StreamTranslate for StreamTranslator {
    /// Feeds one upstream chunk given as its `data:` text. Input after the end is ignored.
    ///
    /// Errors: [`TranslateError::InvalidStreamEvent`] when `data` is neither `[DONE]` nor a
    /// chunk; `response.failed` has then been written and the stream is over.
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
        self.ensure_started(out);
        if let Some(u) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            self.usage = Some(Usage::from_openai_chat(u));
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

    /// Ends a stream cut short (EOF, read error, idle gap): completes if a `finish_reason` was
    /// seen, else writes `response.failed` (code `server_error`, `message`) and sets
    /// [`StreamOutcome::Truncated`].
    fn cut_short(&mut self, out: &mut BytesMut, message: &str) {
        if self.outcome != StreamOutcome::InProgress {
            return;
        }
        if self.finish_reason.is_some() {
            self.complete(out);
        } else {
            self.fail(out, "server_error", message, StreamOutcome::Truncated);
        }
    }

    /// Usage seen so far (final once the stream completed), for billing.
    fn usage(&self) -> Usage {
        self.usage.unwrap_or_default()
    }

    /// How the stream ended (or [`StreamOutcome::InProgress`]).
    fn outcome(&self) -> StreamOutcome {
        self.outcome
    }

    /// The final Response object (as sent in `response.completed` / `.incomplete` /
    /// `.failed`), for the gateway's `previous_response_id` store and `GET /v1/responses/{id}`.
    fn response(&self) -> Option<&Value> {
        self.final_response.as_ref()
    }
}
