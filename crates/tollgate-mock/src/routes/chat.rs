//! `POST /v1/chat/completions` (wire-formats.md §1): non-streaming `chat.completion` and SSE
//! `chat.completion.chunk` streams, text or tool-call replies, `n` choices, optional logprobs.

use bytes::Bytes;
use serde_json::{Value, json};

use super::tools::{ToolDialect, choose};
use super::{Ctx, Reply, apply_stop, data_event};
use crate::errors::openai_error_body;
use crate::stream_error::{ErrorKind, StreamError};
use crate::synth::{self, CREATED, ToolCall};

/// Token counts to report.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

/// OpenAI chat `usage` object (same shape as the fixtures).
pub(crate) fn usage_json(u: Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt,
        "completion_tokens": u.completion,
        "total_tokens": u.prompt + u.completion,
        "prompt_tokens_details": {"cached_tokens": u.cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
        }
    })
}

/// Reply text after `stop` and the token limit; the finish reason (`stop` or `length`).
pub(crate) fn plan_text(
    ctx: &Ctx,
    last_user: Option<&str>,
    stop: Option<&Value>,
    max: Option<u64>,
) -> (String, &'static str) {
    let mut text = synth::reply_text(ctx.model, ctx.behavior.reply.as_deref(), last_user);
    apply_stop(&mut text, stop);
    let finish = if synth::truncate_to_tokens(&mut text, max) {
        "length"
    } else {
        "stop"
    };
    (text, finish)
}

fn logprob_entry(token: &str, i: usize, top: u64) -> Value {
    let lp = -0.01 * (i as f64 + 1.0);
    let tops: Vec<Value> = (0..top)
        .map(|k| {
            let t = if k == 0 {
                token.to_owned()
            } else {
                format!("{token}~{k}")
            };
            json!({"token": t, "logprob": lp - k as f64, "bytes": t.as_bytes()})
        })
        .collect();
    json!({"token": token, "logprob": lp, "bytes": token.as_bytes(), "top_logprobs": tops})
}

/// Handle a chat completion request.
pub(crate) fn handle(ctx: &Ctx) -> Reply {
    let body = ctx.body;
    let Some(messages) = body.get("messages").filter(|m| m.is_array()) else {
        return Reply::Error(
            400,
            openai_error_body(
                "Missing required parameter: 'messages'.",
                "invalid_request_error",
                Some("messages"),
                Some("missing_required_parameter"),
            ),
        );
    };
    let n = ctx.u64_field("n").unwrap_or(1).clamp(1, 16) as usize;
    let logprobs = body
        .get("logprobs")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let top_logprobs = if logprobs {
        ctx.u64_field("top_logprobs").unwrap_or(0).min(20)
    } else {
        0
    };
    let prompt = synth::prompt_tokens(Some(messages), None);
    let tools = choose(
        ToolDialect::Chat,
        body,
        ctx.behavior.tool_call,
        ctx.behavior.all_tools == Some(true),
    );
    let max = ctx
        .u64_field("max_completion_tokens")
        .or_else(|| ctx.u64_field("max_tokens"));
    let last_user = synth::last_user_text(Some(messages));
    let (text, finish) = plan_text(ctx, last_user.as_deref(), body.get("stop"), max);
    let per_choice = if tools.is_empty() {
        synth::tokens_for_bytes(text.len())
    } else {
        tools.iter().map(ToolCall::tokens).sum()
    };
    let usage = match ctx.behavior.usage {
        Some(o) => Usage {
            prompt: o.prompt_tokens,
            completion: o.completion_tokens,
            cached: o.cached_tokens,
        },
        None => Usage {
            prompt,
            completion: per_choice * n as u64,
            cached: 0,
        },
    };
    let id = format!("chatcmpl-mock-{}", ctx.seq);
    let pieces = synth::split_chars(&text, ctx.chunks());
    if ctx.stream() {
        if let Some(e) = StreamError::first(ctx.behavior) {
            return Reply::Sse(vec![e.openai_event(ctx.model)]);
        }
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        Reply::Sse(stream(
            ctx,
            &id,
            n,
            &pieces,
            finish,
            &tools,
            include_usage,
            usage,
            top_logprobs,
            logprobs,
        ))
    } else {
        let choices: Vec<Value> = (0..n)
            .map(|i| {
                let (message, fr) = if tools.is_empty() {
                    (
                        json!({"role": "assistant", "content": text, "refusal": null, "annotations": []}),
                        finish,
                    )
                } else {
                    let calls: Vec<Value> = tools
                        .iter()
                        .enumerate()
                        .map(|(k, t)| {
                            json!({"id": call_id(ctx.seq, i, k, tools.len()), "type": "function",
                                   "function": {"name": t.name, "arguments": t.arguments}})
                        })
                        .collect();
                    (
                        json!({"role": "assistant", "content": null, "refusal": null, "annotations": [],
                               "tool_calls": calls}),
                        "tool_calls",
                    )
                };
                let lp = if logprobs && tools.is_empty() {
                    let content: Vec<Value> = pieces
                        .iter()
                        .enumerate()
                        .map(|(k, p)| logprob_entry(p, k, top_logprobs))
                        .collect();
                    json!({"content": content, "refusal": null})
                } else {
                    Value::Null
                };
                json!({"index": i, "message": message, "logprobs": lp, "finish_reason": fr})
            })
            .collect();
        Reply::Json(
            200,
            json!({
                "id": id, "object": "chat.completion", "created": CREATED, "model": ctx.model,
                "choices": choices, "usage": usage_json(usage),
                "service_tier": "default", "system_fingerprint": "fp_mock01"
            }),
        )
    }
}

