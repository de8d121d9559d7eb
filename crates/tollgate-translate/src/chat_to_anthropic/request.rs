//! OpenAI Chat request → Anthropic Messages request (wire-formats.md §7.1).

use serde_json::{Map, Value, json};

use crate::TranslateError;
use crate::common::{object, parse_data_url};
use crate::options::{RequestOptions, default_max_tokens, thinking_budget};

/// Translates an OpenAI Chat Completions request body into an Anthropic Messages request body.
///
/// Mapping (wire-formats.md §7.1):
/// - `system` and `developer` messages, wherever they are, are joined in order with `\n\n` into
///   the top-level `system` string; if any of their text parts carries `cache_control`, `system`
///   is an array of text blocks instead so the breakpoints survive.
/// - user text/image parts become `text`/`image` blocks (`data:` URLs → `base64` source, other
///   URLs → `url` source); a `file` part with a `data:` URL becomes a `document` block.
/// - assistant `content` + `tool_calls` become a `text` block then one `tool_use` per call
///   (`input` = the parsed `arguments`; arguments that are not a JSON object are a 400). LiteLLM's
///   assistant `thinking_blocks` (thinking with signature, redacted_thinking) are put first,
///   unchanged, so signed thinking reaches Anthropic intact on the next turn.
/// - consecutive `tool` messages become one `user` message of `tool_result` blocks; user content
///   that follows is appended to that message after the results.
/// - `max_completion_tokens` ?? `max_tokens` ?? [`RequestOptions::default_max_tokens`] ??
///   [`default_max_tokens`] → `max_tokens`; `stop` → `stop_sequences`; `temperature` clamped to
///   0–1; `top_p`, `top_k` kept; `user` → `metadata.user_id`.
/// - `tools[].function` → `{name, description, input_schema}` (`strict` dropped); `tool_choice`
///   `auto`/`required`/`none`/function/`allowed_tools` → `auto`/`any`/`none`/`tool`/(tools
///   filtered); `parallel_tool_calls: false` → `disable_parallel_tool_use: true` (on `auto` when
///   no `tool_choice` was given). `tool_choice` is only sent when there are tools.
/// - `reasoning_effort` → `thinking.budget_tokens` ([`thinking_budget`]), kept below
///   `max_tokens`; with thinking on, `temperature` and `top_k` are dropped and `top_p` below 0.95
///   too (Anthropic rejects them with extended thinking).
/// - `response_format` `json_schema` → `output_config.format` `{type: json_schema, schema}`
///   (Anthropic structured outputs); `text` / `json_object` have no equivalent and are dropped.
///
/// Errors: `n > 1` → [`TranslateError::Unsupported`] naming `n`; audio parts, `file_id`
/// references, custom tools and the deprecated `functions` role are `Unsupported` too; a missing
/// `messages` array or unparsable tool arguments → [`TranslateError::InvalidRequest`].
///
/// Dropped because Anthropic has no equivalent: `logprobs`, `top_logprobs`, `seed`,
/// `presence_penalty`, `frequency_penalty`, `logit_bias`, `stream_options` (the gateway emits
/// the usage chunk itself), `metadata`, `store`, `service_tier`, `modalities`, `audio`,
/// `prediction`, `verbosity`, `web_search_options`, `prompt_cache_key`, `safety_identifier`,
/// message `name`s, and any field this function does not know.
pub fn request(chat: &Value, opts: &RequestOptions) -> Result<Value, TranslateError> {
    let req = object(chat, "body")?;
    if let Some(n) = req.get("n").and_then(Value::as_u64)
        && n > 1
    {
        return Err(TranslateError::unsupported(
            "n",
            "Anthropic Messages returns one choice per request; send n=1 or several requests",
        ));
    }
    let model = match &opts.upstream_model {
        Some(m) => m.as_str(),
        None => req.get("model").and_then(Value::as_str).unwrap_or_default(),
    };
    let messages = req
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| TranslateError::invalid("messages", "required array is missing"))?;

    let mut out = Map::new();
    out.insert("model".into(), model.into());

    let explicit_max = req
        .get("max_completion_tokens")
        .and_then(Value::as_u64)
        .or_else(|| req.get("max_tokens").and_then(Value::as_u64));
    let mut max_tokens = explicit_max.unwrap_or_else(|| {
        u64::from(
            opts.default_max_tokens
                .unwrap_or_else(|| default_max_tokens(model)),
        )
    });

    // Thinking, from reasoning_effort; budget_tokens must be >= 1024 and < max_tokens.
    let mut budget = match req.get("reasoning_effort").and_then(Value::as_str) {
        Some(effort) => thinking_budget(effort)?.map(u64::from),
        None => None,
    };
    if let Some(b) = budget {
        if explicit_max.is_none() {
            max_tokens += b;
        } else if b >= max_tokens {
            budget = Some(max_tokens / 2).filter(|half| *half >= 1024);
        }
    }
    out.insert("max_tokens".into(), max_tokens.into());

    // Anthropic rejects empty stop sequences; OpenAI ignores them.
    let stops: Vec<&Value> = match req.get("stop") {
        Some(s @ Value::String(_)) => vec![s],
        Some(Value::Array(list)) => list.iter().collect(),
        _ => Vec::new(),
    };
    let stops: Vec<Value> = stops
        .into_iter()
        .filter(|s| s.as_str().is_some_and(|s| !s.is_empty()))
        .cloned()
        .collect();
    if !stops.is_empty() {
        out.insert("stop_sequences".into(), Value::Array(stops));
    }

    let converted = convert_messages(messages)?;
    if let Some(system) = converted.system {
        out.insert("system".into(), system);
    }
    out.insert("messages".into(), Value::Array(converted.messages));

    let (tools, allowed) = convert_tools(req)?;
    let has_tools = !tools.is_empty();
    if has_tools {
        out.insert("tools".into(), Value::Array(tools));
    }
    if has_tools && let Some(choice) = convert_tool_choice(req, allowed)? {
        out.insert("tool_choice".into(), choice);
    }

    if let Some(user) = req.get("user").and_then(Value::as_str) {
        out.insert("metadata".into(), json!({ "user_id": user }));
    }

    let thinking = budget.is_some();
    if let Some(t) = req.get("temperature").filter(|v| v.is_number())
        && !thinking
    {
        let clamped = match t.as_f64() {
            Some(f) if f > 1.0 => json!(1.0),
            Some(f) if f < 0.0 => json!(0.0),
            _ => t.clone(),
        };
        out.insert("temperature".into(), clamped);
    }
    if let Some(p) = req.get("top_p").filter(|v| v.is_number())
        && (!thinking || p.as_f64().is_some_and(|f| f >= 0.95))
    {
        out.insert("top_p".into(), p.clone());
    }
    if let Some(k) = req.get("top_k").filter(|v| v.is_number())
        && !thinking
    {
        out.insert("top_k".into(), k.clone());
    }
    if let Some(b) = budget {
        out.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": b}),
        );
    }

    if let Some(rf) = req.get("response_format")
        && rf.get("type").and_then(Value::as_str) == Some("json_schema")
        && let Some(schema) = rf.get("json_schema").and_then(|j| j.get("schema"))
    {
        out.insert(
            "output_config".into(),
            json!({"format": {"type": "json_schema", "schema": schema}}),
        );
    }

    if let Some(s) = req.get("stream").filter(|v| v.is_boolean()) {
        out.insert("stream".into(), s.clone());
    }
    Ok(Value::Object(out))
}

