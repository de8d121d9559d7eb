//! OpenAI Responses request → OpenAI Chat request.

use serde_json::{Map, Value, json};

use super::content::{cache_control, content_part, message, strip_cache_control};
use super::response::THINKING_PREFIX;
use crate::TranslateError;
use crate::common::object;
use crate::options::{MaxTokensField, RequestOptions};

/// Translates an OpenAI Responses request body (`POST /v1/responses`) into a Chat Completions
/// request body.
///
/// `history` is the chat conversation of the earlier turns when the request has a
/// `previous_response_id` (the gateway keeps it, see [`super::history_after`]); it goes after the
/// `instructions` (which are not carried over between turns, per the Responses API) and before
/// this turn's `input`.
///
/// Mapping:
/// - `instructions` → a first `system` message; `input` string → one user message; input items:
///   messages (`input_text`/`output_text` → text, `input_image` → `image_url`, `input_file` with
///   `file_data` → `file`), `function_call` → assistant `tool_calls` (consecutive calls, and a
///   preceding assistant message, form one assistant message), `function_call_output` → `tool`
///   messages (image parts of an output follow in a user message, as for Anthropic tool
///   results); a `reasoning` item's summary text goes to the next assistant message's
///   `reasoning_content` (unless [`RequestOptions::drop_reasoning_history`]) and, toward
///   Anthropic only, the signed thinking blocks in its `encrypted_content` (written by
///   [`super::response`]) to that message's `thinking_blocks`, so Anthropic gets them back intact.
/// - `tools`: flat `{"type":"function","name",...}` → nested `{"type":"function","function":{...}}`.
/// - `tool_choice` keeps meaning and shape: `"auto"`/`"none"`/`"required"` stay strings,
///   `{"type":"function","name"}` → `{"type":"function","function":{"name"}}`,
///   `allowed_tools` → chat `allowed_tools`.
/// - `max_output_tokens` → `max_completion_tokens` or `max_tokens`
///   ([`RequestOptions::max_tokens_field`]); `reasoning.effort` → `reasoning_effort`;
///   `text.format` → `response_format` (`json_schema` nested under `json_schema`);
///   `text.verbosity` → `verbosity`; `stream: true` → plus `stream_options.include_usage: true`.
/// - kept as is: `temperature`, `top_p`, `parallel_tool_calls`, `user`, `safety_identifier`,
///   `prompt_cache_key`, `service_tier`, `top_logprobs`.
///
/// Dropped: `previous_response_id` (resolved by the gateway into `history`), `store`, `include`,
/// `truncation`, `background`, `metadata`, `conversation`, `prompt`, `cache_control` (kept
/// only toward Anthropic, see [`crate::responses_to_anthropic::request`]), and unknown fields.
/// Errors: hosted tools (web/file search, computer use, MCP...), `item_reference` items and
/// `file_id` references → [`TranslateError::Unsupported`] naming the field; a malformed `data:`
/// image URL → [`TranslateError::InvalidRequest`] naming `input[i].content[j].image_url`.
pub fn request(
    req: &Value,
    opts: &RequestOptions,
    history: &[Value],
) -> Result<Value, TranslateError> {
    request_with(req, opts, history, false)
}

