//! OpenAI chat `messages` → Anthropic top-level `system` and `messages` (wire-formats.md
//! §7.1), with every `cache_control` kept where the client put it.
//!
//! `cache_control` (`{"type":"ephemeral","ttl"?:"5m"|"1h"}`, copied as sent, `ttl` included)
//! is read where LiteLLM reads it on its `/chat/completions` → Anthropic path:
//! - on a content part (text, image, file) of any role → on that block;
//! - on a message → on the message's last block that has none (a string content becomes one
//!   text block to carry it); on a `tool` message → on its `tool_result` block;
//! - on an assistant `tool_calls[]` entry → on its `tool_use` block.
//!
//! Thinking blocks never get one (Anthropic refuses it there).

use serde_json::{Value, json};

use crate::TranslateError;
use crate::images::{anthropic_image_source, is_base64, parse_data_url};

/// The converted conversation.
pub(super) struct Converted {
    /// Top-level `system`: a string, or text blocks when one carries `cache_control`.
    pub system: Option<Value>,
    /// Alternating user/assistant messages.
    pub messages: Vec<Value>,
}

/// The client's `cache_control` on a part, message, tool call or tool, when it is an object
/// (LiteLLM ignores other values).
pub(super) fn cache_control(v: &Value) -> Option<&Value> {
    v.get("cache_control").filter(|c| c.is_object())
}

/// A message's own `cache_control` on its last block (thinking excluded) unless that block has
/// its own.
fn mark_last(blocks: &mut [Value], cc: Option<&Value>) {
    let Some(cc) = cc else { return };
    let last = blocks.iter_mut().rev().find(|b| {
        !matches!(
            b.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    });
    if let Some(b) = last
        && b.get("cache_control").is_none()
    {
        b["cache_control"] = cc.clone();
    }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// Appends messages, merging a message into the previous one when the role repeats (Anthropic
/// wants alternating roles and all tool results of a turn in one user message).
#[derive(Default)]
struct MessageList {
    messages: Vec<Value>,
}

impl MessageList {
    fn push_text(&mut self, role: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.last_role() == Some(role) {
            self.push_blocks(role, vec![text_block(text)]);
        } else {
            self.messages.push(json!({"role": role, "content": text}));
        }
    }

    fn push_blocks(&mut self, role: &str, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        if self.last_role() == Some(role)
            && let Some(last) = self.messages.last_mut()
        {
            let content = &mut last["content"];
            if let Value::String(s) = content {
                *content = json!([{"type": "text", "text": std::mem::take(s)}]);
            }
            if let Value::Array(list) = content {
                list.extend(blocks);
                return;
            }
        }
        self.messages
            .push(json!({"role": role, "content": Value::Array(blocks)}));
    }

    fn last_role(&self) -> Option<&str> {
        self.messages.last()?.get("role")?.as_str()
    }
}

/// Converts the chat `messages` array. Errors: unknown roles, tool messages without
/// `tool_call_id`, untranslatable parts (see [`user_part`]) and bad tool-call arguments.
pub(super) fn convert(messages: &[Value]) -> Result<Converted, TranslateError> {
    let mut system_blocks: Vec<Value> = Vec::new();
    let mut list = MessageList::default();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let content = m.get("content").unwrap_or(&Value::Null);
        let cc = cache_control(m);
        match role {
            "system" | "developer" => push_system(content, cc, &mut system_blocks),
            "user" => match content {
                Value::String(s) if cc.is_none() => list.push_text("user", s),
                Value::String(s) if !s.is_empty() => {
                    let mut blocks = vec![text_block(s)];
                    mark_last(&mut blocks, cc);
                    list.push_blocks("user", blocks);
                }
                Value::Array(parts) => {
                    let mut blocks = parts_to_blocks(parts, i)?;
                    mark_last(&mut blocks, cc);
                    list.push_blocks("user", blocks);
                }
                _ => {}
            },
            "assistant" => {
                let mut blocks = assistant_blocks(m, i)?;
                mark_last(&mut blocks, cc);
                list.push_blocks("assistant", blocks);
            }
            "tool" => list.push_blocks("user", vec![tool_result(m, content, cc, i)?]),
            other => {
                return Err(TranslateError::unsupported(
                    format!("messages[{i}].role"),
                    format!("role `{other}` has no Anthropic equivalent"),
                ));
            }
        }
    }
    Ok(Converted {
        system: system_value(system_blocks),
        messages: list.messages,
    })
}

/// A `system` / `developer` message's text (a string, or its parts that have `text`, each
/// keeping its `cache_control`) as text blocks; the message's own `cache_control` goes on the
/// last of them ([`mark_last`]).
fn push_system(content: &Value, cc: Option<&Value>, system_blocks: &mut Vec<Value>) {
    let start = system_blocks.len();
    match content {
        Value::String(s) if !s.is_empty() => system_blocks.push(text_block(s)),
        Value::Array(parts) => {
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    let mut block = text_block(t);
                    if let Some(c) = cache_control(p) {
                        block["cache_control"] = c.clone();
                    }
                    system_blocks.push(block);
                }
            }
        }
        _ => {}
    }
    mark_last(&mut system_blocks[start..], cc);
}

