//! Choosing the tool for a tool-call reply, per dialect.
//!
//! A tool call is produced when the request has tools and either the tool choice forces one
//! (OpenAI `"required"` or `{"type":"function",...}`; Anthropic `{"type":"any"}` or
//! `{"type":"tool","name"}`) or the behaviour says so (`x-mock-tool-call: 1`, `*-tools` models).
//! A named choice picks that tool, otherwise the first tool. `tool_choice: "none"` /
//! `{"type":"none"}` or `x-mock-tool-call: 0` never produce one.

use serde_json::Value;

use crate::synth::{ToolCall, arguments_from_schema};

/// Where a dialect keeps tool names and schemas.
#[derive(Clone, Copy)]
pub(crate) enum ToolDialect {
    /// `{"type":"function","function":{"name","parameters"}}`, choice `{"type":"function","function":{"name"}}`.
    Chat,
    /// Flat `{"type":"function","name","parameters"}`, choice `{"type":"function","name"}`.
    Responses,
    /// `{"name","input_schema"}`, choice `{"type":"any"|"tool"|"auto"|"none","name"?}`.
    Anthropic,
}

fn tool_name(d: ToolDialect, t: &Value) -> Option<&str> {
    match d {
        ToolDialect::Chat => t.pointer("/function/name"),
        ToolDialect::Responses | ToolDialect::Anthropic => t.get("name"),
    }
    .and_then(Value::as_str)
}

fn tool_schema(d: ToolDialect, t: &Value) -> Option<&Value> {
    match d {
        ToolDialect::Chat => t.pointer("/function/parameters"),
        ToolDialect::Responses => t.get("parameters"),
        ToolDialect::Anthropic => t.get("input_schema"),
    }
}

/// `None`: no tool call; `Some(None)`: any tool; `Some(Some(name))`: that tool.
fn forced(d: ToolDialect, choice: Option<&Value>) -> Option<Option<&str>> {
    let choice = choice?;
    match (d, choice) {
        (ToolDialect::Chat | ToolDialect::Responses, Value::String(s)) if s == "required" => {
            Some(None)
        }
        (ToolDialect::Chat, Value::Object(_)) => choice
            .pointer("/function/name")
            .and_then(Value::as_str)
            .map(Some),
        (ToolDialect::Responses, Value::Object(_)) => {
            if choice.get("type").and_then(Value::as_str) == Some("function") {
                choice.get("name").and_then(Value::as_str).map(Some)
            } else {
                None
            }
        }
        (ToolDialect::Anthropic, Value::Object(_)) => {
            match choice.get("type").and_then(Value::as_str) {
                Some("any") => Some(None),
                Some("tool") => choice.get("name").and_then(Value::as_str).map(Some),
                _ => None,
            }
        }
        _ => None,
    }
}

fn is_none_choice(choice: Option<&Value>) -> bool {
    match choice {
        Some(Value::String(s)) => s == "none",
        Some(v) => v.get("type").and_then(Value::as_str) == Some("none"),
        None => false,
    }
}

fn call_for(d: ToolDialect, tool: &Value) -> Option<ToolCall> {
    Some(ToolCall {
        name: tool_name(d, tool)?.to_owned(),
        arguments: arguments_from_schema(tool_schema(d, tool)),
    })
}

/// The tool calls to reply with (empty: answer with text). One call, or with `all` one call per
/// declared tool in order (parallel tool calls) unless the choice names a single tool.
pub(crate) fn choose(
    d: ToolDialect,
    body: &Value,
    behavior_tool_call: Option<bool>,
    all: bool,
) -> Vec<ToolCall> {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    let choice = body.get("tool_choice");
    if tools.is_empty() || behavior_tool_call == Some(false) || is_none_choice(choice) {
        return Vec::new();
    }
    let want = match forced(d, choice) {
        Some(w) => w,
        None if behavior_tool_call == Some(true) || all => None,
        None => return Vec::new(),
    };
    match want {
        Some(name) => tools
            .iter()
            .find(|t| tool_name(d, t) == Some(name))
            .and_then(|t| call_for(d, t))
            .into_iter()
            .collect(),
        None if all => tools.iter().filter_map(|t| call_for(d, t)).collect(),
        None => tools
            .iter()
            .find_map(|t| call_for(d, t))
            .into_iter()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat_tools() -> Value {
        json!([
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}}}}
        ])
    }

    #[test]
    fn chat_choices() {
        let mut body = json!({"tools": chat_tools(), "tool_choice": "auto"});
        assert_eq!(
            choose(ToolDialect::Chat, &body, None, false)
                .into_iter()
                .next(),
            None
        );
        let tc = choose(ToolDialect::Chat, &body, Some(true), false)
            .into_iter()
            .next()
            .unwrap();
        assert_eq!(tc.name, "get_weather");
        assert_eq!(tc.arguments, r#"{"city":"mock-city"}"#);
        body["tool_choice"] = json!("required");
        assert_eq!(
            choose(ToolDialect::Chat, &body, None, false)
                .into_iter()
                .next()
                .unwrap()
                .name,
            "get_weather"
        );
        body["tool_choice"] = json!({"type": "function", "function": {"name": "get_time"}});
        assert_eq!(
            choose(ToolDialect::Chat, &body, None, false)
                .into_iter()
                .next()
                .unwrap()
                .name,
            "get_time"
        );
        let all = choose(ToolDialect::Chat, &body, None, true);
        assert_eq!(all.len(), 1, "a named choice stays one call even with all");
        body["tool_choice"] = json!("required");
        let all: Vec<String> = choose(ToolDialect::Chat, &body, None, true)
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(all, vec!["get_weather", "get_time"]);
        body["tool_choice"] = json!("none");
        assert_eq!(
            choose(ToolDialect::Chat, &body, Some(true), false)
                .into_iter()
                .next(),
            None
        );
    }

    #[test]
    fn anthropic_and_responses_choices() {
        let body = json!({"tools": [{"name": "add", "input_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}],
                          "tool_choice": {"type": "any"}});
        let tc = choose(ToolDialect::Anthropic, &body, None, false)
            .into_iter()
            .next()
            .unwrap();
        assert_eq!(
            (tc.name.as_str(), tc.arguments.as_str()),
            ("add", r#"{"a":42,"b":42}"#)
        );
        let body = json!({"tools": [{"type": "function", "name": "f", "parameters": {}}], "tool_choice": {"type": "function", "name": "f"}});
        assert_eq!(
            choose(ToolDialect::Responses, &body, None, false)
                .into_iter()
                .next()
                .unwrap()
                .arguments,
            "{}"
        );
        assert_eq!(
            choose(
                ToolDialect::Responses,
                &json!({"tools": []}),
                Some(true),
                false
            )
            .into_iter()
            .next(),
            None
        );
    }
}
