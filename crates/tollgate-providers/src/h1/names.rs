//! Field names model providers send on most responses, without an allocation each.
//!
//! `HeaderName::from_bytes` copies every name outside the `http` crate's standard list into
//! a new buffer. An OpenAI response carries ten or more such names (`x-request-id`,
//! `openai-processing-ms`, six `x-ratelimit-*`) and an Anthropic one as many
//! (`request-id`, `anthropic-ratelimit-*`). These are matched here, sent in lowercase as
//! providers send them, and given as names built at compile time; any other name or spelling
//! goes through `from_bytes`. Sources: OpenAI API reference, "Debugging requests" and "Rate
//! limits" (headers); Anthropic API reference, "Rate limits" (response headers) and "Errors"
//! (`request-id`).

use http::header::{HeaderName, InvalidHeaderName};

macro_rules! known_names {
    ($($name:literal),* $(,)?) => {
        /// The interned name for `raw`, when it is one of the known names exactly.
        fn known(raw: &[u8]) -> Option<HeaderName> {
            match raw {
                $($name => Some(const { HeaderName::from_static(
                    match std::str::from_utf8($name) {
                        Ok(s) => s,
                        Err(_) => panic!("a known header name is ASCII"),
                    }
                ) }),)*
                _ => None,
            }
        }

        #[cfg(test)]
        const KNOWN: &[&[u8]] = &[$($name),*];
    };
}

known_names![
    b"x-request-id",
    b"request-id",
    b"openai-organization",
    b"openai-project",
    b"openai-processing-ms",
    b"openai-version",
    b"x-ratelimit-limit-requests",
    b"x-ratelimit-limit-tokens",
    b"x-ratelimit-remaining-requests",
    b"x-ratelimit-remaining-tokens",
    b"x-ratelimit-reset-requests",
    b"x-ratelimit-reset-tokens",
    b"retry-after-ms",
    b"x-should-retry",
    b"anthropic-organization-id",
    b"anthropic-ratelimit-requests-limit",
    b"anthropic-ratelimit-requests-remaining",
    b"anthropic-ratelimit-requests-reset",
    b"anthropic-ratelimit-tokens-limit",
    b"anthropic-ratelimit-tokens-remaining",
    b"anthropic-ratelimit-tokens-reset",
    b"anthropic-ratelimit-input-tokens-limit",
    b"anthropic-ratelimit-input-tokens-remaining",
    b"anthropic-ratelimit-input-tokens-reset",
    b"anthropic-ratelimit-output-tokens-limit",
    b"anthropic-ratelimit-output-tokens-remaining",
    b"anthropic-ratelimit-output-tokens-reset",
    b"cf-ray",
    b"cf-cache-status",
    b"x-envoy-upstream-service-time",
];

/// The header name for the raw bytes of a response field name.
///
/// Errors: [`InvalidHeaderName`] for bytes that are not a field name (RFC 9110 §5.1).
pub(crate) fn header_name(raw: &[u8]) -> Result<HeaderName, InvalidHeaderName> {
    match known(raw) {
        Some(name) => Ok(name),
        None => HeaderName::from_bytes(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_equal_what_from_bytes_builds() {
        for raw in KNOWN {
            let interned = known(raw).unwrap();
            assert_eq!(interned, HeaderName::from_bytes(raw).unwrap());
            assert_eq!(interned.as_str().as_bytes(), *raw);
        }
    }

    #[test]
    fn other_names_and_spellings_go_through_from_bytes() {
        assert!(known(b"X-Request-Id").is_none());
        assert_eq!(header_name(b"X-Request-Id").unwrap(), "x-request-id");
        assert_eq!(header_name(b"x-mock-seq").unwrap(), "x-mock-seq");
        assert_eq!(
            header_name(b"content-type").unwrap(),
            http::header::CONTENT_TYPE
        );
        assert!(header_name(b"bad name").is_err());
    }
}
