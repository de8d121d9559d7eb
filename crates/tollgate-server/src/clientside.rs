//! Client-chosen upstreams and credentials in a request body (`api_base`, `base_url`,
//! `api_key`, `api_version`, `aws_*`, `vertex_*`, ...: [`tollgate_providers::clientside`]).
//!
//! The rule, per attempt's deployment (LiteLLM's `is_request_body_safe`, stricter where noted):
//!
//! - A credential field at the top level of the body is refused with a 400 naming it unless
//!   the deployment lists it in `litellm_params.configurable_clientside_auth_params` (an
//!   `api_base` also passes a `{api_base: <regex>}` entry it matches). A `null` value carries
//!   nothing and is ignored. `api_key` needs listing too (LiteLLM always takes it).
//! - The same names inside `extra_body`, `metadata`, `litellm_metadata` or
//!   `litellm_embedding_config` (LiteLLM checks these nests too; `metadata` also as a JSON
//!   string) are always refused, naming `nest.field`: Tollgate applies credentials only from the
//!   top level, and would otherwise forward or log them unapplied.
//! - Of the listed fields Tollgate applies `api_base` / `base_url` (one base; both only if
//!   equal) and `api_key`; another listed field (`api_version`, `aws_region_name`, ...) is
//!   refused, since no provider Tollgate serves reads it: nothing is half applied.
//! - A client-chosen base needs the client's own `api_key` in the body (the deployment's key
//!   is never sent to a host a client chose), is `https://` unless an `allow_http: true` entry
//!   matched it, and its host must not be or resolve to this machine, a private network or a
//!   metadata service ([`tollgate_providers::egress::check_base`]); the call then connects to
//!   the checked addresses only and follows no redirect.
//!
//! Requests without any such field pay one pass over their top-level keys (already parsed) and,
//! for a nest that is present, a byte search of its raw JSON before anything is parsed.

use memchr::memmem;
use serde_json::value::RawValue;
use tollgate_protocol::BodyError;
use tollgate_providers::Deployment;
use tollgate_providers::clientside::{Leave, is_credential_field};
use tollgate_providers::egress::{SystemResolver, check_base};

use crate::errors::{ClientsideRefusal, GatewayError, GatewayFailure};
use crate::request::ParsedRequest;

/// Nested objects LiteLLM reads credentials from (its `_NESTED_CONFIG_KEYS` and
/// `_NESTED_METADATA_KEYS`), plus `extra_body`, which SDK users fill with proxy parameters.
pub const NESTS: &[&str] = &[
    "extra_body",
    "metadata",
    "litellm_metadata",
    "litellm_embedding_config",
];

/// Byte strings one of which every credential field name contains; a nest whose raw JSON has
/// none of them (and no escape, which could spell one) holds no credential field.
const NEEDLES: &[&[u8]] = &[
    b"api_",
    b"_url",
    b"aws_",
    b"vertex_",
    b"region_name",
    b"user_config",
    b"azure_ad",
    b"\\",
];

/// The credential fields a request carries at its top level (never their values in `Debug`).
#[derive(Default)]
pub struct ClientUpstream {
    /// `api_base` or `base_url`, and the URL.
    base: Option<(&'static str, String)>,
    /// The client's own key.
    key: Option<String>,
    /// Other credential fields present, by name.
    other: Vec<String>,
}

impl std::fmt::Debug for ClientUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientUpstream")
            .field("base", &self.base.as_ref().map(|(field, _)| field))
            .field("key", &self.key.as_ref().map(|_| "****"))
            .field("other", &self.other)
            .finish()
    }
}

impl ClientUpstream {
    /// The credential fields of `req`, `None` when it has none (the common case).
    ///
    /// Errors: 400 for a credential field inside a nest (naming `nest.field`), a base or key
    /// that is not a string, or `api_base` and `base_url` that differ.
    #[expect(clippy::result_large_err, reason = "the refusal path is cold")]
    pub fn from_request(req: &ParsedRequest<'_>) -> Result<Option<ClientUpstream>, GatewayError> {
        let mut found: Option<ClientUpstream> = None;
        for key in req.body.keys() {
            if NESTS.contains(&key) {
                if let Some(raw) = req.body.get(key)
                    && let Some(field) = nested_credential(raw)
                {
                    return Err(refusal(ClientsideRefusal::Nested {
                        nest: key,
                        field: &field,
                    }));
                }
                continue;
            }
            if !is_credential_field(key) {
                continue;
            }
            let Some(raw) = req.body.get(key).filter(|r| r.get() != "null") else {
                continue;
            };
            let c = found.get_or_insert_with(ClientUpstream::default);
            match key {
                "api_base" | "base_url" => {
                    let field = if key == "api_base" {
                        "api_base"
                    } else {
                        "base_url"
                    };
                    let url = string_value(raw, field)?;
                    match &c.base {
                        Some((_, prev)) if *prev != url => {
                            return Err(refusal(ClientsideRefusal::ConflictingBase));
                        }
                        Some(_) => {}
                        None => c.base = Some((field, url)),
                    }
                }
                "api_key" => c.key = Some(string_value(raw, "api_key")?),
                other => {
                    if !c.other.iter().any(|o| o == other) {
                        c.other.push(other.to_owned());
                    }
                }
            }
        }
        Ok(found)
    }

