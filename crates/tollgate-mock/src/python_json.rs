//! JSON written the way Python's `json.dumps` writes it by default, for upstreams served by
//! Python (llama-cpp-python, vLLM and TGI front ends, LocalAI, FastAPI apps): `", "` between
//! items, `": "` after keys, every non-ASCII character as a `\uXXXX` escape
//! (`ensure_ascii=True`, astral characters as surrogate pairs), key order kept.
//! `x-mock-json-style: python` (script `json_style: "python"`) writes every generated body
//! and every stream event's `data:` JSON this way; replayed fixtures stay byte-exact.

use bytes::Bytes;
use serde_json::Value;

/// The style's name in `x-mock-json-style` and scripts.
pub const PYTHON: &str = "python";

/// `v` as `json.dumps(v)` writes it.
pub fn to_python(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string(k, out);
                out.push_str(": ");
                write(item, out);
            }
            out.push('}');
        }
    }
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_ascii() && (c as u32) >= 0x20 => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// One SSE event with each `data:` line's JSON rewritten Python-style (other lines, and
/// data that is not JSON such as `[DONE]`, unchanged).
pub fn event_to_python(event: &Bytes) -> Bytes {
    let Ok(text) = std::str::from_utf8(event) else {
        return event.clone();
    };
    let mut out = String::with_capacity(event.len() + event.len() / 4);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\r', '\n']);
        let ending = &line[body.len()..];
        match body
            .strip_prefix("data: ")
            .and_then(|d| serde_json::from_str::<Value>(d).ok())
        {
            Some(v) => {
                out.push_str("data: ");
                out.push_str(&to_python(&v));
            }
            None => out.push_str(body),
        }
        out.push_str(ending);
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_as_json_dumps_does() {
        let v = json!({"id": "c", "n": [1, 2.5, 1.0], "usage": {"prompt_tokens": 1000},
                       "t": "é😀\"\\\n/", "e": {}, "a": []});
        // Python: json.dumps({...}) with the same key order.
        assert_eq!(
            to_python(&v),
            r#"{"id": "c", "n": [1, 2.5, 1.0], "usage": {"prompt_tokens": 1000}, "t": "\u00e9\ud83d\ude00\"\\\n/", "e": {}, "a": []}"#
        );
        let back: Value = serde_json::from_str(&to_python(&v)).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn events_keep_their_framing() {
        let ev = Bytes::from_static(b"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}\n\n");
        assert_eq!(
            &event_to_python(&ev)[..],
            &b"event: message_delta\ndata: {\"type\": \"message_delta\", \"usage\": {\"output_tokens\": 3}}\n\n"[..]
        );
        let done = Bytes::from_static(b"data: [DONE]\n\n");
        assert_eq!(event_to_python(&done), done);
    }
}
