//! End-to-end: client-chosen upstreams and credentials in a request body (`api_base`,
//! `base_url`, `api_key`, `api_version`, `aws_*`, `vertex_*`), through the real `tollgate`
//! binary in front of `tollgate-mock`.
//!
//! The mock records every request it receives, on any path: the "trap" is the base
//! `<mock>/d/trap/v1`, which a client names as its `api_base`. A refused request must leave
//! the mock's log empty (no hit on the trap nor anywhere else) and no key in any header.
//! Hosts a client may choose are public ones: those that pass are unit-tested with an injected
//! resolver (tollgate-providers `egress`), since this machine has no public network.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};

/// The client's own key, as a client would send it.
const CLIENT_KEY: &str = "sk-client-own-CANARY3";

fn config(mock: &str) -> String {
    format!(
        r#"
model_list:
  - model_name: locked
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/locked/v1
      api_key: {UPSTREAM_KEY}
  - model_name: own-key
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/own/v1
      api_key: {UPSTREAM_KEY}
      configurable_clientside_auth_params: ["api_key"]
  - model_name: byok
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/byok/v1
      api_key: {UPSTREAM_KEY}
      configurable_clientside_auth_params: ["api_base", "api_key", "api_version"]
  - model_name: byok-http
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/http/v1
      api_key: {UPSTREAM_KEY}
      configurable_clientside_auth_params:
        - api_key
        - api_base: "^http://"
          allow_http: true
  - model_name: byok-pattern
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/pattern/v1
      api_key: {UPSTREAM_KEY}
      configurable_clientside_auth_params:
        - api_key
        - api_base: "^https://127\\.0\\.0\\.1:"
  - model_name: claude
    litellm_params:
      model: anthropic/claude-mock
      api_base: {mock}/d/claude
      api_key: {UPSTREAM_KEY}
      configurable_clientside_auth_params: ["api_key"]
router_settings:
  num_retries: 0
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
"#
    )
}

struct Answer {
    status: u16,
    body: Value,
}

