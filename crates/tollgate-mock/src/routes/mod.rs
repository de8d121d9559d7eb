//! Response generators, one module per endpoint family.

pub(crate) mod admin;
pub(crate) mod chat;
pub(crate) mod completions;
pub(crate) mod embeddings;
pub(crate) mod messages;
pub(crate) mod models;
pub(crate) mod responses;
mod tools;

use bytes::Bytes;
use serde_json::Value;

use crate::behavior::Behavior;

/// Input of a generator.
pub(crate) struct Ctx<'a> {
    /// Request sequence number (ids are derived from it).
    pub seq: u64,
    /// Parsed JSON request body.
    pub body: &'a Value,
    /// `model` of the request (`""` if absent).
    pub model: &'a str,
    /// Resolved behaviour.
    pub behavior: &'a Behavior,
    /// Content chunks in generated streams when the behaviour does not say.
    pub default_chunks: usize,
    /// `req_mock_{seq}`.
    pub request_id: String,
}

impl Ctx<'_> {
    /// Number of content chunks for streams (`x-mock-chunks`, else the default; at least 1).
    pub fn chunks(&self) -> usize {
        self.behavior.chunks.unwrap_or(self.default_chunks).max(1)
    }

    /// `stream: true` in the body.
    pub fn stream(&self) -> bool {
        self.body
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Unsigned integer field of the body.
    pub fn u64_field(&self, name: &str) -> Option<u64> {
        self.body.get(name).and_then(Value::as_u64)
    }
}

/// What a generator produced.
pub(crate) enum Reply {
    /// A JSON body with a status.
    Json(u16, Value),
    /// A JSON error body with a status (request validation failures).
    Error(u16, Value),
    /// Server-sent events, each element one complete event (sent as its own chunk).
    Sse(Vec<Bytes>),
}

/// `data: <json>\n\n`.
pub(crate) fn data_event(json: &str) -> Bytes {
    let mut s = String::with_capacity(json.len() + 8);
    s.push_str("data: ");
    s.push_str(json);
    s.push_str("\n\n");
    Bytes::from(s)
}

/// `event: <name>\ndata: <json>\n\n`.
pub(crate) fn named_event(name: &str, json: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {json}\n\n"))
}

/// Apply OpenAI `stop` / Anthropic `stop_sequences`: cut `text` before the first match.
/// Returns the matched sequence.
pub(crate) fn apply_stop(text: &mut String, stop: Option<&Value>) -> Option<String> {
    let seqs: Vec<&str> = match stop? {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let (pos, s) = seqs
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s).map(|p| (p, *s)))
        .min_by_key(|(p, _)| *p)?;
    text.truncate(pos);
    Some(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stop_sequences() {
        let mut t = "This is a mock response".to_string();
        assert_eq!(
            apply_stop(&mut t, Some(&json!(["mock", "is"]))),
            Some("is".into())
        );
        assert_eq!(t, "Th");
        let mut t = "abc".to_string();
        assert_eq!(apply_stop(&mut t, Some(&json!("zz"))), None);
        assert_eq!(t, "abc");
    }
}