/// Top-level `system`: none without text; text blocks when one carries `cache_control` (so the
/// breakpoint survives); else their texts joined with `\n\n` in one string.
fn system_value(system_blocks: Vec<Value>) -> Option<Value> {
    if system_blocks.is_empty() {
        None
    } else if system_blocks
        .iter()
        .any(|b| b.get("cache_control").is_some())
    {
        Some(Value::Array(system_blocks))
    } else {
        let texts: Vec<&str> = system_blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        Some(Value::String(texts.join("\n\n")))
    }
}

/// A `tool` message (index `i`) → a `tool_result` block for its `tool_call_id`: string content
/// as is, parts as blocks ([`user_part`]), the message's `cache_control` on the block.
/// Errors: no `tool_call_id` (400 naming `messages[i].tool_call_id`), untranslatable parts.
fn tool_result(
    m: &Value,
    content: &Value,
    cc: Option<&Value>,
    i: usize,
) -> Result<Value, TranslateError> {
    let id = m
        .get("tool_call_id")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            TranslateError::invalid(
                format!("messages[{i}].tool_call_id"),
                "required for role tool",
            )
        })?;
    let mut result = json!({"type": "tool_result", "tool_use_id": id});
    match content {
        Value::String(s) => result["content"] = s.as_str().into(),
        Value::Array(parts) => result["content"] = parts_to_blocks(parts, i)?.into(),
        _ => {}
    }
    if let Some(c) = cc {
        result["cache_control"] = c.clone();
    }
    Ok(result)
}

fn parts_to_blocks(parts: &[Value], i: usize) -> Result<Vec<Value>, TranslateError> {
    parts
        .iter()
        .enumerate()
        .map(|(j, p)| user_part(p, &format!("messages[{i}].content[{j}]")))
        .collect()
}

/// One user (or tool-result) content part → one Anthropic block: `text` → text, `image_url`
/// → image ([`anthropic_image_source`]), `file` with a base64 `data:` URL → document. The
/// part's `cache_control` is kept. Errors: other part types and file references
/// ([`TranslateError::Unsupported`]), a missing or unusable image URL (400 naming
/// `<path>.image_url.url`), file data that is not base64 (400 naming `<path>.file.file_data`).
fn user_part(p: &Value, path: &str) -> Result<Value, TranslateError> {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
    let mut block = match ty {
        "text" => text_block(p.get("text").and_then(Value::as_str).unwrap_or_default()),
        "image_url" => {
            let iu = p.get("image_url").unwrap_or(&Value::Null);
            let field = format!("{path}.image_url.url");
            let url = iu
                .as_str()
                .or_else(|| iu.get("url").and_then(Value::as_str))
                .ok_or_else(|| TranslateError::invalid(&field, "Field required"))?;
            json!({"type": "image", "source": anthropic_image_source(url, &field)?})
        }
        "file" => {
            let f = p.get("file").unwrap_or(&Value::Null);
            match f
                .get("file_data")
                .and_then(Value::as_str)
                .and_then(parse_data_url)
                .filter(|d| d.base64 && !d.media_type.is_empty())
            {
                Some(d) if !is_base64(d.data) => {
                    return Err(TranslateError::invalid(
                        format!("{path}.file.file_data"),
                        "malformed data URL: the data is not base64",
                    ));
                }
                Some(d) => {
                    json!({"type": "document", "source": {"type": "base64", "media_type": d.media_type, "data": d.data}})
                }
                None => {
                    return Err(TranslateError::unsupported(
                        format!("{path}.file"),
                        "only inline file_data (a base64 data: URL) can be sent to Anthropic",
                    ));
                }
            }
        }
        other => {
            return Err(TranslateError::unsupported(
                format!("{path}.type"),
                format!("content part `{other}` has no Anthropic equivalent"),
            ));
        }
    };
    if let Some(cc) = cache_control(p) {
        block["cache_control"] = cc.clone();
    }
    Ok(block)
}

