//! Parse-once interpretation of an inference request and the body sent upstream.

use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tollgate_protocol::body::{ForwardEdit, json_string};
use tollgate_protocol::{BodyError, Dialect, RequestBody};
use tollgate_router::FailureClass;

/// Inference endpoints, each with the upstream path it maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/chat/completions`.
    ChatCompletions,
    /// `POST /v1/completions` (legacy text completions).
    Completions,
    /// `POST /v1/embeddings`.
    Embeddings,
    /// `POST /v1/messages` (Anthropic Messages).
    Messages,
    /// `POST /v1/messages/count_tokens` (Anthropic token count).
    CountTokens,
    /// `POST /v1/responses` (OpenAI Responses).
    Responses,
}

impl Endpoint {
    /// Path appended to the deployment's base URL when the request passes through unchanged.
    pub fn upstream_path(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "/chat/completions",
            Endpoint::Completions => "/completions",
            Endpoint::Embeddings => "/embeddings",
            Endpoint::Messages => "/v1/messages",
            Endpoint::CountTokens => "/v1/messages/count_tokens",
            Endpoint::Responses => "/responses",
        }
    }

    /// The field that must be present besides `model`.
    pub fn required_field(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions | Endpoint::Messages | Endpoint::CountTokens => "messages",
            Endpoint::Completions => "prompt",
            Endpoint::Embeddings | Endpoint::Responses => "input",
        }
    }

    /// The dialect errors are answered in.
    pub fn dialect(self) -> Dialect {
        match self {
            Endpoint::Messages | Endpoint::CountTokens => Dialect::Anthropic,
            _ => Dialect::OpenAi,
        }
    }

    /// Whether the endpoint can stream.
    pub fn can_stream(self) -> bool {
        !matches!(self, Endpoint::Embeddings | Endpoint::CountTokens)
    }

    /// LiteLLM `call_type` name (spend logs, metrics).
    pub fn call_type(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "acompletion",
            Endpoint::Completions => "atext_completion",
            Endpoint::Embeddings => "aembedding",
            Endpoint::Messages => "anthropic_messages",
            Endpoint::CountTokens => "count_tokens",
            Endpoint::Responses => "aresponses",
        }
    }
}

/// Request fields the gateway consumes and never forwards (LiteLLM's proxy-only parameters;
/// `reference/litellm-surface.md` §3 and §12). `user` is forwarded.
pub const GATEWAY_ONLY_FIELDS: &[&str] = &[
    "metadata",
    "litellm_metadata",
    "tags",
    "cache",
    "caching",
    "fallbacks",
    "context_window_fallbacks",
    "content_policy_fallbacks",
    "mock_response",
    "mock_testing_fallbacks",
    "mock_testing_context_fallbacks",
    "mock_testing_content_policy_fallbacks",
    "mock_timeout",
    "num_retries",
    "max_retries",
    "timeout",
    "stream_timeout",
    "api_base",
    "base_url",
    "api_key",
    "api_version",
    "organization",
    "litellm_call_id",
    "litellm_logging_obj",
    "litellm_params",
    "litellm_trace_id",
    "litellm_session_id",
    "proxy_server_request",
    "guardrails",
    "rpm",
    "tpm",
    "no-log",
];

/// What the gateway reads from a request body; the body itself stays raw.
#[derive(Debug)]
pub struct ParsedRequest<'a> {
    /// The raw top-level fields.
    pub body: RequestBody<'a>,
    /// Requested model (model group, alias or wildcard match).
    pub model: String,
    /// `stream: true`.
    pub stream: bool,
    /// The client asked for the final usage chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Client-requested timeout in seconds (body `timeout`).
    pub timeout_s: Option<f64>,
    /// Client-requested stream timeout in seconds (body `stream_timeout`): first byte and
    /// idle gap between events.
    pub stream_timeout_s: Option<f64>,
    /// LiteLLM's per-request `mock_response`: the gateway answers with this text itself
    /// (usage estimated, no upstream call).
    pub mock_response: Option<String>,
    /// LiteLLM's fallback tests: the failure the requested model group reports without
    /// calling its upstream, from the first of `mock_testing_fallbacks` (a 500, for
    /// `fallbacks`), `mock_testing_context_fallbacks` (`context_window_fallbacks`) and
    /// `mock_testing_content_policy_fallbacks` (`content_policy_fallbacks`) set to `true`.
    pub mock_failure: Option<FailureClass>,
    /// The request bytes, for [`Self::json`].
    raw: &'a [u8],
    /// The whole body as JSON: built on first use, when an attempt translates, and shared
    /// by every later attempt. Passthroughs never build it.
    json: OnceLock<Arc<Value>>,
}