/// OpenAI mid-stream error event (`data: {"error":{...}}`): by default `server_error`, as in
/// the fixtures; [`crate::Behavior::stream_error`] picks another kind.
pub(crate) fn midstream_error_event(ctx: &Ctx) -> Bytes {
    StreamError::midstream(ctx.behavior, ErrorKind::Server).openai_event(ctx.model)
}

/// Tool-call id: `call_mock_{seq}_{j}`, `j` numbering the calls of all choices in order.
fn call_id(seq: u64, choice: usize, k: usize, ntools: usize) -> String {
    format!("call_mock_{seq}_{}", choice * ntools + k)
}

/// One streamed delta position (the same for every choice).
enum Step<'a> {
    /// Content piece number `k`.
    Text(usize, &'a str),
    /// Header of tool call `k` (the first one rides in the role chunk).
    ToolHeader(usize),
    /// Argument fragment of tool call `k`.
    ToolFrag(usize, &'a str),
}

#[expect(
    clippy::too_many_arguments,
    reason = "the pieces of one parsed request, passed once"
)]
fn stream(
    ctx: &Ctx,
    id: &str,
    n: usize,
    pieces: &[&str],
    finish: &str,
    tools: &[ToolCall],
    include_usage: bool,
    usage: Usage,
    top_logprobs: u64,
    logprobs: bool,
) -> Vec<Bytes> {
    let model_json = Value::from(ctx.model).to_string();
    let prefix = format!(
        r#"{{"id":"{id}","object":"chat.completion.chunk","created":{CREATED},"model":{model_json},"service_tier":"default","system_fingerprint":"fp_mock01","choices":["#
    );
    let suffix = if include_usage {
        r#"],"usage":null}"#
    } else {
        "]}"
    };
    // One allocation per event: "data: " + prefix + choice + suffix + "\n\n".
    let raw = |choice: &str| {
        let mut s = String::with_capacity(prefix.len() + choice.len() + suffix.len() + 8);
        s.push_str("data: ");
        s.push_str(&prefix);
        s.push_str(choice);
        s.push_str(suffix);
        s.push_str("\n\n");
        Bytes::from(s)
    };
    let ev = |choice: &Value| raw(&choice.to_string());
    let header = |i: usize, k: usize| {
        let t = &tools[k];
        json!({"index": k, "id": call_id(ctx.seq, i, k, tools.len()), "type": "function",
               "function": {"name": t.name, "arguments": ""}})
    };
    let midstream = ctx.behavior.midstream_error_after;
    let mut out = Vec::with_capacity(n * (pieces.len() + 2) + 3);

    // 1. role chunk (tool replies: content null and the first tool-call header)
    for i in 0..n {
        let delta = if tools.is_empty() {
            json!({"role": "assistant", "content": "", "refusal": null})
        } else {
            json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [header(i, 0)]})
        };
        out.push(ev(
            &json!({"index": i, "delta": delta, "logprobs": null, "finish_reason": null}),
        ));
    }
    // 2. content chunks / tool headers and argument fragments
    let mut steps: Vec<Step> = Vec::new();
    if tools.is_empty() {
        steps.extend(pieces.iter().enumerate().map(|(k, p)| Step::Text(k, p)));
    } else {
        for (k, t) in tools.iter().enumerate() {
            if k > 0 {
                steps.push(Step::ToolHeader(k));
            }
            for frag in synth::split_fragments(&t.arguments, ctx.chunks()) {
                steps.push(Step::ToolFrag(k, frag));
            }
        }
    }
    let mut content_chunks = 0usize;
    for step in &steps {
        if !matches!(step, Step::ToolHeader(_)) {
            if midstream == Some(content_chunks) {
                out.push(midstream_error_event(ctx));
                return out;
            }
            content_chunks += 1;
        }
        if let (Step::Text(_, frag), false) = (step, logprobs) {
            // Hot path (benchmarks): plain text deltas written without building a JSON tree.
            let esc = serde_json::to_string(frag).unwrap_or_default();
            for i in 0..n {
                out.push(raw(&format!(
                    r#"{{"index":{i},"delta":{{"content":{esc}}},"logprobs":null,"finish_reason":null}}"#
                )));
            }
            continue;
        }
        for i in 0..n {
            let (delta, lp) = match step {
                Step::ToolHeader(k) => (json!({"tool_calls": [header(i, *k)]}), Value::Null),
                Step::ToolFrag(k, frag) => (
                    json!({"tool_calls": [{"index": k, "function": {"arguments": frag}}]}),
                    Value::Null,
                ),
                Step::Text(k, frag) => (
                    json!({"content": frag}),
                    json!({"content": [logprob_entry(frag, *k, top_logprobs)], "refusal": null}),
                ),
            };
            out.push(ev(
                &json!({"index": i, "delta": delta, "logprobs": lp, "finish_reason": null}),
            ));
        }
    }
    if midstream.is_some() {
        // Fewer content chunks than requested before the error: fail right after the last one.
        out.push(midstream_error_event(ctx));
        return out;
    }
    // 3. finish chunk per choice
    let fr = if tools.is_empty() {
        finish
    } else {
        "tool_calls"
    };
    for i in 0..n {
        out.push(ev(
            &json!({"index": i, "delta": {}, "logprobs": null, "finish_reason": fr}),
        ));
    }
    // 4. usage chunk
    if include_usage {
        out.push(data_event(&format!(
            "{prefix}],\"usage\":{}}}",
            usage_json(usage)
        )));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}