struct Converted {
    system: Option<Value>,
    messages: Vec<Value>,
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
            self.push_blocks(role, vec![json!({"type": "text", "text": text})]);
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

fn convert_messages(messages: &[Value]) -> Result<Converted, TranslateError> {
    let mut system_blocks: Vec<Value> = Vec::new();
    let mut list = MessageList::default();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let content = m.get("content").unwrap_or(&Value::Null);
        match role {
            "system" | "developer" => match content {
                Value::String(s) if !s.is_empty() => {
                    system_blocks.push(json!({"type": "text", "text": s}));
                }
                Value::Array(parts) => {
                    for p in parts {
                        if let Some(t) = p.get("text").and_then(Value::as_str) {
                            let mut block = json!({"type": "text", "text": t});
                            if let Some(cc) = p.get("cache_control") {
                                block["cache_control"] = cc.clone();
                            }
                            system_blocks.push(block);
                        }
                    }
                }
                _ => {}
            },
            "user" => match content {
                Value::String(s) => list.push_text("user", s),
                Value::Array(parts) => {
                    let mut blocks = Vec::with_capacity(parts.len());
                    for (j, p) in parts.iter().enumerate() {
                        blocks.push(user_part(p, &format!("messages[{i}].content[{j}]"))?);
                    }
                    list.push_blocks("user", blocks);
                }
                _ => {}
            },
            "assistant" => list.push_blocks("assistant", assistant_blocks(m, i)?),
            "tool" => {
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
                    Value::Array(parts) => {
                        let mut blocks = Vec::with_capacity(parts.len());
                        for (j, p) in parts.iter().enumerate() {
                            blocks.push(user_part(p, &format!("messages[{i}].content[{j}]"))?);
                        }
                        result["content"] = Value::Array(blocks);
                    }
                    _ => {}
                }
                list.push_blocks("user", vec![result]);
            }
            other => {
                return Err(TranslateError::unsupported(
                    format!("messages[{i}].role"),
                    format!("role `{other}` has no Anthropic equivalent"),
                ));
            }
        }
    }
    let system = if system_blocks.is_empty() {
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
    };
    Ok(Converted {
        system,
        messages: list.messages,
    })
}

