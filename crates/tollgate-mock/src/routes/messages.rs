//! `POST /v1/messages` (wire-formats.md §2): Anthropic Messages, non-streaming and SSE
//! (`event: X\ndata: {...}\n\n`, `message_start` … `message_stop`), text or `tool_use` replies.
//!
//! With `thinking: {"type":"enabled"|"adaptive"}` (or a `*-thinking` model) the reply starts
//! with a `thinking` block (`"Thinking about: <first 40 chars of the last user message>"`, a
//! deterministic base64 signature), streamed as 3 `thinking_delta`s then one `signature_delta`,
//! as in `fixtures/anthropic/messages/thinking_tools.stream.sse`; its tokens count as output.
//!
//! `message_delta.usage` is cumulative and complete (`input_tokens`, cache fields and
//! `output_tokens`), as the current API sends it; `message_start.usage.output_tokens` is 1.

use base64::Engine;
use bytes::Bytes;
use serde_json::{Value, json};

use super::tools::{ToolDialect, choose};
use super::{Ctx, Reply, apply_stop, named_event};
use crate::errors::anthropic_error_body;
use crate::stream_error::{ErrorKind, StreamError};
use crate::synth::{self, ToolCall};

/// Usage numbers of one reply (tokens).
#[derive(Clone, Copy)]
struct Usage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_creation: u64,
}

fn usage_json(u: Usage) -> Value {
    json!({"input_tokens": u.input, "cache_creation_input_tokens": u.cache_creation,
           "cache_read_input_tokens": u.cache_read, "output_tokens": u.output})
}

fn invalid(ctx: &Ctx, msg: &str) -> Reply {
    Reply::Error(
        400,
        anthropic_error_body("invalid_request_error", msg, &ctx.request_id),
    )
}

/// Anthropic mid-stream error event (`event: error`): by default `overloaded_error`, as in the
/// fixtures; [`crate::Behavior::stream_error`] picks another kind.
fn midstream_error_event(ctx: &Ctx) -> Bytes {
    StreamError::midstream(ctx.behavior, ErrorKind::Overloaded).anthropic_event()
}

/// `toolu_mock_{seq}_{k}` for the k-th tool_use block.
fn tool_id(seq: u64, k: usize) -> String {
    format!("toolu_mock_{seq}_{k}")
}

/// A thinking block: text and signature.
struct Thinking {
    text: String,
    signature: String,
}

fn thinking_for(ctx: &Ctx, last_user: Option<&str>) -> Option<Thinking> {
    let kind = ctx.body.pointer("/thinking/type").and_then(Value::as_str);
    if !(matches!(kind, Some("enabled" | "adaptive")) || ctx.model.ends_with("-thinking"))
        || kind == Some("disabled")
    {
        return None;
    }
    let head: String = last_user.unwrap_or("").chars().take(40).collect();
    let signature = base64::engine::general_purpose::STANDARD.encode(format!(
        "tollgate-mock-signature-{}-not-valid-anywhere-else",
        ctx.seq
    ));
    Some(Thinking {
        text: format!("Thinking about: {head}"),
        signature,
    })
}

/// Handle a Messages request.
pub(crate) fn handle(ctx: &Ctx) -> Reply {
    let body = ctx.body;
    let Some(messages) = body.get("messages").filter(|m| m.is_array()) else {
        return invalid(ctx, "messages: Field required");
    };
    let Some(max_tokens) = ctx.u64_field("max_tokens") else {
        return invalid(ctx, "max_tokens: Field required");
    };
    let tools = choose(
        ToolDialect::Anthropic,
        body,
        ctx.behavior.tool_call,
        ctx.behavior.all_tools == Some(true),
    );
    let last_user = synth::last_user_text(Some(messages));
    let mut text = synth::reply_text(
        ctx.model,
        ctx.behavior.reply.as_deref(),
        last_user.as_deref(),
    );
    let stop_seq = apply_stop(&mut text, body.get("stop_sequences"));
    let truncated = synth::truncate_to_tokens(&mut text, Some(max_tokens));
    let (stop_reason, stop_sequence) = if !tools.is_empty() {
        ("tool_use", Value::Null)
    } else if truncated {
        ("max_tokens", Value::Null)
    } else if let Some(s) = stop_seq {
        ("stop_sequence", Value::String(s))
    } else {
        ("end_turn", Value::Null)
    };
    let thinking = thinking_for(ctx, last_user.as_deref());
    let output = if tools.is_empty() {
        synth::tokens_for_bytes(text.len())
    } else {
        tools.iter().map(ToolCall::tokens).sum()
    } + thinking
        .as_ref()
        .map_or(0, |t| synth::tokens_for_bytes(t.text.len()));
    let usage = match ctx.behavior.usage {
        Some(o) => Usage {
            input: o.prompt_tokens,
            output: o.completion_tokens,
            cache_read: o.cached_tokens,
            cache_creation: o.cache_creation_tokens,
        },
        None => Usage {
            input: synth::prompt_tokens(Some(messages), body.get("system")),
            output,
            cache_read: 0,
            cache_creation: 0,
        },
    };
    let id = format!("msg_mock_{}", ctx.seq);
    if !ctx.stream() {
        let mut content = Vec::with_capacity(2);
        if let Some(th) = &thinking {
            content
                .push(json!({"type": "thinking", "thinking": th.text, "signature": th.signature}));
        }
        if tools.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for (k, t) in tools.iter().enumerate() {
            let input: Value = serde_json::from_str(&t.arguments).unwrap_or(json!({}));
            content.push(json!({"type": "tool_use", "id": tool_id(ctx.seq, k), "name": t.name, "input": input}));
        }
        return Reply::Json(
            200,
            json!({"id": id, "type": "message", "role": "assistant", "model": ctx.model,
                   "content": content, "stop_reason": stop_reason, "stop_sequence": stop_sequence,
                   "usage": usage_json(usage)}),
        );
    }
    if let Some(e) = StreamError::first(ctx.behavior) {
        return Reply::Sse(vec![e.anthropic_event()]);
    }
    Reply::Sse(stream(
        ctx,
        &id,
        &text,
        &tools,
        thinking.as_ref(),
        stop_reason,
        stop_sequence,
        usage,
    ))
}

