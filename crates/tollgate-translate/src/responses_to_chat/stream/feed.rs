//! One Chat chunk's parts → Responses events: the per-chunk steps of
//! [`super::StreamTranslator`]'s `feed_str`.

use bytes::BytesMut;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Item, StreamTranslator};
use crate::chat_chunk::{ChatChunk, ChunkDelta, ToolCallDelta, tool_position};
use crate::responses_to_chat::response::{call_item, call_item_id};
use crate::{StreamOutcome, TranslateError, sse_out};

#[derive(Serialize)]
struct ArgsDelta<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    item_id: &'a str,
    output_index: usize,
    delta: &'a str,
    sequence_number: u64,
}

impl StreamTranslator {
    /// Parses one chunk; an unreadable one writes `response.failed` (`server_error`), ends the
    /// stream ([`StreamOutcome::InvalidEvent`]) and is [`TranslateError::InvalidStreamEvent`].
    pub(super) fn parse_chunk<'a>(
        &mut self,
        data: &'a str,
        out: &mut BytesMut,
    ) -> Result<ChatChunk<'a>, TranslateError> {
        serde_json::from_str(data).map_err(|e| {
            let msg = format!("upstream sent an unreadable chunk: {e}");
            self.fail(out, "server_error", &msg, StreamOutcome::InvalidEvent);
            TranslateError::InvalidStreamEvent(msg)
        })
    }

    /// An upstream `{"error": ...}` chunk: `response.failed` with code `rate_limit_exceeded`
    /// when the upstream's `code` names a rate limit, else `server_error`.
    pub(super) fn upstream_error(&mut self, err: &Value, out: &mut BytesMut) {
        let msg = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("upstream error");
        let code = match err.get("code").and_then(Value::as_str) {
            Some(c) if c.contains("rate_limit") => "rate_limit_exceeded",
            _ => "server_error",
        };
        self.fail(out, code, msg, StreamOutcome::UpstreamError);
    }

    /// One `delta` of choice 0: reasoning text, signed thinking blocks, text, refusal text,
    /// then each tool-call fragment.
    pub(super) fn on_delta(&mut self, delta: &ChunkDelta<'_>, out: &mut BytesMut) {
        if let Some(r) = delta.reasoning_text() {
            self.reasoning_text(out, r);
        }
        if let Some(blocks) = delta.thinking_blocks.as_ref().filter(|b| !b.is_empty()) {
            self.reasoning_blocks(out, blocks);
        }
        if let Some(t) = delta.content_text() {
            self.text(out, &t, false);
        }
        if let Some(t) = delta.refusal.as_deref().filter(|t| !t.is_empty()) {
            self.text(out, t, true);
        }
        for tc in delta.tool_calls.iter().flatten() {
            let pos = tool_position(tc, self.call_count());
            let idx = match self
                .items
                .iter()
                .position(|it| matches!(it, Item::Call { pos: p, .. } if *p == pos))
            {
                Some(i) => i,
                None => self.open_call(tc, pos, out),
            };
            if let Some(args) = tc
                .function
                .as_ref()
                .and_then(|f| f.arguments.as_deref())
                .filter(|a| !a.is_empty())
            {
                self.args_delta(idx, args, out);
            }
        }
    }

    /// Closes the open item and adds a `function_call` item for the tool call at `pos`
    /// (`call_id` the call's `id`, else `call_<response id>_<pos>`); returns its output index.
    fn open_call(&mut self, tc: &ToolCallDelta<'_>, pos: u32, out: &mut BytesMut) -> usize {
        self.close(out);
        let call_id = match tc.id.as_deref() {
            Some(id) => id.to_owned(),
            None => format!("call_{}_{pos}", self.response_id),
        };
        let name = tc
            .function
            .as_ref()
            .and_then(|f| f.name.as_deref())
            .unwrap_or("")
            .to_owned();
        let i = self.items.len();
        let item = call_item(&call_id, &name, "", "in_progress");
        self.emit(
            out,
            "response.output_item.added",
            json!({"output_index": i, "item": item}),
        );
        self.items.push(Item::Call {
            pos,
            item_id: call_item_id(&call_id),
            call_id,
            name,
            arguments: String::new(),
        });
        self.open = Some(i);
        i
    }

    /// A non-empty arguments fragment for the call item at `idx`: kept for the item's final
    /// `arguments`, and sent as `response.function_call_arguments.delta`.
    fn args_delta(&mut self, idx: usize, args: &str, out: &mut BytesMut) {
        if let Item::Call {
            item_id, arguments, ..
        } = &mut self.items[idx]
        {
            arguments.push_str(args);
            self.seq += 1;
            sse_out::event(
                out,
                "response.function_call_arguments.delta",
                &ArgsDelta {
                    ty: "response.function_call_arguments.delta",
                    item_id,
                    output_index: idx,
                    delta: args,
                    sequence_number: self.seq - 1,
                },
            );
        }
    }
}
