//! Client-side credentials: the request-body fields that would choose the upstream or its
//! credentials ([`is_credential_field`]), and a deployment's leave to take them
//! ([`ClientsideAuth`], LiteLLM's `litellm_params.configurable_clientside_auth_params`).
//!
//! LiteLLM's shape, kept as is so the same config works on both:
//!
//! ```yaml
//! litellm_params:
//!   model: openai/*
//!   configurable_clientside_auth_params:
//!     - api_key                                  # the client may send its own key
//!     - api_base                                 # ... and any https base URL
//!     - api_base: "^https://[a-z0-9-]+\\.example\\.com/v1$"   # or only bases matching this
//!       allow_http: true                         # Tollgate: and http:// ones among them
//! ```
//!
//! A `{api_base: <regular expression>}` entry admits an `api_base` the expression matches from
//! its first character (Python's `re.match`, as LiteLLM uses) or that equals it. `allow_http`
//! is Tollgate's addition (LiteLLM ignores the key): without it a client-chosen base must be
//! `https://`, since an `http://` one would carry the client's key in clear text. Entries
//! combine in any order ([`ClientsideAuth::leave`]): with both entries of the example, any
//! public `https://` base is allowed, and `http://` ones only where the pattern matches.
//! Whatever the entry, the host is checked by [`crate::egress::check_base`].

use regex::Regex;

/// Field names whose value would pick the upstream or its credentials, from LiteLLM's
/// `CredentialLiteLLMParams` (`litellm/types/router.py`) and the request-body blocklist of
/// its proxy (`_BANNED_REQUEST_BODY_PARAMS`, `litellm/proxy/auth/auth_utils.py`), besides every
/// `aws_*` and `vertex_*` name ([`CREDENTIAL_PREFIXES`]).
pub const CREDENTIAL_FIELDS: &[&str] = &[
    "api_base",
    "base_url",
    "api_key",
    "api_version",
    "azure_ad_token",
    "region_name",
    "watsonx_region_name",
    "user_config",
    "s3_endpoint_url",
    "sagemaker_base_url",
    "deployment_url",
];

/// Prefixes of credential field names: AWS (`aws_access_key_id`, `aws_secret_access_key`,
/// `aws_session_token`, `aws_region_name`, `aws_role_name`, `aws_bedrock_runtime_endpoint`,
/// ...) and Vertex AI (`vertex_project`, `vertex_location`, `vertex_credentials`, ...).
pub const CREDENTIAL_PREFIXES: &[&str] = &["aws_", "vertex_"];

/// Whether a request-body field name is a credential field (see [`CREDENTIAL_FIELDS`]).
pub fn is_credential_field(name: &str) -> bool {
    // Every credential name has a `_`; most request fields (`model`, `messages`, `stream`,
    // `temperature`, `tools`, `user`) have none and are passed over at once.
    name.contains('_')
        && (CREDENTIAL_FIELDS.contains(&name)
            || CREDENTIAL_PREFIXES.iter().any(|p| name.starts_with(p)))
}

/// The fields a client-chosen credential may be applied from: its base URL (`api_base`, or
/// its synonym `base_url`) and its own key (`api_key`). A credential field outside these is
/// never applied by Tollgate, whatever a deployment allows.
pub const APPLIED_FIELDS: &[&str] = &["api_base", "base_url", "api_key"];

/// One `api_base` entry with a pattern.
#[derive(Debug, Clone)]
struct BasePattern {
    /// The expression as written, for equality.
    source: String,
    /// `^(?:source)`: matches from the value's first character.
    anchored: Regex,
    allow_http: bool,
}

/// A deployment's `configurable_clientside_auth_params`, parsed (see the module docs).
/// The default allows nothing.
#[derive(Debug, Clone, Default)]
pub struct ClientsideAuth {
    names: Vec<String>,
    api_base_patterns: Vec<BasePattern>,
}