async fn call(gw: &Gateway, path: &str, body: Value) -> Answer {
    let r = client()
        .post(gw.url(path))
        .header("authorization", format!("Bearer {MASTER}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    Answer {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

fn chat(model: &str, extra: Value) -> Value {
    let mut b = json!({"model": model, "messages": [{"role": "user", "content": "hello"}]});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

/// Asserts a 400 naming `param` whose message contains `says`, and that the mock saw nothing.
fn assert_refused(a: &Answer, m: &MockHandle, param: &str, says: &str) {
    assert_eq!(a.status, 400, "{param}: {}", a.body);
    assert_eq!(
        a.body["error"]["type"], "invalid_request_error",
        "{}",
        a.body
    );
    assert_eq!(a.body["error"]["param"], param, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "clientside_param_not_allowed");
    let message = a.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{param}: {message}");
    assert!(!message.contains(CLIENT_KEY) && !message.contains(UPSTREAM_KEY));
    assert_trap_empty(m);
}

/// No request reached the mock: not the trap, not a deployment, and so no key.
fn assert_trap_empty(m: &MockHandle) {
    let seen = m.drain_observations();
    assert!(
        seen.iter().all(|o| o.deployment.as_deref() != Some("trap")),
        "the trap was hit: {seen:?}"
    );
    for o in &seen {
        let headers = format!("{:?}", o.headers);
        assert!(!headers.contains(UPSTREAM_KEY) && !headers.contains(CLIENT_KEY));
    }
    assert!(seen.is_empty(), "upstream calls: {seen:?}");
}

/// The trap on the mock's own address (127.0.0.1): refused as loopback, over http (where the
/// deployment allows http) and https alike, and `localhost` by its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_base_on_the_gateway_s_machine_is_refused_and_the_trap_sees_nothing() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let trap = format!("{}/d/trap/v1", m.base_url());
    let port = m.addr().port();
    for (model, base, says) in [
        (
            "byok-http",
            trap.clone(),
            "is or resolves to an address the gateway never calls for a client: loopback",
        ),
        (
            "byok",
            format!("https://127.0.0.1:{port}/d/trap/v1"),
            "is or resolves to an address the gateway never calls for a client: loopback",
        ),
        (
            "byok-http",
            format!("http://localhost:{port}/d/trap/v1"),
            "names localhost, this machine (localhost)",
        ),
        (
            "byok",
            format!("https://[::1]:{port}/d/trap/v1"),
            "is or resolves to an address the gateway never calls for a client: loopback",
        ),
        (
            "byok",
            format!("https://[::ffff:127.0.0.1]:{port}/d/trap/v1"),
            "is or resolves to an address the gateway never calls for a client: loopback",
        ),
    ] {
        for stream in [false, true] {
            let a = call(
                &gw,
                "/v1/chat/completions",
                chat(
                    model,
                    json!({"api_base": base, "api_key": CLIENT_KEY, "stream": stream}),
                ),
            )
            .await;
            assert_refused(&a, &m, "api_base", says);
        }
    }
}

/// Metadata services and private networks, by address and by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_and_metadata_hosts_are_refused() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    for (base, says) in [
        (
            "https://169.254.169.254/latest/meta-data/",
            "never calls for a client: cloud metadata",
        ),
        (
            "https://[fd00:ec2::254]/latest/",
            "never calls for a client: cloud metadata",
        ),
        (
            "https://metadata.google.internal/computeMetadata/v1/",
            "names metadata.google.internal, a cloud metadata service",
        ),
        (
            "https://10.0.0.8/v1",
            "never calls for a client: private (RFC 1918)",
        ),
        (
            "https://192.168.1.20/v1",
            "never calls for a client: private (RFC 1918)",
        ),
        (
            "https://100.64.0.1/v1",
            "never calls for a client: shared (CGNAT, RFC 6598)",
        ),
        (
            "https://[fd12::1]/v1",
            "never calls for a client: unique local (ULA)",
        ),
        (
            "https://[fe80::1]/v1",
            "never calls for a client: link-local",
        ),
        (
            "https://0.0.0.0/v1",
            "never calls for a client: unspecified",
        ),
    ] {
        let a = call(
            &gw,
            "/v1/chat/completions",
            chat("byok", json!({"api_base": base, "api_key": CLIENT_KEY})),
        )
        .await;
        assert_refused(&a, &m, "api_base", says);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_is_refused_unless_the_deployment_allows_it() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    // A public address, refused for its scheme before any connection is tried.
    for field in ["api_base", "base_url"] {
        let model = if field == "api_base" {
            "byok"
        } else {
            "own-key"
        };
        let a = call(
            &gw,
            "/v1/chat/completions",
            chat(
                model,
                json!({field: "http://93.184.216.34/v1", "api_key": CLIENT_KEY}),
            ),
        )
        .await;
        if field == "api_base" {
            assert_refused(&a, &m, "api_base", "must be an https:// URL");
        } else {
            // own-key lists api_key only: base_url is not allowed at all.
            assert_refused(&a, &m, "base_url", "`base_url` is not allowed");
        }
    }
    // The same http base passes the scheme check where allow_http says so: what refuses the
    // trap there is its address (the first test), not its scheme.
    let a = call(
        &gw,
        "/v1/chat/completions",
        chat(
            "byok-http",
            json!({"api_base": "http://10.1.2.3/v1", "api_key": CLIENT_KEY}),
        ),
    )
    .await;
    assert_refused(
        &a,
        &m,
        "api_base",
        "never calls for a client: private (RFC 1918)",
    );
    for url in ["ftp://93.184.216.34/", "not a url", "//93.184.216.34/v1"] {
        let a = call(
            &gw,
            "/v1/chat/completions",
            chat("byok", json!({"api_base": url, "api_key": CLIENT_KEY})),
        )
        .await;
        assert_refused(&a, &m, "api_base", "`api_base` must be");
    }
}

/// The deployment's key never goes to a host the client chose: without the client's own key
/// the base is refused before any lookup or connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_base_needs_the_client_s_own_key() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let trap = format!("{}/d/trap/v1", m.base_url());
    for (model, base) in [
        ("byok", "https://api.byok.example/v1".to_owned()),
        ("byok-http", trap),
    ] {
        let a = call(
            &gw,
            "/v1/chat/completions",
            chat(model, json!({"api_base": base})),
        )
        .await;
        assert_refused(
            &a,
            &m,
            "api_base",
            "`api_base` needs the client's own `api_key` in the request body: the deployment's key is never sent to a host the client chose.",
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_the_deployment_does_not_list_are_refused_by_name() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    for field in [
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
        let a = call(
            &gw,
            "/v1/chat/completions",
            chat("locked", json!({field: "https://value.example/v1"})),
        )
        .await;
        assert_refused(
            &a,
            &m,
            field,
            &format!(
                "`{field}` is not allowed in the request body for model group 'locked': its deployment does not list it in litellm_params.configurable_clientside_auth_params."
            ),
        );
    }
    // A deployment that lists api_key only refuses a base, even with the key beside it.
    let a = call(
        &gw,
        "/v1/chat/completions",
        chat(
            "own-key",
            json!({"api_key": CLIENT_KEY, "api_base": format!("{}/d/trap/v1", m.base_url())}),
        ),
    )
    .await;
    assert_refused(&a, &m, "api_base", "`api_base` is not allowed");
    // A listed field Tollgate cannot apply is refused rather than dropped.
    let a = call(
        &gw,
        "/v1/chat/completions",
        chat("byok", json!({"api_version": "2024-06-01"})),
    )
    .await;
    assert_refused(
        &a,
        &m,
        "api_version",
        "`api_version` is listed in configurable_clientside_auth_params, but Tollgate applies no client `api_version` for provider 'openai': only api_base, base_url, api_key are taken from a request.",
    );
}

/// Inside `extra_body`, `metadata` (also as JSON text), `litellm_metadata` and
/// `litellm_embedding_config` the fields are refused by their path, whatever the deployment
/// allows: they would never be applied there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_fields_are_refused_naming_their_path() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let trap = format!("{}/d/trap/v1", m.base_url());
    for (extra, param) in [
        (
            json!({"extra_body": {"api_base": trap}}),
            "extra_body.api_base",
        ),
        (
            json!({"metadata": {"tags": ["a"], "api_key": CLIENT_KEY}}),
            "metadata.api_key",
        ),
        (
            json!({"metadata": format!("{{\"api_base\": \"{trap}\"}}")}),
            "metadata.api_base",
        ),
        (
            json!({"litellm_metadata": {"aws_secret_access_key": "x"}}),
            "litellm_metadata.aws_secret_access_key",
        ),
        (
            json!({"litellm_embedding_config": {"api_base": trap}}),
            "litellm_embedding_config.api_base",
        ),
        (
            json!({"extra_body": {"vertex_credentials": {"k": 1}}}),
            "extra_body.vertex_credentials",
        ),
    ] {
        for model in ["byok", "locked"] {
            let a = call(&gw, "/v1/chat/completions", chat(model, extra.clone())).await;
            assert_refused(
                &a,
                &m,
                param,
                &format!(
                    "`{param}` is not allowed in the request body: client credentials and upstreams are taken only at the top level"
                ),
            );
        }
    }
}

/// A `{api_base: <regex>}` entry admits only the bases it matches from their first character.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pattern_entry_admits_only_matching_bases() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let port = m.addr().port();
    // Matches the pattern: allowed, then refused for its (loopback) address.
    let a = call(
        &gw,
        "/v1/chat/completions",
        chat(
            "byok-pattern",
            json!({"api_base": format!("https://127.0.0.1:{port}/d/trap/v1"), "api_key": CLIENT_KEY}),
        ),
    )
    .await;
    assert_refused(&a, &m, "api_base", "loopback");
    for base in [
        format!("https://127.0.0.2:{port}/d/trap/v1"),
        format!("https://evil.example/https://127.0.0.1:{port}/"),
        format!("http://127.0.0.1:{port}/d/trap/v1"),
    ] {
        let a = call(
            &gw,
            "/v1/chat/completions",
            chat(
                "byok-pattern",
                json!({"api_base": base, "api_key": CLIENT_KEY}),
            ),
        )
        .await;
        assert_refused(&a, &m, "api_base", "`api_base` is not allowed");
    }
}

/// Where the deployment lists `api_key`, the client's key replaces the deployment's in the
/// provider's auth header, on the deployment's own host; the key never reaches the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_s_own_key_replaces_the_deployment_s() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    for stream in [false, true] {
        let a = call(
            &gw,
            "/v1/chat/completions",
            chat("own-key", json!({"api_key": CLIENT_KEY, "stream": stream})),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        let seen = m.drain_observations();
        assert_eq!(seen.len(), 1, "{seen:?}");
        let o = &seen[0];
        assert_eq!(o.deployment.as_deref(), Some("own"));
        assert_eq!(o.headers["authorization"], format!("Bearer {CLIENT_KEY}"));
        assert!(!format!("{:?}", o.headers).contains(UPSTREAM_KEY));
        let mut want = json!({
            "model": "mock-gpt",
            "messages": [{"role": "user", "content": "hello"}],
            "stream": stream,
        });
        if stream {
            want["stream_options"] = json!({"include_usage": true});
        }
        assert_eq!(o.body, want);
    }
    // Anthropic: the key goes as x-api-key; the version header stays the deployment's default.
    let a = call(
        &gw,
        "/v1/messages",
        json!({"model": "claude", "max_tokens": 16, "api_key": CLIENT_KEY,
               "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let seen = m.drain_observations();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].deployment.as_deref(), Some("claude"));
    assert_eq!(seen[0].headers["x-api-key"], CLIENT_KEY);
    assert_eq!(seen[0].headers["anthropic-version"], "2023-06-01");
    assert!(seen[0].body.get("api_key").is_none(), "{}", seen[0].body);
}

/// A refusal on `/v1/messages` is an Anthropic error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_in_the_client_s_dialect() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let a = call(
        &gw,
        "/v1/messages",
        json!({"model": "claude", "max_tokens": 16, "api_key": CLIENT_KEY,
               "api_base": format!("{}/d/trap", m.base_url()),
               "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.body["type"], "error");
    assert_eq!(a.body["error"]["type"], "invalid_request_error");
    assert_eq!(
        a.body["error"]["message"],
        "`api_base` is not allowed in the request body for model group 'claude': its deployment does not list it in litellm_params.configurable_clientside_auth_params."
    );
    assert_trap_empty(&m);
}
