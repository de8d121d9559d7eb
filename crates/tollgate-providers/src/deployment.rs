//! A deployment: one entry of `model_list`, resolved and ready to call.

use std::time::Duration;

use http::{HeaderName, HeaderValue};

use crate::clientside::ClientsideAuth;
use crate::egress::CheckedBase;
use crate::table::{AuthStyle, ProviderSpec, WireDialect, provider_spec};

/// Default total timeout when neither the deployment nor `litellm_settings.request_timeout`
/// sets one: 600 s, the OpenAI SDK's default (LiteLLM's 6000 s is longer than any provider).
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);
/// Default connect timeout: 5 s, the OpenAI SDK's connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// `anthropic-version` sent to Anthropic upstreams when the client sent none (translated
/// requests from OpenAI-dialect clients); a Messages client's own version is forwarded.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Default bound on a non-streamed upstream response body: 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Per-deployment time limits, each enforced separately.
///
/// LiteLLM's `timeout` (seconds) is the whole call for non-streamed requests; its
/// `stream_timeout` (seconds) bounds the wait for the first chunk of a stream. A stream is
/// otherwise bounded by the idle gap between events, not by a total, so long streams that keep
/// producing are never cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect: Duration,
    /// From sending the request to the response headers (first byte).
    pub first_byte: Duration,
    /// Longest silence between two stream reads.
    pub idle: Duration,
    /// Whole non-streamed call, body included.
    pub total: Duration,
}

impl Timeouts {
    /// Derives the four limits from LiteLLM's `timeout` / `stream_timeout` (seconds).
    pub fn from_litellm(timeout_s: Option<f64>, stream_timeout_s: Option<f64>) -> Self {
        let total = secs(timeout_s).unwrap_or(DEFAULT_TOTAL_TIMEOUT);
        let stream = secs(stream_timeout_s).unwrap_or(total);
        Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT.min(total),
            first_byte: stream.min(total),
            idle: stream,
            total,
        }
    }

    /// The limits for one request: `override_s` (a client's own `timeout`, s) can only
    /// shorten them all; `stream_override_s` (a streaming client's `stream_timeout` or
    /// `x-litellm-stream-timeout`, s) can only shorten the first-byte and idle-gap bounds.
    ///
    /// `stream_timeout` bounds streams only (LiteLLM passes it instead of `timeout` when
    /// `stream: true`): a non-streamed request may take its whole `timeout` before its head,
    /// so its first-byte bound is its total.
    pub fn for_request(
        &self,
        stream: bool,
        override_s: Option<f64>,
        stream_override_s: Option<f64>,
    ) -> Timeouts {
        let mut t = match secs(override_s) {
            None => *self,
            Some(t) => Timeouts {
                connect: self.connect.min(t),
                first_byte: self.first_byte.min(t),
                idle: self.idle.min(t),
                total: self.total.min(t),
            },
        };
        if !stream {
            t.first_byte = t.total;
            t.idle = t.total;
        } else if let Some(s) = secs(stream_override_s) {
            t.first_byte = t.first_byte.min(s);
            t.idle = t.idle.min(s);
        }
        t
    }
}

fn secs(v: Option<f64>) -> Option<Duration> {
    v.filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
}

/// Behaviour of a deployment answered in process (`mock/` provider, or any deployment with
/// `mock_response` set, as in LiteLLM).
#[derive(Debug, Clone, PartialEq)]
pub struct MockBehaviour {
    /// Reply text; `None` echoes the last user message.
    pub reply: Option<String>,
    /// Delay before answering, in ms (`mock_latency_ms`).
    pub latency_ms: u64,
    /// Number of content chunks when streaming (`mock_chunks`, default 4).
    pub chunks: usize,
    /// Reported completion tokens override (`mock_completion_tokens`).
    pub completion_tokens: Option<u64>,
}

/// Answer right away, in 4 chunks when streaming, with estimated usage, echoing the last user
/// message (the `mock/` provider's defaults).
impl Default for MockBehaviour {
    fn default() -> Self {
        MockBehaviour {
            reply: None,
            latency_ms: 0,
            chunks: 4,
            completion_tokens: None,
        }
    }
}