/// What a deployment allows for one client-side field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leave {
    /// Not listed: the request is refused.
    Refused,
    /// Listed; a base URL must be `https://` unless `http` is set.
    Allowed {
        /// A base URL may be `http://` (an `allow_http: true` pattern entry matched it).
        http: bool,
    },
}

/// Why `configurable_clientside_auth_params` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientsideAuthError {
    /// Neither a field name nor an `{api_base: <pattern>}` object.
    #[error(
        "entry {index} must be a field name (\"api_key\") or an object {{\"api_base\": \"<regular expression>\"}}"
    )]
    Shape {
        /// Position in the list.
        index: usize,
    },
    /// The `api_base` pattern is not a regular expression.
    #[error("entry {index}: api_base pattern is not a valid regular expression: {reason}")]
    Pattern {
        /// Position in the list.
        index: usize,
        /// The regex crate's message.
        reason: String,
    },
}

impl ClientsideAuth {
    /// Parses the list (JSON values as the config holds them).
    ///
    /// Errors: [`ClientsideAuthError`] naming the entry.
    pub fn parse(entries: &[serde_json::Value]) -> Result<Self, ClientsideAuthError> {
        let mut out = ClientsideAuth::default();
        for (index, e) in entries.iter().enumerate() {
            match e {
                serde_json::Value::String(name) => out.names.push(name.clone()),
                serde_json::Value::Object(m) => {
                    let Some(serde_json::Value::String(source)) = m.get("api_base") else {
                        return Err(ClientsideAuthError::Shape { index });
                    };
                    let allow_http = match m.get("allow_http") {
                        None | Some(serde_json::Value::Null) => false,
                        Some(serde_json::Value::Bool(b)) => *b,
                        Some(_) => return Err(ClientsideAuthError::Shape { index }),
                    };
                    let anchored = Regex::new(&format!("^(?:{source})")).map_err(|e| {
                        ClientsideAuthError::Pattern {
                            index,
                            reason: e.to_string(),
                        }
                    })?;
                    out.api_base_patterns.push(BasePattern {
                        source: source.clone(),
                        anchored,
                        allow_http,
                    });
                }
                _ => return Err(ClientsideAuthError::Shape { index }),
            }
        }
        Ok(out)
    }

