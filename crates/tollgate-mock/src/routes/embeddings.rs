//! `POST /v1/embeddings` (wire-formats.md §4): deterministic vectors, float or base64
//! (little-endian float32, as the OpenAI API and SDK use it).

use base64::Engine;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Ctx, Reply};
use crate::errors::openai_error_body;
use crate::synth::{self, tokens_for_bytes};

/// Default vector length when the request has no `dimensions`.
pub const DEFAULT_DIMENSIONS: usize = 8;

#[derive(Serialize)]
struct Item {
    object: &'static str,
    index: usize,
    embedding: Embedding,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Embedding {
    Float(Vec<f32>),
    Base64(String),
}

/// One input as bytes to hash and its token count: strings `ceil(bytes/4)` (at least 1),
/// token arrays their length.
fn inputs(v: &Value) -> Option<Vec<(Vec<u8>, u64)>> {
    let one = |x: &Value| -> Option<(Vec<u8>, u64)> {
        match x {
            Value::String(s) => Some((s.as_bytes().to_vec(), tokens_for_bytes(s.len()).max(1))),
            Value::Array(t) if t.iter().all(Value::is_u64) => {
                let bytes = t
                    .iter()
                    .filter_map(Value::as_u64)
                    .flat_map(|n| n.to_le_bytes())
                    .collect();
                Some((bytes, t.len() as u64))
            }
            _ => None,
        }
    };
    match v {
        Value::String(_) => Some(vec![one(v)?]),
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_u64) => {
            Some(vec![one(v)?])
        }
        Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        _ => None,
    }
}

/// Encode floats as base64 of their little-endian f32 bytes.
pub fn encode_base64(v: &[f32]) -> String {
    let bytes: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Handle an embeddings request.
pub(crate) fn handle(ctx: &Ctx) -> Reply {
    let Some(list) = ctx.body.get("input").and_then(inputs) else {
        return Reply::Error(
            400,
            openai_error_body(
                "'input' must be a non-empty string, array of strings, or array of token arrays.",
                "invalid_request_error",
                Some("input"),
                None,
            ),
        );
    };
    let dims = ctx
        .u64_field("dimensions")
        .map_or(DEFAULT_DIMENSIONS, |d| d.clamp(1, 4096) as usize);
    let b64 = ctx.body.get("encoding_format").and_then(Value::as_str) == Some("base64");
    let mut tokens = 0u64;
    let data: Vec<Item> = list
        .iter()
        .enumerate()
        .map(|(index, (bytes, t))| {
            tokens += t;
            let v = synth::embedding(bytes, dims);
            Item {
                object: "embedding",
                index,
                embedding: if b64 {
                    Embedding::Base64(encode_base64(&v))
                } else {
                    Embedding::Float(v)
                },
            }
        })
        .collect();
    let prompt = ctx.behavior.usage.map_or(tokens, |u| u.prompt_tokens);
    let data = serde_json::to_value(data).unwrap_or(Value::Null);
    Reply::Json(
        200,
        json!({"object": "list", "data": data, "model": ctx.model,
               "usage": {"prompt_tokens": prompt, "total_tokens": prompt}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_fixture_encoding() {
        // shared/fixtures/openai/embeddings/response_base64.json, first vector
        assert_eq!(
            encode_base64(&[11.0, 0.5, -0.25, 0.125]),
            "AAAwQQAAAD8AAIC+AAAAPg=="
        );
    }

    #[test]
    fn input_forms() {
        assert_eq!(inputs(&json!("abcde")).unwrap()[0].1, 2);
        assert_eq!(inputs(&json!(["a", "b"])).unwrap().len(), 2);
        assert_eq!(inputs(&json!([1, 2, 3])).unwrap()[0].1, 3);
        assert_eq!(inputs(&json!([[1, 2], [3]])).unwrap().len(), 2);
        assert!(inputs(&json!([])).is_none());
        assert!(inputs(&json!(5)).is_none());
    }
}
