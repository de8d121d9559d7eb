//! The built-in `mock/` provider: answers in process, deterministically, in OpenAI's wire
//! format, with configurable latency (`mock_latency_ms`), reply (`mock_response`), streamed
//! chunk count (`mock_chunks`) and usage (`mock_completion_tokens`). `mock/echo` replies with
//! the last user message. It lets the gateway run with no keys and no network, and any
//! deployment with LiteLLM's `mock_response` set is answered here too.
//!
//! Usage it reports: prompt tokens = ceil(bytes of the `messages`/`prompt`/`input` JSON / 4),
//! completion tokens = ceil(reply bytes / 4) (at least 1) unless overridden.
//!
//! Streams are produced as an upstream would send them with `include_usage` on (the gateway
//! always asks upstreams for usage), so they go through the same relay as real upstreams.
//!
//! [`MockUpstream`] answers behind the same [`Upstream`] seam as the HTTP client: the pipeline
//! reads, streams and relays its answers with the same code.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use tollgate_providers::deployment::MockBehaviour;
use tollgate_providers::{LocalBody, Upstream, UpstreamError, UpstreamRequest, UpstreamResponse};

use crate::relay::stream::UpstreamBytes;
use crate::request::{Endpoint, ParsedRequest};

/// Default reply of `mock/` models other than `mock/echo`.
pub const DEFAULT_REPLY: &str = "Hello from Tollgate's mock provider.";

/// A mock answer: a full JSON body, or a stream of SSE bytes.
pub enum MockAnswer {
    /// Non-streamed JSON body (status 200).
    Body(Bytes),
    /// SSE stream.
    Stream(UpstreamBytes),
}

/// The in-process upstream: answers as its [`MockBehaviour`] says (a `mock/` deployment's,
/// or one made from a request's `mock_response`).
#[derive(Debug, Clone, Copy)]
pub struct MockUpstream<'a> {
    /// Reply, latency, chunks and usage.
    pub behaviour: &'a MockBehaviour,
}

impl Upstream for MockUpstream<'_> {
    /// A 200: a JSON body, or for a streamed request an event stream
    /// (`content-type: text/event-stream`). The body is the upstream body the gateway built
    /// (`/completions`, `/embeddings`, else chat completions).
    ///
    /// Errors: [`UpstreamError::Build`] for a body that does not parse as that endpoint's.
    async fn send(&self, r: UpstreamRequest<'_>) -> Result<UpstreamResponse, UpstreamError> {
        let endpoint = match r.path {
            "/completions" => Endpoint::Completions,
            "/embeddings" => Endpoint::Embeddings,
            _ => Endpoint::ChatCompletions,
        };
        let req = ParsedRequest::parse(&r.body, endpoint)
            .map_err(|e| UpstreamError::Build(e.to_string()))?;
        let (headers, body) =
            match answer(endpoint, &req, &req.model, self.behaviour, r.call_id).await {
                MockAnswer::Body(b) => (HeaderMap::new(), LocalBody::whole(b)),
                MockAnswer::Stream(s) => {
                    let mut h = HeaderMap::with_capacity(1);
                    h.insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/event-stream"),
                    );
                    (h, LocalBody::stream(s))
                }
            };
        Ok(UpstreamResponse::local(
            StatusCode::OK,
            headers,
            body,
            r.timeouts,
        ))
    }
}

