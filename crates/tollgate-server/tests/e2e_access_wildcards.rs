//! End-to-end: model names and wildcard model access, through the real `tollgate` binary in
//! front of `tollgate-mock`.
//!
//! One rule everywhere: `bedrock/*` admits `bedrock/<non-empty rest>` only (not `bedrockz/x`,
//! `bedrock-evil/x`, `BEDROCK/x`, the bare `bedrock` nor `bedrock/`), in a key's, team's or
//! user's `models`, in an access group and as a router wildcard group; and a name with `..`,
//! empty segments, a control character or a percent-encoded byte is a 400 before routing.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};

fn config(mock: &str) -> String {
    format!(
        r#"
model_list:
  - model_name: "bedrock/*"
    litellm_params:
      model: openai/*
      api_base: {mock}/d/bedrock/v1
      api_key: {UPSTREAM_KEY}
    model_info:
      access_groups: ["cloud"]
  - model_name: "together_ai/*"
    litellm_params:
      model: openai/together/*
      api_base: {mock}/d/together/v1
      api_key: {UPSTREAM_KEY}
  - model_name: "*"
    litellm_params:
      model: openai/*
      api_base: {mock}/d/any/v1
      api_key: {UPSTREAM_KEY}
  - model_name: claude
    litellm_params:
      model: anthropic/claude-mock
      api_base: {mock}/d/claude
      api_key: {UPSTREAM_KEY}
router_settings:
  num_retries: 0
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
"#
    )
}

/// A config whose only group is `bedrock/*`: what that group does not take is not found.
fn bedrock_only(mock: &str) -> String {
    format!(
        r#"
model_list:
  - model_name: "bedrock/*"
    litellm_params:
      model: openai/*
      api_base: {mock}/d/bedrock/v1
      api_key: {UPSTREAM_KEY}
router_settings:
  num_retries: 0
general_settings:
  master_key: {MASTER}
"#
    )
}

struct Answer {
    status: u16,
    body: Value,
}

async fn post(gw: &Gateway, key: &str, path: &str, body: &Value) -> Answer {
    let r = client()
        .post(gw.url(path))
        .header("authorization", format!("Bearer {key}"))
        .json(body)
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

async fn get(gw: &Gateway, path: &str) -> Answer {
    let r = client()
        .get(gw.url(path))
        .header("authorization", format!("Bearer {MASTER}"))
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

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello"}]})
}

/// A virtual key made by the master key from `body` (`/key/generate`).
async fn key(gw: &Gateway, body: Value) -> String {
    let a = post(gw, MASTER, "/key/generate", &body).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["key"].as_str().unwrap().to_owned()
}

/// Names real configs use reach the upstream whole, as the wildcard's rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_model_names_route_unchanged() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    for (name, deployment, upstream) in [
        (
            "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
            "bedrock",
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
        ),
        (
            "bedrock/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0",
            "bedrock",
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0",
        ),
        (
            "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "together",
            "together/meta-llama/Llama-3.3-70B-Instruct-Turbo",
        ),
        (
            "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
            "any",
            "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
        ),
        ("ollama_chat/llama3.1:8b", "any", "ollama_chat/llama3.1:8b"),
    ] {
        let a = post(&gw, MASTER, "/v1/chat/completions", &chat(name)).await;
        assert_eq!(a.status, 200, "{name}: {}", a.body);
        let seen = m.drain_observations();
        assert_eq!(seen.len(), 1, "{name}");
        assert_eq!(seen[0].deployment.as_deref(), Some(deployment), "{name}");
        assert_eq!(seen[0].body["model"], upstream, "{name}");
    }
}

/// Names that could walk a provider's URL path are refused with a 400 in the client's
/// dialect, before any routing: the mock sees nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_leave_a_path_are_refused_before_routing() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    for (name, rule) in [
        ("bedrock/../admin", "a `.` or `..` path segment"),
        ("bedrock/./x", "a `.` or `..` path segment"),
        ("..", "a `.` or `..` path segment"),
        ("bedrock//x", "an empty path segment"),
        ("bedrock/", "an empty path segment"),
        ("/bedrock/x", "an empty path segment"),
        ("bedrock/%2e%2e/admin", "a percent-encoded byte"),
        ("bedrock%2Fx", "a percent-encoded byte"),
        ("bedrock\\..\\x", "a backslash"),
        ("bedrock/x\r\nx-injected: 1", "a control character"),
        ("bedrock/\u{0}", "a control character"),
        ("", "the model name is empty"),
    ] {
        let a = post(&gw, MASTER, "/v1/chat/completions", &chat(name)).await;
        assert_eq!(a.status, 400, "{name:?}: {}", a.body);
        assert_eq!(a.body["error"]["type"], "invalid_request_error");
        assert_eq!(a.body["error"]["param"], "model");
        assert_eq!(a.body["error"]["code"], "invalid_model_name");
        let msg = a.body["error"]["message"].as_str().unwrap();
        assert!(msg.contains(rule), "{name:?}: {msg}");
        // Anthropic's dialect on /v1/messages.
        let a = post(
            &gw,
            MASTER,
            "/v1/messages",
            &json!({"model": name, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
        assert_eq!(a.status, 400, "{name:?}: {}", a.body);
        assert_eq!(a.body["type"], "error");
        assert_eq!(a.body["error"]["type"], "invalid_request_error");
        assert!(a.body["error"]["message"].as_str().unwrap().contains(rule));
    }
    // A name in the request's own fallbacks is a model name too.
    let mut body = chat("bedrock/x");
    body["fallbacks"] = json!(["bedrock/../admin"]);
    let a = post(&gw, MASTER, "/v1/chat/completions", &body).await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.body["error"]["param"], "fallbacks");
    assert_eq!(m.drain_observations().len(), 0);
    // The model in a URL path, percent-decoded.
    let a = get(&gw, "/v1/models/bedrock%2F..%2Fadmin").await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "invalid_model_name");
    let a = get(&gw, "/health?model=bedrock%2F..%2Fadmin").await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "invalid_model_name");
    assert_eq!(m.drain_observations().len(), 0);
}

/// A wildcard group takes names whose first segment is its own, followed by a non-empty rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_group_takes_only_its_first_segment() {
    let m = mock().await;
    let gw = Gateway::start(&bedrock_only(&m.base_url()));
    let a = post(&gw, MASTER, "/v1/chat/completions", &chat("bedrock/x")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(m.drain_observations()[0].body["model"], "x");
    for name in ["bedrockz/x", "bedrock-evil/x", "BEDROCK/x", "bedrock"] {
        let a = post(&gw, MASTER, "/v1/chat/completions", &chat(name)).await;
        assert_eq!(a.status, 404, "{name}: {}", a.body);
        assert_eq!(a.body["error"]["code"], "model_not_found", "{name}");
    }
    assert_eq!(m.drain_observations().len(), 0);
}

/// `bedrock/*` in a key's, a team's or a user's `models`, or through an access group, admits
/// `bedrock/<rest>` and refuses the look-alikes with the layer's 403; they would route (the
/// config has a `*` group), so only access stops them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcards_in_every_list_admit_only_their_first_segment() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let by_key = key(&gw, json!({"models": ["bedrock/*"]})).await;
    let by_group = key(&gw, json!({"models": ["cloud"]})).await;
    let team = post(&gw, MASTER, "/team/new", &json!({"models": ["bedrock/*"]})).await;
    assert_eq!(team.status, 200, "{}", team.body);
    let team_id = team.body["team_id"].as_str().unwrap().to_owned();
    let by_team = key(&gw, json!({"team_id": team_id})).await;
    let user = post(
        &gw,
        MASTER,
        "/user/new",
        &json!({"user_id": "wild-user", "models": ["bedrock/*"], "auto_create_key": false}),
    )
    .await;
    assert_eq!(user.status, 200, "{}", user.body);
    let by_user = key(&gw, json!({"user_id": "wild-user"})).await;
    for (k, denied) in [
        (&by_key, "key_model_access_denied"),
        (&by_group, "key_model_access_denied"),
        (&by_team, "team_model_access_denied"),
        (&by_user, "user_model_access_denied"),
    ] {
        let a = post(
            &gw,
            k,
            "/v1/chat/completions",
            &chat("bedrock/anthropic.claude-3"),
        )
        .await;
        assert_eq!(a.status, 200, "{denied}: {}", a.body);
        let seen = m.drain_observations();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].deployment.as_deref(), Some("bedrock"));
        assert_eq!(seen[0].body["model"], "anthropic.claude-3");
        for name in ["bedrockz/x", "bedrock-evil/x", "BEDROCK/x", "bedrock"] {
            let a = post(&gw, k, "/v1/chat/completions", &chat(name)).await;
            assert_eq!(a.status, 403, "{denied} {name}: {}", a.body);
            assert_eq!(a.body["error"]["type"], denied, "{name}");
            assert_eq!(
                a.body["error"]["message"],
                format!(
                    "The requested model '{name}' is not available for this API key, or the model name is invalid. Call `/v1/models` to view the models available to your key."
                )
            );
        }
        assert_eq!(m.drain_observations().len(), 0, "{denied}");
    }
    // Without a restricting list, the look-alikes route to the `*` group: the 403s above are
    // access, not routing.
    let a = post(&gw, MASTER, "/v1/chat/completions", &chat("bedrockz/x")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(m.drain_observations()[0].deployment.as_deref(), Some("any"));
}