/// The request fields that simulate a failure, in LiteLLM's order of precedence.
const MOCK_FAILURE_FIELDS: [(&str, FailureClass); 3] = [
    ("mock_testing_fallbacks", FailureClass::ServerError),
    (
        "mock_testing_context_fallbacks",
        FailureClass::ContextWindowExceeded,
    ),
    (
        "mock_testing_content_policy_fallbacks",
        FailureClass::ContentPolicy,
    ),
];

#[derive(serde::Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

/// `[]`, with any whitespace inside.
fn is_empty_array(raw: &str) -> bool {
    raw.strip_prefix('[')
        .and_then(|r| r.trim_end().strip_suffix(']'))
        .is_some_and(|inner| inner.trim().is_empty())
}

impl<'a> ParsedRequest<'a> {
    /// Parses `bytes` once and checks the fields every endpoint needs.
    pub fn parse(bytes: &'a [u8], endpoint: Endpoint) -> Result<Self, BodyError> {
        let body = RequestBody::parse(bytes)?;
        let model = body
            .str_field("model")?
            .ok_or(BodyError::Missing("model"))?
            .into_owned();
        let required = endpoint.required_field();
        match body.get(required) {
            None => return Err(BodyError::Missing(required)),
            Some(v) if required == "messages" && is_empty_array(v.get()) => {
                return Err(BodyError::EmptyArray(required));
            }
            Some(_) => {}
        }
        // Anthropic requires max_tokens on Messages (not on count_tokens).
        if endpoint == Endpoint::Messages && !body.contains("max_tokens") {
            return Err(BodyError::Missing("max_tokens"));
        }
        let stream = endpoint.can_stream() && body.bool_field("stream")?.unwrap_or(false);
        let include_usage = body
            .typed_field::<StreamOptions>("stream_options", "an object")?
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let timeout_s = body.f64_field("timeout")?;
        let stream_timeout_s = body.f64_field("stream_timeout")?;
        let mock_response = body.typed_field::<String>("mock_response", "a string")?;
        let mut mock_failure = None;
        for (field, class) in MOCK_FAILURE_FIELDS {
            if body.bool_field(field)? == Some(true) && mock_failure.is_none() {
                mock_failure = Some(class);
            }
        }
        Ok(Self {
            raw: bytes,
            json: OnceLock::new(),
            body,
            model,
            stream,
            include_usage,
            timeout_s,
            stream_timeout_s,
            mock_response,
            mock_failure,
        })
    }

    /// The whole body as a JSON document, parsed once per request however many attempts
    /// translate it (the top-level parse already validated it). Errors: the parser's, which
    /// the caller answers as 400 `Invalid JSON` ([`crate::errors::GatewayFailure::InvalidJson`]).
    pub fn json(&self) -> Result<Arc<Value>, serde_json::Error> {
        if let Some(v) = self.json.get() {
            return Ok(Arc::clone(v));
        }
        let v: Value = serde_json::from_slice(self.raw)?;
        Ok(Arc::clone(self.json.get_or_init(|| Arc::new(v))))
    }

    /// Writes the upstream body: `model` rewritten, gateway-only and provider-unsupported
    /// fields removed, deployment defaults added, and (for streams whose client did not ask)
    /// `stream_options.include_usage` forced on so usage is always captured. With
    /// `anthropic_metadata` (Messages to an Anthropic deployment) `metadata` is Anthropic's own
    /// field: its `user_id` is forwarded, nothing else ([`crate::anthropic_metadata`]).
    pub fn upstream_body(
        &self,
        upstream_model: &str,
        defaults: &[(String, String)],
        unsupported: &[&str],
        force_stream_usage: bool,
        anthropic_metadata: bool,
        out: &mut Vec<u8>,
    ) {
        let model_json = json_string(upstream_model);
        let metadata = anthropic_metadata
            .then(|| self.body.get("metadata"))
            .flatten()
            .and_then(crate::anthropic_metadata::forwarded);
        let mut remove: Vec<&str> =
            Vec::with_capacity(GATEWAY_ONLY_FIELDS.len() + unsupported.len());
        remove.extend(
            GATEWAY_ONLY_FIELDS
                .iter()
                .filter(|f| metadata.is_none() || **f != "metadata"),
        );
        remove.extend_from_slice(unsupported);
        let mut replace: Vec<(&str, &str)> = vec![("model", model_json.as_str())];
        if let Some(m) = &metadata {
            replace.push(("metadata", m.as_str()));
        }
        let mut append: Vec<(&str, &str)> = defaults
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let forced;
        if self.stream && force_stream_usage && !self.include_usage {
            forced = self.forced_stream_options();
            if self.body.contains("stream_options") {
                replace.push(("stream_options", forced.as_str()));
            } else {
                append.insert(0, ("stream_options", forced.as_str()));
            }
        }
        self.body.write_forward(
            &ForwardEdit {
                remove: &remove,
                replace: &replace,
                append: &append,
            },
            out,
        );
    }