/// Answers `req` for `upstream_model` as `mock` says.
pub async fn answer(
    endpoint: Endpoint,
    req: &ParsedRequest<'_>,
    upstream_model: &str,
    mock: &MockBehaviour,
    call_id: &str,
) -> MockAnswer {
    let input_field = endpoint.required_field();
    let input_raw = req.body.get(input_field).map(|r| r.get()).unwrap_or("");
    let prompt_tokens = input_raw.len().div_ceil(4).max(1) as u64;
    if endpoint == Endpoint::Embeddings {
        sleep_ms(mock.latency_ms).await;
        return MockAnswer::Body(embeddings(req, upstream_model, prompt_tokens));
    }
    let reply = reply_text(req, upstream_model, mock, input_field);
    let completion_tokens = mock
        .completion_tokens
        .unwrap_or_else(|| (reply.len().div_ceil(4)).max(1) as u64);
    let usage = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    });
    let created = now_secs();
    let chat = endpoint == Endpoint::ChatCompletions;
    let id = if chat {
        format!("chatcmpl-{call_id}")
    } else {
        format!("cmpl-{call_id}")
    };
    if !req.stream {
        sleep_ms(mock.latency_ms).await;
        let body = if chat {
            json!({
                "id": id, "object": "chat.completion", "created": created, "model": upstream_model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply, "refusal": null},
                             "logprobs": null, "finish_reason": "stop"}],
                "usage": usage,
            })
        } else {
            json!({
                "id": id, "object": "text_completion", "created": created, "model": upstream_model,
                "choices": [{"text": reply, "index": 0, "logprobs": null, "finish_reason": "stop"}],
                "usage": usage,
            })
        };
        return MockAnswer::Body(Bytes::from(body.to_string()));
    }
    let events = stream_events(
        chat,
        &id,
        created,
        upstream_model,
        &reply,
        mock.chunks,
        usage,
    );
    let latency = mock.latency_ms;
    let stream = futures_util::stream::iter(events)
        .enumerate()
        .then(move |(i, ev)| async move {
            if i == 0 {
                sleep_ms(latency).await;
            }
            Ok(ev)
        });
    MockAnswer::Stream(Box::pin(stream))
}

