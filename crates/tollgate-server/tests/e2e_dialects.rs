//! End-to-end: Anthropic Messages and OpenAI Responses endpoints, passthrough and translated,
//! through the real binary against `tollgate-mock`.
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
  - model_name: claude
    litellm_params:
      model: anthropic/claude-mock
      api_base: {mock}
      api_key: {UPSTREAM_KEY}
  - model_name: "claude-any/*"
    litellm_params:
      model: anthropic/*
      api_base: {mock}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: "anthropic-fixture/*"
    litellm_params:
      model: anthropic/fixture/*
      api_base: {mock}
      api_key: {UPSTREAM_KEY}
  - model_name: "openai-fixture/*"
    litellm_params:
      model: openai/fixture/*
      api_base: {mock}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: "gpt-any/*"
    litellm_params:
      model: openai/*
      api_base: {mock}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: vllm
    litellm_params:
      model: hosted_vllm/mock-gpt
      api_base: {mock}/v1
router_settings:
  num_retries: 0          # these tests check pass-through semantics; e2e_router.rs tests routing
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
"#
    )
}

async fn anthropic_post(gw: &Gateway, body: Value) -> reqwest::Response {
    client()
        .post(gw.url("/v1/messages"))
        .header("x-api-key", MASTER)
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "tools-2024-05-16")
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn openai_post(gw: &Gateway, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(gw.url(path))
        .header("authorization", format!("Bearer {MASTER}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// (event name, data JSON) pairs of an SSE body.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .filter_map(|e| {
            let mut name = String::new();
            let mut data = String::new();
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = d.to_owned();
                }
            }
            if data == "[DONE]" {
                return Some((name, Value::String(data)));
            }
            serde_json::from_str(&data).ok().map(|v| (name, v))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_pass_through_to_anthropic_deployments() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let body = json!({"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "Hello there"}]});
    let r = anthropic_post(&gw, body.clone()).await;
    assert_eq!(r.status(), 200);
    let via: Value = r.json().await.unwrap();
    let obs = m.drain_observations();
    assert_eq!(obs.len(), 1);
    assert_eq!(obs[0].route.as_deref(), Some("/messages"));
    assert_eq!(obs[0].headers["x-api-key"], UPSTREAM_KEY);
    assert_eq!(obs[0].headers["anthropic-version"], "2023-06-01");
    assert_eq!(obs[0].headers["anthropic-beta"], "tools-2024-05-16");
    assert!(!obs[0].headers.contains_key("authorization"));
    assert_eq!(obs[0].body["model"], "claude-mock");
    let mut direct_body = body.clone();
    direct_body["model"] = json!("claude-mock");
    let direct: Value = client()
        .post(format!("{}/v1/messages", m.base_url()))
        .json(&direct_body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        normalize_ids(&via.to_string()),
        normalize_ids(&direct.to_string())
    );
    assert_eq!(via["type"], "message");

    if fixtures_available() {
        for f in [
            "anthropic/messages/tools.stream.sse",
            "anthropic/messages/unicode.stream.sse",
            "anthropic/messages/midstream_error.stream.sse",
        ] {
            let text = anthropic_post(
                &gw,
                json!({"model": format!("anthropic-fixture/{f}"), "max_tokens": 64, "stream": true,
                "messages": [{"role": "user", "content": "x"}]}),
            )
            .await
            .bytes()
            .await
            .unwrap();
            assert_eq!(text.to_vec(), fixture(f), "{f}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_errors_in_anthropic_shape() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let c = client();
    let r = c
        .post(gw.url("/v1/messages"))
        .header("x-api-key", "sk-wrong")
        .json(&json!({"model":"claude","max_tokens":5,"messages":[]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "authentication_error");
    let r = anthropic_post(
        &gw,
        json!({"model": "claude", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}})
    );
    // 400 for an empty conversation, as Anthropic answers it (never sent upstream).
    let r = anthropic_post(
        &gw,
        json!({"model": "claude", "max_tokens": 5, "messages": []}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Invalid 'messages': empty array"),
        "{v}"
    );
    let r = anthropic_post(
        &gw,
        json!({"model": "nope", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "not_found_error");
    // Upstream 529 passes through as 529 overloaded_error.
    let r = anthropic_post(&gw, json!({"model": "claude-any/mock-overloaded", "max_tokens": 5, "messages": [{"role":"user","content":"x"}]})).await;
    assert_eq!(r.status(), 529);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "overloaded_error");
    // An OpenAI upstream's 503 reaches an Anthropic client as 529 overloaded_error.
    let r = anthropic_post(&gw, json!({"model": "gpt-any/mock-status-503", "max_tokens": 5, "messages": [{"role":"user","content":"x"}]})).await;
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (status, v["type"].as_str(), v["error"]["type"].as_str()),
        (529, Some("error"), Some("overloaded_error")),
        "{v}"
    );
    // ... and an Anthropic upstream's 529 reaches an OpenAI client as 503.
    let r = openai_post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "claude-any/mock-overloaded", "messages": [{"role":"user","content":"x"}]}),
    )
    .await;
    assert_eq!(r.status(), 503);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"].as_str().is_some(), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_client_on_anthropic_upstream() {
    if !fixtures_available() {
        eprintln!("skipped: shared fixtures not found");
        return;
    }
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let v: Value = openai_post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "anthropic-fixture/anthropic/messages/tools.response.json",
        "messages": [{"role": "user", "content": "weather and time in Paris?"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    let obs = m.drain_observations();
    assert_eq!(obs[0].route.as_deref(), Some("/messages"));
    assert!(
        obs[0].body["max_tokens"].as_u64().is_some(),
        "Anthropic needs max_tokens: {}",
        obs[0].body
    );
    let msg = &v["choices"][0]["message"];
    assert_eq!(msg["content"], "I'll check both for you.");
    assert_eq!(msg["tool_calls"][0]["id"], "toolu_mock_weather_01");
    assert_eq!(
        serde_json::from_str::<Value>(
            msg["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        )
        .unwrap(),
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v["usage"]["prompt_tokens"], 412);
    assert_eq!(v["usage"]["completion_tokens"], 96);

    let text = openai_post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "anthropic-fixture/anthropic/messages/tools.stream.sse", "stream": true,
        "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "x"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let evs = events(&text);
    assert_eq!(evs.last().unwrap().1, json!("[DONE]"));
    let mut args = [String::new(), String::new()];
    let mut finish = None;
    let mut usage = None;
    for (_, e) in &evs {
        if let Some(calls) = e["choices"][0]["delta"]["tool_calls"].as_array() {
            for c in calls {
                let i = c["index"].as_u64().unwrap() as usize;
                args[i].push_str(c["function"]["arguments"].as_str().unwrap_or(""));
            }
        }
        if let Some(f) = e["choices"][0]["finish_reason"].as_str() {
            finish = Some(f.to_owned());
        }
        if e["usage"].is_object() {
            usage = Some(e["usage"].clone());
        }
    }
    let expected: Vec<Value> =
        serde_json::from_slice::<Value>(&fixture("anthropic/messages/tools.response.json"))
            .unwrap()["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["input"].clone())
            .collect();
    let got: Vec<Value> = args
        .iter()
        .map(|a| serde_json::from_str(a).unwrap())
        .collect();
    assert_eq!(got, expected);
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert!(usage.unwrap()["completion_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_client_on_openai_upstream() {
    if !fixtures_available() {
        eprintln!("skipped: shared fixtures not found");
        return;
    }
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    // Streamed tool arguments arrive complete and the stop reason is tool_use.
    let text = anthropic_post(&gw, json!({"model": "openai-fixture/openai/chat/tools.stream.sse", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "weather?"}]})).await.text().await.unwrap();
    let evs = events(&text);
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    let mut inputs: std::collections::BTreeMap<u64, String> = Default::default();
    let mut stop = None;
    for (n, e) in &evs {
        if n == "content_block_delta" && e["delta"]["type"] == "input_json_delta" {
            inputs
                .entry(e["index"].as_u64().unwrap())
                .or_default()
                .push_str(e["delta"]["partial_json"].as_str().unwrap());
        }
        if n == "message_delta" {
            stop = e["delta"]["stop_reason"].as_str().map(str::to_owned);
        }
    }
    let resp: Value = serde_json::from_slice(&fixture("openai/chat/tools.response.json")).unwrap();
    let expected: Vec<Value> = resp["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap())
        .collect();
    let got: Vec<Value> = inputs
        .values()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    assert_eq!(got, expected);
    assert_eq!(stop.as_deref(), Some("tool_use"));
    // The OpenAI upstream was asked for usage and got an OpenAI chat body.
    let obs = m.drain_observations();
    assert_eq!(obs[0].route.as_deref(), Some("/chat/completions"));
    assert_eq!(obs[0].body["stream_options"]["include_usage"], true);
    assert_eq!(
        obs[0].body["messages"][0],
        json!({"role": "user", "content": "weather?"})
    );

    // Non-streamed: tool_use blocks with parsed input.
    let v: Value = anthropic_post(
        &gw,
        json!({"model": "openai-fixture/openai/chat/tools.response.json", "max_tokens": 100,
        "messages": [{"role": "user", "content": "weather?"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["stop_reason"], "tool_use");
    let blocks: Vec<&Value> = v["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(
        blocks[0]["input"],
        json!({"city": "Paris", "unit": "celsius"})
    );

    // count_tokens on an OpenAI-dialect deployment is estimated by the gateway (bytes / 4).
    let v: Value = client()
        .post(gw.url("/v1/messages/count_tokens"))
        .header("x-api-key", MASTER)
        .json(&json!({"model": "gpt-any/x", "messages": [{"role": "user", "content": "abcdefgh"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let expected = r#"[{"role":"user","content":"abcdefgh"}]"#.len().div_ceil(4) as u64;
    assert_eq!(v["input_tokens"], expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_passthrough_and_translated() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    // openai/ deployment: the Responses API passes through.
    let v: Value = openai_post(
        &gw,
        "/v1/responses",
        json!({"model": "gpt-any/mock-gpt", "input": "Say hi"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["object"], "response");
    let obs = m.drain_observations();
    assert_eq!(obs[0].route.as_deref(), Some("/responses"));
    // hosted_vllm: translated onto Chat Completions.
    let v: Value = openai_post(
        &gw,
        "/v1/responses",
        json!({"model": "vllm", "input": "Say hi", "instructions": "Be brief"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let obs = m.drain_observations();
    assert_eq!(obs[0].route.as_deref(), Some("/chat/completions"));
    assert_eq!(
        obs[0].body["messages"],
        json!([{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Say hi"}])
    );
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    let text = v["output"][0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "This is a mock response to: Say hi");
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() > 0);
    // Streamed and translated: ends with response.completed carrying the same text.
    let s = openai_post(
        &gw,
        "/v1/responses",
        json!({"model": "vllm", "input": "Say hi", "stream": true}),
    )
    .await
    .text()
    .await
    .unwrap();
    let evs = events(&s);
    let (last_name, last) = evs.last().unwrap();
    assert_eq!(last_name, "response.completed");
    assert_eq!(
        last["response"]["output"][0]["content"][0]["text"],
        "This is a mock response to: Say hi"
    );
    let deltas: String = evs
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, e)| e["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(deltas, "This is a mock response to: Say hi");
    m.drain_observations();
    // tool_choice "none" keeps its meaning toward chat.
    openai_post(&gw, "/v1/responses", json!({"model": "vllm", "input": "x", "tool_choice": "none",
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}]})).await;
    let obs = m.drain_observations();
    assert_eq!(obs[0].body["tool_choice"], "none");
    assert_eq!(obs[0].body["tools"][0]["function"]["name"], "f");
    // Anthropic deployment: Responses → Messages.
    let v: Value = openai_post(
        &gw,
        "/v1/responses",
        json!({"model": "claude", "input": "Say hi"}),
    )
    .await
    .json()
    .await
    .unwrap();
    let obs = m.drain_observations();
    assert_eq!(obs[0].route.as_deref(), Some("/messages"));
    assert_eq!(
        v["output"][0]["content"][0]["text"],
        "This is a mock response to: Say hi"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_follow_ups_and_retrieval_for_translated_models() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    for stream in [false, true] {
        let first = openai_post(
            &gw,
            "/v1/responses",
            json!({"model": "vllm", "input": "Say hi", "stream": stream}),
        )
        .await
        .text()
        .await
        .unwrap();
        let first: Value = if stream {
            events(&first).last().unwrap().1["response"].clone()
        } else {
            serde_json::from_str(&first).unwrap()
        };
        let id = first["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("resp_"), "{id}");
        // GET returns the stored Response.
        let got: Value = client()
            .get(gw.url(&format!("/v1/responses/{id}")))
            .header("authorization", format!("Bearer {MASTER}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(got["id"], first["id"]);
        assert_eq!(got["output"], first["output"]);
        m.drain_observations();
        // A follow-up continues the conversation.
        let r = openai_post(
            &gw,
            "/v1/responses",
            json!({"model": "vllm", "input": "Again", "previous_response_id": id}),
        )
        .await;
        assert_eq!(r.status(), 200);
        let obs = m.drain_observations();
        assert_eq!(
            obs[0].body["messages"],
            json!([
                {"role": "user", "content": "Say hi"},
                {"role": "assistant", "content": "This is a mock response to: Say hi"},
                {"role": "user", "content": "Again"}
            ]),
            "stream={stream}"
        );
    }
    let r = openai_post(
        &gw,
        "/v1/responses",
        json!({"model": "vllm", "input": "x", "previous_response_id": "resp_doesnotexist"}),
    )
    .await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"error": {"message": "Previous response with id 'resp_doesnotexist' not found.", "type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}})
    );
    let r = client()
        .get(gw.url("/v1/responses/resp_nope"))
        .header("authorization", format!("Bearer {MASTER}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_own_mock_response_is_answered_without_the_upstream() {
    // LiteLLM's per-request `mock_response`: the gateway answers with the text in the
    // client's dialect, whatever the deployment's, and calls no upstream.
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let r = openai_post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "gpt-any/mock-gpt", "mock_response": "canned answer",
               "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "canned answer");
    assert_eq!(v["usage"]["completion_tokens"], 4); // ceil(13 bytes / 4)

    // Streamed, OpenAI client on an Anthropic deployment: chunks add up to the text.
    let r = openai_post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "claude", "stream": true, "mock_response": "canned answer",
               "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let content: String = events(&text)
        .iter()
        .filter_map(|(_, v)| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(content, "canned answer");

    // Anthropic client on an Anthropic deployment: a Messages answer.
    let r = anthropic_post(
        &gw,
        json!({"model": "claude", "max_tokens": 20, "mock_response": "canned answer",
               "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(
        v["content"],
        json!([{"type": "text", "text": "canned answer"}])
    );
    assert_eq!(v["usage"]["output_tokens"], 4);
    assert_eq!(m.drain_observations().len(), 0, "no upstream call");

    // Not a string: refused in the client's dialect.
    let r = anthropic_post(
        &gw,
        json!({"model": "claude", "max_tokens": 20, "mock_response": 5,
               "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(
        v["error"]["message"],
        "Invalid type for 'mock_response': expected a string."
    );
    assert_eq!(m.drain_observations().len(), 0);
}
