//! What the mock should do with one request: fail, wait, hang, replay a fixture, override usage...
//!
//! A [`Behavior`] is assembled from three layers, later layers winning field by field:
//! 1. the model name convention (`mock-status-503`, `fixture/<path>`, `*-slow`, ... see README),
//! 2. the script for the request's deployment or model (`POST /__script`),
//! 3. the request's `x-mock-*` headers.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::HeaderMap;
use serde::{Deserialize, Serialize};

/// Usage numbers to report instead of the computed ones (tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UsageOverride {
    /// OpenAI `prompt_tokens` / `input_tokens`; Anthropic `input_tokens`.
    #[serde(alias = "prompt", alias = "input_tokens")]
    pub prompt_tokens: u64,
    /// OpenAI `completion_tokens` / `output_tokens`; Anthropic `output_tokens`.
    #[serde(alias = "completion", alias = "output_tokens")]
    pub completion_tokens: u64,
    /// OpenAI `prompt_tokens_details.cached_tokens`; Anthropic `cache_read_input_tokens`.
    #[serde(default, alias = "cached", alias = "cache_read_input_tokens")]
    pub cached_tokens: u64,
    /// Anthropic `cache_creation_input_tokens` (OpenAI: ignored).
    #[serde(default, alias = "cache_creation_input_tokens")]
    pub cache_creation_tokens: u64,
}

impl UsageOverride {
    /// Parse `PROMPT,COMPLETION[,CACHED[,CACHE_CREATION]]` (the `x-mock-usage` header form).
    pub fn parse(s: &str) -> Option<Self> {
        let nums: Vec<u64> = s
            .split(',')
            .map(|p| p.trim().parse::<u64>())
            .collect::<Result<_, _>>()
            .ok()?;
        if nums.len() < 2 || nums.len() > 4 {
            return None;
        }
        Some(Self {
            prompt_tokens: nums[0],
            completion_tokens: nums[1],
            cached_tokens: nums.get(2).copied().unwrap_or(0),
            cache_creation_tokens: nums.get(3).copied().unwrap_or(0),
        })
    }
}

fn de_usage<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<UsageOverride>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Obj(UsageOverride),
        Arr(Vec<u64>),
        Str(String),
    }
    let f: Option<Form> = Option::deserialize(d)?;
    Ok(match f {
        None => None,
        Some(Form::Obj(u)) => Some(u),
        Some(Form::Arr(a)) => UsageOverride::parse(
            &a.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        Some(Form::Str(s)) => UsageOverride::parse(&s),
    })
}

