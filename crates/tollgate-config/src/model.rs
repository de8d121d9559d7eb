//! `model_list` entries: [`ModelEntry`], [`LitellmParams`], [`ModelInfo`].
//!
//! Shapes follow LiteLLM's `Deployment` / `LiteLLM_Params` / `ModelInfo` (`litellm/types/router.py`).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::extra::Extra;
use crate::lenient;
use crate::redact::redact_str;
use crate::secret::Secret;

/// Provider used when `litellm_params.model` has no `provider/` prefix (LiteLLM infers the
/// provider from its model lists; Tollgate treats a bare name as OpenAI).
pub const DEFAULT_PROVIDER: &str = "openai";

/// One deployment: a `model_list` item. Entries sharing a `model_name` form a model group.
#[serde_with::skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, Debug)]
pub struct ModelEntry {
    /// Public model group name clients send as `"model"`; `"*"` or `"openai/*"` are wildcards.
    #[serde(deserialize_with = "lenient::string")]
    pub model_name: String,
    /// How to call the upstream.
    pub litellm_params: LitellmParams,
    /// Metadata; optional in YAML.
    #[serde(default, deserialize_with = "lenient::null_default")]
    #[serde(skip_serializing_if = "ModelInfo::is_empty")]
    pub model_info: ModelInfo,
    /// Other keys of the entry.
    #[serde(flatten)]
    pub extra: Extra,
    /// Canonical JSON of `litellm_params` as written in the file (before `os.environ/`
    /// substitution), set by the loader; the basis of [`ModelEntry::hashed_id`].
    #[serde(skip)]
    pub(crate) id_basis: Option<IdBasis>,
}

/// Text hashed into a deployment id. May contain literal credentials: `Debug` hides it.
#[derive(Clone, PartialEq)]
pub(crate) struct IdBasis(pub String);

impl fmt::Debug for IdBasis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IdBasis(..)")
    }
}

/// `litellm_params` of a deployment. Durations are seconds, costs USD per token.
///
/// Keys not named here are kept in [`LitellmParams::extra`]; the gateway sends
/// [`LitellmParams::request_defaults`] (that map minus LiteLLM-internal keys) to the provider as
/// request defaults, the way LiteLLM passes unknown `litellm_params` through.
#[serde_with::skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LitellmParams {
    /// `"<provider>/<upstream model id>"`, e.g. `azure/my-deployment`, `anthropic/claude-sonnet-4`;
    /// a bare name (`gpt-4o`) means provider `openai`.
    #[serde(deserialize_with = "lenient::string")]
    pub model: String,
    /// Upstream base URL (e.g. `https://x.openai.azure.com/`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub api_base: Option<String>,
    /// Upstream credential.
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// Azure `api-version` query value, e.g. `2024-06-01`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub api_version: Option<String>,
    /// OpenAI organization id (`OpenAI-Organization` header).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub organization: Option<String>,
    /// Overrides the provider taken from the `model` prefix.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub custom_llm_provider: Option<String>,
    /// Per-call timeout, seconds.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub timeout: Option<f64>,
    /// Streaming timeout (time to first chunk), seconds.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub stream_timeout: Option<f64>,
    /// Client-level retries for this deployment.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub max_retries: Option<u32>,
    /// Requests per minute this deployment accepts.
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    pub rpm: Option<u64>,
    /// Tokens per minute this deployment accepts.
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    pub tpm: Option<u64>,
    /// Headers added to every upstream request.
    #[serde(default, deserialize_with = "lenient::string_map")]
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "crate::redact::serialize_redacted_map"
    )]
    pub extra_headers: BTreeMap<String, String>,
    /// simple-shuffle weight (relative, unitless).
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub weight: Option<f64>,
    /// Priority tier: the lowest order is tried first, the others only on failure.
    #[serde(default, deserialize_with = "lenient::opt_u32")]
    pub order: Option<u32>,
    /// USD per input token (overrides the cost map).
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub input_cost_per_token: Option<f64>,
    /// USD per output token.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub output_cost_per_token: Option<f64>,
    /// USD per cached input token read.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub cache_read_input_token_cost: Option<f64>,
    /// USD per input token written to the prompt cache.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub cache_creation_input_token_cost: Option<f64>,
    /// Canned response returned without calling upstream: a string, or a full response object.
    #[serde(default)]
    pub mock_response: Option<serde_json::Value>,
    /// Tags for tag-based routing.
    #[serde(default, deserialize_with = "lenient::string_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Credentials a client may send in its request body for this deployment (LiteLLM's
    /// key): field names (`api_key`, `api_base`, `base_url`) or `{api_base: <regex>}` objects,
    /// which Tollgate also reads `allow_http: true` from. Read by tollgate-providers'
    /// `clientside` module; empty: a request carrying any credential field is refused.
    #[serde(default, deserialize_with = "lenient::value_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configurable_clientside_auth_params: Vec<serde_json::Value>,

    /// AWS access key id (SigV4).
    #[serde(default)]
    pub aws_access_key_id: Option<Secret>,
    /// AWS secret access key (SigV4).
    #[serde(default)]
    pub aws_secret_access_key: Option<Secret>,
    /// AWS STS session token.
    #[serde(default)]
    pub aws_session_token: Option<Secret>,
    /// AWS region, e.g. `us-east-1`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub aws_region_name: Option<String>,
    /// IAM role ARN to assume.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub aws_role_name: Option<String>,
    /// Session name for the assumed role.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub aws_session_name: Option<String>,
    /// Named AWS profile.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub aws_profile_name: Option<String>,
    /// Web identity token (or a path to it).
    #[serde(default)]
    pub aws_web_identity_token: Option<Secret>,
    /// Custom Bedrock runtime endpoint URL.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub aws_bedrock_runtime_endpoint: Option<String>,
    /// GCP project for Vertex AI.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub vertex_project: Option<String>,
    /// Vertex AI region, e.g. `us-central1`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub vertex_location: Option<String>,
    /// Service-account JSON (inline or a file path).
    #[serde(default)]
    pub vertex_credentials: Option<Secret>,
    /// Azure AD tenant id.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub tenant_id: Option<String>,
    /// Azure AD client id.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub client_id: Option<String>,
    /// Azure AD client secret.
    #[serde(default)]
    pub client_secret: Option<Secret>,
    /// Azure AD token sent as Bearer.
    #[serde(default)]
    pub azure_ad_token: Option<Secret>,

    /// Every other key, in file order (request defaults such as `temperature`, plus LiteLLM
    /// internals; see [`LitellmParams::request_defaults`]).
    #[serde(flatten)]
    pub extra: Extra,
}

