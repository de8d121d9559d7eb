//! `configurable_clientside_auth_params` with a plain `api_base` entry and an `allow_http: true`
//! pattern (README's example): the entries combine in either order. This machine has no public
//! network, so the bases are private addresses: a base the leave admits gets as far as the
//! address check (refused as `private (RFC 1918)`), one it does not is refused for its scheme;
//! the mock sees nothing either way.

use serde_json::{Value, json};

use crate::gov::*;

const CLIENT_KEY: &str = "sk-client-own-CANARY3";

/// `POST /v1/chat/completions` to `model` with the client's `api_base` and key; asserts a 400
/// naming `api_base` and returns its message.
async fn refused_base(gw: &GovGateway, model: &str, base: &str) -> String {
    let body = json!({"model": model, "messages": [{"role": "user", "content": "hello"}],
                      "api_base": base, "api_key": CLIENT_KEY});
    let r = post_as(gw, MASTER, "/v1/chat/completions", &body).await;
    assert_eq!(r.status, 400, "{model} {base}: {}", r.text);
    assert_eq!(r.body["error"]["param"], "api_base", "{}", r.text);
    assert_eq!(r.body["error"]["code"], "clientside_param_not_allowed");
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.contains(CLIENT_KEY) && !message.contains(UPSTREAM_KEY));
    message.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_api_base_and_an_allow_http_pattern_combine_in_either_order() {
    let m = mock().await;
    let gw = GovGateway::start(&crate::config(&m.base_url()));
    for model in ["byok-a", "byok-b"] {
        // Matches the allow_http pattern: http passes the scheme check; only the (private)
        // address stops it.
        let msg = refused_base(&gw, model, "http://10.9.0.1/v1").await;
        assert_eq!(
            msg,
            "`api_base` host 10.9.0.1 is or resolves to an address the gateway never calls for a client: private (RFC 1918).",
            "{model}"
        );
        // Another http base: the plain entry allows it over https only.
        let msg = refused_base(&gw, model, "http://10.8.0.1/v1").await;
        assert!(
            msg.starts_with("`api_base` must be an https:// URL: plain http:// is allowed"),
            "{model}: {msg}"
        );
        // The same host over https: the plain entry admits it, the address check refuses it.
        let msg = refused_base(&gw, model, "https://10.8.0.1/v1").await;
        assert!(msg.ends_with("private (RFC 1918)."), "{model}: {msg}");
    }
    let seen: Vec<Value> = m
        .drain_observations()
        .iter()
        .map(|o| o.body.clone())
        .collect();
    assert!(seen.is_empty(), "nothing reaches any upstream: {seen:?}");
}