fn assistant_blocks(m: &Value, i: usize) -> Result<Vec<Value>, TranslateError> {
    let mut blocks = Vec::new();
    // LiteLLM's carrier for signed thinking on the assistant turn: forwarded byte-for-byte.
    if let Some(tb) = m.get("thinking_blocks").and_then(Value::as_array) {
        for b in tb {
            if let Some("thinking" | "redacted_thinking") = b.get("type").and_then(Value::as_str) {
                blocks.push(b.clone());
            }
        }
    }
    match m.get("content").unwrap_or(&Value::Null) {
        Value::String(s) if !s.is_empty() => blocks.push(text_block(s)),
        Value::Array(parts) => {
            for p in parts {
                let text = p
                    .get("text")
                    .or_else(|| p.get("refusal"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !text.is_empty() {
                    let mut block = text_block(text);
                    if let Some(cc) = cache_control(p) {
                        block["cache_control"] = cc.clone();
                    }
                    blocks.push(block);
                }
            }
        }
        _ => {}
    }
    if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
        for (j, c) in calls.iter().enumerate() {
            let f = c.get("function").unwrap_or(&Value::Null);
            let args = f.get("arguments").and_then(Value::as_str).unwrap_or("");
            let field = || format!("messages[{i}].tool_calls[{j}].function.arguments");
            let input = if args.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str::<Value>(args)
                    .map_err(|e| TranslateError::invalid(field(), format!("not JSON: {e}")))?
            };
            if !input.is_object() {
                return Err(TranslateError::invalid(field(), "must be a JSON object"));
            }
            let mut block = json!({
                "type": "tool_use",
                "id": c.get("id").and_then(Value::as_str).unwrap_or_default(),
                "name": f.get("name").and_then(Value::as_str).unwrap_or_default(),
                "input": input,
            });
            if let Some(cc) = cache_control(c) {
                block["cache_control"] = cc.clone();
            }
            blocks.push(block);
        }
    }
    if m.get("function_call").is_some_and(|v| !v.is_null()) {
        return Err(TranslateError::unsupported(
            format!("messages[{i}].function_call"),
            "the deprecated function_call form is not translated; use tool_calls",
        ));
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: &str = r#"{"type":"ephemeral","ttl":"1h"}"#;

    fn hour() -> Value {
        serde_json::from_str(HOUR).unwrap()
    }

    #[test]
    fn cache_control_reaches_every_block_kind_with_its_ttl() {
        let cc = hour();
        let five = json!({"type": "ephemeral"});
        let out = convert(&[
            json!({"role":"system","content":"Be brief.","cache_control":cc}),
            json!({"role":"user","content":"Long document","cache_control":cc}),
            json!({"role":"assistant","content":[{"type":"text","text":"Noted.","cache_control":five}],
                   "tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"},"cache_control":cc}]}),
            json!({"role":"tool","tool_call_id":"call_1","content":"42","cache_control":cc}),
            json!({"role":"user","content":[
                {"type":"text","text":"a"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"},"cache_control":five}],
                "cache_control":cc}),
        ])
        .unwrap();
        assert_eq!(
            out.system,
            Some(json!([{"type":"text","text":"Be brief.","cache_control":cc}]))
        );
        let m = &out.messages;
        assert_eq!(
            m[0],
            json!({"role":"user","content":[{"type":"text","text":"Long document","cache_control":cc}]})
        );
        assert_eq!(m[1]["content"][0]["cache_control"], five);
        assert_eq!(m[1]["content"][1]["cache_control"], cc);
        assert_eq!(m[1]["content"][1]["type"], "tool_use");
        // The tool result and the next user turn share one user message.
        assert_eq!(
            m[2]["content"][0],
            json!({"type":"tool_result","tool_use_id":"call_1","content":"42","cache_control":cc})
        );
        // The message-level mark does not replace the part's own; the part's own wins.
        assert_eq!(m[2]["content"][1], json!({"type":"text","text":"a"}));
        assert_eq!(m[2]["content"][2]["cache_control"], five);
    }

    #[test]
    fn message_cache_control_goes_to_the_last_unmarked_block_not_thinking() {
        let cc = hour();
        let out = convert(&[
            json!({"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"cache_control":cc}),
            json!({"role":"assistant","content":"","thinking_blocks":[{"type":"thinking","thinking":"t","signature":"s"}],"cache_control":cc}),
        ])
        .unwrap();
        assert_eq!(
            out.messages[0]["content"],
            json!([{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":cc}])
        );
        assert!(out.messages[1]["content"][0].get("cache_control").is_none());
        // Without any cache_control the system prompt stays one string.
        let plain = convert(&[
            json!({"role":"system","content":"s"}),
            json!({"role":"user","content":"u"}),
        ])
        .unwrap();
        assert_eq!(plain.system, Some(json!("s")));
        assert_eq!(plain.messages[0], json!({"role":"user","content":"u"}));
    }

    #[test]
    fn images_and_bad_image_urls() {
        let out = convert(&[json!({"role":"user","content":[
            {"type":"image_url","image_url":{"url":"data:image/jpg;base64,/9j/4AAQ"}},
            {"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"high"}}]})])
        .unwrap();
        assert_eq!(
            out.messages[0]["content"],
            json!([
                {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}},
                {"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}])
        );
        let err = convert(&[
            json!({"role":"user","content":"hi"}),
            json!({"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64"}}]}),
        ])
        .err()
        .unwrap();
        assert_eq!(err.param(), Some("messages[1].content[0].image_url.url"));
        assert_eq!(err.status(), 400);
    }

    #[test]
    fn file_data_must_be_base64() {
        let file = |data: &str| json!({"role":"user","content":[{"type":"file","file":{"file_data": format!("data:application/pdf;base64,{data}")}}]});
        let out = convert(&[file("JVBERi0=")]).unwrap();
        assert_eq!(
            out.messages[0]["content"],
            json!([{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}])
        );
        let err = convert(&[file("not base64!")]).err().unwrap();
        assert_eq!(err.param(), Some("messages[0].content[0].file.file_data"));
        assert_eq!(err.status(), 400);
    }
}
