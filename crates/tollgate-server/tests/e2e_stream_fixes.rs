//! End-to-end: errors in streams and upstream error bodies, through the real binary against
//! `tollgate-mock`.
//!
//! - An error after content-free events (an OpenAI role chunk, Anthropic's `message_start` and
//!   `ping`, Responses' `response.created` / `response.in_progress`) fails the attempt as a
//!   first-event error does: retried, fallen back from, cooled, billed 0, an HTTP error.
//! - A Responses passthrough whose upstream sends `error` after content ends with
//!   `response.failed` for that stream.
//! - A first-event error with a numeric `code: 503` reaches a Messages client as 529
//!   `overloaded_error`, as the same upstream's HTTP 503 does.
//! - A stream cut short by its `stream_timeout` ends with one message on every dialect pair.
//! - vLLM, TGI and Ollama error bodies reach the client in its dialect with their own message.
//! - A usage object on every content chunk (vLLM `continuous_usage_stats`) is hidden from a
//!   client that did not ask for usage, and billed.
//!
//! Deployments are told apart by the mock's `/d/{deployment}` prefix and scripted per
//! deployment; fixtures are written to a directory of the test's own.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

// items 2-6, in their own files (this one holds item 1 and the shared helpers)
#[path = "stream_fixes/bodies_and_usage.rs"]
mod bodies_and_usage;
#[path = "stream_fixes/cut_short.rs"]
mod cut_short;
#[path = "stream_fixes/responses_and_codes.rs"]
mod responses_and_codes;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use gov::*;
use serde_json::{Value, json};

/// USD per prompt / completion token of every deployment.
const IN: f64 = 1e-6;
const OUT: f64 = 2e-6;

/// What the mock writes for a rate-limited OpenAI request of `mock-gpt`.
const OPENAI_RL: &str = "Rate limit reached for mock-gpt on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms.";
const IDLE: &str = "Upstream sent nothing for 200 ms (stream idle timeout)";

/// One deployment onto the mock: `provider/model` at `/d/{name}` (OpenAI-dialect ones under
/// `/v1`), priced, `model_info.id = name`, with extra `litellm_params` lines.
fn dep(group: &str, name: &str, provider: &str, mock: &str, extra: &str) -> String {
    let (model, base) = match provider {
        "anthropic" => ("anthropic/mock-claude", format!("{mock}/d/{name}")),
        "vllm" => ("hosted_vllm/mock-gpt", format!("{mock}/d/{name}/v1")),
        _ => ("openai/mock-gpt", format!("{mock}/d/{name}/v1")),
    };
    format!(
        "  - model_name: {group}\n    litellm_params:\n      model: {model}\n      api_base: {base}\n      api_key: {UPSTREAM_KEY}\n{extra}    model_info:\n      id: {name}\n      input_cost_per_token: {IN}\n      output_cost_per_token: {OUT}\n"
    )
}

fn gateway_config(mock: &str, router: &str) -> String {
    let slow = "      stream_timeout: 0.2\n";
    let deps = [
        dep("pair", "east", "openai", mock, "      order: 1\n"),
        dep("pair", "west", "openai", mock, "      order: 2\n"),
        dep(
            "claude-pair",
            "c-east",
            "anthropic",
            mock,
            "      order: 1\n",
        ),
        dep(
            "claude-pair",
            "c-west",
            "anthropic",
            mock,
            "      order: 2\n",
        ),
        dep("solo-gpt", "solo-gpt", "openai", mock, ""),
        dep("solo-vllm", "solo-vllm", "vllm", mock, ""),
        dep("solo-claude", "solo-claude", "anthropic", mock, ""),
        dep("primary", "primary", "openai", mock, ""),
        dep("backup", "backup", "anthropic", mock, ""),
        dep("slow-gpt", "slow-gpt", "openai", mock, slow),
        dep("slow-vllm", "slow-vllm", "vllm", mock, slow),
        dep("slow-claude", "slow-claude", "anthropic", mock, slow),
    ];
    format!(
        "model_list:\n{}router_settings:\n{router}general_settings:\n  master_key: {MASTER}\n",
        deps.concat()
    )
}

/// `num_retries: 1`, a 60 s cooldown, and `primary` falling back to `backup`.
const ROUTER: &str =
    "  num_retries: 1\n  cooldown_time: 60\n  fallbacks: [{\"primary\": [\"backup\"]}]\n";