/// [`request`], for the intermediate chat document toward Anthropic when `anthropic`: signed
/// `thinking_blocks` on assistant messages and every `cache_control` are kept (a Chat upstream
/// would reject or ignore them, so they are removed otherwise), and images are checked against
/// what Anthropic accepts ([`crate::images::anthropic_image_source`]), the error naming the Responses field.
pub(crate) fn request_with(
    req: &Value,
    opts: &RequestOptions,
    history: &[Value],
    anthropic: bool,
) -> Result<Value, TranslateError> {
    let r = object(req, "body")?;
    let model = match &opts.upstream_model {
        Some(m) => m.as_str(),
        None => r.get("model").and_then(Value::as_str).unwrap_or_default(),
    };
    let mut out = Map::new();
    out.insert("model".into(), model.into());
    let messages = chat_messages(r, opts, history, anthropic)?;
    out.insert("messages".into(), Value::Array(messages));

    if let Some(n) = r.get("max_output_tokens").filter(|v| v.is_u64()) {
        let field = match opts.max_tokens_field {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        };
        out.insert(field.into(), n.clone());
    }
    for key in [
        "temperature",
        "top_p",
        "parallel_tool_calls",
        "user",
        "safety_identifier",
        "prompt_cache_key",
        "service_tier",
        "top_logprobs",
    ] {
        if let Some(v) = r.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    let tools = chat_tools(r, anthropic)?;
    if !tools.is_empty() {
        out.insert("tools".into(), Value::Array(tools));
    }
    if let Some(tc) = r.get("tool_choice").filter(|v| !v.is_null()) {
        out.insert("tool_choice".into(), tool_choice(tc)?);
    }
    if let Some(e) = r
        .get("reasoning")
        .and_then(|x| x.get("effort"))
        .filter(|v| v.is_string())
    {
        out.insert("reasoning_effort".into(), e.clone());
    }
    if let Some(text) = r.get("text") {
        text_options(text, &mut out);
    }
    if r.get("stream").and_then(Value::as_bool) == Some(true) {
        out.insert("stream".into(), true.into());
        out.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(out))
}

/// The chat `messages`: `instructions` as a first `system` message, `history`, then the
/// messages of `input` ([`input_messages`]). Toward a Chat upstream (`!anthropic`),
/// `cache_control` and `thinking_blocks` are removed; `reasoning_content` is removed with
/// [`RequestOptions::drop_reasoning_history`].
fn chat_messages(
    r: &Map<String, Value>,
    opts: &RequestOptions,
    history: &[Value],
    anthropic: bool,
) -> Result<Vec<Value>, TranslateError> {
    let mut messages = Vec::with_capacity(history.len() + 2);
    if let Some(i) = r
        .get("instructions")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        messages.push(json!({"role": "system", "content": i}));
    }
    messages.extend_from_slice(history);
    input_messages(
        r.get("input").unwrap_or(&Value::Null),
        "input",
        anthropic,
        &mut messages,
    )?;
    for m in &mut messages {
        if !anthropic {
            strip_cache_control(m);
        }
        if let Some(obj) = m.as_object_mut() {
            if !anthropic {
                obj.remove("thinking_blocks");
            }
            if opts.drop_reasoning_history {
                obj.remove("reasoning_content");
            }
        }
    }
    Ok(messages)
}

/// Responses `tools` (flat function tools) → chat tools `{"type":"function","function":{name,
/// description, parameters, strict}}`, a tool's `cache_control` kept when `anthropic`.
/// Errors: a hosted tool → [`TranslateError::Unsupported`] naming `tools[i].type`.
fn chat_tools(r: &Map<String, Value>, anthropic: bool) -> Result<Vec<Value>, TranslateError> {
    let mut tools = Vec::new();
    for (i, t) in r
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let ty = t.get("type").and_then(Value::as_str).unwrap_or_default();
        if ty != "function" {
            return Err(TranslateError::unsupported(
                format!("tools[{i}].type"),
                format!("hosted tool `{ty}` is only available on OpenAI Responses deployments"),
            ));
        }
        let mut f = Map::new();
        for key in ["name", "description", "parameters", "strict"] {
            if let Some(v) = t.get(key).filter(|v| !v.is_null()) {
                f.insert(key.into(), v.clone());
            }
        }
        let mut tool = json!({"type": "function", "function": f});
        if anthropic && let Some(cc) = cache_control(t) {
            tool["cache_control"] = cc.clone();
        }
        tools.push(tool);
    }
    Ok(tools)
}

/// Responses `text` → chat `response_format` (`json_schema` with its `name`, `description`,
/// `schema`, `strict` nested under `json_schema`; `json_object` as is; `text` dropped) and
/// `verbosity`.
fn text_options(text: &Value, out: &mut Map<String, Value>) {
    if let Some(f) = text.get("format") {
        match f.get("type").and_then(Value::as_str) {
            Some("json_schema") => {
                let mut js = Map::new();
                for key in ["name", "description", "schema", "strict"] {
                    if let Some(v) = f.get(key).filter(|v| !v.is_null()) {
                        js.insert(key.into(), v.clone());
                    }
                }
                out.insert(
                    "response_format".into(),
                    json!({"type": "json_schema", "json_schema": js}),
                );
            }
            Some("json_object") => {
                out.insert("response_format".into(), json!({"type": "json_object"}));
            }
            _ => {}
        }
    }
    if let Some(v) = text.get("verbosity").filter(|v| v.is_string()) {
        out.insert("verbosity".into(), v.clone());
    }
}