fn stream_events(
    chat: bool,
    id: &str,
    created: u64,
    model: &str,
    reply: &str,
    chunks: usize,
    usage: Value,
) -> Vec<Bytes> {
    let sse = |v: Value| Bytes::from(format!("data: {v}\n\n"));
    let mut out = Vec::with_capacity(chunks + 4);
    let pieces = split_chars(reply, chunks);
    if chat {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
                   "usage": null})
        };
        out.push(sse(chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )));
        for p in pieces {
            out.push(sse(chunk(json!({"content": p}), Value::Null)));
        }
        out.push(sse(chunk(json!({}), json!("stop"))));
        out.push(sse(
            json!({"id": id, "object": "chat.completion.chunk", "created": created,
                            "model": model, "choices": [], "usage": usage}),
        ));
    } else {
        let chunk = |text: &str, finish: Value| {
            json!({"id": id, "object": "text_completion", "created": created, "model": model,
                   "choices": [{"text": text, "index": 0, "logprobs": null, "finish_reason": finish}],
                   "usage": null})
        };
        for p in pieces {
            out.push(sse(chunk(p, Value::Null)));
        }
        out.push(sse(chunk("", json!("stop"))));
        out.push(sse(
            json!({"id": id, "object": "text_completion", "created": created,
                            "model": model, "choices": [], "usage": usage}),
        ));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// Splits `s` into `n` pieces of about equal length, on character boundaries.
fn split_chars(s: &str, n: usize) -> Vec<&str> {
    let chars: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    if chars.is_empty() {
        return vec![""];
    }
    let n = n.clamp(1, chars.len());
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for k in 1..=n {
        let end = if k == n {
            s.len()
        } else {
            chars[k * chars.len() / n]
        };
        out.push(&s[start..end]);
        start = end;
    }
    out
}

fn reply_text(req: &ParsedRequest<'_>, model: &str, mock: &MockBehaviour, field: &str) -> String {
    if let Some(r) = &mock.reply {
        return r.clone();
    }
    if model != "echo" {
        return DEFAULT_REPLY.to_owned();
    }
    let Some(raw) = req.body.get(field) else {
        return String::new();
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::String(s)) => s,
        Ok(Value::Array(items)) if field == "messages" => items
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(|m| content_text(&m["content"]))
            .unwrap_or_default(),
        Ok(Value::Array(items)) => items
            .first()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    }
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn embeddings(req: &ParsedRequest<'_>, model: &str, prompt_tokens: u64) -> Bytes {
    let inputs: Vec<String> = match req
        .body
        .get("input")
        .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
    {
        Some(Value::Array(items)) => items.iter().map(|v| v.to_string()).collect(),
        Some(v) => vec![v.to_string()],
        None => vec![],
    };
    let dims = req
        .body
        .u64_field("dimensions")
        .ok()
        .flatten()
        .unwrap_or(8)
        .clamp(1, 4096) as usize;
    let base64 = req
        .body
        .str_field("encoding_format")
        .ok()
        .flatten()
        .as_deref()
        == Some("base64");
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let v = vector(text, dims);
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    Bytes::from(
        json!({"object": "list", "data": data, "model": model,
               "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}})
        .to_string(),
    )
}

/// A deterministic unit-range vector from FNV-1a hashes of `text`.
fn vector(text: &str, dims: usize) -> Vec<f32> {
    (0..dims)
        .map(|d| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ d as u64;
            for b in text.bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            ((h >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn behaviour() -> MockBehaviour {
        MockBehaviour {
            reply: None,
            latency_ms: 0,
            chunks: 3,
            completion_tokens: None,
        }
    }

    #[tokio::test]
    async fn echo_non_stream() {
        let raw = br#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi there"}]}]}"#;
        let req = ParsedRequest::parse(raw, Endpoint::ChatCompletions).unwrap();
        let MockAnswer::Body(b) =
            answer(Endpoint::ChatCompletions, &req, "echo", &behaviour(), "c1").await
        else {
            panic!("expected body")
        };
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "hi there");
        assert_eq!(v["id"], "chatcmpl-c1");
        let msgs_len = br#"[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi there"}]}]"#.len() as u64;
        assert_eq!(v["usage"]["prompt_tokens"], msgs_len.div_ceil(4));
        assert_eq!(v["usage"]["completion_tokens"], 2);
    }

    #[tokio::test]
    async fn stream_has_role_content_finish_usage_done() {
        let raw = br#"{"model":"m","messages":[{"role":"user","content":"abcdef"}],"stream":true}"#;
        let req = ParsedRequest::parse(raw, Endpoint::ChatCompletions).unwrap();
        let MockAnswer::Stream(s) =
            answer(Endpoint::ChatCompletions, &req, "echo", &behaviour(), "c2").await
        else {
            panic!("expected stream")
        };
        let events: Vec<Bytes> = s.map(|r| r.unwrap()).collect().await;
        assert_eq!(events.len(), 1 + 3 + 1 + 1 + 1);
        let text: String = events[1..4]
            .iter()
            .map(|e| {
                let v: Value = serde_json::from_slice(&e[6..e.len() - 2]).unwrap();
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(text, "abcdef");
        assert_eq!(&events[6][..], b"data: [DONE]\n\n");
    }

    #[tokio::test]
    async fn embeddings_base64_matches_floats() {
        let f = ParsedRequest::parse(
            br#"{"model":"m","input":["a","b"],"encoding_format":"float"}"#,
            Endpoint::Embeddings,
        )
        .unwrap();
        let b = ParsedRequest::parse(
            br#"{"model":"m","input":["a","b"],"encoding_format":"base64"}"#,
            Endpoint::Embeddings,
        )
        .unwrap();
        let MockAnswer::Body(fb) = answer(Endpoint::Embeddings, &f, "e", &behaviour(), "c").await
        else {
            panic!()
        };
        let MockAnswer::Body(bb) = answer(Endpoint::Embeddings, &b, "e", &behaviour(), "c").await
        else {
            panic!()
        };
        let fv: Value = serde_json::from_slice(&fb).unwrap();
        let bv: Value = serde_json::from_slice(&bb).unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(bv["data"][1]["embedding"].as_str().unwrap())
            .unwrap();
        let floats: Vec<f64> = decoded
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
            .collect();
        let expect: Vec<f64> = fv["data"][1]["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(floats, expect);
        assert_eq!(floats.len(), 8);
    }

    #[test]
    fn split_is_on_char_boundaries() {
        assert_eq!(split_chars("héllo🚀", 3).concat(), "héllo🚀");
        assert_eq!(split_chars("ab", 5), vec!["a", "b"]);
    }
}
