//! End-to-end: errors inside a 200 stream, through the real binary against
//! `tollgate-mock`.
//!
//! - An upstream that answers 200 and sends an error as its first event has failed the attempt
//!   before anything reached the client: retried on another deployment, fallen back from,
//!   counted for cooldown, billed 0; with nowhere else to go the client gets the HTTP status the
//!   error stands for, in its own dialect, with the upstream's message.
//! - An error after content ends the stream with the client dialect's terminal error, on every
//!   dialect pair: no `finish_reason: stop` / `[DONE]`, no `message_stop`, no
//!   `response.completed`.
//!
//! Deployments are told apart by the mock's `/d/{deployment}` prefix and scripted per
//! deployment.
#![expect(clippy::panic, reason = "test support: a failed setup fails the test")]

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

/// USD per prompt / completion token of every deployment.
const IN: f64 = 1e-6;
const OUT: f64 = 2e-6;

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

/// Every group the tests use, and `router` (YAML lines of `router_settings`).
fn config(mock: &str, router: &str) -> String {
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
    ];
    format!(
        "model_list:\n{}router_settings:\n{router}general_settings:\n  master_key: {MASTER}\n",
        deps.concat()
    )
}

/// `num_retries: 1`, LiteLLM's default cooldown rule (a 429 cools a deployment of a group of
/// several at once) for 60 s, and `primary` falling back to `backup`.
const ROUTER: &str =
    "  num_retries: 1\n  cooldown_time: 60\n  fallbacks: [{\"primary\": [\"backup\"]}]\n";

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

/// A streamed request body for `path`.
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

