//! `context_window_fallbacks` through the real binary, with the wordings real servers use:
//! a vLLM 400 (no error code, only a message), a TGI 400 (a bare `error` string) and
//! Anthropic's "prompt is too long" from an Anthropic-dialect deployment move the request to
//! the fallback group; an unrelated 400
//! reaches the client as the upstream wrote it, with no fallback call.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};

/// Groups `small` / `big` (OpenAI dialect) and `claude-small` / `claude-big` (Anthropic),
/// each one deployment named after it on the mock.
fn config(mock: &str) -> String {
    let dep = |group: &str, provider: &str, path: &str| {
        format!(
            "  - model_name: {group}\n    litellm_params:\n      model: {provider}/mock-model\n      api_base: {mock}/d/{group}{path}\n      api_key: {UPSTREAM_KEY}\n"
        )
    };
    format!(
        "model_list:\n{}{}{}{}router_settings:\n  num_retries: 0\n  disable_cooldowns: true\n  context_window_fallbacks: [{{\"small\": [\"big\"]}}, {{\"claude-small\": [\"claude-big\"]}}]\ngeneral_settings:\n  master_key: {MASTER}\n",
        dep("small", "openai", "/v1"),
        dep("big", "openai", "/v1"),
        dep("claude-small", "anthropic", ""),
        dep("claude-big", "anthropic", ""),
    )
}

fn script(m: &MockHandle, v: Value) {
    m.script(serde_json::from_value(v).unwrap());
}

/// (deployment, route, status) of every call the mock saw, in order.
fn calls(m: &MockHandle) -> Vec<(String, String, u16)> {
    m.drain_observations()
        .into_iter()
        .map(|o| {
            (
                o.deployment.unwrap_or_default(),
                o.route.unwrap_or_default(),
                o.status.unwrap_or(0),
            )
        })
        .collect()
}

async fn post(gw: &Gateway, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(gw.url(path))
        .header("authorization", format!("Bearer {MASTER}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// vLLM's V1 engine (its OpenAI-compatible server: no `error` wrapper, a numeric code), and
/// TGI (the message is the `error` string itself).
fn open_source_400s() -> [Value; 2] {
    [
        json!({"object": "error",
               "message": "The decoder prompt (length 5120) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.",
               "type": "BadRequestError", "param": null, "code": 400}),
        json!({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 3900 `inputs` tokens and 400 `max_new_tokens`",
               "error_type": "validation"}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_and_tgi_context_window_400s_fall_back_to_the_bigger_group() {
    let m = mock().await;
    let responses: Vec<Value> = open_source_400s()
        .into_iter()
        .map(|body| json!({"status": 400, "body": body}))
        .collect();
    script(&m, json!({"key": "small", "responses": responses}));
    let gw = Gateway::start(&config(&m.base_url()));
    for upstream in ["vLLM", "TGI"] {
        let r = post(
            &gw,
            "/v1/chat/completions",
            json!({"model": "small", "messages": [{"role": "user", "content": "long prompt"}]}),
        )
        .await;
        assert_eq!(r.status(), 200, "{upstream}");
        assert_eq!(
            r.headers()["x-litellm-attempted-fallbacks"],
            "1",
            "{upstream}"
        );
        assert_eq!(r.headers()["x-litellm-model-group"], "big", "{upstream}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["choices"][0]["message"]["content"], "This is a mock response to: long prompt",
            "{upstream}"
        );
        assert_eq!(
            calls(&m),
            [
                ("small".into(), "/chat/completions".into(), 400),
                ("big".into(), "/chat/completions".into(), 200)
            ],
            "{upstream}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropics_prompt_is_too_long_falls_back_to_the_bigger_group() {
    let m = mock().await;
    script(
        &m,
        json!({"key": "claude-small", "default": {"status": 400, "body": {
            "type": "error",
            "error": {"type": "invalid_request_error",
                      "message": "prompt is too long: 208656 tokens > 200000 maximum"},
            "request_id": "req_011CUxvgPsLcjkyzm6NHj17F"}}}),
    );
    let gw = Gateway::start(&config(&m.base_url()));
    let r = post(
        &gw,
        "/v1/messages",
        json!({"model": "claude-small", "max_tokens": 64,
               "messages": [{"role": "user", "content": "long prompt"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-litellm-attempted-fallbacks"], "1");
    assert_eq!(r.headers()["x-litellm-model-group"], "claude-big");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(
        v["content"][0]["text"],
        "This is a mock response to: long prompt"
    );
    assert_eq!(
        calls(&m),
        [
            ("claude-small".into(), "/messages".into(), 400),
            ("claude-big".into(), "/messages".into(), 200)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrelated_400_reaches_the_client_without_a_fallback_call() {
    let m = mock().await;
    let message = "Invalid value for 'temperature': expected a value <= 2, but got 7 instead.";
    script(
        &m,
        json!({"key": "small", "default": {"status": 400, "body": {"error": {
            "message": message, "type": "invalid_request_error",
            "param": "temperature", "code": "decimal_above_max_value"}}}}),
    );
    let gw = Gateway::start(&config(&m.base_url()));
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "small", "temperature": 7,
               "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["x-litellm-attempted-fallbacks"], "0");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["message"], message);
    assert_eq!(v["error"]["param"], "temperature");
    assert_eq!(
        calls(&m),
        [("small".into(), "/chat/completions".into(), 400)]
    );
}