/// The mock, replaying fixtures from `dir`.
async fn mock_with(dir: &TempDir) -> tollgate_mock::MockHandle {
    tollgate_mock::start(tollgate_mock::MockConfig {
        fixtures_dir: Some(dir.0.clone()),
        ..tollgate_mock::MockConfig::default()
    })
    .await
    .expect("mock starts")
}

/// Writes the SSE fixture `name` from `events`, cut (flushed) after the first `cut` of them.
fn sse_fixture(dir: &TempDir, name: &str, events: &[String], cut: usize) {
    let body: String = events.concat();
    let at: usize = events[..cut].iter().map(String::len).sum();
    std::fs::write(dir.0.join(format!("{name}.sse")), body).unwrap();
    std::fs::write(dir.0.join(format!("{name}.splits.json")), format!("[{at}]")).unwrap();
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn named(name: &str, v: Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

fn script(m: &tollgate_mock::MockHandle, deployment: &str, behavior: Value) {
    script_default(m, deployment, behavior);
}

/// Deployments the mock saw called, in order (drains its log).
fn calls(m: &tollgate_mock::MockHandle) -> Vec<String> {
    m.drain_observations()
        .into_iter()
        .filter_map(|o| o.deployment)
        .collect()
}

fn stream_body(path: &str, model: &str) -> Value {
    match path {
        "/v1/messages" => json!({"model": model, "stream": true, "max_tokens": 64,
                                 "messages": [{"role": "user", "content": "hi"}]}),
        "/v1/responses" => json!({"model": model, "stream": true, "input": "hi"}),
        "/v1/completions" => json!({"model": model, "stream": true, "prompt": "hi"}),
        _ => json!({"model": model, "stream": true,
                    "messages": [{"role": "user", "content": "hi"}]}),
    }
}

/// `(event name, data)` of every event of an SSE body; `[DONE]` as a string.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .unwrap_or("")
                .to_owned();
            let data = e
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or_else(|| panic!("event without data: {e:?}"));
            let v = if data == "[DONE]" {
                Value::String(data.to_owned())
            } else {
                serde_json::from_str(data).unwrap_or_else(|_| panic!("data is not JSON: {data}"))
            };
            (name, v)
        })
        .collect()
}

