//! OpenAI `chat.completion` → OpenAI Responses `response` object.

use serde_json::{Map, Value, json};

use crate::TranslateError;
use crate::usage::Usage;

/// What a Response object needs that a chat completion does not carry.
#[derive(Debug, Clone, Copy)]
pub struct ResponseContext<'a> {
    /// The gateway-minted response id (`resp_...`); item ids derive from it.
    pub response_id: &'a str,
    /// Unix time (seconds) the request was accepted.
    pub created_at: u64,
    /// Unix time (seconds) the response completed.
    pub completed_at: u64,
    /// The client's Responses request: echoed fields (`instructions`, `tools`, `tool_choice`,
    /// `temperature`, ...) come from it, as the Responses API echoes them.
    pub request: &'a Value,
}

/// The message item id for a response: `msg_` + the response id without `resp_`.
pub(crate) fn message_item_id(response_id: &str) -> String {
    format!(
        "msg_{}",
        response_id.strip_prefix("resp_").unwrap_or(response_id)
    )
}

/// The reasoning item id for the item at `output_index`: `rs_` + the response id without
/// `resp_` + `_` + the index.
pub(crate) fn reasoning_item_id(response_id: &str, output_index: usize) -> String {
    format!(
        "rs_{}_{output_index}",
        response_id.strip_prefix("resp_").unwrap_or(response_id)
    )
}

/// Prefix of a reasoning item's `encrypted_content` when it carries Anthropic thinking blocks
/// (JSON array after the prefix). Opaque to the client, which sends it back unchanged; the
/// request translation turns it back into the blocks, signatures intact.
pub(crate) const THINKING_PREFIX: &str = "tollgate-thinking-v1:";

/// A `reasoning` output item: the reasoning text as one `summary_text` part (none when empty),
/// and the signed thinking blocks, if any, as `encrypted_content`.
pub(crate) fn reasoning_item(id: &str, text: &str, blocks: &[Value]) -> Value {
    let summary = if text.is_empty() {
        json!([])
    } else {
        json!([{"type": "summary_text", "text": text}])
    };
    let mut item = json!({"id": id, "type": "reasoning", "summary": summary});
    if !blocks.is_empty() {
        item["encrypted_content"] =
            format!("{THINKING_PREFIX}{}", Value::from(blocks.to_vec())).into();
    }
    item
}

/// The function-call item id for a call: `fc_` + the call id without `call_`.
pub(crate) fn call_item_id(call_id: &str) -> String {
    format!("fc_{}", call_id.strip_prefix("call_").unwrap_or(call_id))
}

/// A Response object with the request's echoed fields, `status`, `output` and `usage`
/// (the field set of `shared/fixtures/openai/responses/text.response.json`).
pub(crate) fn response_object(
    ctx: &ResponseContext<'_>,
    status: &str,
    output: Vec<Value>,
    usage: Option<&Usage>,
    incomplete_reason: Option<&str>,
    error: Option<Value>,
    completed: bool,
) -> Value {
    let r = ctx.request;
    let get = |k: &str, default: Value| {
        r.get(k)
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(default)
    };
    let mut o = Map::new();
    o.insert("id".into(), ctx.response_id.into());
    o.insert("object".into(), "response".into());
    o.insert("created_at".into(), ctx.created_at.into());
    o.insert("status".into(), status.into());
    o.insert("background".into(), false.into());
    o.insert("error".into(), error.unwrap_or(Value::Null));
    o.insert(
        "incomplete_details".into(),
        incomplete_reason.map_or(Value::Null, |reason| json!({"reason": reason})),
    );
    o.insert("instructions".into(), get("instructions", Value::Null));
    o.insert(
        "max_output_tokens".into(),
        get("max_output_tokens", Value::Null),
    );
    o.insert("model".into(), get("model", "".into()));
    o.insert("output".into(), Value::Array(output));
    o.insert(
        "parallel_tool_calls".into(),
        get("parallel_tool_calls", true.into()),
    );
    o.insert(
        "previous_response_id".into(),
        get("previous_response_id", Value::Null),
    );
    let effort = r
        .get("reasoning")
        .and_then(|x| x.get("effort"))
        .cloned()
        .unwrap_or(Value::Null);
    let summary = r
        .get("reasoning")
        .and_then(|x| x.get("summary"))
        .cloned()
        .unwrap_or(Value::Null);
    o.insert(
        "reasoning".into(),
        json!({"effort": effort, "summary": summary}),
    );
    o.insert("store".into(), get("store", true.into()));
    o.insert("temperature".into(), get("temperature", json!(1.0)));
    o.insert(
        "text".into(),
        get("text", json!({"format": {"type": "text"}})),
    );
    o.insert("tool_choice".into(), get("tool_choice", "auto".into()));
    o.insert("tools".into(), get("tools", json!([])));
    o.insert("top_p".into(), get("top_p", json!(1.0)));
    o.insert("truncation".into(), get("truncation", "disabled".into()));
    o.insert(
        "usage".into(),
        usage.map_or(Value::Null, Usage::to_responses),
    );
    o.insert("user".into(), get("user", Value::Null));
    o.insert("metadata".into(), get("metadata", json!({})));
    if completed {
        o.insert("completed_at".into(), ctx.completed_at.into());
    }
    Value::Object(o)
}