/// Responses `tool_choice` → chat `tool_choice`, same meaning, chat's shape.
fn tool_choice(tc: &Value) -> Result<Value, TranslateError> {
    if let Some(s) = tc.as_str() {
        return match s {
            "auto" | "none" | "required" => Ok(tc.clone()),
            other => Err(TranslateError::invalid(
                "tool_choice",
                format!("unknown value `{other}`"),
            )),
        };
    }
    match tc.get("type").and_then(Value::as_str) {
        Some("function") => {
            let name = tc
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| TranslateError::invalid("tool_choice.name", "required"))?;
            Ok(json!({"type": "function", "function": {"name": name}}))
        }
        Some("allowed_tools") => {
            let tools: Vec<Value> = tc
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .map(|n| json!({"type": "function", "function": {"name": n}}))
                .collect();
            let mode = tc.get("mode").and_then(Value::as_str).unwrap_or("auto");
            Ok(json!({"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}))
        }
        other => Err(TranslateError::unsupported(
            "tool_choice",
            format!("tool choice `{}` names a hosted tool", other.unwrap_or("?")),
        )),
    }
}

/// Appends the chat messages for a Responses `input` (string or item array). Also used on a
/// Response's `output` items, which are valid input items. `cache_control` on items and
/// content parts is copied to the chat messages and parts; `anthropic` checks images as
/// [`request_with`] says.
pub(crate) fn input_messages(
    input: &Value,
    path: &str,
    anthropic: bool,
    out: &mut Vec<Value>,
) -> Result<(), TranslateError> {
    let items = match input {
        Value::String(s) => {
            out.push(json!({"role": "user", "content": s}));
            return Ok(());
        }
        Value::Array(items) => items,
        Value::Null => return Ok(()),
        _ => {
            return Err(TranslateError::invalid(
                path,
                "must be a string or an array of items",
            ));
        }
    };
    // Image parts of function_call_output items, sent after the run of tool messages.
    let mut pending: Vec<Value> = Vec::new();
    // A reasoning item's text and signed thinking blocks, for the next assistant message.
    let mut reasoning: Option<(String, Vec<Value>)> = None;
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let ty = item_type(item);
        if ty != "function_call_output" && !pending.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut pending)}));
        }
        match ty {
            "message" => message(item, &p, anthropic, out)?,
            "function_call" => push_function_call(item, out),
            "function_call_output" => {
                out.push(function_call_output(item, &p, anthropic, &mut pending)?);
            }
            "reasoning" => add_reasoning(item, &mut reasoning),
            other => {
                return Err(TranslateError::unsupported(
                    format!("{p}.type"),
                    format!("input item `{other}` cannot be sent to a Chat Completions deployment"),
                ));
            }
        }
        if let Some(last) = out.last_mut().filter(|m| m["role"] == "assistant")
            && let Some((text, blocks)) = reasoning.take()
        {
            if !text.is_empty() {
                last["reasoning_content"] = text.into();
            }
            if !blocks.is_empty() {
                last["thinking_blocks"] = blocks.into();
            }
        }
    }
    if !pending.is_empty() {
        out.push(json!({"role": "user", "content": pending}));
    }
    Ok(())
}

/// An input item's `type`; an item without one is a `message` when it has a `role` (the
/// Responses API's easy input message), else `""`.
fn item_type(item: &Value) -> &str {
    item.get("type")
        .and_then(Value::as_str)
        .unwrap_or(if item.get("role").is_some() {
            "message"
        } else {
            ""
        })
}

/// A `function_call` item → a chat tool call `{id: call_id, type: function, function: {name,
/// arguments}}`, added to the last message when it is the assistant's, else in a new assistant
/// message with `content: null`.
fn push_function_call(item: &Value, out: &mut Vec<Value>) {
    let call = json!({
        "id": item.get("call_id").and_then(Value::as_str).unwrap_or_default(),
        "type": "function",
        "function": {
            "name": item.get("name").and_then(Value::as_str).unwrap_or_default(),
            "arguments": item.get("arguments").and_then(Value::as_str).unwrap_or_default(),
        }
    });
    match out.last_mut() {
        Some(last) if last["role"] == "assistant" => {
            if let Some(calls) = last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                calls.push(call);
            } else {
                last["tool_calls"] = json!([call]);
            }
        }
        _ => out.push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
    }
}