    /// Whether nothing is allowed (the common case: no entry).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.api_base_patterns.is_empty()
    }

    /// The leave for field `field` with string value `value`. Entries combine, in any order:
    /// a field's name allows it (an `api_base` then on any `https://` base); an `api_base`
    /// pattern that matches `value` allows that base too, and `http://` where it says
    /// `allow_http: true`, whatever other entry also allows the field. Patterns apply to
    /// `api_base` only, as in LiteLLM.
    pub fn leave(&self, field: &str, value: Option<&str>) -> Leave {
        let named = self.names.iter().any(|n| n == field);
        let mut matched = false;
        let mut http = false;
        if field == "api_base"
            && let Some(v) = value
        {
            for p in &self.api_base_patterns {
                if p.source == v || p.anchored.is_match(v) {
                    matched = true;
                    http |= p.allow_http;
                }
            }
        }
        if named || matched {
            Leave::Allowed { http }
        } else {
            Leave::Refused
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> ClientsideAuth {
        ClientsideAuth::parse(v.as_array().unwrap()).unwrap()
    }

    #[test]
    fn credential_fields_by_name_and_prefix() {
        for f in [
            "api_base",
            "base_url",
            "api_key",
            "api_version",
            "aws_access_key_id",
            "aws_secret_access_key",
            "aws_session_token",
            "aws_region_name",
            "aws_role_name",
            "aws_bedrock_runtime_endpoint",
            "vertex_project",
            "vertex_location",
            "vertex_credentials",
            "user_config",
        ] {
            assert!(is_credential_field(f), "{f}");
        }
        for f in [
            "model",
            "messages",
            "user",
            "api",
            "base",
            "awsome",
            "temperature",
            "metadata",
        ] {
            assert!(!is_credential_field(f), "{f}");
        }
    }

    #[test]
    fn names_and_patterns_as_litellm_reads_them() {
        let a = parse(json!([
            "api_key",
            {"api_base": "^https://litellm.*direct\\.fireworks\\.ai/v1$"},
            {"api_base": "http://gpu\\.example\\.com", "allow_http": true}
        ]));
        assert_eq!(
            a.leave("api_key", Some("sk-x")),
            Leave::Allowed { http: false }
        );
        assert_eq!(a.leave("base_url", Some("https://x")), Leave::Refused);
        assert_eq!(
            a.leave(
                "api_base",
                Some("https://litellm-dev.direct.fireworks.ai/v1")
            ),
            Leave::Allowed { http: false }
        );
        // LiteLLM's own test: the pattern must match from the first character.
        assert_eq!(
            a.leave(
                "api_base",
                Some("https://litellm-dev.novice.fireworks.ai/v1")
            ),
            Leave::Refused
        );
        assert_eq!(
            a.leave("api_base", Some("http://gpu.example.com/v1")),
            Leave::Allowed { http: true }
        );
        assert_eq!(
            a.leave(
                "api_base",
                Some("https://evil.example/http://gpu.example.com")
            ),
            Leave::Refused
        );
        assert_eq!(
            a.leave("aws_region_name", Some("us-east-1")),
            Leave::Refused
        );
        let b = parse(json!(["api_base"]));
        assert_eq!(
            b.leave("api_base", Some("anything")),
            Leave::Allowed { http: false }
        );
        assert!(ClientsideAuth::default().is_empty());
        assert_eq!(
            ClientsideAuth::default().leave("api_key", None),
            Leave::Refused
        );
    }

    /// README's example: a plain `api_base` entry and an `allow_http` pattern, in either order.
    #[test]
    fn a_plain_entry_and_an_http_pattern_combine_in_either_order() {
        let plain = json!("api_base");
        let pattern = json!({"api_base": "^http://gpu\\.example\\.com/", "allow_http": true});
        for entries in [
            json!(["api_key", plain, pattern]),
            json!(["api_key", pattern, plain]),
        ] {
            let a = parse(entries.clone());
            assert_eq!(
                a.leave("api_base", Some("http://gpu.example.com/v1")),
                Leave::Allowed { http: true },
                "{entries}"
            );
            // Another http base: allowed by the plain entry, over https only.
            assert_eq!(
                a.leave("api_base", Some("http://other.example.com/v1")),
                Leave::Allowed { http: false },
                "{entries}"
            );
            assert_eq!(
                a.leave("api_base", Some("https://other.example.com/v1")),
                Leave::Allowed { http: false },
                "{entries}"
            );
            // Patterns are for api_base alone.
            assert_eq!(
                a.leave("base_url", Some("http://gpu.example.com/v1")),
                Leave::Refused
            );
        }
        // A pattern without allow_http does not take http away from one with it.
        let a = parse(json!([
            {"api_base": "^http://gpu"},
            {"api_base": "^http://gpu\\.example", "allow_http": true}
        ]));
        assert_eq!(
            a.leave("api_base", Some("http://gpu.example.com")),
            Leave::Allowed { http: true }
        );
    }

    #[test]
    fn unreadable_entries_are_named() {
        for (v, want) in [
            (json!([1]), "entry 0 must be a field name"),
            (
                json!(["api_key", {"base": "x"}]),
                "entry 1 must be a field name",
            ),
            (
                json!([{"api_base": "x", "allow_http": "yes"}]),
                "entry 0 must be a field name",
            ),
            (
                json!([{"api_base": "(unclosed"}]),
                "entry 0: api_base pattern is not a valid regular expression",
            ),
        ] {
            let e = ClientsideAuth::parse(v.as_array().unwrap()).unwrap_err();
            assert!(e.to_string().starts_with(want), "{v}: {e}");
        }
    }
}