/// What a client of `path` saw, one line per event: the text each content event carried, the
/// terminal error's message, and the lifecycle events by name.
fn described(path: &str, text: &str) -> Vec<String> {
    events(text)
        .into_iter()
        .map(|(name, v)| {
            if v == "[DONE]" {
                return "[DONE]".to_owned();
            }
            if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
                return match path {
                    "/v1/messages" => format!("{name} {} {}", e["type"], e["message"]),
                    _ => format!("error {} {} {}", e["type"], e["code"], e["message"]),
                };
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

/// The spend-log rows of a key, once `n` are written, by deployment (`model_id`):
/// `(model_id, spend USD, status, prompt_tokens, completion_tokens)`, sorted by model id.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_event_error_is_retried_on_the_other_deployment_and_cools_it() {
    let m = mock().await;
    // east answers 200 and then a Python-spaced rate-limit error as its first event.
    script(
        &m,
        "east",
        json!({"first_event_error": "rate_limit", "stream_error_style": "python"}),
    );
    script(
        &m,
        "west",
        json!({"usage": [1000, 500], "reply": "abcd", "chunks": 2}),
    );
    let gw = GovGateway::start(&config(&m.base_url(), ROUTER));
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
        "a clean stream from west: {}",
        r.text
    );
    assert!(!r.text.contains("error"), "{}", r.text);
    assert_eq!(
        calls(&m),
        ["east", "west"],
        "east failed, the retry went to west"
    );

    // The failed attempt is billed 0; west's answer at its reported usage.
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

    // The 429 counted against east: it is cooling down, so west takes the next request.
    let r = chat(&gw, &key, &stream_body("/v1/chat/completions", "pair")).await;
    assert_eq!(r.status, 200);
    assert_eq!(calls(&m), ["west"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_overloaded_first_event_is_retried_for_a_messages_client() {
    let m = mock().await;
    script(
        &m,
        "c-east",
        json!({"first_event_error": "overloaded_error"}),
    );
    script(&m, "c-west", json!({"reply": "abcd", "chunks": 2}));
    let gw = GovGateway::start(&config(&m.base_url(), ROUTER));
    let r = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &stream_body("/v1/messages", "claude-pair"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
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
    assert_eq!(calls(&m), ["c-east", "c-west"]);
    // overloaded_error counts as an overload (429 class): c-east cools down at once.
    let r = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &stream_body("/v1/messages", "claude-pair"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(calls(&m), ["c-west"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_event_error_with_nowhere_else_to_go_is_an_http_error_in_the_clients_dialect() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), "  num_retries: 0\n"));
    let (key, hash) = generate_key(&gw, json!({})).await;
    let openai_rl = "Rate limit reached for mock-gpt on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms.";
    let anthropic_rl = "Number of requests has exceeded your per-minute rate limit.";
    // (client path, group, the upstream's first event, status, the client's error body)
    let cases = [
        (
            "/v1/chat/completions",
            "solo-gpt",
            json!({"first_event_error": "rate_limit", "stream_error_style": "python"}),
            429,
            json!({"error": {"message": openai_rl, "type": "rate_limit_error", "param": "requests", "code": "rate_limit_exceeded"}}),
        ),
        (
            "/v1/chat/completions",
            "solo-claude",
            json!({"first_event_error": "rate_limit"}),
            429,
            json!({"error": {"message": anthropic_rl, "type": "rate_limit_error", "param": null, "code": "rate_limit_exceeded"}}),
        ),
        (
            "/v1/completions",
            "solo-claude",
            json!({"first_event_error": "overloaded"}),
            429,
            json!({"error": {"message": "Overloaded", "type": "rate_limit_error", "param": null, "code": "overloaded"}}),
        ),
        (
            "/v1/messages",
            "solo-claude",
            json!({"first_event_error": "rate_limit"}),
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": anthropic_rl}}),
        ),
        (
            "/v1/messages",
            "solo-claude",
            json!({"first_event_error": "api_error"}),
            500,
            json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}),
        ),
        (
            "/v1/messages",
            "solo-vllm",
            json!({"first_event_error": "rate_limit", "stream_error_style": "python"}),
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": openai_rl}}),
        ),
        (
            "/v1/responses",
            "solo-gpt",
            json!({"first_event_error": "rate_limit"}),
            429,
            json!({"error": {"message": openai_rl, "type": "rate_limit_error", "param": null, "code": "rate_limit_exceeded"}}),
        ),
        (
            "/v1/responses",
            "solo-gpt",
            json!({"first_event_error": "server_error", "stream_error_event": "error"}),
            500,
            json!({"error": {"message": "The model produced an error.", "type": "server_error", "param": null, "code": "server_error"}}),
        ),
        (
            "/v1/responses",
            "solo-vllm",
            json!({"first_event_error": "rate_limit"}),
            429,
            json!({"error": {"message": openai_rl, "type": "rate_limit_error", "param": "requests", "code": "rate_limit_exceeded"}}),
        ),
        (
            "/v1/responses",
            "solo-claude",
            json!({"first_event_error": "rate_limit"}),
            429,
            json!({"error": {"message": anthropic_rl, "type": "rate_limit_error", "param": null, "code": "rate_limit_exceeded"}}),
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
    // Nothing was billed for any of them.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_with_fallbacks_falls_back_after_a_first_event_error() {
    let m = mock().await;
    script(&m, "primary", json!({"first_event_error": "server_error"}));
    script(&m, "backup", json!({"reply": "abcd", "chunks": 2}));
    let gw = GovGateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  fallbacks: [{\"primary\": [\"backup\"]}]\n",
    ));
    let r = chat(&gw, MASTER, &stream_body("/v1/chat/completions", "primary")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-attempted-fallbacks"), "1");
    assert_eq!(r.header("x-litellm-model-group"), "backup");
    assert_eq!(
        described("/v1/chat/completions", &r.text),
        strings(&[
            "role",
            "text \"ab\"",
            "text \"cd\"",
            "finish stop",
            "[DONE]"
        ]),
        "backup's Anthropic stream, translated: {}",
        r.text
    );
    assert_eq!(calls(&m), ["primary", "backup"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_midstream_error_ends_every_dialect_pair_with_its_terminal_error() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), "  num_retries: 0\n"));
    // Two of four content pieces ("a", "b"), then the upstream's error.
    let after_two = json!({"reply": "abcd", "chunks": 4, "midstream_error_after": 2});
    for d in ["solo-gpt", "solo-vllm", "solo-claude"] {
        script(&m, d, after_two.clone());
    }
    let openai_500 = "\"The server had an error while processing your request. Sorry about that!\"";
    let cases: [(&str, &str, Vec<String>); 9] = [
        (
            "/v1/chat/completions",
            "solo-gpt",
            strings(&["role", "text \"a\"", "text \"b\""]),
        ),
        (
            "/v1/chat/completions",
            "solo-claude",
            strings(&["role", "text \"a\"", "text \"b\""]),
        ),
        (
            "/v1/completions",
            "solo-gpt",
            strings(&["text \"a\"", "text \"b\""]),
        ),
        (
            "/v1/completions",
            "solo-claude",
            strings(&["text \"a\"", "text \"b\""]),
        ),
        (
            "/v1/messages",
            "solo-claude",
            strings(&[
                "message_start",
                "content_block_start",
                "ping",
                "text \"a\"",
                "text \"b\"",
            ]),
        ),
        (
            "/v1/messages",
            "solo-vllm",
            strings(&[
                "message_start",
                "content_block_start",
                "text \"a\"",
                "text \"b\"",
            ]),
        ),
        ("/v1/responses", "solo-gpt", Vec::new()),
        ("/v1/responses", "solo-vllm", Vec::new()),
        ("/v1/responses", "solo-claude", Vec::new()),
    ];
    let responses_head = strings(&[
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "text \"a\"",
        "text \"b\"",
    ]);
    for (path, group, head) in cases {
        let r = post_as(&gw, MASTER, path, &stream_body(path, group)).await;
        let case = format!("{path} -> {group}");
        assert_eq!(r.status, 200, "{case}: {}", r.text);
        let mut want = if path == "/v1/responses" {
            responses_head.clone()
        } else {
            head
        };
        let upstream_anthropic = group == "solo-claude";
        want.push(match (path, upstream_anthropic) {
            ("/v1/messages", true) => "error \"overloaded_error\" \"Overloaded\"".to_owned(),
            ("/v1/messages", false) => format!("error \"api_error\" {openai_500}"),
            ("/v1/responses", _) if group == "solo-gpt" => {
                "response.failed \"server_error\" \"The model produced an error.\"".to_owned()
            }
            ("/v1/responses", true) => "response.failed \"server_error\" \"Overloaded\"".to_owned(),
            ("/v1/responses", false) => format!("response.failed \"server_error\" {openai_500}"),
            (_, true) => "error \"server_error\" \"overloaded\" \"Overloaded\"".to_owned(),
            (_, false) => format!("error \"server_error\" null {openai_500}"),
        });
        assert_eq!(described(path, &r.text), want, "{case}: {}", r.text);
        for never in [
            "[DONE]",
            "\"finish_reason\":\"stop\"",
            "message_stop",
            "end_turn",
            "response.completed",
        ] {
            assert!(!r.text.contains(never), "{case}: {never} in {}", r.text);
        }
        assert_eq!(calls(&m), [group], "{case}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_midstream_error_is_recorded_as_failed_with_the_usage_seen_so_far() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), "  num_retries: 0\n"));
    let (key, hash) = generate_key(&gw, json!({})).await;
    // Anthropic reports its input (and 1 output token) in message_start: that usage stands,
    // with the completion at least the tokens of the text deltas relayed.
    script(
        &m,
        "solo-claude",
        json!({"reply": "abcd", "chunks": 4, "midstream_error_after": 2, "usage": [700, 40]}),
    );
    let r = post_as(
        &gw,
        &key,
        "/v1/messages",
        &stream_body("/v1/messages", "solo-claude"),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(r.text.ends_with("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"), "{}", r.text);
    let logged = rows(&gw, &hash, 1).await;
    let (id, spend, status, p, c) = logged[0].clone();
    assert_eq!(
        (id.as_str(), status.as_str(), p),
        ("solo-claude", "failure", 700)
    );
    // "a" and "b" were relayed before the error: 1 token (bytes / 4), not the 5 events
    // (message_start, content_block_start and ping carry no output).
    assert_eq!(c, 1, "{logged:?}");
    assert!(same_dollars(spend, 700.0 * IN + OUT), "{logged:?}");
}
