//! `POST /v1/responses` (wire-formats.md §3): OpenAI Responses API, non-streaming and SSE with
//! `sequence_number` on every event (same event sequence as
//! `fixtures/openai/responses/text.stream.sse` and `tools.stream.sse`).

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::tools::{ToolDialect, choose};
use super::{Ctx, Reply, named_event};
use crate::errors::openai_error_body;
use crate::stream_error::{ErrorKind, StreamError};
use crate::synth::{self, CREATED, ToolCall};

/// Text of the last user input item (or the input string).
fn last_user_input(input: &Value) -> Option<String> {
    match input {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items
            .iter()
            .rev()
            .find(|i| i.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|i| i.get("content"))
            .map(synth::content_text),
        _ => None,
    }
}

/// The response object, fields in the API's order; `status`, `output`, `usage` and `error` vary.
fn response_obj(
    ctx: &Ctx,
    id: &str,
    status: &str,
    output: Value,
    usage: Value,
    error: Value,
    incomplete: Value,
) -> Value {
    let b = ctx.body;
    let get = |k: &str, default: Value| b.get(k).cloned().unwrap_or(default);
    let mut o = json!({
        "id": id, "object": "response", "created_at": CREATED, "status": status,
        "background": get("background", json!(false)), "error": error, "incomplete_details": incomplete,
        "instructions": get("instructions", Value::Null), "max_output_tokens": get("max_output_tokens", Value::Null),
        "model": ctx.model, "output": output,
        "parallel_tool_calls": get("parallel_tool_calls", json!(true)),
        "previous_response_id": get("previous_response_id", Value::Null),
        "reasoning": get("reasoning", json!({"effort": null, "summary": null})),
        "store": get("store", json!(true)), "temperature": get("temperature", json!(1.0)),
        "text": get("text", json!({"format": {"type": "text"}})),
        "tool_choice": get("tool_choice", json!("auto")), "tools": get("tools", json!([])),
        "top_p": get("top_p", json!(1.0)), "truncation": get("truncation", json!("disabled")),
        "usage": usage, "user": get("user", Value::Null), "metadata": get("metadata", json!({}))
    });
    if status == "completed"
        && let Value::Object(m) = &mut o
    {
        m.insert("completed_at".into(), json!(CREATED + 1));
    }
    o
}

fn message_item(id: &str, status: &str, text: Option<&str>) -> Value {
    let content = match text {
        Some(t) => json!([{"type": "output_text", "text": t, "annotations": [], "logprobs": []}]),
        None => json!([]),
    };
    json!({"id": id, "type": "message", "status": status, "role": "assistant", "content": content})
}

fn call_item(seq: u64, k: usize, status: &str, t: &ToolCall, arguments: &str) -> Value {
    json!({"id": format!("fc_mock_{seq}_{k}"), "type": "function_call", "status": status,
           "arguments": arguments, "call_id": format!("call_mock_{seq}_{k}"), "name": t.name})
}

/// Stream under construction: every event gets `type` first and `sequence_number` last.
#[derive(Default)]
struct Events {
    out: Vec<Bytes>,
    seq: u64,
}

impl Events {
    fn push(&mut self, name: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("type".into(), json!(name));
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        m.insert("sequence_number".into(), json!(self.seq));
        self.seq += 1;
        self.out.push(named_event(name, &Value::Object(m)));
    }

    /// The stream's terminal error: `response.failed` with `failed`, or the `error` event.
    fn fail(&mut self, e: &StreamError, model: &str, failed: Value) {
        self.out.push(e.responses_event(model, self.seq, failed));
        self.seq += 1;
    }
}

