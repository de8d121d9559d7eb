//! Deterministic content shared by every dialect: token counts, reply text, chunking, tool-call
//! arguments and embedding vectors.
//!
//! Token rule (documented in the README, relied on by spend tests):
//! `tokens(text) = ceil(utf8_bytes(text) / 4)`;
//! prompt tokens = `tokens(all message text concatenated) + 3 × number of messages`
//! (Anthropic: the `system` prompt counts as one more message when present; Responses: every
//! input item counts as a message and `instructions` as one more);
//! completion tokens = `tokens(reply text)`, or for a tool call `tokens(name + arguments)`.

use serde_json::{Map, Value};

/// Fixed `created` timestamp of every generated object (2026-01-01T00:00:00Z, as in the fixtures).
pub const CREATED: u64 = 1_767_225_600;

/// `ceil(bytes / 4)`.
pub fn tokens_for_bytes(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Total UTF-8 length of the text in a message `content` value: a string, or an array of
/// parts/blocks whose `text` strings (and nested `content`, e.g. Anthropic `tool_result`) count.
pub fn content_len(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.len(),
                Value::Object(o) => {
                    o.get("text").and_then(Value::as_str).map_or(0, str::len)
                        + o.get("content").map_or(0, content_len)
                }
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// The text of a content value (string, or concatenated `text` of parts).
pub fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Prompt tokens of a message array (`messages` / Responses `input` items) plus extra system text.
pub fn prompt_tokens(messages: Option<&Value>, system: Option<&Value>) -> u64 {
    let mut bytes = 0usize;
    let mut count = 0u64;
    if let Some(Value::Array(msgs)) = messages {
        for m in msgs {
            count += 1;
            bytes += m.get("content").map_or(0, content_len);
        }
    } else if let Some(Value::String(s)) = messages {
        count += 1;
        bytes += s.len();
    }
    if let Some(sys) = system {
        let n = content_len(sys);
        if n > 0 || !sys.is_null() {
            count += 1;
            bytes += n;
        }
    }
    tokens_for_bytes(bytes) + 3 * count
}

/// Text of the last `user` message of a message array (or the string itself).
pub fn last_user_text(messages: Option<&Value>) -> Option<String> {
    match messages? {
        Value::String(s) => Some(s.clone()),
        Value::Array(msgs) => msgs
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|m| m.get("content"))
            .map(content_text),
        _ => None,
    }
}

/// Fixed multi-byte reply used by `*-unicode` models (CJK, Cyrillic, emoji, a ZWJ sequence).
pub const UNICODE_REPLY: &str = "Unicode check: 你好世界, привет мир, 🎉 👩‍👩‍👧 🚀 — done.";

/// The reply text for a request: explicit override, echo for `*-echo` models, the fixed unicode
/// text for `*-unicode` models, else `"This is a mock response to: " + first 40 chars of the last
/// user message` (`"This is a mock response."` when there is none).
pub fn reply_text(model: &str, explicit: Option<&str>, last_user: Option<&str>) -> String {
    if let Some(r) = explicit {
        return r.to_owned();
    }
    if model.ends_with("-echo") {
        return last_user.unwrap_or("").to_owned();
    }
    if model.ends_with("-unicode") {
        return UNICODE_REPLY.to_owned();
    }
    match last_user {
        Some(u) if !u.is_empty() => {
            let head: String = u.chars().take(40).collect();
            format!("This is a mock response to: {head}")
        }
        _ => "This is a mock response.".to_owned(),
    }
}

/// Truncate `text` to at most `max_tokens` tokens (4 bytes each, cut at a char boundary).
/// Returns whether it was truncated.
pub fn truncate_to_tokens(text: &mut String, max_tokens: Option<u64>) -> bool {
    let Some(max) = max_tokens else { return false };
    if tokens_for_bytes(text.len()) <= max {
        return false;
    }
    let mut cut = (max as usize).saturating_mul(4).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    true
}

/// Split `text` into at most `n` non-empty pieces of nearly equal char counts.
pub fn split_chars(text: &str, n: usize) -> Vec<&str> {
    let n = n.max(1);
    let total = text.chars().count();
    if total == 0 {
        return Vec::new();
    }
    let n = n.min(total);
    let mut out = Vec::with_capacity(n);
    let mut idx = text.char_indices().map(|(i, _)| i).chain([text.len()]);
    let mut start = idx.next().unwrap_or(0);
    let mut taken = 0usize;
    for k in 1..=n {
        let target = total * k / n;
        let mut end = start;
        while taken < target {
            end = idx.next().unwrap_or(text.len());
            taken += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// A tool chosen for a tool-call reply: name and JSON-string arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Function name.
    pub name: String,
    /// Arguments as a compact JSON object string built from the schema's property names.
    pub arguments: String,
}

impl ToolCall {
    /// Completion tokens of this call: `tokens(name + arguments)`.
    pub fn tokens(&self) -> u64 {
        tokens_for_bytes(self.name.len() + self.arguments.len())
    }
}

/// Arguments object from a JSON Schema: each property gets a value by its type — string: first
/// `enum` value or `"mock-<name>"`; integer/number: 42; boolean: true; array: []; object: {};
/// otherwise null.
pub fn arguments_from_schema(schema: Option<&Value>) -> String {
    let mut obj = Map::new();
    if let Some(Value::Object(props)) = schema.and_then(|s| s.get("properties")) {
        for (name, p) in props {
            let v = if let Some(Value::Array(e)) = p.get("enum") {
                e.first().cloned().unwrap_or(Value::Null)
            } else {
                let ty = match p.get("type") {
                    Some(Value::String(t)) => t.as_str(),
                    Some(Value::Array(ts)) => ts
                        .iter()
                        .filter_map(Value::as_str)
                        .find(|t| *t != "null")
                        .unwrap_or("null"),
                    _ => "string",
                };
                match ty {
                    "string" => Value::String(format!("mock-{name}")),
                    "integer" | "number" => Value::from(42),
                    "boolean" => Value::Bool(true),
                    "array" => Value::Array(Vec::new()),
                    "object" => Value::Object(Map::new()),
                    _ => Value::Null,
                }
            };
            obj.insert(name.clone(), v);
        }
    }
    Value::Object(obj).to_string()
}

/// Split a string into `n` pieces at byte positions (char boundaries), i.e. "anywhere", like
/// providers split tool-call arguments (inside keys and values).
pub fn split_fragments(s: &str, n: usize) -> Vec<&str> {
    split_chars(s, n)
}

/// Deterministic embedding vector for one input: `dims` values in [-1, 1), each exactly
/// representable as f32 (24-bit fractions), derived from FNV-1a of the input bytes and the
/// component index through splitmix64.
pub fn embedding(input: &[u8], dims: usize) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in input {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (0..dims)
        .map(|i| {
            let mut z = h.wrapping_add((i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let frac = (z >> 40) as f32 / 16_777_216.0; // [0, 1), 24 bits
            frac * 2.0 - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_rule() {
        assert_eq!(tokens_for_bytes(0), 0);
        assert_eq!(tokens_for_bytes(1), 1);
        assert_eq!(tokens_for_bytes(8), 2);
        let msgs = json!([
            {"role": "system", "content": "abcd"},
            {"role": "user", "content": [{"type": "text", "text": "efgh"}, {"type": "image_url", "image_url": {"url": "x"}}]}
        ]);
        // 8 bytes → 2 tokens, + 3 × 2 messages
        assert_eq!(prompt_tokens(Some(&msgs), None), 8);
        // Anthropic system counts as one more message
        assert_eq!(prompt_tokens(Some(&msgs), Some(&json!("abcd"))), 2 + 1 + 9);
    }

    #[test]
    fn reply_rules() {
        let long = "x".repeat(100);
        assert_eq!(
            reply_text("gpt", None, Some(&long)),
            format!("This is a mock response to: {}", "x".repeat(40))
        );
        assert_eq!(
            reply_text("mock-gpt-echo", None, Some("hi there")),
            "hi there"
        );
        assert_eq!(reply_text("m", Some("fixed"), Some("hi")), "fixed");
        assert_eq!(reply_text("m", None, None), "This is a mock response.");
    }

    #[test]
    fn split_chars_even_and_unicode() {
        assert_eq!(split_chars("abcdefgh", 4), vec!["ab", "cd", "ef", "gh"]);
        assert_eq!(split_chars("abc", 8), vec!["a", "b", "c"]);
        let parts = split_chars(UNICODE_REPLY, 8);
        assert_eq!(parts.len(), 8);
        assert_eq!(parts.concat(), UNICODE_REPLY);
        assert!(split_chars("", 3).is_empty());
    }

    #[test]
    fn truncation() {
        let mut s = "abcdefghij".to_string();
        assert!(truncate_to_tokens(&mut s, Some(2)));
        assert_eq!(s, "abcdefgh");
        let mut u = "ééé".to_string(); // 6 bytes
        assert!(truncate_to_tokens(&mut u, Some(1)));
        assert_eq!(u, "éé");
        assert!(!truncate_to_tokens(&mut u, None));
    }

    #[test]
    fn schema_arguments() {
        let schema = json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
            "exact": {"type": ["boolean", "null"]}
        }});
        assert_eq!(
            arguments_from_schema(Some(&schema)),
            r#"{"city":"mock-city","unit":"celsius","days":42,"exact":true}"#
        );
        assert_eq!(arguments_from_schema(None), "{}");
    }

    #[test]
    fn embeddings_deterministic_exact_f32() {
        let a = embedding(b"first input", 8);
        assert_eq!(a, embedding(b"first input", 8));
        assert_ne!(a, embedding(b"second input", 8));
        for v in &a {
            assert!((-1.0..1.0).contains(v));
            assert_eq!(f64::from(*v) as f32, *v);
        }
    }
}