#[expect(
    clippy::too_many_arguments,
    reason = "the pieces of one parsed request, passed once"
)]
fn stream(
    ctx: &Ctx,
    id: &str,
    text: &str,
    tools: &[ToolCall],
    thinking: Option<&Thinking>,
    stop_reason: &str,
    stop_sequence: Value,
    usage: Usage,
) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(ctx.chunks() + 7);
    let start_usage = Usage { output: 1, ..usage };
    out.push(named_event(
        "message_start",
        &json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
            "model": ctx.model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": usage_json(start_usage)}}),
    ));
    let mut index = 0u32;
    if let Some(th) = thinking {
        out.push(named_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ));
        out.push(named_event("ping", &json!({"type": "ping"})));
        for piece in synth::split_chars(&th.text, 3) {
            out.push(named_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "thinking_delta", "thinking": piece}}),
            ));
        }
        out.push(named_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "signature_delta", "signature": th.signature}}),
        ));
        out.push(named_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ));
        index = 1;
    }
    let midstream = ctx.behavior.midstream_error_after;
    let mut content_chunks = 0usize;
    let blocks = if tools.is_empty() { 1 } else { tools.len() };
    for b in 0..blocks {
        let tool = tools.get(b);
        let block = match tool {
            Some(t) => {
                json!({"type": "tool_use", "id": tool_id(ctx.seq, b), "name": t.name, "input": {}})
            }
            None => json!({"type": "text", "text": ""}),
        };
        out.push(named_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        if thinking.is_none() && b == 0 {
            out.push(named_event("ping", &json!({"type": "ping"})));
        }
        let frags: Vec<&str> = match tool {
            Some(t) => {
                // The API's first input_json_delta is often empty.
                let mut v = vec![""];
                v.extend(synth::split_fragments(&t.arguments, ctx.chunks()));
                v
            }
            None => synth::split_chars(text, ctx.chunks()),
        };
        for frag in frags {
            if tool.is_none() || !frag.is_empty() {
                if midstream == Some(content_chunks) {
                    out.push(midstream_error_event(ctx));
                    return out;
                }
                content_chunks += 1;
            }
            let delta = match tool {
                Some(_) => json!({"type": "input_json_delta", "partial_json": frag}),
                None => json!({"type": "text_delta", "text": frag}),
            };
            out.push(named_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        if midstream.is_some() && b + 1 == blocks {
            out.push(midstream_error_event(ctx));
            return out;
        }
        out.push(named_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    out.push(named_event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
                "usage": usage_json(usage)}),
    ));
    out.push(named_event(
        "message_stop",
        &json!({"type": "message_stop"}),
    ));
    out
}

/// `POST /v1/messages/count_tokens` → `{"input_tokens": N}` (same rule as `usage.input_tokens`).
pub(crate) fn count_tokens(ctx: &Ctx) -> Reply {
    let Some(messages) = ctx.body.get("messages").filter(|m| m.is_array()) else {
        return invalid(ctx, "messages: Field required");
    };
    let n = synth::prompt_tokens(Some(messages), ctx.body.get("system"));
    Reply::Json(200, json!({"input_tokens": n}))
}