/// Handle a Responses request.
pub(crate) fn handle(ctx: &Ctx) -> Reply {
    let body = ctx.body;
    let Some(input) = body.get("input") else {
        return Reply::Error(
            400,
            openai_error_body(
                "Missing required parameter: 'input'.",
                "invalid_request_error",
                Some("input"),
                Some("missing_required_parameter"),
            ),
        );
    };
    let tools = choose(
        ToolDialect::Responses,
        body,
        ctx.behavior.tool_call,
        ctx.behavior.all_tools == Some(true),
    );
    let last_user = last_user_input(input);
    let mut text = synth::reply_text(
        ctx.model,
        ctx.behavior.reply.as_deref(),
        last_user.as_deref(),
    );
    let truncated = tools.is_empty()
        && synth::truncate_to_tokens(&mut text, ctx.u64_field("max_output_tokens"));
    let (status, incomplete) = if truncated {
        ("incomplete", json!({"reason": "max_output_tokens"}))
    } else {
        ("completed", Value::Null)
    };
    let (p, c, cached) = match ctx.behavior.usage {
        Some(o) => (o.prompt_tokens, o.completion_tokens, o.cached_tokens),
        None => (
            synth::prompt_tokens(
                Some(input),
                body.get("instructions").filter(|v| !v.is_null()),
            ),
            if tools.is_empty() {
                synth::tokens_for_bytes(text.len())
            } else {
                tools.iter().map(ToolCall::tokens).sum()
            },
            0,
        ),
    };
    let usage = json!({"input_tokens": p, "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                       "output_tokens": c, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": p + c});
    let id = format!("resp_mock_{}", ctx.seq);
    let msg_id = format!("msg_mock_{}", ctx.seq);
    let done_items: Vec<Value> = if tools.is_empty() {
        vec![message_item(&msg_id, status, Some(&text))]
    } else {
        tools
            .iter()
            .enumerate()
            .map(|(k, t)| call_item(ctx.seq, k, "completed", t, &t.arguments))
            .collect()
    };
    if !ctx.stream() {
        return Reply::Json(
            200,
            response_obj(
                ctx,
                &id,
                status,
                json!(done_items),
                usage,
                Value::Null,
                incomplete,
            ),
        );
    }

    let serr = StreamError::first(ctx.behavior);
    let first_error = serr.is_some();
    let serr = serr.unwrap_or_else(|| StreamError::midstream(ctx.behavior, ErrorKind::Server));
    let (code, message) = serr.responses_error(ctx.model);
    let failed = response_obj(
        ctx,
        &id,
        "failed",
        json!([]),
        Value::Null,
        json!({"code": code, "message": message}),
        Value::Null,
    );
    let mut events = Events::default();
    if first_error {
        events.fail(&serr, ctx.model, failed);
        return Reply::Sse(events.out);
    }
    let in_progress = response_obj(
        ctx,
        &id,
        "in_progress",
        json!([]),
        Value::Null,
        Value::Null,
        Value::Null,
    );
    events.push("response.created", json!({"response": in_progress.clone()}));
    events.push("response.in_progress", json!({"response": in_progress}));
    let midstream = ctx.behavior.midstream_error_after;
    let mut content_chunks = 0usize;
    if tools.is_empty() {
        events.push(
            "response.output_item.added",
            json!({"output_index": 0, "item": message_item(&msg_id, "in_progress", None)}),
        );
        let part =
            |t: &str| json!({"type": "output_text", "text": t, "annotations": [], "logprobs": []});
        events.push(
            "response.content_part.added",
            json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "part": part("")}),
        );
        for piece in synth::split_chars(&text, ctx.chunks()) {
            if midstream == Some(content_chunks) {
                events.fail(&serr, ctx.model, failed);
                return Reply::Sse(events.out);
            }
            content_chunks += 1;
            events.push(
                "response.output_text.delta",
                json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "delta": piece, "logprobs": []}),
            );
        }
        if midstream.is_some() {
            events.fail(&serr, ctx.model, failed);
            return Reply::Sse(events.out);
        }
        events.push(
            "response.output_text.done",
            json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}),
        );
        events.push(
            "response.content_part.done",
            json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "part": part(&text)}),
        );
        events.push(
            "response.output_item.done",
            json!({"output_index": 0, "item": done_items[0]}),
        );
    } else {
        for (k, t) in tools.iter().enumerate() {
            let item_id = format!("fc_mock_{}_{k}", ctx.seq);
            events.push(
                "response.output_item.added",
                json!({"output_index": k, "item": call_item(ctx.seq, k, "in_progress", t, "")}),
            );
            for frag in synth::split_fragments(&t.arguments, ctx.chunks()) {
                if midstream == Some(content_chunks) {
                    events.fail(&serr, ctx.model, failed);
                    return Reply::Sse(events.out);
                }
                content_chunks += 1;
                events.push(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": k, "delta": frag}),
                );
            }
            if midstream.is_some() && k + 1 == tools.len() {
                events.fail(&serr, ctx.model, failed);
                return Reply::Sse(events.out);
            }
            events.push(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": k, "arguments": t.arguments}),
            );
            events.push(
                "response.output_item.done",
                json!({"output_index": k, "item": done_items[k]}),
            );
        }
    }
    let final_name = if status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    let final_obj = response_obj(
        ctx,
        &id,
        status,
        json!(done_items),
        usage,
        Value::Null,
        incomplete,
    );
    events.push(final_name, json!({"response": final_obj}));
    Reply::Sse(events.out)
}