    /// The request's own `num_retries` (LiteLLM's body field; a header may set it too).
    ///
    /// Errors: [`BodyError::WrongType`] unless a non-negative integer or `null`.
    pub fn num_retries(&self) -> Result<Option<u32>, BodyError> {
        self.body
            .typed_field("num_retries", "a non-negative integer")
    }

    /// The request's own `fallbacks`: the model groups to try, in order, when the requested
    /// one fails. LiteLLM takes model names or `{"model": NAME}` objects (its client-side
    /// fallbacks docs); other keys of such an object would change the request for that
    /// fallback, which Tollgate does not do, so an object with them is refused rather than
    /// half applied.
    ///
    /// Errors: [`BodyError::WrongType`] for anything else (a bare string included).
    pub fn fallbacks(&self) -> Result<Option<Vec<String>>, BodyError> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Entry {
            Name(String),
            Model(ModelOnly),
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct ModelOnly {
            model: String,
        }
        let entries: Option<Vec<Entry>> = self.body.typed_field(
            "fallbacks",
            "a list of model names (or of {\"model\": name} objects)",
        )?;
        Ok(entries.map(|v| {
            v.into_iter()
                .map(|e| match e {
                    Entry::Name(n) => n,
                    Entry::Model(m) => m.model,
                })
                .collect()
        }))
    }