/// A `function_call_output` item at `p` → a chat `tool` message. An `output` array's text
/// parts are joined with `\n` into its content; its image parts go to `pending` (after a text
/// part naming the call), for the user message that follows the tool messages.
/// Errors: as for [`content_part`], naming `<p>.output[j]`.
fn function_call_output(
    item: &Value,
    p: &str,
    anthropic: bool,
    pending: &mut Vec<Value>,
) -> Result<Value, TranslateError> {
    let id = item
        .get("call_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let content = match item.get("output") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            let mut images = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                match content_part(part, &format!("{p}.output[{j}]"), anthropic)? {
                    Some(t) if t["type"] == "text" => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t["text"].as_str().unwrap_or_default());
                    }
                    Some(other) => images.push(other),
                    None => {}
                }
            }
            if !images.is_empty() {
                pending.push(
                    json!({"type": "text", "text": format!("Content returned by tool call {id}:")}),
                );
                pending.extend(images);
            }
            text
        }
        _ => String::new(),
    };
    Ok(json!({"role": "tool", "tool_call_id": id, "content": content}))
}

/// A `reasoning` item: its summary texts (joined with a blank line) and the signed thinking
/// blocks in its `encrypted_content` (after [`THINKING_PREFIX`]) are added to `reasoning`, for
/// the next assistant message.
fn add_reasoning(item: &Value, reasoning: &mut Option<(String, Vec<Value>)>) {
    let text: Vec<&str> = item
        .get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    let blocks = item
        .get("encrypted_content")
        .and_then(Value::as_str)
        .and_then(|e| e.strip_prefix(THINKING_PREFIX))
        .and_then(|j| serde_json::from_str::<Vec<Value>>(j).ok())
        .unwrap_or_default();
    let entry = reasoning.get_or_insert_with(Default::default);
    entry.0.push_str(&text.join("\n\n"));
    entry.1.extend(blocks);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(choice: Value) -> Value {
        let body = json!({"model":"m","input":"hi","tools":[{"type":"function","name":"foo","parameters":{"type":"object"}}],"tool_choice":choice});
        request(&body, &RequestOptions::default(), &[]).unwrap()["tool_choice"].clone()
    }

    #[test]
    fn tool_choice_keeps_meaning_and_shape() {
        // Each choice keeps its meaning: `none` stays `none` (never `auto`), a named tool
        // becomes chat's function object.
        assert_eq!(tc(json!("none")), json!("none"));
        assert_eq!(tc(json!("auto")), json!("auto"));
        assert_eq!(tc(json!("required")), json!("required"));
        assert_eq!(
            tc(json!({"type":"function","name":"foo"})),
            json!({"type":"function","function":{"name":"foo"}})
        );
        assert_eq!(
            tc(
                json!({"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"foo"}]})
            ),
            json!({"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"foo"}}]}})
        );
    }

    #[test]
    fn hosted_tools_are_unsupported() {
        let body = json!({"model":"m","input":"hi","tools":[{"type":"web_search"}]});
        let err = request(&body, &RequestOptions::default(), &[]).unwrap_err();
        assert_eq!(err.param(), Some("tools[0].type"));
    }

    #[test]
    fn function_calls_merge_into_one_assistant_message() {
        let body = json!({"model":"m","input":[
            {"role":"user","content":"q"},
            {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
            {"type":"function_call","call_id":"call_1","name":"a","arguments":"{}"},
            {"type":"function_call","call_id":"call_2","name":"b","arguments":"{\"x\":1}"},
            {"type":"function_call_output","call_id":"call_1","output":"1"},
            {"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"https://x/i.png"}]}]});
        let out = request(&body, &RequestOptions::default(), &[]).unwrap();
        let m = out["messages"].as_array().unwrap();
        assert_eq!(m.len(), 5);
        assert_eq!(m[1]["content"], "Checking.");
        assert_eq!(m[1]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(
            m[3],
            json!({"role":"tool","tool_call_id":"call_2","content":"see"})
        );
        assert_eq!(
            m[4]["content"][1],
            json!({"type":"image_url","image_url":{"url":"https://x/i.png"}})
        );
    }
}