/// One user (or tool-result) content part → one Anthropic block.
fn user_part(p: &Value, path: &str) -> Result<Value, TranslateError> {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
    let mut block = match ty {
        "text" => {
            json!({"type": "text", "text": p.get("text").and_then(Value::as_str).unwrap_or_default()})
        }
        "image_url" => {
            let iu = p.get("image_url").unwrap_or(&Value::Null);
            let url = iu
                .as_str()
                .or_else(|| iu.get("url").and_then(Value::as_str))
                .ok_or_else(|| {
                    TranslateError::invalid(format!("{path}.image_url.url"), "missing")
                })?;
            image_block(url)
        }
        "file" => {
            let f = p.get("file").unwrap_or(&Value::Null);
            match f
                .get("file_data")
                .and_then(Value::as_str)
                .and_then(parse_data_url)
            {
                Some((media_type, data)) => {
                    json!({"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}})
                }
                None => {
                    return Err(TranslateError::unsupported(
                        format!("{path}.file"),
                        "only inline file_data (a data: URL) can be sent to Anthropic",
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
    if let Some(cc) = p.get("cache_control") {
        block["cache_control"] = cc.clone();
    }
    Ok(block)
}

/// An Anthropic image block for an OpenAI image URL (`data:` → base64 source, else url source).
pub(crate) fn image_block(url: &str) -> Value {
    match parse_data_url(url) {
        Some((media_type, data)) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        None => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
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
        Value::String(s) if !s.is_empty() => blocks.push(json!({"type": "text", "text": s})),
        Value::Array(parts) => {
            for p in parts {
                let text = p
                    .get("text")
                    .or_else(|| p.get("refusal"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
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
            blocks.push(json!({
                "type": "tool_use",
                "id": c.get("id").and_then(Value::as_str).unwrap_or_default(),
                "name": f.get("name").and_then(Value::as_str).unwrap_or_default(),
                "input": input,
            }));
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

/// Anthropic tools, plus the names `allowed_tools` restricts them to.
fn convert_tools(
    req: &Map<String, Value>,
) -> Result<(Vec<Value>, Option<Vec<String>>), TranslateError> {
    let allowed: Option<Vec<String>> = req
        .get("tool_choice")
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("allowed_tools"))
        .and_then(|c| c.get("allowed_tools"))
        .and_then(|a| a.get("tools"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|t| {
                    t.get("function")
                        .and_then(|f| f.get("name"))
                        .or_else(|| t.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect()
        });
    let mut out = Vec::new();
    if let Some(tools) = req.get("tools").and_then(Value::as_array) {
        for (i, t) in tools.iter().enumerate() {
            let ty = t.get("type").and_then(Value::as_str).unwrap_or("function");
            if ty != "function" {
                return Err(TranslateError::unsupported(
                    format!("tools[{i}].type"),
                    format!("tool type `{ty}` has no Anthropic equivalent"),
                ));
            }
            let f = t.get("function").unwrap_or(&Value::Null);
            let name = f.get("name").and_then(Value::as_str).ok_or_else(|| {
                TranslateError::invalid(format!("tools[{i}].function.name"), "required")
            })?;
            if let Some(a) = &allowed
                && !a.iter().any(|n| n == name)
            {
                continue;
            }
            let mut tool = Map::new();
            tool.insert("name".into(), name.into());
            if let Some(d) = f.get("description").and_then(Value::as_str) {
                tool.insert("description".into(), d.into());
            }
            let schema = f
                .get("parameters")
                .filter(|p| p.is_object())
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            tool.insert("input_schema".into(), schema);
            if let Some(cc) = t.get("cache_control") {
                tool.insert("cache_control".into(), cc.clone());
            }
            out.push(Value::Object(tool));
        }
    }
    Ok((out, allowed))
}

fn convert_tool_choice(
    req: &Map<String, Value>,
    allowed: Option<Vec<String>>,
) -> Result<Option<Value>, TranslateError> {
    let disable_parallel = req.get("parallel_tool_calls").and_then(Value::as_bool) == Some(false);
    let mut choice = match req.get("tool_choice") {
        None | Some(Value::Null) => {
            if disable_parallel {
                json!({"type": "auto"})
            } else {
                return Ok(None);
            }
        }
        Some(Value::String(s)) => match s.as_str() {
            "auto" => json!({"type": "auto"}),
            "required" => json!({"type": "any"}),
            "none" => json!({"type": "none"}),
            other => {
                return Err(TranslateError::invalid(
                    "tool_choice",
                    format!("unknown value `{other}`"),
                ));
            }
        },
        Some(obj) => match obj.get("type").and_then(Value::as_str) {
            Some("function") => {
                let name = obj
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        TranslateError::invalid("tool_choice.function.name", "required")
                    })?;
                json!({"type": "tool", "name": name})
            }
            Some("allowed_tools") if allowed.is_some() => {
                let mode = obj
                    .get("allowed_tools")
                    .and_then(|a| a.get("mode"))
                    .and_then(Value::as_str)
                    .unwrap_or("auto");
                match mode {
                    "required" => json!({"type": "any"}),
                    _ => json!({"type": "auto"}),
                }
            }
            _ => {
                return Err(TranslateError::unsupported(
                    "tool_choice",
                    "only auto, required, none, a function and allowed_tools translate to Anthropic",
                ));
            }
        },
    };
    if disable_parallel && choice["type"] != "none" {
        choice["disable_parallel_tool_use"] = Value::Bool(true);
    }
    Ok(Some(choice))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> RequestOptions {
        RequestOptions::default()
    }

    #[test]
    fn n_greater_than_one_is_unsupported_and_names_the_field() {
        let err = request(
            &json!({"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}),
            &opts(),
        )
        .unwrap_err();
        assert_eq!(err.status(), 400);
        assert_eq!(err.param(), Some("n"));
    }

    #[test]
    fn default_max_tokens_and_override() {
        let body =
            json!({"model":"claude-3-haiku-20240307","messages":[{"role":"user","content":"hi"}]});
        assert_eq!(request(&body, &opts()).unwrap()["max_tokens"], 4096);
        let o = RequestOptions {
            default_max_tokens: Some(777),
            ..opts()
        };
        assert_eq!(request(&body, &o).unwrap()["max_tokens"], 777);
        let body = json!({"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]});
        assert_eq!(request(&body, &opts()).unwrap()["max_tokens"], 8192);
    }

    #[test]
    fn invalid_tool_arguments_are_a_400() {
        let body = json!({"model":"m","messages":[
            {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{not json"}}]}]});
        let err = request(&body, &opts()).unwrap_err();
        assert_eq!(
            err.param(),
            Some("messages[0].tool_calls[0].function.arguments")
        );
    }

    #[test]
    fn temperature_is_clamped_and_reasoning_becomes_thinking() {
        let body = json!({"model":"m","max_completion_tokens":2000,"temperature":1.7,"messages":[{"role":"user","content":"hi"}]});
        assert_eq!(request(&body, &opts()).unwrap()["temperature"], json!(1.0));
        let body = json!({"model":"m","reasoning_effort":"medium","temperature":0.3,"messages":[{"role":"user","content":"hi"}]});
        let out = request(&body, &opts()).unwrap();
        assert_eq!(
            out["thinking"],
            json!({"type":"enabled","budget_tokens":4096})
        );
        assert_eq!(out["max_tokens"], 4096 + 4096);
        assert!(out.get("temperature").is_none());
        let body = json!({"model":"m","reasoning_effort":"high","max_completion_tokens":3000,"messages":[{"role":"user","content":"hi"}]});
        let out = request(&body, &opts()).unwrap();
        assert_eq!(out["thinking"]["budget_tokens"], 1500);
        assert_eq!(out["max_tokens"], 3000);
    }

    #[test]
    fn tool_choice_forms() {
        let tools = json!([{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]);
        let tc = |choice: Value, parallel: Option<bool>| {
            let mut body = json!({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":tools.clone(),"tool_choice":choice});
            if let Some(p) = parallel {
                body["parallel_tool_calls"] = p.into();
            }
            request(&body, &opts()).unwrap()
        };
        assert_eq!(
            tc(json!("auto"), None)["tool_choice"],
            json!({"type":"auto"})
        );
        assert_eq!(
            tc(json!("none"), Some(false))["tool_choice"],
            json!({"type":"none"})
        );
        assert_eq!(
            tc(
                json!({"type":"function","function":{"name":"b"}}),
                Some(false)
            )["tool_choice"],
            json!({"type":"tool","name":"b","disable_parallel_tool_use":true})
        );
        assert_eq!(
            tc(Value::Null, Some(false))["tool_choice"],
            json!({"type":"auto","disable_parallel_tool_use":true})
        );
        let out = tc(
            json!({"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"b"}}]}}),
            None,
        );
        assert_eq!(out["tool_choice"], json!({"type":"any"}));
        assert_eq!(
            out["tools"],
            json!([{"name":"b","input_schema":{"type":"object","properties":{}}}])
        );
    }

    #[test]
    fn thinking_blocks_are_forwarded_intact() {
        let tb = json!({"type":"thinking","thinking":"step 1","signature":"sig-x=="});
        let body = json!({"model":"m","messages":[
            {"role":"user","content":"q"},
            {"role":"assistant","content":"","thinking_blocks":[tb.clone(),{"type":"redacted_thinking","data":"abc"}],
             "tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"toolu_1","content":"ok"}]});
        let out = request(&body, &opts()).unwrap();
        assert_eq!(out["messages"][1]["content"][0], tb);
        assert_eq!(
            out["messages"][1]["content"][1]["type"],
            "redacted_thinking"
        );
        assert_eq!(out["messages"][1]["content"][2]["type"], "tool_use");
    }
}
