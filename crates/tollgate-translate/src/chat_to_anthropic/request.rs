//! OpenAI Chat request → Anthropic Messages request (wire-formats.md §7.1).

use serde_json::{Map, Value, json};

use super::messages::{self, cache_control};
use crate::TranslateError;
use crate::common::object;
use crate::options::{RequestOptions, default_max_tokens, thinking_budget};

/// Translates an OpenAI Chat Completions request body into an Anthropic Messages request body.
///
/// Mapping (wire-formats.md §7.1):
/// - `system` and `developer` messages, wherever they are, are joined in order with `\n\n` into
///   the top-level `system` string; if any of their text parts carries `cache_control`, `system`
///   is an array of text blocks instead so the breakpoints survive.
/// - user text/image parts become `text`/`image` blocks (base64 `data:` URLs → `base64` source
///   with `image/jpg` named `image/jpeg`, `http(s)` URLs → `url` source, never fetched; see
///   [`crate::images::anthropic_image_source`]); a `file` part with a base64 `data:` URL becomes
///   a `document` block.
/// - `cache_control` (with its `ttl`) stays where the client put it: content parts, messages,
///   tool messages, tool calls, system parts and tools (beside or inside `function`); see
///   `chat_to_anthropic/messages.rs` for the placement rules, which are LiteLLM's.
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
/// references, custom tools, the deprecated `functions` role and image media types Anthropic
/// does not accept are `Unsupported` too; a missing `messages` array, unparsable tool arguments,
/// a malformed `data:` URL or an image URL that is neither http(s) nor `data:` →
/// [`TranslateError::InvalidRequest`].
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
    let (max_tokens, budget) = max_tokens_and_budget(req, opts, model)?;
    out.insert("max_tokens".into(), max_tokens.into());
    let stops = stop_sequences(req);
    if !stops.is_empty() {
        out.insert("stop_sequences".into(), Value::Array(stops));
    }

    let converted = messages::convert(messages)?;
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

    if let Some(user) = req
        .get("user")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        out.insert("metadata".into(), json!({ "user_id": user }));
    }

    sampling(req, budget.is_some(), &mut out);
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

/// `max_tokens` and the thinking `budget_tokens` (if `reasoning_effort` asks for thinking).
///
/// `max_tokens` is `max_completion_tokens` ?? `max_tokens` ?? [`RequestOptions::default_max_tokens`]
/// ?? [`default_max_tokens`] of `model`. Anthropic wants `budget_tokens` >= 1024 and below
/// `max_tokens`: without an explicit maximum the budget is added to the default; with one, a
/// budget that does not fit becomes half of it, or no thinking when that half is under 1024.
/// Errors: an unknown `reasoning_effort` ([`thinking_budget`]).
fn max_tokens_and_budget(
    req: &Map<String, Value>,
    opts: &RequestOptions,
    model: &str,
) -> Result<(u64, Option<u64>), TranslateError> {
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
    Ok((max_tokens, budget))
}

/// Chat `stop` (a string or a list) → Anthropic `stop_sequences`, empty strings removed
/// (Anthropic rejects empty stop sequences; OpenAI ignores them).
fn stop_sequences(req: &Map<String, Value>) -> Vec<Value> {
    let stops: Vec<&Value> = match req.get("stop") {
        Some(s @ Value::String(_)) => vec![s],
        Some(Value::Array(list)) => list.iter().collect(),
        _ => Vec::new(),
    };
    stops
        .into_iter()
        .filter(|s| s.as_str().is_some_and(|s| !s.is_empty()))
        .cloned()
        .collect()
}

/// `temperature` (clamped to Anthropic's 0–1), `top_p` and `top_k`, numbers only. With
/// extended `thinking` Anthropic rejects `temperature`, `top_k` and a `top_p` below 0.95, so
/// those are dropped.
fn sampling(req: &Map<String, Value>, thinking: bool, out: &mut Map<String, Value>) {
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
            // LiteLLM reads it beside `function` or inside it; beside wins.
            if let Some(cc) = cache_control(t).or_else(|| cache_control(f)) {
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
