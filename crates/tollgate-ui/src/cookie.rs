//! The session cookie: its name, how it is read from a request and how it is set and cleared.
//!
//! Set as `tollgate_session=<id>; Path=/; HttpOnly; SameSite=Strict; Max-Age=86400`, plus
//! `Secure` when the request came over TLS (`https` in the request URI, or
//! `X-Forwarded-Proto: https` from the TLS-terminating proxy in front: Tollgate itself serves
//! plain HTTP). `HttpOnly` keeps it from page scripts; `SameSite=Strict` keeps browsers from
//! sending it with requests another site starts.

use http::HeaderMap;
use http::header::{COOKIE, HeaderValue};

/// The cookie's name.
pub const NAME: &str = "tollgate_session";

/// The session id the request's `Cookie` headers carry, if any (the first non-empty one).
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == NAME && !value.is_empty())
        .map(|(_, value)| value.trim_matches('"'))
}

/// Whether the request reached the gateway over TLS (so the cookie gets `Secure`).
pub fn over_tls(uri: &http::Uri, headers: &HeaderMap) -> bool {
    uri.scheme_str() == Some("https")
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

/// The `Set-Cookie` value starting a session `id` that lasts `max_age_secs`.
pub fn set(id: &str, max_age_secs: i64, secure: bool) -> Option<HeaderValue> {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{NAME}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{secure}"
    ))
    .ok()
}

/// The `Set-Cookie` value that removes the cookie (logout).
pub fn clear(secure: bool) -> HeaderValue {
    if secure {
        HeaderValue::from_static(
            "tollgate_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure",
        )
    } else {
        HeaderValue::from_static("tollgate_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_session_id_is_found_among_other_cookies() {
        let h = headers(&[("cookie", "a=1; tollgate_session=abc; b=2")]);
        assert_eq!(session_id(&h), Some("abc"));
        let h = headers(&[("cookie", "a=1"), ("cookie", "tollgate_session=xyz")]);
        assert_eq!(session_id(&h), Some("xyz"));
        let h = headers(&[("cookie", "tollgate_session=; x_tollgate_session=q")]);
        assert_eq!(session_id(&h), None);
        assert_eq!(session_id(&HeaderMap::new()), None);
    }

    #[test]
    fn secure_only_over_tls() {
        let plain: http::Uri = "/ui/api/login".parse().unwrap();
        assert!(!over_tls(&plain, &HeaderMap::new()));
        assert!(over_tls(
            &plain,
            &headers(&[("x-forwarded-proto", "HTTPS, http")])
        ));
        let tls: http::Uri = "https://gw.example/ui/api/login".parse().unwrap();
        assert!(over_tls(&tls, &HeaderMap::new()));
        assert_eq!(
            set("abc", 86400, true).unwrap(),
            "tollgate_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=86400; Secure"
        );
        assert_eq!(
            set("abc", 60, false).unwrap(),
            "tollgate_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=60"
        );
    }
}