impl LitellmParams {
    /// A deployment of `model` with every other field unset.
    pub fn new(model: impl Into<String>) -> Self {
        LitellmParams {
            model: model.into(),
            ..Default::default()
        }
    }

    /// The provider: `custom_llm_provider` if set, else the prefix of `model` before the first
    /// `/`, else [`DEFAULT_PROVIDER`]. `model: "*"` (forward any `provider/model`) gives `"*"`.
    pub fn provider(&self) -> &str {
        if let Some(p) = self
            .custom_llm_provider
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            return p;
        }
        if self.model == "*" {
            return "*";
        }
        match self.model.split_once('/') {
            Some((prefix, _)) => prefix,
            None => DEFAULT_PROVIDER,
        }
    }

    /// The model id sent upstream: `model` without its provider prefix
    /// (`bedrock/converse/anthropic.claude-3` gives `converse/anthropic.claude-3`).
    pub fn upstream_model(&self) -> &str {
        if let Some(p) = self
            .custom_llm_provider
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            return self
                .model
                .strip_prefix(p)
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or(&self.model);
        }
        match self.model.split_once('/') {
            Some((_, rest)) => rest,
            None => &self.model,
        }
    }

    /// The typed credential fields that are set, by key name.
    pub fn secrets(&self) -> Vec<(&'static str, &Secret)> {
        [
            ("api_key", &self.api_key),
            ("aws_access_key_id", &self.aws_access_key_id),
            ("aws_secret_access_key", &self.aws_secret_access_key),
            ("aws_session_token", &self.aws_session_token),
            ("aws_web_identity_token", &self.aws_web_identity_token),
            ("vertex_credentials", &self.vertex_credentials),
            ("client_secret", &self.client_secret),
            ("azure_ad_token", &self.azure_ad_token),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|s| (k, s)))
        .collect()
    }

    /// Keys of [`LitellmParams::extra`] to send upstream as request defaults (e.g.
    /// `temperature`, `max_tokens`, `reasoning_effort`): `extra` minus the LiteLLM-internal keys
    /// recognised by [`crate::implemented::is_internal_litellm_param`], which no provider accepts.
    pub fn request_defaults(&self) -> serde_json::Map<String, serde_json::Value> {
        self.extra
            .iter()
            .filter(|(k, _)| !crate::implemented::is_internal_litellm_param(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl fmt::Debug for LitellmParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: BTreeMap<&str, String> = self
            .extra_headers
            .iter()
            .map(|(k, v)| (k.as_str(), redact_str(k, v)))
            .collect();
        f.debug_struct("LitellmParams")
            .field("model", &self.model)
            .field("api_base", &self.api_base)
            .field("api_key", &self.api_key)
            .field("api_version", &self.api_version)
            .field("organization", &self.organization)
            .field("custom_llm_provider", &self.custom_llm_provider)
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("max_retries", &self.max_retries)
            .field("rpm", &self.rpm)
            .field("tpm", &self.tpm)
            .field("extra_headers", &headers)
            .field("weight", &self.weight)
            .field("order", &self.order)
            .field("input_cost_per_token", &self.input_cost_per_token)
            .field("output_cost_per_token", &self.output_cost_per_token)
            .field(
                "cache_read_input_token_cost",
                &self.cache_read_input_token_cost,
            )
            .field(
                "cache_creation_input_token_cost",
                &self.cache_creation_input_token_cost,
            )
            .field("mock_response", &self.mock_response)
            .field("tags", &self.tags)
            .field(
                "configurable_clientside_auth_params",
                &self.configurable_clientside_auth_params,
            )
            .field("aws_access_key_id", &self.aws_access_key_id)
            .field("aws_secret_access_key", &self.aws_secret_access_key)
            .field("aws_session_token", &self.aws_session_token)
            .field("aws_region_name", &self.aws_region_name)
            .field("aws_role_name", &self.aws_role_name)
            .field("aws_session_name", &self.aws_session_name)
            .field("aws_profile_name", &self.aws_profile_name)
            .field("aws_web_identity_token", &self.aws_web_identity_token)
            .field(
                "aws_bedrock_runtime_endpoint",
                &self.aws_bedrock_runtime_endpoint,
            )
            .field("vertex_project", &self.vertex_project)
            .field("vertex_location", &self.vertex_location)
            .field("vertex_credentials", &self.vertex_credentials)
            .field("tenant_id", &self.tenant_id)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("azure_ad_token", &self.azure_ad_token)
            .field("extra", &self.extra)
            .finish()
    }
}

/// `model_info` of a deployment. Token counts are tokens, costs USD per token.
#[serde_with::skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, Default, Debug)]
pub struct ModelInfo {
    /// Stable deployment id; when absent [`ModelEntry::deployment_id`] hashes the params.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub id: Option<String>,
    /// `chat` | `embedding` | `completion` | `image_generation` | `audio_transcription` |
    /// `audio_speech` | `rerank` | `moderation` | `responses`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub mode: Option<String>,
    /// Cost-map entry to price with (e.g. `gpt-4o` for an Azure deployment).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub base_model: Option<String>,
    /// USD per input token.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub input_cost_per_token: Option<f64>,
    /// USD per output token.
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    pub output_cost_per_token: Option<f64>,
    /// Context window, tokens.
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    pub max_input_tokens: Option<u64>,
    /// Maximum completion length, tokens.
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    pub max_output_tokens: Option<u64>,
    /// Model access groups usable in key/team `models`.
    #[serde(default, deserialize_with = "lenient::string_list")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_groups: Vec<String>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ModelInfo {
    /// True when no key is set.
    pub fn is_empty(&self) -> bool {
        *self == ModelInfo::default()
    }
}

impl ModelEntry {
    /// A deployment named `model_name` calling `model` (`provider/upstream-id`).
    pub fn new(model_name: impl Into<String>, model: impl Into<String>) -> Self {
        ModelEntry {
            model_name: model_name.into(),
            litellm_params: LitellmParams::new(model),
            model_info: ModelInfo::default(),
            extra: Extra::default(),
            id_basis: None,
        }
    }

    /// The deployment id: `model_info.id` when set (non-empty), else [`ModelEntry::hashed_id`].
    pub fn deployment_id(&self) -> String {
        if let Some(id) = self.model_info.id.as_deref().filter(|s| !s.is_empty()) {
            return id.to_string();
        }
        self.hashed_id()
    }

    /// The hash-based id used when `model_info.id` is absent: the first 16 hex characters of
    /// SHA-256 over `model_name` and the canonical JSON (keys sorted at every level) of
    /// `litellm_params`.
    ///
    /// For entries read from a file, the params are taken as written, before `os.environ/`
    /// substitution: ids survive restarts, key order changes and credential rotation
    /// (`api_key: os.environ/OPENAI_API_KEY` hashes the reference, not the key), and change
    /// when a param is edited. For entries built in code, the typed params are hashed, with
    /// credentials and free-form values entering by their own SHA-256.
    pub fn hashed_id(&self) -> String {
        if let Some(IdBasis(basis)) = &self.id_basis {
            return short_hash(&self.model_name, basis);
        }
        // The serialized form masks credentials; put back hashes of the real values.
        let digest = |s: &str| serde_json::Value::String(hex::encode(Sha256::digest(s.as_bytes())));
        let p = &self.litellm_params;
        let mut params = serde_json::to_value(p).unwrap_or_default();
        if let serde_json::Value::Object(m) = &mut params {
            for (k, s) in p.secrets() {
                m.insert(k.to_string(), digest(s.expose()));
            }
            for (k, v) in p.extra.iter() {
                m.insert(k.clone(), digest(&v.to_string()));
            }
            if !p.extra_headers.is_empty() {
                let h = p.extra_headers.iter().map(|(k, v)| (k.clone(), digest(v)));
                m.insert(
                    "extra_headers".into(),
                    serde_json::Value::Object(h.collect()),
                );
            }
        }
        short_hash(&self.model_name, &canonical_json(&params))
    }
}

/// First 16 hex characters of SHA-256(`model_name` NUL `basis`).
fn short_hash(model_name: &str, basis: &str) -> String {
    let mut h = Sha256::new();
    h.update(model_name.as_bytes());
    h.update([0u8]);
    h.update(basis.as_bytes());
    let mut id = hex::encode(h.finalize());
    id.truncate(16);
    id
}

/// JSON text with object keys sorted at every level.
pub(crate) fn canonical_json(v: &serde_json::Value) -> String {
    fn sort(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                serde_json::Value::Object(
                    keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect(),
                )
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_and_upstream() {
        let p = LitellmParams::new("azure/my-deployment");
        assert_eq!(
            (p.provider(), p.upstream_model()),
            ("azure", "my-deployment")
        );
        let p = LitellmParams::new("gpt-4o");
        assert_eq!((p.provider(), p.upstream_model()), ("openai", "gpt-4o"));
        let p = LitellmParams::new("bedrock/converse/anthropic.claude-3");
        assert_eq!(p.provider(), "bedrock");
        assert_eq!(p.upstream_model(), "converse/anthropic.claude-3");
        let p = LitellmParams::new("hosted_vllm/meta-llama/Llama-3-8B");
        assert_eq!(p.upstream_model(), "meta-llama/Llama-3-8B");
        let mut p = LitellmParams::new("meta-llama/Llama-3-8B");
        p.custom_llm_provider = Some("together_ai".into());
        assert_eq!(
            (p.provider(), p.upstream_model()),
            ("together_ai", "meta-llama/Llama-3-8B")
        );
        let p = LitellmParams::new("openai/*");
        assert_eq!((p.provider(), p.upstream_model()), ("openai", "*"));
        assert_eq!(LitellmParams::new("*").provider(), "*");
    }

    #[test]
    fn deployment_id_prefers_model_info_id() {
        let mut e = ModelEntry::new("gpt-4o", "openai/gpt-4o");
        let hashed = e.deployment_id();
        assert_eq!(hashed.len(), 16);
        assert!(hashed.chars().all(|c| c.is_ascii_hexdigit()));
        e.model_info.id = Some("my-id".into());
        assert_eq!(e.deployment_id(), "my-id");
        assert_eq!(e.hashed_id(), hashed);
    }

    #[test]
    fn deployment_id_depends_on_key_not_on_field_order() {
        let mut a = ModelEntry::new("g", "openai/gpt-4o");
        a.litellm_params.api_key = Some(Secret::new("sk-aaaaaaaaaaaaaaaa"));
        a.litellm_params
            .extra
            .insert("temperature".into(), 0.2.into());
        a.litellm_params
            .extra
            .insert("max_tokens".into(), 10.into());
        let mut b = a.clone();
        b.litellm_params.extra.clear();
        b.litellm_params
            .extra
            .insert("max_tokens".into(), 10.into());
        b.litellm_params
            .extra
            .insert("temperature".into(), 0.2.into());
        assert_eq!(a.deployment_id(), b.deployment_id());
        b.litellm_params.api_key = Some(Secret::new("sk-bbbbbbbbbbbbbbbb"));
        assert_ne!(a.deployment_id(), b.deployment_id());
        let mut c = a.clone();
        c.model_name = "other".into();
        assert_ne!(a.deployment_id(), c.deployment_id());
    }

    #[test]
    fn debug_masks_headers_and_keys() {
        let mut p = LitellmParams::new("openai/gpt-4o");
        p.api_key = Some(Secret::new("sk-CANARY-0123456789"));
        p.extra_headers
            .insert("Authorization".into(), "Bearer CANARY-HEADER-1234".into());
        p.extra_headers.insert("X-Trace".into(), "visible".into());
        let d = format!("{p:?}");
        assert!(!d.contains("CANARY"), "{d}");
        assert!(d.contains("visible"));
    }
}