    /// The client's `stream_options` object with `include_usage: true` set.
    fn forced_stream_options(&self) -> String {
        let mut map = self
            .body
            .get("stream_options")
            .and_then(|raw| {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(raw.get()).ok()
            })
            .unwrap_or_default();
        map.insert("include_usage".into(), serde_json::Value::Bool(true));
        serde_json::Value::Object(map).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_unknown_fields_and_strips_gateway_fields() {
        let raw = br#"{"model":"fast","messages":[{"role":"user","content":"hi"}],"brand_new_param":{"a":1},"user":"u","metadata":{"x":1},"tags":["t"],"mock_response":"x","api_key":"sk-client","fallbacks":["b"],"num_retries":3,"cache":{"no-cache":true},"temperature":0.1}"#;
        let p = ParsedRequest::parse(raw, Endpoint::ChatCompletions).unwrap();
        assert_eq!(p.model, "fast");
        assert!(!p.stream);
        let mut out = Vec::new();
        p.upstream_body(
            "gpt-4o-2024",
            &[
                ("temperature".into(), "0.7".into()),
                ("seed".into(), "42".into()),
            ],
            &[],
            true,
            false,
            &mut out,
        );
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"model":"gpt-4o-2024","messages":[{"role":"user","content":"hi"}],"brand_new_param":{"a":1},"user":"u","temperature":0.1,"seed":42}"#
        );
    }

    #[test]
    fn anthropic_metadata_keeps_only_user_id() {
        let raw = br#"{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u-1","tags":["t"],"trace_id":"x"}}"#;
        let p = ParsedRequest::parse(raw, Endpoint::Messages).unwrap();
        let body = |anthropic: bool| {
            let mut out = Vec::new();
            p.upstream_body("claude-x", &[], &[], false, anthropic, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            body(true),
            r#"{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u-1"}}"#
        );
        assert!(!body(false).contains("metadata"));
        let raw = br#"{"model":"claude","max_tokens":5,"messages":[{}],"metadata":{"tags":["t"]}}"#;
        let p = ParsedRequest::parse(raw, Endpoint::Messages).unwrap();
        let mut out = Vec::new();
        p.upstream_body("claude-x", &[], &[], false, true, &mut out);
        assert!(!String::from_utf8(out).unwrap().contains("metadata"));
    }

    #[test]
    fn request_fallbacks_take_names_and_model_objects_and_refuse_the_rest() {
        let parse = |extra: &str| {
            let raw =
                format!(r#"{{"model":"a","messages":[{{"role":"user","content":"x"}}]{extra}}}"#);
            let p = ParsedRequest::parse(raw.as_bytes(), Endpoint::ChatCompletions).unwrap();
            (p.fallbacks(), p.num_retries())
        };
        assert_eq!(parse("").0, Ok(None));
        assert_eq!(
            parse(r#","fallbacks":["b",{"model":"c"}],"num_retries":2"#),
            (Ok(Some(vec!["b".to_owned(), "c".to_owned()])), Ok(Some(2)))
        );
        for bad in [
            r#","fallbacks":"c""#,
            r#","fallbacks":[{"model":"c","messages":[]}]"#,
            r#","fallbacks":[1]"#,
        ] {
            assert!(
                matches!(
                    parse(bad).0,
                    Err(BodyError::WrongType {
                        field: "fallbacks",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        for bad in [r#","num_retries":"3""#, r#","num_retries":-1"#] {
            assert!(
                matches!(
                    parse(bad).1,
                    Err(BodyError::WrongType {
                        field: "num_retries",
                        ..
                    })
                ),
                "{bad}"
            );
        }
    }

    /// The whole-body JSON a translation reads is built once and shared by every attempt;
    /// it holds exactly the fields the client sent.
    #[test]
    fn whole_body_json_is_parsed_once() {
        let raw = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1}"#;
        let p = ParsedRequest::parse(raw, Endpoint::ChatCompletions).unwrap();
        assert!(
            p.json.get().is_none(),
            "not parsed before an attempt translates"
        );
        let first = p.json().unwrap();
        let again = p.json().unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        assert_eq!(
            *first,
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 1})
        );
    }

    #[test]
    fn stream_usage_forced_only_when_client_did_not_ask() {
        let raw = br#"{"model":"m","messages":[{}],"stream":true}"#;
        let p = ParsedRequest::parse(raw, Endpoint::ChatCompletions).unwrap();
        assert!(p.stream && !p.include_usage);
        let mut out = Vec::new();
        p.upstream_body("m", &[], &[], true, false, &mut out);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":true}}"#
        );
        let raw = br#"{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":false,"include_obfuscation":false}}"#;
        let p = ParsedRequest::parse(raw, Endpoint::ChatCompletions).unwrap();
        let mut out = Vec::new();
        p.upstream_body("m", &[], &[], true, false, &mut out);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}"#
        );
        let raw =
            br#"{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":true}}"#;
        let p = ParsedRequest::parse(raw, Endpoint::ChatCompletions).unwrap();
        assert!(p.include_usage);
    }

    #[test]
    fn mock_testing_flags_pick_the_failure_to_simulate() {
        let parse = |extra: &str| {
            let raw =
                format!(r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}]{extra}}}"#);
            ParsedRequest::parse(raw.as_bytes(), Endpoint::ChatCompletions).map(|p| p.mock_failure)
        };
        assert_eq!(parse(""), Ok(None));
        assert_eq!(parse(r#","mock_testing_fallbacks":false"#), Ok(None));
        assert_eq!(
            parse(r#","mock_testing_content_policy_fallbacks":true"#),
            Ok(Some(FailureClass::ContentPolicy))
        );
        // LiteLLM's precedence: the plain fallbacks test first.
        assert_eq!(
            parse(r#","mock_testing_context_fallbacks":true,"mock_testing_fallbacks":true"#),
            Ok(Some(FailureClass::ServerError))
        );
        assert!(parse(r#","mock_testing_fallbacks":"yes""#).is_err());
    }

    #[test]
    fn missing_fields() {
        assert_eq!(
            ParsedRequest::parse(br#"{"messages":[]}"#, Endpoint::ChatCompletions).unwrap_err(),
            BodyError::Missing("model")
        );
        assert_eq!(
            ParsedRequest::parse(br#"{"model":"m"}"#, Endpoint::ChatCompletions).unwrap_err(),
            BodyError::Missing("messages")
        );
        assert_eq!(
            ParsedRequest::parse(br#"{"model":"m"}"#, Endpoint::Embeddings).unwrap_err(),
            BodyError::Missing("input")
        );
        for endpoint in [Endpoint::ChatCompletions, Endpoint::Messages] {
            assert_eq!(
                ParsedRequest::parse(br#"{"model":"m","max_tokens":5,"messages":[ ] }"#, endpoint)
                    .unwrap_err(),
                BodyError::EmptyArray("messages")
            );
        }
        assert!(
            ParsedRequest::parse(
                br#"{"model":"m","messages":[{"role":"user","content":"[]"}]}"#,
                Endpoint::ChatCompletions
            )
            .is_ok()
        );
        // Embeddings never stream even if asked.
        let p = ParsedRequest::parse(
            br#"{"model":"m","input":"x","stream":true}"#,
            Endpoint::Embeddings,
        )
        .unwrap();
        assert!(!p.stream);
    }
}