fn de_stringish<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v: Option<serde_json::Value> = Option::deserialize(d)?;
    Ok(match v {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

/// Per-request behaviour. Every field is optional; unset fields fall through to the next layer
/// and finally to the defaults (answer normally, global delay).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behavior {
    /// Answer with this status and the dialect's error body (2xx: answer normally).
    pub status: Option<u16>,
    /// Delay before responding, ms (overrides the global `--delay-ms`).
    pub delay_ms: Option<u64>,
    /// Extra wait before the response head, ms.
    pub first_byte_delay_ms: Option<u64>,
    /// `retry-after` header value (seconds or HTTP date), sent with error statuses.
    #[serde(default, deserialize_with = "de_stringish")]
    pub retry_after: Option<String>,
    /// `retry-after-ms` header value, sent with error statuses.
    pub retry_after_ms: Option<u64>,
    /// Stream this many content chunks then a dialect error event (streaming requests only).
    pub midstream_error_after: Option<usize>,
    /// (Streams only) answer 200 and send this error as the very first event: `rate_limit`,
    /// `overloaded` or `server_error` (also `api_error`, `overloaded_error`, ...; see
    /// [`crate::stream_error::ErrorKind::parse`]).
    pub first_event_error: Option<String>,
    /// The kind of the [`Behavior::midstream_error_after`] error (same names as
    /// [`Behavior::first_event_error`]; default: OpenAI `server_error`, Anthropic
    /// `overloaded_error`, Responses `server_error`).
    pub stream_error: Option<String>,
    /// `python`: write stream error events with Python's `json.dumps` separators.
    pub stream_error_style: Option<String>,
    /// `error`: a Responses stream fails with the stream-level `error` event instead of
    /// `response.failed`.
    pub stream_error_event: Option<String>,
    /// Usage to report instead of the computed one.
    #[serde(default, deserialize_with = "de_usage")]
    pub usage: Option<UsageOverride>,
    /// Never answer (until the client goes away).
    pub hang: Option<bool>,
    /// Close the connection without any response.
    pub drop_connection: Option<bool>,
    /// Number of content chunks in generated streams (default 8).
    pub chunks: Option<usize>,
    /// Pause between generated stream events, ms.
    pub chunk_delay_ms: Option<u64>,
    /// (Streams only) pause between the response head and the first event, ms: an upstream
    /// that sends its head at once and its first token after a slow prefill.
    pub first_event_delay_ms: Option<u64>,
    /// Send this many body pieces (SSE events, or split pieces) then reset the connection.
    pub drop_after_chunks: Option<usize>,
    /// Replay this fixture (path relative to the fixtures dir).
    pub fixture: Option<String>,
    /// Write the body in pieces of this many bytes.
    pub split_every: Option<usize>,
    /// Pause between split pieces, ms (default 5 for `*.splits.json`, 1 for `split_every`).
    pub split_delay_ms: Option<u64>,
    /// Reply text instead of the generated one.
    pub reply: Option<String>,
    /// Reply with a tool call when the request has tools (`true`), or not (`false`).
    pub tool_call: Option<bool>,
    /// With a tool call: one call per declared tool (parallel tool calls) instead of one.
    pub all_tools: Option<bool>,
    /// Answer 400 when the body carries a gateway-internal field (see `leak`).
    pub reject_internal_fields: Option<bool>,
    /// Send this JSON as the response body verbatim (with `status`, default 200).
    pub body: Option<serde_json::Value>,
    /// Extra response headers.
    pub headers: Option<BTreeMap<String, String>>,
    /// `"python"`: write generated JSON as Python's `json.dumps` does (see `python_json`).
    pub json_style: Option<String>,
}

macro_rules! overlay_fields {
    ($base:ident, $top:ident, $($f:ident),*) => {
        $( if $top.$f.is_some() { $base.$f = $top.$f; } )*
    };
}

impl Behavior {
    /// Fields set in `top` replace those of `self`.
    pub fn overlay(mut self, top: Behavior) -> Behavior {
        overlay_fields!(
            self,
            top,
            status,
            delay_ms,
            first_byte_delay_ms,
            retry_after,
            retry_after_ms,
            midstream_error_after,
            first_event_error,
            stream_error,
            stream_error_style,
            stream_error_event,
            usage,
            hang,
            drop_connection,
            drop_after_chunks,
            chunks,
            chunk_delay_ms,
            first_event_delay_ms,
            fixture,
            split_every,
            split_delay_ms,
            reply,
            tool_call,
            all_tools,
            reject_internal_fields,
            body,
            headers,
            json_style
        );
        self
    }

    /// Behaviour requested by `x-mock-*` headers. Unparseable values are ignored.
    pub fn from_headers(h: &HeaderMap) -> Behavior {
        let mut b = Behavior::default();
        if !h.keys().any(|k| k.as_str().starts_with("x-mock-")) {
            return b;
        }
        let s = |name: &str| h.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let num = |name: &str| s(name).and_then(|v| v.parse::<u64>().ok());
        let flag = |name: &str| s(name).map(|v| matches!(v, "1" | "true" | "yes"));
        b.status = s("x-mock-status").and_then(|v| v.parse().ok());
        b.delay_ms = num("x-mock-delay-ms");
        b.first_byte_delay_ms = num("x-mock-first-byte-delay-ms");
        b.retry_after = s("x-mock-retry-after").map(str::to_owned);
        b.retry_after_ms = num("x-mock-retry-after-ms");
        b.midstream_error_after = num("x-mock-midstream-error-after").map(|n| n as usize);
        b.first_event_error = s("x-mock-first-event-error").map(str::to_owned);
        b.stream_error = s("x-mock-stream-error").map(str::to_owned);
        b.stream_error_style = s("x-mock-stream-error-style").map(str::to_owned);
        b.stream_error_event = s("x-mock-stream-error-event").map(str::to_owned);
        b.usage = s("x-mock-usage").and_then(UsageOverride::parse);
        b.hang = flag("x-mock-hang");
        b.drop_connection = flag("x-mock-drop-connection");
        b.drop_after_chunks = num("x-mock-drop-after-chunks").map(|n| n as usize);
        b.chunks = num("x-mock-chunks").map(|n| n as usize);
        b.chunk_delay_ms = num("x-mock-chunk-delay-ms");
        b.first_event_delay_ms = num("x-mock-first-event-delay-ms");
        b.fixture = s("x-mock-fixture").map(str::to_owned);
        b.split_every = num("x-mock-split-every").map(|n| n as usize);
        b.split_delay_ms = num("x-mock-split-delay-ms");
        b.reply = s("x-mock-reply").map(str::to_owned);
        b.json_style = s("x-mock-json-style").map(str::to_owned);
        b.tool_call = flag("x-mock-tool-call");
        if s("x-mock-tool-call") == Some("all") {
            b.tool_call = Some(true);
            b.all_tools = Some(true);
        }
        b
    }

    /// Behaviour implied by the model name (see README, "Model names").
    /// `flaky_count` is the 1-based number of this request for a `*-flaky` model.
    pub fn from_model(model: &str, anthropic: bool, flaky_count: impl FnOnce() -> u64) -> Behavior {
        let mut b = Behavior::default();
        if let Some(path) = model.strip_prefix("fixture/") {
            b.fixture = Some(path.to_owned());
            return b;
        }
        if let Some(code) = model.strip_prefix("mock-status-") {
            b.status = code.parse().ok();
            return b;
        }
        if model.ends_with("-rate-limited") {
            b.status = Some(429);
        } else if model.ends_with("-overloaded") {
            b.status = Some(if anthropic { 529 } else { 503 });
        } else if model.ends_with("-midstream-error") {
            b.midstream_error_after = Some(3);
        } else if model.ends_with("-slow") {
            b.delay_ms = Some(1000);
        } else if model.ends_with("-flaky") {
            if flaky_count() % 2 == 1 {
                b.status = Some(500);
            }
        } else if model.ends_with("-tools") {
            b.tool_call = Some(true);
        }
        b
    }
}

/// Behaviours scripted through `POST /__script`, per key (deployment name or model).
#[derive(Debug, Default)]
pub struct Scripts {
    entries: Mutex<HashMap<String, ScriptEntry>>,
    /// Number of keys with a script (fast path: skip locking when zero).
    active: AtomicUsize,
}

#[derive(Debug, Default)]
struct ScriptEntry {
    queue: VecDeque<Behavior>,
    default: Option<Behavior>,
}

/// Body of `POST /__script`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRequest {
    /// Deployment name (from `/d/{deployment}`) or model name.
    pub key: String,
    /// Behaviours consumed one per request, in order (appended to any queued ones).
    #[serde(default)]
    pub responses: Vec<Behavior>,
    /// Sticky behaviour used when the queue is empty (`null` leaves it unchanged).
    #[serde(default)]
    pub default: Option<Behavior>,
}