/// Plain data describing a deployment, as read from config (no validation yet).
#[derive(Debug, Clone, Default)]
pub struct DeploymentSpec {
    /// Deployment id (`model_info.id` or a stable hash).
    pub id: String,
    /// Public model group name (`model_name`).
    pub model_group: String,
    /// Provider prefix, e.g. `openai`.
    pub provider: String,
    /// Upstream model id (after the prefix); may contain `*` for wildcard deployments.
    pub upstream_model: String,
    /// `api_base`.
    pub api_base: Option<String>,
    /// `api_key` (never logged).
    pub api_key: Option<String>,
    /// `organization` (sent as `OpenAI-Organization`).
    pub organization: Option<String>,
    /// `extra_headers`.
    pub extra_headers: Vec<(String, String)>,
    /// Other `litellm_params` keys, forwarded as request defaults (a client's value wins).
    pub defaults: serde_json::Map<String, serde_json::Value>,
    /// `timeout` in seconds.
    pub timeout_s: Option<f64>,
    /// `stream_timeout` in seconds.
    pub stream_timeout_s: Option<f64>,
    /// Response size bound in bytes (0 = default).
    pub max_response_bytes: usize,
    /// `mock_response`, if set: answer in process.
    pub mock_response: Option<String>,
    /// `model_info.mode` (`chat`, `embedding`, ...): what a health check sends.
    pub mode: Option<String>,
    /// `configurable_clientside_auth_params`, as written (see [`crate::clientside`]).
    pub clientside_auth_params: Vec<serde_json::Value>,
}

/// Why a deployment cannot be built. Never carries a secret.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeploymentError {
    /// The provider prefix is not in the table.
    #[error(
        "model_list entry '{model_group}' (deployment {id}): provider '{provider}' is not served by Tollgate yet; served: {served}"
    )]
    UnknownProvider {
        /// Deployment id.
        id: String,
        /// The entry's `model_name`.
        model_group: String,
        /// The prefix.
        provider: String,
        /// Comma-separated served prefixes.
        served: String,
    },
    /// The provider needs `api_base` and none was given (config or env).
    #[error("deployment '{id}': provider '{provider}' needs api_base (litellm_params.api_base)")]
    MissingApiBase {
        /// Deployment id.
        id: String,
        /// The prefix.
        provider: String,
    },
    /// A header name or value is not valid HTTP.
    #[error("deployment '{id}': invalid header '{name}'")]
    InvalidHeader {
        /// Deployment id.
        id: String,
        /// Header name (the value is not shown: it may be secret).
        name: String,
    },
    /// `configurable_clientside_auth_params` cannot be read.
    #[error("deployment '{id}': litellm_params.configurable_clientside_auth_params: {error}")]
    ClientsideAuth {
        /// Deployment id.
        id: String,
        /// What is wrong with which entry.
        error: crate::clientside::ClientsideAuthError,
    },
}

/// A deployment ready to call. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Deployment {
    /// Deployment id.
    pub id: String,
    /// `id` as a header value (`x-litellm-model-id`), built once: cloning it per response
    /// costs no allocation. `None` when the id has bytes a header cannot carry.
    pub id_header: Option<HeaderValue>,
    /// Public model group name.
    pub model_group: String,
    /// Provider defaults.
    pub provider: &'static ProviderSpec,
    /// Upstream model id or wildcard pattern.
    pub upstream_model: String,
    /// Base URL without trailing slash, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Headers sent on every call: auth (marked sensitive), organization, extra headers.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Request defaults as (field, JSON text), added when the client did not set them.
    pub defaults: Vec<(String, String)>,
    /// Time limits.
    pub timeouts: Timeouts,
    /// Non-streamed response body bound, bytes.
    pub max_response_bytes: usize,
    /// Set when the deployment is answered in process.
    pub mock: Option<MockBehaviour>,
    /// `model_info.mode` (`chat`, `embedding`, ...), as configured.
    pub mode: Option<String>,
    /// Which client-side credentials a request may bring (`configurable_clientside_auth_params`).
    pub clientside: ClientsideAuth,
    /// Set on a per-request copy whose base a client chose: the checked addresses, the only
    /// ones the client connects to ([`Deployment::with_client_credentials`]).
    pub(crate) pinned: Option<CheckedBase>,
    /// `{base_url}{path}` parsed once per path called (see [`crate::client::EndpointUrls`]).
    pub(crate) urls: crate::client::EndpointUrls,
}

