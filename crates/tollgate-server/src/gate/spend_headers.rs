//! The governance headers of an answer, as LiteLLM sends them: `x-litellm-response-cost`,
//! `x-litellm-key-spend`, the key's budget and limits, the `x-ratelimit-*` of every limited
//! scope, and the attempt counts (`x-litellm-attempted-retries` / `-fallbacks`).

use axum::response::Response;
use http::{HeaderName, HeaderValue};
use tollgate_governance::admission::{RateLimitStatus, ScopeKey, rate_limit_headers};

use super::admit::Governed;
use crate::errors::GatewayError;
use crate::relay::Settled;

/// Adds `x-litellm-response-cost` (the settlement's cost; `0` on an error without one),
/// `x-litellm-key-spend` (after this call; with shared counters, as of admission when the call
/// is not settled yet, and left out when unknown), `x-litellm-key-max-budget`,
/// `x-litellm-key-tpm-limit` / `-rpm-limit` and the rate-limit headers: as settled (actual
/// tokens) for unary answers, as admitted (`rate`) for streams. An error keeps a header it
/// already has (a rejection's own `x-ratelimit-*`).
pub fn spend_headers(
    result: &mut Result<Response, GatewayError>,
    g: &Governed<'_>,
    settled: Option<&Settled>,
    rate: &[RateLimitStatus],
) {
    let rate = rate_limit_headers(settled.map_or(rate, |s| s.rate_limits.as_slice()));
    let mut out: Vec<(HeaderName, HeaderValue)> = Vec::with_capacity(rate.len() + 5);
    match settled {
        Some(s) => out.push((
            HeaderName::from_static("x-litellm-response-cost"),
            float_header(s.cost_usd),
        )),
        // LiteLLM: `0` on errors
        None if result.is_err() => out.push((
            HeaderName::from_static("x-litellm-response-cost"),
            HeaderValue::from_static("0"),
        )),
        None => {}
    }
    // Never a read of shared counters here: the settlement's spend after, else the spend the
    // admission reported, else the in-process counter; unknown → no header.
    let key_spend = settled
        .and_then(|s| s.key_spend)
        .or(g.admitted_key_spend)
        .or_else(|| {
            g.principal
                .and_then(|p| g.gate.gov.local_spend_of(&ScopeKey::key(&p.key.token)))
        });
    if let Some(k) = key_spend {
        out.push((
            HeaderName::from_static("x-litellm-key-spend"),
            float_header(k),
        ));
    }
    if let Some(k) = g.principal.map(|p| &p.key) {
        if let Some(b) = k.max_budget {
            out.push((
                HeaderName::from_static("x-litellm-key-max-budget"),
                float_header(b),
            ));
        }
        for (name, v) in [
            ("x-litellm-key-tpm-limit", k.tpm_limit),
            ("x-litellm-key-rpm-limit", k.rpm_limit),
        ] {
            if let Some(v) = v {
                out.push((HeaderName::from_static(name), HeaderValue::from(v)));
            }
        }
    }
    for (k, v) in &rate {
        if let (Ok(k), Ok(v)) = (
            HeaderName::try_from(k.as_str()),
            HeaderValue::try_from(v.as_str()),
        ) {
            out.push((k, v));
        }
    }
    add_headers(result, out);
}

/// Adds `out` to a response (replacing), or to an error (keeping a header it has).
fn add_headers(result: &mut Result<Response, GatewayError>, out: Vec<(HeaderName, HeaderValue)>) {
    match result {
        Ok(r) => {
            for (k, v) in out {
                r.headers_mut().insert(k, v);
            }
        }
        Err(e) => {
            for (k, v) in out {
                if !e.headers.iter().any(|(n, _)| *n == k) {
                    e.headers.push((k, v));
                }
            }
        }
    }
}

/// Adds `x-litellm-attempted-retries` and `x-litellm-attempted-fallbacks` (counts of this
/// request's plan) to the answer or the error.
pub fn attempt_counts(result: &mut Result<Response, GatewayError>, retries: u32, fallbacks: u32) {
    let counts = [
        (crate::headers::X_LITELLM_ATTEMPTED_RETRIES, retries),
        (crate::headers::X_LITELLM_ATTEMPTED_FALLBACKS, fallbacks),
    ];
    for (name, n) in counts {
        let v = count_header(n);
        match result {
            Ok(r) => {
                r.headers_mut().insert(name, v);
            }
            Err(e) => e.headers.push((name, v)),
        }
    }
}

/// A small count as a header value: `0`–`9` without an allocation (every response carries
/// two such counts), larger ones formatted.
pub fn count_header(n: u32) -> HeaderValue {
    const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    match DIGITS.get(n as usize) {
        Some(d) => HeaderValue::from_static(d),
        None => HeaderValue::from(n),
    }
}

/// A USD amount (or any float) as a header value, Rust's shortest round-trip form.
fn float_header(v: f64) -> HeaderValue {
    HeaderValue::try_from(format!("{v}")).unwrap_or(HeaderValue::from_static("0"))
}

#[cfg(test)]
mod header_tests {
    use super::*;

    #[test]
    fn count_headers_are_the_decimal_count() {
        for n in [0u32, 1, 7, 9, 10, 42, 1000] {
            assert_eq!(count_header(n).to_str().unwrap(), n.to_string());
        }
    }
}