impl Scripts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ScriptEntry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue `responses` for `key` and/or set its sticky default.
    pub fn add(&self, req: ScriptRequest) {
        let mut m = self.lock();
        let e = m.entry(req.key).or_default();
        e.queue.extend(req.responses);
        if req.default.is_some() {
            e.default = req.default;
        }
        self.active.store(m.len(), Ordering::Release);
    }

    /// Remove the script of `key`, or all scripts when `None`.
    pub fn clear(&self, key: Option<&str>) {
        let mut m = self.lock();
        match key {
            Some(k) => {
                m.remove(k);
            }
            None => m.clear(),
        }
        self.active.store(m.len(), Ordering::Release);
    }

    /// Next behaviour for a request: the deployment's script if it has one, else the model's.
    /// Pops the front of the queue, or returns a copy of the sticky default.
    pub fn next(&self, deployment: Option<&str>, model: Option<&str>) -> Option<Behavior> {
        if self.active.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut m = self.lock();
        for key in [deployment, model].into_iter().flatten() {
            if let Some(e) = m.get_mut(key) {
                if let Some(b) = e.queue.pop_front() {
                    return Some(b);
                }
                if let Some(d) = &e.default {
                    return Some(d.clone());
                }
            }
        }
        None
    }

    /// Current scripts as JSON: `{key: {"queued": n, "default": {...}|null}}`.
    pub fn describe(&self) -> serde_json::Value {
        let m = self.lock();
        let mut out = serde_json::Map::new();
        for (k, e) in m.iter() {
            out.insert(
                k.clone(),
                serde_json::json!({"queued": e.queue.len(), "default": e.default}),
            );
        }
        serde_json::Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn usage_parse() {
        let u = UsageOverride::parse("1000, 500").unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cached_tokens),
            (1000, 500, 0)
        );
        assert_eq!(UsageOverride::parse("1,2,3").unwrap().cached_tokens, 3);
        assert!(UsageOverride::parse("1").is_none());
        assert!(UsageOverride::parse("a,b").is_none());
    }

    #[test]
    fn headers_parse_and_win() {
        let mut h = HeaderMap::new();
        h.insert("x-mock-status", HeaderValue::from_static("503"));
        h.insert("x-mock-retry-after", HeaderValue::from_static("7"));
        h.insert("x-mock-hang", HeaderValue::from_static("1"));
        let hb = Behavior::from_headers(&h);
        assert_eq!(hb.status, Some(503));
        assert_eq!(hb.retry_after.as_deref(), Some("7"));
        assert_eq!(hb.hang, Some(true));
        let script = Behavior {
            status: Some(500),
            delay_ms: Some(50),
            ..Default::default()
        };
        let b = script.overlay(hb);
        assert_eq!(b.status, Some(503));
        assert_eq!(b.delay_ms, Some(50));
    }

    #[test]
    fn model_conventions() {
        assert_eq!(
            Behavior::from_model("mock-status-429", false, || 1).status,
            Some(429)
        );
        assert_eq!(
            Behavior::from_model("fixture/openai/chat/text.stream.sse", false, || 1).fixture,
            Some("openai/chat/text.stream.sse".into())
        );
        assert_eq!(
            Behavior::from_model("mock-claude-overloaded", true, || 1).status,
            Some(529)
        );
        assert_eq!(
            Behavior::from_model("mock-gpt-flaky", false, || 1).status,
            Some(500)
        );
        assert_eq!(
            Behavior::from_model("mock-gpt-flaky", false, || 2).status,
            None
        );
        assert_eq!(
            Behavior::from_model("gpt-4o", false, || 1),
            Behavior::default()
        );
    }

    #[test]
    fn scripts_in_order_then_default_deployment_first() {
        let s = Scripts::default();
        let req: ScriptRequest = serde_json::from_value(serde_json::json!({
            "key": "east",
            "responses": [{"status": 500}, {"status": 200, "delay_ms": 50, "retry_after": 3}],
            "default": {"status": 429}
        }))
        .unwrap();
        s.add(req);
        s.add(ScriptRequest {
            key: "m".into(),
            responses: vec![Behavior {
                status: Some(401),
                ..Default::default()
            }],
            default: None,
        });
        assert_eq!(s.next(Some("east"), Some("m")).unwrap().status, Some(500));
        let second = s.next(Some("east"), Some("m")).unwrap();
        assert_eq!((second.status, second.delay_ms), (Some(200), Some(50)));
        assert_eq!(second.retry_after.as_deref(), Some("3"));
        assert_eq!(s.next(Some("east"), None).unwrap().status, Some(429));
        assert_eq!(s.next(Some("west"), Some("m")).unwrap().status, Some(401));
        assert_eq!(s.next(Some("west"), Some("m")), None);
        s.clear(None);
        assert_eq!(s.next(Some("east"), None), None);
    }

    #[test]
    fn usage_forms_in_scripts() {
        let b: Behavior = serde_json::from_value(serde_json::json!({"usage": [10, 5, 2]})).unwrap();
        assert_eq!(b.usage.unwrap().cached_tokens, 2);
        let b: Behavior = serde_json::from_value(
            serde_json::json!({"usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
        )
        .unwrap();
        assert_eq!(b.usage.unwrap().completion_tokens, 5);
    }
}