/// One line per event: the text a content event carried, lifecycle events by name.
fn described(path: &str, text: &str) -> Vec<String> {
    events(text)
        .into_iter()
        .map(|(name, v)| {
            if v == "[DONE]" {
                return "[DONE]".to_owned();
            }
            if v.get("error").is_some_and(|e| !e.is_null()) && name.is_empty() {
                return format!("error {}", v["error"]["message"]);
            }
            match path {
                "/v1/chat/completions" => {
                    let c = &v["choices"][0];
                    if c["delta"]["role"] == "assistant" {
                        "role".to_owned()
                    } else if let Some(f) = c["finish_reason"].as_str() {
                        format!("finish {f}")
                    } else {
                        format!("text {}", c["delta"]["content"])
                    }
                }
                "/v1/completions" => match v["choices"][0]["finish_reason"].as_str() {
                    Some(f) => format!("finish {f}"),
                    None => format!("text {}", v["choices"][0]["text"]),
                },
                "/v1/messages" => match name.as_str() {
                    "content_block_delta" => format!("text {}", v["delta"]["text"]),
                    "message_delta" => format!("message_delta {}", v["delta"]["stop_reason"]),
                    "error" => format!("error {} {}", v["error"]["type"], v["error"]["message"]),
                    _ => name,
                },
                _ => match name.as_str() {
                    "response.output_text.delta" => format!("text {}", v["delta"]),
                    "response.failed" => format!(
                        "response.failed {} {}",
                        v["response"]["error"]["code"], v["response"]["error"]["message"]
                    ),
                    _ => name,
                },
            }
        })
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The spend-log rows of a key once `n` are written:
/// `(model_id, spend USD, status, prompt_tokens, completion_tokens)`, by model id.
async fn rows(gw: &GovGateway, hash: &str, n: usize) -> Vec<(String, f64, String, i64, i64)> {
    let mut out: Vec<_> = spend_logs_n(gw, hash, n)
        .await
        .iter()
        .map(|r| {
            (
                r["model_id"].as_str().unwrap_or_default().to_owned(),
                r["spend"].as_f64().unwrap_or(-1.0),
                r["status"].as_str().unwrap_or_default().to_owned(),
                r["prompt_tokens"].as_i64().unwrap_or(-1),
                r["completion_tokens"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

// ---- 1. content-free events before the error --------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_after_the_role_chunk_is_retried_on_the_other_deployment() {
    let m = mock().await;
    // east: the role chunk, then a Python-spaced rate-limit error.
    script(
        &m,
        "east",
        json!({"midstream_error_after": 0, "stream_error": "rate_limit", "stream_error_style": "python"}),
    );
    script(
        &m,
        "west",
        json!({"usage": [1000, 500], "reply": "abcd", "chunks": 2}),
    );
    let gw = GovGateway::start(&gateway_config(&m.base_url(), ROUTER));
    let (key, hash) = generate_key(&gw, json!({})).await;

    let r = chat(&gw, &key, &stream_body("/v1/chat/completions", "pair")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-attempted-retries"), "1");
    assert_eq!(r.header("x-litellm-model-id"), "west");
    assert_eq!(
        described("/v1/chat/completions", &r.text),
        strings(&[
            "role",
            "text \"ab\"",
            "text \"cd\"",
            "finish stop",
            "[DONE]"
        ]),
        "{}",
        r.text
    );
    assert_eq!(r.text.matches("\"role\"").count(), 1, "{}", r.text);
    assert!(!r.text.contains("Rate limit"), "{}", r.text);
    assert_eq!(calls(&m), ["east", "west"]);

    let want = 1000.0 * IN + 500.0 * OUT;
    assert_eq!(
        rows(&gw, &hash, 2).await,
        [
            ("east".to_owned(), 0.0, "failure".to_owned(), 0, 0),
            ("west".to_owned(), want, "success".to_owned(), 1000, 500),
        ]
    );
    assert!(same_dollars(
        key_spend_eventually(&gw, &key, want).await,
        want
    ));
    // The rate limit counted against east: it cools down, west takes the next request.
    let r = chat(&gw, &key, &stream_body("/v1/chat/completions", "pair")).await;
    assert_eq!(r.status, 200);
    assert_eq!(calls(&m), ["west"]);
}

/// Anthropic's own overload errors come right after `message_start` (here also
/// `content_block_start` and `ping`): the Messages client gets the other deployment's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropics_overloaded_error_after_message_start_is_retried() {
    let m = mock().await;
    script(&m, "c-east", json!({"midstream_error_after": 0}));
    script(&m, "c-west", json!({"reply": "abcd", "chunks": 2}));
    let gw = GovGateway::start(&gateway_config(&m.base_url(), ROUTER));
    let r = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &stream_body("/v1/messages", "claude-pair"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-model-id"), "c-west");
    assert_eq!(
        described("/v1/messages", &r.text),
        strings(&[
            "message_start",
            "content_block_start",
            "ping",
            "text \"ab\"",
            "text \"cd\"",
            "content_block_stop",
            "message_delta \"end_turn\"",
            "message_stop",
        ])
    );
    assert_eq!(
        r.text.matches("message_start").count(),
        2,
        "one event: name and type"
    );
    assert!(!r.text.contains("Overloaded"), "{}", r.text);
    assert_eq!(calls(&m), ["c-east", "c-west"]);
    let r = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &stream_body("/v1/messages", "claude-pair"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(calls(&m), ["c-west"], "c-east cools down");
}

/// `response.created`, `response.in_progress` and the opening item and part, then
/// `response.failed`: the Responses client falls back; so does a chat client after a role chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_failing_after_its_opening_events_falls_back() {
    let m = mock().await;
    script(&m, "primary", json!({"midstream_error_after": 0}));
    script(&m, "backup", json!({"reply": "abcd", "chunks": 2}));
    let gw = GovGateway::start(&gateway_config(
        &m.base_url(),
        "  num_retries: 0\n  fallbacks: [{\"primary\": [\"backup\"]}]\n",
    ));
    let r = post_as(
        &gw,
        MASTER,
        "/v1/responses",
        &stream_body("/v1/responses", "primary"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-attempted-fallbacks"), "1");
    assert_eq!(r.header("x-litellm-model-group"), "backup");
    let d = described("/v1/responses", &r.text);
    assert_eq!(d.first().map(String::as_str), Some("response.created"));
    assert_eq!(d.last().map(String::as_str), Some("response.completed"));
    assert_eq!(d.iter().filter(|e| *e == "response.created").count(), 1);
    assert!(d.contains(&"text \"ab\"".to_owned()), "{d:?}");
    assert!(!r.text.contains("response.failed"), "{}", r.text);
    assert_eq!(calls(&m), ["primary", "backup"]);

    let r = chat(&gw, MASTER, &stream_body("/v1/chat/completions", "primary")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-model-group"), "backup");
    assert_eq!(
        described("/v1/chat/completions", &r.text),
        strings(&[
            "role",
            "text \"ab\"",
            "text \"cd\"",
            "finish stop",
            "[DONE]"
        ])
    );
    assert_eq!(calls(&m), ["primary", "backup"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_free_events_then_an_error_with_nowhere_to_go_is_an_http_error_billed_0() {
    let m = mock().await;
    let gw = GovGateway::start(&gateway_config(&m.base_url(), "  num_retries: 0\n"));
    let (key, hash) = generate_key(&gw, json!({})).await;
    let rl = json!({"midstream_error_after": 0, "stream_error": "rate_limit"});
    let first = json!({"midstream_error_after": 0});
    // (client path, group, behaviour, status, the client's error body)
    let cases = [
        (
            "/v1/chat/completions",
            "solo-gpt",
            rl.clone(),
            429,
            json!({"error": {"message": OPENAI_RL, "type": "rate_limit_error", "param": "requests", "code": "rate_limit_exceeded"}}),
        ),
        (
            "/v1/chat/completions",
            "solo-claude",
            first.clone(),
            429,
            json!({"error": {"message": "Overloaded", "type": "rate_limit_error", "param": null, "code": "overloaded"}}),
        ),
        (
            "/v1/messages",
            "solo-claude",
            first.clone(),
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Overloaded"}}),
        ),
        (
            "/v1/messages",
            "solo-vllm",
            rl.clone(),
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": OPENAI_RL}}),
        ),
        (
            "/v1/responses",
            "solo-gpt",
            first.clone(),
            500,
            json!({"error": {"message": "The model produced an error.", "type": "server_error", "param": null, "code": "server_error"}}),
        ),
        (
            "/v1/responses",
            "solo-claude",
            first,
            429,
            json!({"error": {"message": "Overloaded", "type": "rate_limit_error", "param": null, "code": "overloaded"}}),
        ),
    ];
    let n = cases.len();
    for (path, group, behavior, status, body) in cases {
        script(&m, group, behavior.clone());
        let r = post_as(&gw, &key, path, &stream_body(path, group)).await;
        let case = format!("{path} -> {group} {behavior}");
        assert_eq!(r.status, status, "{case}: {}", r.text);
        assert_eq!(r.header("content-type"), "application/json", "{case}");
        assert_eq!(r.body, body, "{case}");
        assert_eq!(r.header("x-litellm-response-cost"), "0", "{case}");
        assert_eq!(calls(&m), [group], "{case}: one upstream call");
    }
    let logged = rows(&gw, &hash, n).await;
    assert_eq!(logged.len(), n);
    assert!(
        logged.iter().all(|(_, spend, status, p, c)| *spend == 0.0
            && status == "failure"
            && (*p, *c) == (0, 0)),
        "{logged:?}"
    );
    assert_eq!(key_spend(&gw, &key).await, 0.0);
}

/// The client's first byte waits for the first content event, and that event is relayed the
/// moment it arrives, together with the role chunk held before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_content_event_is_relayed_as_soon_as_it_arrives() {
    let m = mock().await;
    // role chunk at once, then 400 ms between events.
    script(
        &m,
        "solo-gpt",
        json!({"reply": "abcd", "chunks": 2, "chunk_delay_ms": 400}),
    );
    let gw = GovGateway::start(&gateway_config(&m.base_url(), "  num_retries: 0\n"));
    let sent = Instant::now();
    let resp = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(MASTER)
        .json(&stream_body("/v1/chat/completions", "solo-gpt"))
        .send()
        .await
        .unwrap();
    let head = sent.elapsed();
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("\"content\":\"ab\"") {
        let chunk = body.next().await.expect("more body").unwrap();
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let first_token = sent.elapsed();
    assert!(
        head >= Duration::from_millis(350),
        "the head waited for the first content event: {head:?}"
    );
    assert!(
        first_token - head < Duration::from_millis(200),
        "the first content event came with the head: head {head:?}, token {first_token:?}"
    );
    assert!(seen.starts_with("data: {"), "{seen}");
    assert_eq!(
        described("/v1/chat/completions", &seen),
        strings(&["role", "text \"ab\""])
    );
}
