//! Anthropic Messages request → OpenAI Chat request (wire-formats.md §7.2).

use serde_json::{Map, Value, json};

use crate::TranslateError;
use crate::common::object;
use crate::images::openai_image_url;
use crate::options::{MaxTokensField, RequestOptions, reasoning_effort_for_budget};

/// Translates an Anthropic Messages request body into an OpenAI Chat Completions request body.
///
/// Mapping (wire-formats.md §7.2):
/// - `system` (string or text blocks, joined with `\n\n`) → a first `system` message.
/// - user `text`/`image` blocks → `text`/`image_url` parts (base64 → `data:` URL, url → URL,
///   see [`openai_image_url`]: a base64 source without `media_type` or `data` is a 400);
///   `document` blocks with base64 data → `file` parts. A user turn that is a single string
///   stays a string.
/// - each `tool_result` → its own `tool` message, emitted before the rest of that user turn
///   (OpenAI requires tool messages right after the assistant's `tool_calls`); `is_error: true`
///   prefixes the content with `Error: `. Images inside a tool result (OpenAI tool messages
///   carry text only) are sent in a user message right after the tool messages, introduced by a
///   text part naming the tool call, so they reach the model.
/// - assistant `text` → `content`, `tool_use` → `tool_calls` (`arguments` = compact JSON of
///   `input`), `thinking` → the non-standard `reasoning_content` (unless
///   [`RequestOptions::drop_reasoning_history`]; never into `content`), `redacted_thinking`
///   dropped.
/// - `tools` → `{"type":"function","function":{name, description, parameters, strict?}}`;
///   `tool_choice` `auto`/`any`/`tool`/`none` → `"auto"`/`"required"`/function/`"none"`;
///   `disable_parallel_tool_use: true` → `parallel_tool_calls: false`.
/// - `max_tokens` → `max_completion_tokens` or `max_tokens` ([`RequestOptions::max_tokens_field`]);
///   `stop_sequences` → `stop`; `temperature`, `top_p` kept; `metadata.user_id` → `user`;
///   `stream: true` → also `stream_options.include_usage: true` (the usage the Anthropic
///   client's `message_delta` needs).
/// - `thinking.budget_tokens` → `reasoning_effort` ([`reasoning_effort_for_budget`]; `adaptive`
///   → `medium`) when [`RequestOptions::thinking_to_reasoning_effort`] is set; `output_config.format`
///   `json_schema` → `response_format` `json_schema`.
///
/// Dropped: `top_k`, `cache_control` everywhere, `service_tier`, `container`, `citations`, and
/// any field this function does not know. Errors: missing `max_tokens` or `messages` → 400
/// [`TranslateError::InvalidRequest`] (the Messages API requires both); server tools (typed
/// tools other than `custom`) and `file` sources → [`TranslateError::Unsupported`].
pub fn request(msg: &Value, opts: &RequestOptions) -> Result<Value, TranslateError> {
    let req = object(msg, "body")?;
    let model = match &opts.upstream_model {
        Some(m) => m.as_str(),
        None => req.get("model").and_then(Value::as_str).unwrap_or_default(),
    };
    let max_tokens = required(req, "max_tokens", Value::as_u64, "a non-negative integer")?;
    let messages = required(req, "messages", Value::as_array, "a list")?;

    let mut out = Map::new();
    out.insert("model".into(), model.into());
    let chat_messages = chat_messages(req, messages, opts)?;
    out.insert("messages".into(), Value::Array(chat_messages));

    let field = match opts.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        MaxTokensField::MaxTokens => "max_tokens",
    };
    out.insert(field.into(), max_tokens.into());
    if let Some(stops) = req.get("stop_sequences").and_then(Value::as_array)
        && !stops.is_empty()
    {
        out.insert("stop".into(), Value::Array(stops.clone()));
    }
    for key in ["temperature", "top_p"] {
        if let Some(v) = req.get(key).filter(|v| v.is_number()) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(user) = req
        .get("metadata")
        .and_then(|m| m.get("user_id"))
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        out.insert("user".into(), user.into());
    }

    let tools = convert_tools(req)?;
    let has_tools = !tools.is_empty();
    if has_tools {
        out.insert("tools".into(), Value::Array(tools));
    }
    if let Some(tc) = req.get("tool_choice").filter(|_| has_tools) {
        out.insert("tool_choice".into(), tool_choice(tc)?);
        if tc.get("disable_parallel_tool_use").and_then(Value::as_bool) == Some(true) {
            out.insert("parallel_tool_calls".into(), false.into());
        }
    }

    if opts.thinking_to_reasoning_effort
        && let Some(e) = req.get("thinking").and_then(reasoning_effort)
    {
        out.insert("reasoning_effort".into(), e.into());
    }
    if let Some(format) = req.get("output_config").and_then(|c| c.get("format"))
        && format.get("type").and_then(Value::as_str) == Some("json_schema")
        && let Some(schema) = format.get("schema")
    {
        out.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {"name": "response", "schema": schema, "strict": true}}),
        );
    }
    if req.get("stream").and_then(Value::as_bool) == Some(true) {
        out.insert("stream".into(), true.into());
        out.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(out))
}

