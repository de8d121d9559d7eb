//! Small mappings shared by several dialect pairs.

use serde_json::{Map, Value};

use crate::TranslateError;

/// Anthropic `stop_reason` → OpenAI `finish_reason` (wire-formats.md §7.3): `end_turn`,
/// `stop_sequence`, `pause_turn` → `stop`; `max_tokens`, `model_context_window_exceeded` →
/// `length`; `tool_use` → `tool_calls`; `refusal` → `content_filter`. Unknown → `stop`.
pub fn finish_reason_from_stop_reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        _ => "stop",
    }
}

/// OpenAI `finish_reason` → Anthropic `stop_reason` (wire-formats.md §7.3 reverse): `stop` →
/// `end_turn`, `length` → `max_tokens`, `tool_calls`/`function_call` → `tool_use`,
/// `content_filter` → `refusal`. When the reply contained tool calls, `stop` also becomes
/// `tool_use` (some OpenAI-compatible servers say `stop` after a tool call).
pub fn stop_reason_from_finish_reason(finish_reason: &str, saw_tool_call: bool) -> &'static str {
    match finish_reason {
        "length" => "max_tokens",
        "tool_calls" | "function_call" => "tool_use",
        "content_filter" => "refusal",
        _ if saw_tool_call => "tool_use",
        _ => "end_turn",
    }
}

/// The request as a JSON object, or a 400.
pub fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, TranslateError> {
    v.as_object()
        .ok_or_else(|| TranslateError::invalid(what, "expected a JSON object"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons() {
        assert_eq!(finish_reason_from_stop_reason("tool_use"), "tool_calls");
        assert_eq!(finish_reason_from_stop_reason("max_tokens"), "length");
        assert_eq!(finish_reason_from_stop_reason("stop_sequence"), "stop");
        assert_eq!(stop_reason_from_finish_reason("stop", true), "tool_use");
        assert_eq!(stop_reason_from_finish_reason("stop", false), "end_turn");
        assert_eq!(stop_reason_from_finish_reason("length", true), "max_tokens");
    }
}