/// `status` and `incomplete_details.reason` for a chat `finish_reason`: `length` →
/// `incomplete`/`max_output_tokens`, `content_filter` → `incomplete`/`content_filter`, else
/// `completed`.
pub(crate) fn status_for(finish_reason: &str) -> (&'static str, Option<&'static str>) {
    match finish_reason {
        "length" => ("incomplete", Some("max_output_tokens")),
        "content_filter" => ("incomplete", Some("content_filter")),
        _ => ("completed", None),
    }
}

pub(crate) fn message_item(id: &str, text: &str, refusal: bool, status: &str) -> Value {
    let part = if refusal {
        json!({"type": "refusal", "refusal": text})
    } else {
        json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
    };
    json!({"id": id, "type": "message", "status": status, "role": "assistant", "content": [part]})
}

pub(crate) fn call_item(call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({"id": call_item_id(call_id), "type": "function_call", "status": status,
           "arguments": arguments, "call_id": call_id, "name": name})
}

/// Translates a `chat.completion` into a Responses `response` object.
///
/// `choices[0].message.content` → one `message` output item with an `output_text` part (or a
/// `refusal` part); each tool call → a `function_call` item (`id` `fc_...`, `call_id` = the
/// chat tool-call id, `arguments` as sent). Reasoning (`reasoning_content`, and the
/// `thinking_blocks` of an Anthropic upstream) comes first as a `reasoning` item: the text as its
/// summary, the signed blocks as `encrypted_content` (see [`super::request`]), never as
/// `output_text`. `finish_reason`
/// `length`/`content_filter` → `status: incomplete` with `incomplete_details.reason`
/// `max_output_tokens`/`content_filter`. Usage via [`Usage::to_responses`].
///
/// Errors: [`TranslateError::InvalidResponse`] if there is no `choices[0].message`.
pub fn response(chat: &Value, ctx: &ResponseContext<'_>) -> Result<Value, TranslateError> {
    let choice = chat
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| TranslateError::InvalidResponse("chat.completion has no choices".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| TranslateError::InvalidResponse("choice has no message".into()))?;
    let mut output = Vec::new();
    let reasoning = message
        .get("reasoning_content")
        .or_else(|| message.get("reasoning"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let blocks: &[Value] = message
        .get("thinking_blocks")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    if !reasoning.is_empty() || !blocks.is_empty() {
        output.push(reasoning_item(
            &reasoning_item_id(ctx.response_id, 0),
            reasoning,
            blocks,
        ));
    }
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    let id = message_item_id(ctx.response_id);
    if !text.is_empty() {
        output.push(message_item(&id, &text, false, "completed"));
    } else if let Some(r) = message.get("refusal").and_then(Value::as_str) {
        output.push(message_item(&id, r, true, "completed"));
    }
    for c in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let f = c.get("function").unwrap_or(&Value::Null);
        output.push(call_item(
            c.get("id").and_then(Value::as_str).unwrap_or_default(),
            f.get("name").and_then(Value::as_str).unwrap_or_default(),
            f.get("arguments")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            "completed",
        ));
    }
    let (status, reason) = status_for(
        choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .unwrap_or("stop"),
    );
    let usage = Usage::from_openai_chat(chat.get("usage").unwrap_or(&Value::Null));
    Ok(response_object(
        ctx,
        status,
        output,
        Some(&usage),
        reason,
        None,
        true,
    ))
}