    /// The fields present, in checking order: the base, the key, then the others.
    fn fields(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        let base = self.base.as_ref().map(|(f, v)| (*f, Some(v.as_str())));
        let key = self.key.as_ref().map(|_| ("api_key", None));
        base.into_iter()
            .chain(key)
            .chain(self.other.iter().map(|o| (o.as_str(), None)))
    }
}

/// The deployment one attempt calls: `dep` when the request brought no credential field,
/// else the per-request copy [`deployment_for`] builds, kept in `own`.
///
/// Errors: as [`deployment_for`].
pub async fn for_attempt<'d>(
    client: Option<&ClientUpstream>,
    dep: &'d Deployment,
    own: &'d mut Option<Box<Deployment>>,
) -> Result<&'d Deployment, GatewayError> {
    match client {
        None => Ok(dep),
        // Boxed, as is the copy: the slow path's state (a name lookup, a whole deployment)
        // stays out of every request's future.
        Some(c) => Ok(own.insert(Box::new(Box::pin(deployment_for(c, dep)).await?))),
    }
}

/// The deployment to call for one attempt: a per-request copy of `dep` with the client's key
/// and (checked) base, as the module docs say.
///
/// Errors: 400 naming the refused field and why; nothing has been sent.
pub async fn deployment_for(
    c: &ClientUpstream,
    dep: &Deployment,
) -> Result<Deployment, GatewayError> {
    let mut base_http = false;
    for (field, value) in c.fields() {
        match dep.clientside.leave(field, value) {
            Leave::Refused => {
                return Err(refusal(ClientsideRefusal::NotListed {
                    field,
                    group: &dep.model_group,
                }));
            }
            Leave::Allowed { http } => {
                if Some(field) == c.base.as_ref().map(|(f, _)| *f) {
                    base_http = http;
                }
            }
        }
    }
    if let Some(f) = c.other.first() {
        return Err(refusal(ClientsideRefusal::NotApplied {
            field: f,
            provider: dep.provider.name,
        }));
    }
    let base = match &c.base {
        None => None,
        Some((field, _)) if c.key.is_none() => {
            return Err(refusal(ClientsideRefusal::BaseNeedsKey { field }));
        }
        Some((field, url)) => Some(
            check_base(url, base_http, &SystemResolver, dep.timeouts.connect)
                .await
                .map_err(|why| refusal(ClientsideRefusal::BadBase { field, why }))?,
        ),
    };
    dep.with_client_credentials(c.key.as_deref(), base)
        .map_err(|_| refusal(ClientsideRefusal::KeyNotHeader))
}

/// The 400 naming the refused field ([`GatewayFailure::Clientside`]).
fn refusal(why: ClientsideRefusal<'_>) -> GatewayError {
    GatewayFailure::Clientside(why).into()
}

/// A string field's value.
///
/// Errors: 400 `invalid_type` naming the field.
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
fn string_value(raw: &RawValue, field: &'static str) -> Result<String, GatewayError> {
    serde_json::from_str(raw.get()).map_err(|_| {
        let expected = "a string";
        GatewayFailure::Body(BodyError::WrongType { field, expected }).into()
    })
}