/// The chat `messages`: `system` (a string, or text blocks joined with `\n\n`) as a first
/// `system` message, then each turn ([`user_turn`], [`assistant_turn`]).
/// Errors: a role other than user or assistant → 400 naming `messages[i].role`; a turn's own
/// errors.
fn chat_messages(
    req: &Map<String, Value>,
    messages: &[Value],
    opts: &RequestOptions,
) -> Result<Vec<Value>, TranslateError> {
    let mut chat_messages = Vec::with_capacity(messages.len() + 1);
    match req.get("system") {
        Some(Value::String(s)) if !s.is_empty() => {
            chat_messages.push(json!({"role": "system", "content": s}));
        }
        Some(Value::Array(blocks)) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            if !texts.is_empty() {
                chat_messages.push(json!({"role": "system", "content": texts.join("\n\n")}));
            }
        }
        _ => {}
    }
    for (i, m) in messages.iter().enumerate() {
        match m.get("role").and_then(Value::as_str) {
            Some("user") => user_turn(m, i, &mut chat_messages)?,
            Some("assistant") => {
                if let Some(a) = assistant_turn(m, i, opts)? {
                    chat_messages.push(a);
                }
            }
            _ => {
                return Err(TranslateError::invalid(
                    format!("messages[{i}].role"),
                    "must be user or assistant",
                ));
            }
        }
    }
    Ok(chat_messages)
}

/// Anthropic `tool_choice` → chat `tool_choice`: `auto` → `"auto"`, `any` → `"required"`,
/// `none` → `"none"`, `tool` → `{"type":"function","function":{"name"}}`.
/// Errors: a `tool` choice without `name` (400 naming `tool_choice.name`), any other type
/// (400 naming `tool_choice.type`).
fn tool_choice(tc: &Value) -> Result<Value, TranslateError> {
    Ok(match tc.get("type").and_then(Value::as_str) {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => {
            let name = tc
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| TranslateError::invalid("tool_choice.name", "Field required"))?;
            json!({"type": "function", "function": {"name": name}})
        }
        _ => {
            return Err(TranslateError::invalid(
                "tool_choice.type",
                "must be auto, any, tool or none",
            ));
        }
    })
}

/// Anthropic `thinking` → chat `reasoning_effort`: `enabled` by its `budget_tokens`
/// ([`reasoning_effort_for_budget`]), `adaptive` → `medium`, anything else → none.
fn reasoning_effort(th: &Value) -> Option<&'static str> {
    match th.get("type").and_then(Value::as_str) {
        Some("enabled") => Some(reasoning_effort_for_budget(
            th.get("budget_tokens").and_then(Value::as_u64).unwrap_or(0),
        )),
        // The model picks its own depth: the middle setting.
        Some("adaptive") => Some("medium"),
        _ => None,
    }
}

/// An OpenAI `image_url` part for an Anthropic image source ([`openai_image_url`]).
fn image_part(source: &Value, path: &str) -> Result<Value, TranslateError> {
    Ok(json!({"type": "image_url", "image_url": {"url": openai_image_url(source, path)?}}))
}

/// One user content block (not a tool result) → one OpenAI part.
fn user_part(b: &Value, path: &str) -> Result<Option<Value>, TranslateError> {
    Ok(match b.get("type").and_then(Value::as_str) {
        Some("text") => Some(
            json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or_default()}),
        ),
        Some("image") => Some(image_part(b.get("source").unwrap_or(&Value::Null), path)?),
        Some("document") => {
            let s = b.get("source").unwrap_or(&Value::Null);
            match s.get("type").and_then(Value::as_str) {
                Some("base64") => Some(json!({"type": "file", "file": {"file_data": format!(
                    "data:{};base64,{}",
                    s.get("media_type").and_then(Value::as_str).unwrap_or("application/pdf"),
                    s.get("data").and_then(Value::as_str).unwrap_or_default())}})),
                Some("text") => Some(
                    json!({"type": "text", "text": s.get("data").and_then(Value::as_str).unwrap_or_default()}),
                ),
                _ => {
                    return Err(TranslateError::unsupported(
                        format!("{path}.source"),
                        "only base64 and text documents translate to OpenAI",
                    ));
                }
            }
        }
        // Thinking in a user turn is not valid Anthropic input; anything else is dropped.
        _ => None,
    })
}

