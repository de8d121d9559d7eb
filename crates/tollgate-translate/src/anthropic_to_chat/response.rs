//! OpenAI `chat.completion` → Anthropic message (wire-formats.md §7.3, reverse direction).

use serde_json::{Map, Value, json};

use crate::TranslateError;
use crate::common::stop_reason_from_finish_reason;
use crate::ids::anthropic_message_id;
use crate::usage::Usage;

/// Translates a `chat.completion` into an Anthropic message.
///
/// Only `choices[0]` is used (the request never asks for more). `id` in Anthropic's form
/// ([`anthropic_message_id`] of the chat `id`, else of `call_id`, the gateway's call id, so the
/// stream of the same answer would carry the same id); `model` kept;
/// `reasoning_content` (or `reasoning`) → a `thinking` block with an empty signature, first;
/// `content` → one `text` block (omitted when null/empty), or the `refusal` text with
/// `stop_reason: refusal`; `tool_calls` → `tool_use` blocks with `input` = the parsed
/// `arguments` (arguments that are not a JSON object are kept as `{"_raw_arguments": "<text>"}`
/// rather than lost); `finish_reason` → `stop_reason`
/// ([`stop_reason_from_finish_reason`]); `stop_sequence: null` (OpenAI does not say which stop
/// matched); usage via [`Usage`].
///
/// Errors: [`TranslateError::InvalidResponse`] if there is no `choices[0].message`.
pub fn response(chat: &Value, call_id: &str) -> Result<Value, TranslateError> {
    let choice = chat
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| TranslateError::InvalidResponse("chat.completion has no choices".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| TranslateError::InvalidResponse("choice has no message".into()))?;
    let mut content = Vec::new();
    if let Some(r) = message
        .get("reasoning_content")
        .or_else(|| message.get("reasoning"))
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        content.push(json!({"type": "thinking", "thinking": r, "signature": ""}));
    }
    let refused = push_text(message, &mut content);
    let saw_tool = push_tool_uses(message, &mut content);
    let stop_reason = if refused {
        "refusal"
    } else {
        stop_reason_from_finish_reason(
            choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .unwrap_or("stop"),
            saw_tool,
        )
    };
    let usage = Usage::from_openai_chat(chat.get("usage").unwrap_or(&Value::Null));
    let mut out = Map::new();
    let upstream_id = chat.get("id").and_then(Value::as_str).unwrap_or_default();
    out.insert(
        "id".into(),
        anthropic_message_id(upstream_id, call_id).into(),
    );
    out.insert("type".into(), "message".into());
    out.insert("role".into(), "assistant".into());
    out.insert(
        "model".into(),
        chat.get("model").cloned().unwrap_or_else(|| "".into()),
    );
    out.insert("content".into(), Value::Array(content));
    out.insert("stop_reason".into(), stop_reason.into());
    out.insert("stop_sequence".into(), Value::Null);
    out.insert("usage".into(), usage.to_anthropic());
    Ok(Value::Object(out))
}

/// The message's `content` (a string, or the non-empty `text` of its parts) as `text` blocks;
/// with no content, its `refusal` as a text block. Returns whether it was a refusal.
fn push_text(message: &Value, content: &mut Vec<Value>) -> bool {
    match message.get("content") {
        Some(Value::String(s)) if !s.is_empty() => content.push(json!({"type": "text", "text": s})),
        Some(Value::Array(parts)) => {
            for p in parts {
                if let Some(t) = p
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    content.push(json!({"type": "text", "text": t}));
                }
            }
        }
        _ => {
            if let Some(r) = message.get("refusal").and_then(Value::as_str) {
                content.push(json!({"type": "text", "text": r}));
                return true;
            }
        }
    }
    false
}

/// The message's `tool_calls` as `tool_use` blocks (`input` from [`parse_arguments`]).
/// Returns whether there was any.
fn push_tool_uses(message: &Value, content: &mut Vec<Value>) -> bool {
    let mut saw_tool = false;
    for c in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        saw_tool = true;
        let f = c.get("function").unwrap_or(&Value::Null);
        content.push(json!({
            "type": "tool_use",
            "id": c.get("id").and_then(Value::as_str).unwrap_or_default(),
            "name": f.get("name").and_then(Value::as_str).unwrap_or_default(),
            "input": parse_arguments(f.get("arguments").and_then(Value::as_str).unwrap_or("")),
        }));
    }
    saw_tool
}

/// Tool-call arguments as an Anthropic `input` object: `""` → `{}`, a JSON object → itself,
/// anything else → `{"_raw_arguments": text}` so nothing the model produced is lost.
pub(crate) fn parse_arguments(args: &str) -> Value {
    if args.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(args) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"_raw_arguments": args}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_with_tool_calls_is_tool_use_and_bad_arguments_are_kept() {
        let chat = json!({"id":"c","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{
            "role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{oops"}}]}}],
            "usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}});
        let out = response(&chat, "call-1").unwrap();
        assert_eq!(out["stop_reason"], "tool_use");
        assert_eq!(
            out["content"],
            json!([{"type":"tool_use","id":"call_1","name":"f","input":{"_raw_arguments":"{oops"}}])
        );
        assert_eq!(
            out["usage"],
            json!({"input_tokens":6,"cache_creation_input_tokens":0,"cache_read_input_tokens":4,"output_tokens":3})
        );
    }

    #[test]
    fn refusal_becomes_refusal_stop_reason() {
        let chat = json!({"id":"c","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{
            "role":"assistant","content":null,"refusal":"I can't help with that."}}]});
        let out = response(&chat, "call-1").unwrap();
        assert_eq!(out["stop_reason"], "refusal");
        assert_eq!(out["content"][0]["text"], "I can't help with that.");
    }
}
