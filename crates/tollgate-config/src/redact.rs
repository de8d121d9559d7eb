//! Masking of free-form values (unknown keys, headers) for `Debug` and `describe()` output.
//!
//! Typed credentials are [`crate::Secret`]s. Free-form maps (the `extra` maps, `extra_headers`,
//! `environment_variables`, `cache_params`...) may hold credentials too, so their printed form
//! masks:
//! - the value of every key whose name looks like a credential (see [`is_sensitive_key`]);
//! - the password in URLs of the form `scheme://user:password@host`.

use serde_json::Value;

use crate::secret::mask;

/// Parts of key names that mark a credential (compared case-insensitively, as substrings).
const SENSITIVE_PARTS: &[&str] = &[
    "key",
    "secret",
    "password",
    "passwd",
    "credential",
    "auth",
    "cookie",
    "private",
    "signature",
    "dsn",
    "webhook",
    "database_url",
    "redis_url",
];

/// True when a key (config key or header name) names something that may be a credential,
/// e.g. `api_key`, `Authorization`, `x-api-key`, `redis_password`, `client_secret`,
/// `aws_session_token`. Token *counts and prices* (`max_tokens`, `input_cost_per_token`,
/// `cache_read_input_token_cost`) are not credentials.
pub fn is_sensitive_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    if SENSITIVE_PARTS.iter().any(|p| k.contains(p)) {
        return true;
    }
    k.contains("token")
        && !k.contains("tokens")
        && !k.contains("per_token")
        && !k.contains("token_cost")
        && !k.contains("token_count")
}

/// Masks the password of a `scheme://user:password@host/...` URL and the values of
/// credential-like query parameters (`?key=...`, `&api_key=...`, `&sig=...`); other strings are
/// returned unchanged.
pub fn redact_url_userinfo(s: &str) -> String {
    let s = redact_userinfo(s);
    let Some(q) = s.find('?').filter(|_| s.contains("://")) else {
        return s;
    };
    let (head, query) = s.split_at(q + 1);
    let (query, fragment) = match query.find('#') {
        Some(h) => query.split_at(h),
        None => (query, ""),
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if is_sensitive_key(k) || k.eq_ignore_ascii_case("sig") => {
                format!("{k}={}", mask(v))
            }
            _ => kv.to_string(),
        })
        .collect();
    format!("{head}{}{fragment}", parts.join("&"))
}

fn redact_userinfo(s: &str) -> String {
    let Some(scheme_end) = s.find("://") else {
        return redact_malformed_userinfo(s);
    };
    let rest = &s[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let Some(at) = authority.rfind('@') else {
        return s.to_string();
    };
    let userinfo = &authority[..at];
    let user = userinfo.split(':').next().unwrap_or("");
    if !userinfo.contains(':') {
        return s.to_string();
    }
    format!("{}://{}:****@{}", &s[..scheme_end], user, &rest[at + 1..])
}

/// A string that is not a `scheme://` URL but may still carry `user:password@` (a URL with a
/// typo, `redis//:pw@host`): everything between the first `:` and the last `@` is masked.
fn redact_malformed_userinfo(s: &str) -> String {
    let Some(at) = s.rfind('@') else {
        return s.to_string();
    };
    match s[..at].find(':') {
        Some(colon) => format!("{}:****{}", &s[..colon], &s[at..]),
        None => s.to_string(),
    }
}

/// A copy of `v` (found under `key`) that is safe to print.
pub fn redact_value(key: &str, v: &Value) -> Value {
    if is_sensitive_key(key) {
        return match v {
            Value::Null => Value::Null,
            Value::String(s) => Value::String(mask(s)),
            _ => Value::String("****".to_string()),
        };
    }
    match v {
        Value::String(s) => Value::String(redact_url_userinfo(s)),
        Value::Array(items) => Value::Array(items.iter().map(|i| redact_value("", i)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), redact_value(k, v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A printable form of a string found under `key` (a header value, an env var value).
pub fn redact_str(key: &str, v: &str) -> String {
    if is_sensitive_key(key) {
        mask(v)
    } else {
        redact_url_userinfo(v)
    }
}

/// `serialize_with` helper: a string map with each value passed through [`redact_str`]
/// (headers, environment variables).
pub(crate) fn serialize_redacted_map<S: serde::Serializer>(
    m: &std::collections::BTreeMap<String, String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut out = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        out.serialize_entry(k, &redact_str(k, v))?;
    }
    out.end()
}

/// Like [`serialize_redacted_map`] but masks every value (environment variables).
pub(crate) fn serialize_masked_map<S: serde::Serializer>(
    m: &std::collections::BTreeMap<String, String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut out = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        out.serialize_entry(k, &mask(v))?;
    }
    out.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitive_keys() {
        for k in [
            "api_key",
            "Authorization",
            "x-api-key",
            "redis_password",
            "client_secret",
        ] {
            assert!(is_sensitive_key(k), "{k}");
        }
        for k in [
            "model",
            "api_base",
            "timeout",
            "host",
            "max_tokens",
            "max_input_tokens",
            "input_cost_per_token",
            "cache_read_input_token_cost",
        ] {
            assert!(!is_sensitive_key(k), "{k}");
        }
    }

    #[test]
    fn url_password_masked() {
        assert_eq!(
            redact_url_userinfo("postgres://u:CANARYPW@db:5432/x"),
            "postgres://u:****@db:5432/x"
        );
        assert_eq!(redact_url_userinfo("https://h/a@b"), "https://h/a@b");
        assert_eq!(redact_url_userinfo("plain"), "plain");
        // a URL with a typo still hides what looks like a password
        assert_eq!(
            redact_url_userinfo("redis//:S3cretPW@127.0.0.1"),
            "redis//:****@127.0.0.1"
        );
        assert_eq!(
            redact_url_userinfo("redis:/user:pw:CANARY@h:6379"),
            "redis:****@h:6379"
        );
        assert_eq!(
            redact_url_userinfo("someone@example.com"),
            "someone@example.com"
        );
        assert_eq!(
            redact_url_userinfo("https://g.example/v1?alt=sse&key=AIzaCANARY0123456789#x"),
            "https://g.example/v1?alt=sse&key=****6789#x"
        );
    }

    #[test]
    fn nested_values_masked() {
        let v =
            serde_json::json!({"a": {"password": "CANARY-123456789"}, "b": ["redis://:CANARY@h"]});
        let s = redact_value("", &v).to_string();
        assert!(!s.contains("CANARY"), "{s}");
    }
}