fn user_turn(m: &Value, i: usize, out: &mut Vec<Value>) -> Result<(), TranslateError> {
    let blocks = match m.get("content") {
        Some(Value::String(s)) => {
            out.push(json!({"role": "user", "content": s}));
            return Ok(());
        }
        Some(Value::Array(b)) => b,
        _ => return Ok(()),
    };
    let mut parts: Vec<Value> = Vec::new();
    // Images returned by tools, sent as a user message after the tool messages.
    let mut tool_images: Vec<Value> = Vec::new();
    for (j, b) in blocks.iter().enumerate() {
        let path = format!("messages[{i}].content[{j}]");
        if b.get("type").and_then(Value::as_str) != Some("tool_result") {
            if let Some(p) = user_part(b, &path)? {
                parts.push(p);
            }
            continue;
        }
        let id = b
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut text = String::new();
        let mut images = Vec::new();
        match b.get("content") {
            Some(Value::String(s)) => text.push_str(s),
            Some(Value::Array(items)) => {
                for (k, item) in items.iter().enumerate() {
                    match item.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(
                                item.get("text").and_then(Value::as_str).unwrap_or_default(),
                            );
                        }
                        Some("image") => images.push(image_part(
                            item.get("source").unwrap_or(&Value::Null),
                            &format!("{path}.content[{k}]"),
                        )?),
                        _ => {
                            if let Some(p) = user_part(item, &format!("{path}.content[{k}]"))? {
                                images.push(p);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        if b.get("is_error").and_then(Value::as_bool) == Some(true) {
            text.insert_str(0, "Error: ");
        }
        if !images.is_empty() {
            tool_images.push(
                json!({"type": "text", "text": format!("Content returned by tool call {id}:")}),
            );
            tool_images.extend(images);
        }
        out.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
    }
    tool_images.extend(parts);
    if tool_images.is_empty() {
        return Ok(());
    }
    // A lone text part stays a plain string, the shape most servers accept.
    let content = match tool_images.as_slice() {
        [p] if p.get("type").and_then(Value::as_str) == Some("text") => p["text"].clone(),
        _ => Value::Array(tool_images),
    };
    out.push(json!({"role": "user", "content": content}));
    Ok(())
}

fn assistant_turn(
    m: &Value,
    i: usize,
    opts: &RequestOptions,
) -> Result<Option<Value>, TranslateError> {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    match m.get("content") {
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or_default()),
                    Some("thinking") => reasoning.push_str(b.get("thinking").and_then(Value::as_str).unwrap_or_default()),
                    Some("tool_use") => calls.push(json!({
                        "id": b.get("id").and_then(Value::as_str).unwrap_or_default(),
                        "type": "function",
                        "function": {
                            "name": b.get("name").and_then(Value::as_str).unwrap_or_default(),
                            "arguments": b.get("input").cloned().unwrap_or_else(|| json!({})).to_string(),
                        }
                    })),
                    _ => {}
                }
            }
        }
        _ => {
            return Err(TranslateError::invalid(
                format!("messages[{i}].content"),
                "must be a string or an array of blocks",
            ));
        }
    }
    if text.is_empty() && calls.is_empty() && reasoning.is_empty() {
        return Ok(None);
    }
    let mut a = Map::new();
    a.insert("role".into(), "assistant".into());
    a.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            text.into()
        },
    );
    if !calls.is_empty() {
        a.insert("tool_calls".into(), Value::Array(calls));
    }
    if !reasoning.is_empty() && !opts.drop_reasoning_history {
        a.insert("reasoning_content".into(), reasoning.into());
    }
    Ok(Some(Value::Object(a)))
}

fn convert_tools(req: &Map<String, Value>) -> Result<Vec<Value>, TranslateError> {
    let mut out = Vec::new();
    for (i, t) in req
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(ty) = t.get("type").and_then(Value::as_str)
            && ty != "custom"
        {
            return Err(TranslateError::unsupported(
                format!("tools[{i}].type"),
                format!("server tool `{ty}` is only available on Anthropic deployments"),
            ));
        }
        let name = t
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| TranslateError::invalid(format!("tools[{i}].name"), "Field required"))?;
        let mut f = Map::new();
        f.insert("name".into(), name.into());
        if let Some(d) = t.get("description").and_then(Value::as_str) {
            f.insert("description".into(), d.into());
        }
        f.insert(
            "parameters".into(),
            t.get("input_schema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        );
        if let Some(s) = t.get("strict").filter(|s| s.is_boolean()) {
            f.insert("strict".into(), s.clone());
        }
        out.push(json!({"type": "function", "function": f}));
    }
    Ok(out)
}