impl Deployment {
    /// Resolves a spec: base URL and key from config, else from the provider's env vars
    /// (read through `env`, so tests need not touch the process env).
    pub fn build(
        spec: DeploymentSpec,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Deployment, DeploymentError> {
        let provider =
            provider_spec(&spec.provider).ok_or_else(|| DeploymentError::UnknownProvider {
                id: spec.id.clone(),
                model_group: spec.model_group.clone(),
                provider: spec.provider.clone(),
                served: crate::table::PROVIDERS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let mut defaults_map = spec.defaults;
        let mock = take_mock(&mut defaults_map, spec.mock_response, provider);
        let base = spec
            .api_base
            .clone()
            .filter(|b| !b.is_empty())
            .or_else(|| provider.api_base_env.iter().find_map(|v| env(v)))
            .or(provider.default_api_base.map(str::to_owned));
        let base_url = match (base, &mock) {
            (Some(b), _) => provider_base(provider, &b),
            (None, Some(_)) => String::new(),
            (None, None) => {
                return Err(DeploymentError::MissingApiBase {
                    id: spec.id,
                    provider: spec.provider,
                });
            }
        };
        let key = spec
            .api_key
            .filter(|k| !k.is_empty())
            .or_else(|| provider.api_key_env.iter().find_map(|v| env(v)));
        let mut headers = Vec::new();
        let bad = |name: &str| DeploymentError::InvalidHeader {
            id: spec.id.clone(),
            name: name.to_owned(),
        };
        if let Some(key) = key {
            headers.push(auth_header(provider, &key).map_err(|name| bad(name.as_str()))?);
        }
        if provider.dialect == WireDialect::Anthropic
            && !spec
                .extra_headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("anthropic-version"))
        {
            headers.push(anthropic_version());
        }
        if let Some(org) = spec.organization.filter(|o| !o.is_empty()) {
            let value = HeaderValue::from_str(&org).map_err(|_| bad("openai-organization"))?;
            headers.push((HeaderName::from_static("openai-organization"), value));
        }
        for (name, value) in &spec.extra_headers {
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad(name))?;
            let mut v = HeaderValue::from_str(value).map_err(|_| bad(name))?;
            v.set_sensitive(true);
            headers.push((n, v));
        }
        let defaults = defaults_map
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        let clientside = ClientsideAuth::parse(&spec.clientside_auth_params).map_err(|error| {
            DeploymentError::ClientsideAuth {
                id: spec.id.clone(),
                error,
            }
        })?;
        Ok(Deployment {
            timeouts: Timeouts::from_litellm(spec.timeout_s, spec.stream_timeout_s),
            max_response_bytes: if spec.max_response_bytes == 0 {
                DEFAULT_MAX_RESPONSE_BYTES
            } else {
                spec.max_response_bytes
            },
            id_header: shared_header_value(&spec.id),
            id: spec.id,
            model_group: spec.model_group,
            provider,
            upstream_model: spec.upstream_model,
            base_url,
            headers,
            defaults,
            mock,
            mode: spec.mode,
            clientside,
            pinned: None,
            urls: Default::default(),
        })
    }

    /// Whether the upstream model is a wildcard pattern (`*`, `openai/*`, `gpt-*`).
    pub fn is_wildcard(&self) -> bool {
        self.upstream_model.contains('*')
    }

    /// The wire dialect to use.
    pub fn dialect(&self) -> WireDialect {
        if self.mock.is_some() {
            WireDialect::InProcessMock
        } else {
            self.provider.dialect
        }
    }
}

/// The provider's auth header carrying `key` (marked sensitive).
///
/// Errors: the header's name when `key` cannot be a header value.
pub(crate) fn auth_header(
    provider: &ProviderSpec,
    key: &str,
) -> Result<(HeaderName, HeaderValue), HeaderName> {
    let name = auth_header_name(provider);
    let text = match provider.auth {
        AuthStyle::Bearer => format!("Bearer {key}"),
        AuthStyle::ApiKeyHeader | AuthStyle::XApiKey => key.to_owned(),
    };
    let mut value = HeaderValue::from_str(&text).map_err(|_| name.clone())?;
    value.set_sensitive(true);
    Ok((name, value))
}

pub(crate) fn auth_header_name(provider: &ProviderSpec) -> HeaderName {
    match provider.auth {
        AuthStyle::Bearer => http::header::AUTHORIZATION,
        AuthStyle::ApiKeyHeader => HeaderName::from_static("api-key"),
        AuthStyle::XApiKey => HeaderName::from_static("x-api-key"),
    }
}

pub(crate) fn anthropic_version() -> (HeaderName, HeaderValue) {
    (
        HeaderName::from_static("anthropic-version"),
        HeaderValue::from_static(ANTHROPIC_VERSION),
    )
}

/// A configured or client-chosen `api_base` as the provider's base URL: LiteLLM configs write
/// the Anthropic base with or without `/v1/messages`; others get the provider's suffix
/// (Ollama's `/v1`) and lose a trailing `/`. A query stays after the path.
pub(crate) fn provider_base(provider: &ProviderSpec, base: &str) -> String {
    if provider.dialect == WireDialect::Anthropic {
        with_query(base, |path| {
            let t = path.trim_end_matches('/');
            let t = t.strip_suffix("/v1/messages").unwrap_or(t);
            t.strip_suffix("/v1").unwrap_or(t).to_owned()
        })
    } else {
        with_query(base, |path| normalise_base(path, provider.base_suffix))
    }
}

fn take_mock(
    defaults: &mut serde_json::Map<String, serde_json::Value>,
    mock_response: Option<String>,
    provider: &ProviderSpec,
) -> Option<MockBehaviour> {
    let latency = defaults.remove("mock_latency_ms").and_then(|v| v.as_u64());
    let chunks = defaults.remove("mock_chunks").and_then(|v| v.as_u64());
    let completion = defaults
        .remove("mock_completion_tokens")
        .and_then(|v| v.as_u64());
    if provider.dialect != WireDialect::InProcessMock && mock_response.is_none() {
        return None;
    }
    let defaults = MockBehaviour::default();
    Some(MockBehaviour {
        reply: mock_response,
        latency_ms: latency.unwrap_or(defaults.latency_ms),
        chunks: chunks.map_or(defaults.chunks, |c| c.clamp(1, 10_000) as usize),
        completion_tokens: completion,
    })
}

/// `f` applied to the part of `base` before its query, the query (if any) kept after it.
fn with_query(base: &str, f: impl FnOnce(&str) -> String) -> String {
    match base.split_once('?') {
        Some((path, query)) => format!("{}?{query}", f(path)),
        None => f(base),
    }
}

/// `{base}{path}`, a query the base carries (some OpenAI-compatible servers take a key or an
/// `api-version` there) kept after the joined path: `http://h/v1?k=x` + `/chat/completions`
/// gives `http://h/v1/chat/completions?k=x`. A query of `path`'s own comes first, joined to
/// the base's with `&`.
pub fn join_url(base: &str, path: &str) -> String {
    match base.split_once('?') {
        None => format!("{base}{path}"),
        Some((b, q)) => match path.split_once('?') {
            None => format!("{b}{path}?{q}"),
            Some((p, pq)) => format!("{b}{p}?{pq}&{q}"),
        },
    }
}

fn normalise_base(base: &str, suffix: &str) -> String {
    let trimmed = base.trim_end_matches('/');
    if !suffix.is_empty() && !trimmed.ends_with(suffix) {
        format!("{trimmed}{suffix}")
    } else {
        trimmed.to_owned()
    }
}

/// `text` as a header value whose clones share one buffer (a value built from a `Vec` copies
/// it on its first clone, once; `from_str` would copy on every call). `None` when `text` has
/// bytes a header cannot carry.
pub fn shared_header_value(text: &str) -> Option<HeaderValue> {
    let v = HeaderValue::from_maybe_shared(bytes::Bytes::copy_from_slice(text.as_bytes())).ok()?;
    // The first clone promotes the buffer to a shared one; later clones only count references.
    drop(v.clone());
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_header_values_keep_the_text_and_refuse_control_bytes() {
        let v = shared_header_value("dep-1 (eu)").unwrap();
        assert_eq!(v.to_str().unwrap(), "dep-1 (eu)");
        assert_eq!(v.clone(), v);
        assert!(shared_header_value("a\nb").is_none());
    }

    fn spec(provider: &str) -> DeploymentSpec {
        DeploymentSpec {
            id: "d1".into(),
            model_group: "g".into(),
            provider: provider.into(),
            upstream_model: "m".into(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_from_table_and_env() {
        let env = |k: &str| (k == "GROQ_API_KEY").then(|| "gsk-secret".to_owned());
        let d = Deployment::build(spec("groq"), &env).unwrap();
        assert_eq!(d.base_url, "https://api.groq.com/openai/v1");
        assert_eq!(d.headers[0].0, http::header::AUTHORIZATION);
        assert_eq!(d.headers[0].1, "Bearer gsk-secret");
        assert!(d.headers[0].1.is_sensitive());
        assert!(!format!("{d:?}").contains("gsk-secret"));
    }

    #[test]
    fn api_base_normalised_and_required() {
        let mut s = spec("ollama_chat");
        s.api_base = Some("http://127.0.0.1:11434/".into());
        let d = Deployment::build(s, &|_| None).unwrap();
        assert_eq!(d.base_url, "http://127.0.0.1:11434/v1");
        assert!(d.headers.is_empty());
        assert_eq!(
            Deployment::build(spec("hosted_vllm"), &|_| None).unwrap_err(),
            DeploymentError::MissingApiBase {
                id: "d1".into(),
                provider: "hosted_vllm".into()
            }
        );
    }

    #[test]
    fn request_defaults_and_mock_keys() {
        let mut s = spec("mock");
        s.defaults
            .insert("temperature".into(), serde_json::json!(0.2));
        s.defaults
            .insert("mock_latency_ms".into(), serde_json::json!(15));
        let d = Deployment::build(s, &|_| None).unwrap();
        assert_eq!(
            d.defaults,
            vec![("temperature".to_owned(), "0.2".to_owned())]
        );
        let m = d.mock.unwrap();
        assert_eq!(m.latency_ms, 15);
        assert_eq!(m.chunks, 4);
    }

    #[test]
    fn anthropic_auth_version_and_base() {
        let mut s = spec("anthropic");
        s.api_key = Some("sk-ant-x".into());
        s.api_base = Some("http://127.0.0.1:9/v1/messages".into());
        let d = Deployment::build(s, &|_| None).unwrap();
        assert_eq!(d.base_url, "http://127.0.0.1:9");
        assert_eq!(d.headers[0].0, "x-api-key");
        assert_eq!(d.headers[0].1, "sk-ant-x");
        assert_eq!(d.headers[1].0, "anthropic-version");
        assert_eq!(d.headers[1].1, ANTHROPIC_VERSION);
    }

    #[test]
    fn a_query_on_api_base_stays_after_the_joined_path() {
        let mut s = spec("openai");
        s.api_base = Some("http://127.0.0.1:9/d/east/v1/?api-key=x".into());
        let d = Deployment::build(s, &|_| None).unwrap();
        assert_eq!(d.base_url, "http://127.0.0.1:9/d/east/v1?api-key=x");
        assert_eq!(
            join_url(&d.base_url, "/chat/completions"),
            "http://127.0.0.1:9/d/east/v1/chat/completions?api-key=x"
        );
        assert_eq!(
            join_url(&d.base_url, "/responses/r1?include=a"),
            "http://127.0.0.1:9/d/east/v1/responses/r1?include=a&api-key=x"
        );
        assert_eq!(
            join_url("http://h/v1", "/embeddings"),
            "http://h/v1/embeddings"
        );
        let mut s = spec("anthropic");
        s.api_key = Some("sk-ant-x".into());
        s.api_base = Some("http://127.0.0.1:9/v1/messages?beta=true".into());
        let d = Deployment::build(s, &|_| None).unwrap();
        assert_eq!(d.base_url, "http://127.0.0.1:9?beta=true");
        assert_eq!(
            join_url(&d.base_url, "/v1/messages"),
            "http://127.0.0.1:9/v1/messages?beta=true"
        );
    }

    #[test]
    fn timeouts_split_by_phase() {
        let t = Timeouts::from_litellm(Some(30.0), Some(5.0));
        assert_eq!(t.total, Duration::from_secs(30));
        assert_eq!(t.first_byte, Duration::from_secs(5));
        assert_eq!(t.idle, Duration::from_secs(5));
        let r = t.for_request(true, Some(2.0), None);
        assert_eq!(r.total, Duration::from_secs(2));
        assert_eq!(r.first_byte, Duration::from_secs(2));
        assert_eq!(t.for_request(true, Some(-1.0), None), t);
        // a stream timeout shortens only the first-byte and idle bounds, never lengthens them
        let s = t.for_request(true, None, Some(0.5));
        assert_eq!(
            (s.first_byte, s.idle, s.total),
            (
                Duration::from_millis(500),
                Duration::from_millis(500),
                Duration::from_secs(30)
            )
        );
        assert_eq!(t.for_request(true, None, Some(60.0)), t);
        // a non-streamed request has its whole `timeout` for its head: `stream_timeout`
        // and a client's stream limit do not apply to it
        let n = t.for_request(false, None, Some(0.5));
        assert_eq!(
            (n.connect, n.first_byte, n.total),
            (t.connect, Duration::from_secs(30), Duration::from_secs(30))
        );
        let n = t.for_request(false, Some(2.0), None);
        assert_eq!(
            (n.first_byte, n.total),
            (Duration::from_secs(2), Duration::from_secs(2))
        );
    }
}
