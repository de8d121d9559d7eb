//! `POST /v1/completions`: legacy text completions (`text_completion` objects), non-streaming and
//! SSE (`data:` chunks, optional `stream_options.include_usage` usage chunk, `[DONE]`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::chat::{midstream_error_event, plan_text};
use super::{Ctx, Reply, data_event};
use crate::errors::openai_error_body;
use crate::stream_error::StreamError;
use crate::synth::{self, CREATED};

/// Prompt tokens of a legacy `prompt`: strings count `ceil(bytes/4)`, token arrays their length.
fn prompt_tokens(p: &Value) -> u64 {
    match p {
        Value::String(s) => synth::tokens_for_bytes(s.len()),
        Value::Array(items) => {
            if items.iter().all(Value::is_number) {
                items.len() as u64
            } else {
                items.iter().map(prompt_tokens).sum()
            }
        }
        _ => 0,
    }
}

fn first_prompt_text(p: &Value) -> Option<String> {
    match p {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items.iter().find_map(|v| v.as_str().map(str::to_owned)),
        _ => None,
    }
}

/// Handle a legacy completion request.
pub(crate) fn handle(ctx: &Ctx) -> Reply {
    let Some(prompt) = ctx.body.get("prompt") else {
        return Reply::Error(
            400,
            openai_error_body(
                "Missing required parameter: 'prompt'.",
                "invalid_request_error",
                Some("prompt"),
                Some("missing_required_parameter"),
            ),
        );
    };
    let (text, finish) = plan_text(
        ctx,
        first_prompt_text(prompt).as_deref(),
        ctx.body.get("stop"),
        ctx.u64_field("max_tokens"),
    );
    let (p, c) = match ctx.behavior.usage {
        Some(o) => (o.prompt_tokens, o.completion_tokens),
        None => (prompt_tokens(prompt), synth::tokens_for_bytes(text.len())),
    };
    let usage = json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c});
    let id = format!("cmpl-mock-{}", ctx.seq);
    if !ctx.stream() {
        return Reply::Json(
            200,
            json!({
                "id": id, "object": "text_completion", "created": CREATED, "model": ctx.model,
                "choices": [{"text": text, "index": 0, "logprobs": null, "finish_reason": finish}],
                "usage": usage
            }),
        );
    }
    if let Some(e) = StreamError::first(ctx.behavior) {
        return Reply::Sse(vec![e.openai_event(ctx.model)]);
    }
    let include_usage = ctx
        .body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let model_json = Value::from(ctx.model).to_string();
    let prefix = format!(
        r#"{{"id":"{id}","object":"text_completion","created":{CREATED},"model":{model_json},"choices":["#
    );
    let suffix = if include_usage {
        r#"],"usage":null}"#
    } else {
        "]}"
    };
    let ev = |choice: &Value| data_event(&format!("{prefix}{choice}{suffix}"));
    let mut out = Vec::new();
    for (k, piece) in synth::split_chars(&text, ctx.chunks()).iter().enumerate() {
        if ctx.behavior.midstream_error_after == Some(k) {
            out.push(midstream_error_event(ctx));
            return out_sse(out);
        }
        out.push(ev(
            &json!({"text": piece, "index": 0, "logprobs": null, "finish_reason": null}),
        ));
    }
    if ctx.behavior.midstream_error_after.is_some() {
        out.push(midstream_error_event(ctx));
        return out_sse(out);
    }
    out.push(ev(
        &json!({"text": "", "index": 0, "logprobs": null, "finish_reason": finish}),
    ));
    if include_usage {
        out.push(data_event(&format!("{prefix}],\"usage\":{usage}}}")));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out_sse(out)
}

fn out_sse(v: Vec<Bytes>) -> Reply {
    Reply::Sse(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_token_forms() {
        assert_eq!(prompt_tokens(&json!("abcdefgh")), 2);
        assert_eq!(prompt_tokens(&json!([1, 2, 3])), 3);
        assert_eq!(prompt_tokens(&json!(["abcd", "ab"])), 2);
        assert_eq!(prompt_tokens(&json!([[1, 2], [3]])), 3);
    }
}