/// A required field of `req`, read by `get`: absent or null is "Field required" (Anthropic's
/// wording), present with the wrong JSON type says which type it must be (e.g. `max_tokens:
/// "20"` is "Input should be a non-negative integer", not "Field required").
fn required<'v, T>(
    req: &'v Map<String, Value>,
    field: &'static str,
    get: impl FnOnce(&'v Value) -> Option<T>,
    expected: &str,
) -> Result<T, TranslateError> {
    match req.get(field) {
        None | Some(Value::Null) => Err(TranslateError::invalid(field, "Field required")),
        Some(v) => get(v)
            .ok_or_else(|| TranslateError::invalid(field, format!("Input should be {expected}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_max_tokens_is_a_400() {
        let err = request(
            &json!({"model":"m","messages":[{"role":"user","content":"hi"}]}),
            &RequestOptions::default(),
        )
        .unwrap_err();
        assert_eq!((err.status(), err.param()), (400, Some("max_tokens")));
        assert!(err.to_string().contains("Field required"), "{err}");
    }

    #[test]
    fn wrongly_typed_required_fields_say_the_type() {
        let err = request(
            &json!({"model":"m","max_tokens":"20","messages":[{"role":"user","content":"hi"}]}),
            &RequestOptions::default(),
        )
        .unwrap_err();
        assert_eq!((err.status(), err.param()), (400, Some("max_tokens")));
        assert!(
            err.to_string()
                .contains("Input should be a non-negative integer"),
            "{err}"
        );
        let err = request(
            &json!({"model":"m","max_tokens":20,"messages":"hi"}),
            &RequestOptions::default(),
        )
        .unwrap_err();
        assert_eq!(err.param(), Some("messages"));
        assert!(err.to_string().contains("Input should be a list"), "{err}");
    }

    #[test]
    fn tool_choice_keeps_meaning() {
        // Any → "required", none → "none", tool → function object.
        let tc = |choice: Value| {
            let body = json!({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],
                "tools":[{"name":"foo","input_schema":{"type":"object"}}],"tool_choice":choice});
            request(&body, &RequestOptions::default()).unwrap()
        };
        assert_eq!(tc(json!({"type":"auto"}))["tool_choice"], "auto");
        assert_eq!(tc(json!({"type":"any"}))["tool_choice"], "required");
        assert_eq!(tc(json!({"type":"none"}))["tool_choice"], "none");
        let out = tc(json!({"type":"tool","name":"foo","disable_parallel_tool_use":true}));
        assert_eq!(
            out["tool_choice"],
            json!({"type":"function","function":{"name":"foo"}})
        );
        assert_eq!(out["parallel_tool_calls"], false);
    }

    #[test]
    fn thinking_goes_to_reasoning_content_never_content() {
        let body = json!({"model":"m","max_tokens":5,"messages":[
            {"role":"user","content":"q"},
            {"role":"assistant","content":[{"type":"thinking","thinking":"step 1…","signature":"sig-x"},
                {"type":"text","text":"Let me look."},
                {"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]}]});
        let out = request(&body, &RequestOptions::default()).unwrap();
        let a = &out["messages"][1];
        assert_eq!(a["reasoning_content"], "step 1…");
        assert_eq!(a["content"], "Let me look.");
        assert_eq!(a["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
        let dropped = request(
            &body,
            &RequestOptions {
                drop_reasoning_history: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(dropped["messages"][1].get("reasoning_content").is_none());
    }

    #[test]
    fn thinking_config_becomes_reasoning_effort_only_when_enabled_for_the_deployment() {
        let body = |t: Value| json!({"model":"m","max_tokens":5,"messages":[],"thinking":t});
        let on = RequestOptions {
            thinking_to_reasoning_effort: true,
            ..Default::default()
        };
        let effort = |t: Value, o: &RequestOptions| {
            request(&body(t), o)
                .unwrap()
                .get("reasoning_effort")
                .cloned()
        };
        assert_eq!(
            effort(json!({"type":"enabled","budget_tokens":2048}), &on),
            Some(json!("low"))
        );
        assert_eq!(
            effort(json!({"type":"enabled","budget_tokens":8000}), &on),
            Some(json!("medium"))
        );
        assert_eq!(
            effort(json!({"type":"enabled","budget_tokens":32000}), &on),
            Some(json!("high"))
        );
        assert_eq!(
            effort(json!({"type":"adaptive"}), &on),
            Some(json!("medium"))
        );
        assert_eq!(effort(json!({"type":"disabled"}), &on), None);
        assert_eq!(
            effort(
                json!({"type":"enabled","budget_tokens":8000}),
                &RequestOptions::default()
            ),
            None
        );
    }

    #[test]
    fn server_tools_are_unsupported() {
        let body = json!({"model":"m","max_tokens":5,"messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]});
        let err = request(&body, &RequestOptions::default()).unwrap_err();
        assert_eq!(err.param(), Some("tools[0].type"));
    }
}
