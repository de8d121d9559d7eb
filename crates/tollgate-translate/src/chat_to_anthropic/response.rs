//! Anthropic Messages response → OpenAI `chat.completion` (wire-formats.md §7.3).

use serde_json::{Map, Value, json};

use crate::TranslateError;
use crate::common::finish_reason_from_stop_reason;
use crate::usage::Usage;

/// Translates an Anthropic message into a `chat.completion` object.
///
/// `created` is the Unix time (seconds) to report; the caller passes the clock so this stays a
/// pure function. Mapping: `id` and `model` kept; `text` blocks concatenated into
/// `message.content` (`null` when there are none); `tool_use` blocks → `tool_calls` with
/// `arguments` the compact JSON of `input`; `stop_reason` → `finish_reason`
/// ([`finish_reason_from_stop_reason`]); usage via [`Usage`].
///
/// Thinking never enters `content`: its text goes to the non-standard `reasoning_content` and
/// the blocks themselves (with signatures, and `redacted_thinking`) to `thinking_blocks`, the
/// LiteLLM convention, so a client that sends the assistant message back lets
/// [`super::request`] return them to Anthropic unchanged. Other block types (server tools,
/// citations) are dropped.
///
/// Errors: [`TranslateError::InvalidResponse`] if `msg` is not an object with a `content` array.
pub fn response(msg: &Value, created: u64) -> Result<Value, TranslateError> {
    let content = msg
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| TranslateError::InvalidResponse("message has no content array".into()))?;
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut thinking_blocks = Vec::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("thinking") => {
                reasoning.push_str(block.get("thinking").and_then(Value::as_str).unwrap_or(""));
                thinking_blocks.push(block.clone());
            }
            Some("redacted_thinking") => thinking_blocks.push(block.clone()),
            Some("tool_use") => {
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                tool_calls.push(json!({
                    "id": block.get("id").and_then(Value::as_str).unwrap_or_default(),
                    "type": "function",
                    "function": {
                        "name": block.get("name").and_then(Value::as_str).unwrap_or_default(),
                        "arguments": input.to_string(),
                    }
                }));
            }
            _ => {}
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            text.into()
        },
    );
    message.insert("refusal".into(), Value::Null);
    if !tool_calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(tool_calls));
    }
    if !thinking_blocks.is_empty() {
        message.insert("reasoning_content".into(), reasoning.into());
        message.insert("thinking_blocks".into(), Value::Array(thinking_blocks));
    }
    let finish = finish_reason_from_stop_reason(
        msg.get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or("end_turn"),
    );
    let usage = Usage::from_anthropic(msg.get("usage").unwrap_or(&Value::Null));
    Ok(json!({
        "id": msg.get("id").and_then(Value::as_str).unwrap_or_default(),
        "object": "chat.completion",
        "created": created,
        "model": msg.get("model").and_then(Value::as_str).unwrap_or_default(),
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish,
        }],
        "usage": usage.to_openai_chat(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_never_leaks_into_content() {
        let msg = json!({"id":"msg_1","model":"m","stop_reason":"end_turn","content":[
            {"type":"thinking","thinking":"secret plan","signature":"sig"},
            {"type":"text","text":"Answer."}],"usage":{"input_tokens":1,"output_tokens":2}});
        let out = response(&msg, 0).unwrap();
        let m = &out["choices"][0]["message"];
        assert_eq!(m["content"], "Answer.");
        assert_eq!(m["reasoning_content"], "secret plan");
        assert_eq!(m["thinking_blocks"][0]["signature"], "sig");
        assert_eq!(out["choices"][0]["finish_reason"], "stop");
    }

    #[test]
    fn max_tokens_is_length_and_bad_shape_is_an_error() {
        let msg = json!({"id":"x","model":"m","stop_reason":"max_tokens","content":[],"usage":{}});
        let out = response(&msg, 0).unwrap();
        assert_eq!(out["choices"][0]["finish_reason"], "length");
        assert_eq!(out["choices"][0]["message"]["content"], Value::Null);
        assert!(response(&json!({"type":"error"}), 0).is_err());
    }
}