/// The first credential field (with a non-null value) of a nest's raw JSON: an object, or a
/// string holding one (metadata sent as JSON text).
fn nested_credential(raw: &RawValue) -> Option<String> {
    let text = raw.get();
    let bytes = text.as_bytes();
    if !NEEDLES.iter().any(|n| memmem::find(bytes, n).is_some()) {
        return None;
    }
    let decoded: String;
    let object = match bytes.first() {
        Some(b'{') => text,
        Some(b'"') => {
            decoded = serde_json::from_str(text).ok()?;
            decoded.as_str()
        }
        _ => return None,
    };
    let fields: Vec<(String, &RawValue)> =
        serde_json::from_str::<std::collections::BTreeMap<String, &RawValue>>(object)
            .ok()?
            .into_iter()
            .collect();
    fields
        .into_iter()
        .find(|(k, v)| is_credential_field(k) && v.get() != "null")
        .map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Endpoint;

    fn scan(extra: &str) -> Result<Option<ClientUpstream>, String> {
        let raw =
            format!(r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}]{extra}}}"#);
        let req = ParsedRequest::parse(raw.as_bytes(), Endpoint::ChatCompletions).unwrap();
        ClientUpstream::from_request(&req).map_err(|e| {
            format!(
                "{} {}: {}",
                e.envelope.status,
                e.envelope.param.unwrap_or_default(),
                e.envelope.message
            )
        })
    }

    /// The byte gate cannot miss a field: every credential name holds a needle.
    #[test]
    fn every_credential_name_holds_a_needle() {
        let names = tollgate_providers::clientside::CREDENTIAL_FIELDS
            .iter()
            .chain(tollgate_providers::clientside::CREDENTIAL_PREFIXES);
        for name in names {
            assert!(
                NEEDLES
                    .iter()
                    .any(|n| memmem::find(name.as_bytes(), n).is_some()),
                "{name}"
            );
        }
    }

    #[test]
    fn requests_without_credentials_carry_none() {
        for extra in [
            "",
            r#","user":"u","temperature":0.2,"stream":false"#,
            r#","metadata":{"tags":["a"],"trace_id":"t"}"#,
            r#","metadata":{"note":"say \"hi\""}"#,
            r#","extra_body":{"top_k":3}"#,
            r#","api_key":null"#,
            r#","metadata":{"api_key":null}"#,
            r#","metadata":"{\"tags\":[\"a\"]}""#,
        ] {
            assert!(matches!(scan(extra), Ok(None)), "{extra}");
        }
    }

    #[test]
    fn top_level_fields_are_collected() {
        let c = scan(r#","api_base":"https://x.example/v1","api_key":"sk-own","aws_region_name":"us-east-1","vertex_project":"p""#)
            .unwrap()
            .unwrap();
        assert_eq!(
            c.fields().collect::<Vec<_>>(),
            [
                ("api_base", Some("https://x.example/v1")),
                ("api_key", None),
                ("aws_region_name", None),
                ("vertex_project", None),
            ]
        );
        // Debug never shows the key or the URL.
        let dbg = format!("{c:?}");
        assert!(
            !dbg.contains("sk-own") && !dbg.contains("x.example"),
            "{dbg}"
        );
        let c = scan(r#","base_url":"https://x.example/v1","api_base":"https://x.example/v1""#)
            .unwrap()
            .unwrap();
        assert_eq!(c.base.as_ref().map(|(f, _)| *f), Some("base_url"));
        assert_eq!(
            scan(r#","base_url":"https://a.example","api_base":"https://b.example""#).unwrap_err(),
            "400 api_base: `api_base` and `base_url` name different URLs: send one of them."
        );
        assert_eq!(
            scan(r#","api_key":123"#).unwrap_err(),
            "400 api_key: Invalid type for 'api_key': expected a string."
        );
    }

    #[test]
    fn nested_fields_are_refused_by_their_path() {
        for (extra, param) in [
            (
                r#","extra_body":{"api_base":"https://x.example"}"#,
                "extra_body.api_base",
            ),
            (
                r#","metadata":{"tags":["a"],"api_key":"sk"}"#,
                "metadata.api_key",
            ),
            (
                r#","litellm_metadata":{"aws_secret_access_key":"s"}"#,
                "litellm_metadata.aws_secret_access_key",
            ),
            (
                r#","litellm_embedding_config":{"api_base":"http://10.0.0.1"}"#,
                "litellm_embedding_config.api_base",
            ),
            (
                r#","metadata":"{\"vertex_credentials\":\"{}\"}""#,
                "metadata.vertex_credentials",
            ),
            // An escaped key names the same field.
            (
                r#","metadata":{"api\u005fbase":"https://x.example"}"#,
                "metadata.api_base",
            ),
        ] {
            let e = scan(extra).unwrap_err();
            assert!(
                e.starts_with(&format!("400 {param}: `{param}` is not allowed")),
                "{extra}: {e}"
            );
        }
    }
}
