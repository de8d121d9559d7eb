//! End-to-end routing through the real binary: retries, fallbacks, cooldowns, client-side
//! timeouts (LiteLLM's `router_settings` rules). Deployments are told apart by the
//! mock's `/d/{deployment}` prefix and scripted per deployment.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};

fn config(mock: &str, router: &str) -> String {
    let dep = |group: &str, name: &str, model: &str| {
        format!(
            "  - model_name: {group}\n    litellm_params:\n      model: openai/{model}\n      api_base: {mock}/d/{name}/v1\n      api_key: {UPSTREAM_KEY}\n"
        )
    };
    format!(
        "model_list:\n{}{}{}{}{}{}router_settings:\n{router}general_settings:\n  master_key: {MASTER}\n",
        dep("pair", "east", "mock-gpt"),
        dep("pair", "west", "mock-gpt"),
        dep("primary", "primary", "mock-gpt"),
        dep("backup", "backup", "mock-gpt"),
        dep("solo", "solo", "mock-gpt"),
        dep("slowpoke", "slowpoke", "mock-gpt-slow"),
    )
}

async fn chat(gw: &Gateway, body: Value) -> reqwest::Response {
    client()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {MASTER}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn msg(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

fn script(m: &MockHandle, v: Value) {
    m.script(serde_json::from_value(v).unwrap());
}

fn calls(m: &MockHandle) -> Vec<String> {
    m.drain_observations()
        .into_iter()
        .filter_map(|o| o.deployment)
        .collect()
}

const NO_COOLDOWN: &str =
    "  num_retries: 2\n  disable_cooldowns: true\n  fallbacks: [{\"primary\": [\"backup\"]}]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_errors_are_not_retried() {
    let m = mock().await;
    for d in ["east", "west"] {
        script(&m, json!({"key": d, "default": {"status": 400}}));
    }
    let gw = Gateway::start(&config(&m.base_url(), NO_COOLDOWN));
    let r = chat(&gw, msg("pair")).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["x-litellm-attempted-retries"], "0");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(calls(&m).len(), 1, "a 400 is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_goes_to_the_other_deployment_first() {
    let m = mock().await;
    for d in ["east", "west"] {
        script(&m, json!({"key": d, "responses": [{"status": 500}]}));
    }
    let gw = Gateway::start(&config(&m.base_url(), NO_COOLDOWN));
    let r = chat(&gw, msg("pair")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-litellm-attempted-retries"], "2");
    let seen = calls(&m);
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_ne!(
        seen[0], seen[1],
        "the first retry goes to the untried deployment: {seen:?}"
    );
    let mut first_two = [seen[0].as_str(), seen[1].as_str()];
    first_two.sort_unstable();
    assert_eq!(
        first_two,
        ["east", "west"],
        "both deployments tried before any is retried"
    );
    // The third attempt (after backoff) may go to either: both have failed once.
    assert!(seen[2] == "east" || seen[2] == "west");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_chain_ends_with_the_last_error() {
    let m = mock().await;
    script(&m, json!({"key": "primary", "default": {"status": 429}}));
    script(&m, json!({"key": "backup", "default": {"status": 503}}));
    let gw = Gateway::start(&config(&m.base_url(), NO_COOLDOWN));
    let r = chat(&gw, msg("primary")).await;
    assert_eq!(r.status(), 503, "B's error reaches the client");
    assert_eq!(r.headers()["x-litellm-attempted-fallbacks"], "1");
    assert_eq!(r.headers()["x-litellm-model-group"], "backup");
    let seen = calls(&m);
    let count = |d: &str| seen.iter().filter(|s| *s == d).count();
    assert_eq!(
        (count("primary"), count("backup")),
        (3, 3),
        "1 + num_retries on each, once: {seen:?}"
    );
}

/// A request's own `fallbacks` take LiteLLM's `{"model": name}` objects as well as names;
/// what Tollgate cannot honour, or cannot read, is refused with a 400 before any upstream
/// call instead of being ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_fallbacks_and_retries_are_read_or_refused() {
    let m = mock().await;
    script(&m, json!({"key": "primary", "default": {"status": 500}}));
    let gw = Gateway::start(&config(&m.base_url(), NO_COOLDOWN));
    let mut body = msg("primary");
    body["num_retries"] = json!(0);
    body["fallbacks"] = json!([{"model": "solo"}]);
    let r = chat(&gw, body.clone()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-litellm-model-group"], "solo");
    assert_eq!(calls(&m), vec!["primary", "solo"]);

    for (field, value) in [
        ("fallbacks", json!("solo")),
        ("fallbacks", json!([{"model": "solo", "temperature": 0}])),
        ("num_retries", json!("3")),
    ] {
        let mut b = body.clone();
        b[field] = value.clone();
        let r = chat(&gw, b).await;
        assert_eq!(r.status(), 400, "{field}: {value}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "invalid_type", "{v}");
        assert_eq!(v["error"]["param"], field, "{v}");
    }
    let r = client()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {MASTER}"))
        .header("x-litellm-num-retries", "abc")
        .json(&msg("primary"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "invalid_header", "{v}");
    assert!(
        calls(&m).is_empty(),
        "no upstream call for a refused request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_testing_fallbacks_fail_the_requested_group_without_calling_it() {
    let m = mock().await;
    // With `allowed_fails: 1`, one failure that counted would cool `primary` (single-deployment
    // groups are not exempt from a configured count).
    let router = "  num_retries: 2\n  allowed_fails: 1\n  cooldown_time: 60\n  \
        fallbacks: [{\"primary\": [\"backup\"]}]\n  \
        context_window_fallbacks: [{\"primary\": [\"solo\"]}]\n";
    let gw = Gateway::start(&config(&m.base_url(), router));
    let with = |field: &str| {
        let mut body = msg("primary");
        body[field] = json!(true);
        body
    };

    // `fallbacks`: answered by backup, the only upstream call, without the test field.
    let r = chat(&gw, with("mock_testing_fallbacks")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-litellm-model-group"], "backup");
    assert_eq!(r.headers()["x-litellm-attempted-fallbacks"], "1");
    assert_eq!(r.headers()["x-litellm-attempted-retries"], "0");
    let seen = m.drain_observations();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].deployment.as_deref(), Some("backup"));
    assert!(seen[0].body.get("mock_testing_fallbacks").is_none());

    // `context_window_fallbacks`: answered by solo.
    let r = chat(&gw, with("mock_testing_context_fallbacks")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-litellm-model-group"], "solo");
    assert_eq!(calls(&m), ["solo"]);

    // No `content_policy_fallbacks`: the group's `fallbacks` take over, as in LiteLLM.
    let r = chat(&gw, with("mock_testing_content_policy_fallbacks")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-litellm-model-group"], "backup");
    assert_eq!(calls(&m), ["backup"]);

    // A group without fallbacks: the simulated failure is the answer, in each dialect.
    let mut body = msg("pair");
    body["mock_testing_context_fallbacks"] = json!(true);
    let r = chat(&gw, body).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["x-litellm-attempted-fallbacks"], "0");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert_eq!(
        v["error"]["message"],
        "litellm.ContextWindowExceededError: This is a mock exception for model=pair, to trigger a fallback."
    );
    let r = client()
        .post(gw.url("/v1/messages"))
        .header("x-api-key", MASTER)
        .json(&json!({"model": "solo", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "mock_testing_fallbacks": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(
        v["error"]["message"],
        "litellm.InternalServerError: This is a mock exception for model=solo, to trigger a fallback."
    );
    assert!(calls(&m).is_empty());

    // Nothing counted against primary: it still answers a plain request itself.
    let r = chat(&gw, msg("primary")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-litellm-model-group"], "primary");
    assert_eq!(calls(&m), ["primary"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mock_response_naming_a_litellm_error_fails_as_that_upstream_error() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url(), NO_COOLDOWN));
    let ask = |model: &str, reply: &str, retries: u32| {
        let mut body = msg(model);
        body["mock_response"] = json!(reply);
        body["num_retries"] = json!(retries);
        body
    };

    // A 429: no retry asked, so primary once, then its fallback group, which fails alike.
    let r = chat(&gw, ask("primary", "litellm.RateLimitError", 0)).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["x-litellm-attempted-fallbacks"], "1");
    assert_eq!(r.headers()["x-litellm-model-group"], "backup");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert_eq!(
        v["error"]["message"],
        "litellm.RateLimitError: this is a mock rate limit error"
    );

    // A 500 is retried (on the pair's other deployment, without a wait).
    let r = chat(&gw, ask("pair", "litellm.InternalServerError", 1)).await;
    assert_eq!(r.status(), 500);
    assert_eq!(r.headers()["x-litellm-attempted-retries"], "1");

    // A context-window error is not retried.
    let r = chat(&gw, ask("pair", "litellm.ContextWindowExceededError", 2)).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["x-litellm-attempted-retries"], "0");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");

    // Any other text is the answer.
    let r = chat(&gw, ask("pair", "litellm.SomethingElse", 0)).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "litellm.SomethingElse"
    );
    assert!(calls(&m).is_empty(), "no upstream call for any mock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooled_down_deployment_is_skipped_until_its_cooldown_ends() {
    let m = mock().await;
    script(
        &m,
        json!({"key": "solo", "responses": [{"status": 500}, {"status": 500}]}),
    );
    let gw = Gateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  allowed_fails: 2\n  cooldown_time: 1\n",
    ));
    assert_eq!(chat(&gw, msg("solo")).await.status(), 500);
    assert_eq!(chat(&gw, msg("solo")).await.status(), 500);
    let r = chat(&gw, msg("solo")).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("No deployments available"),
        "{v}"
    );
    assert_eq!(calls(&m).len(), 2, "not called while cooling down");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(chat(&gw, msg("solo")).await.status(), 200);
    assert_eq!(
        calls(&m),
        vec!["solo".to_owned()],
        "called again after the cooldown"
    );
}

/// Sends `msg(group)` until the mock saw `target` called `times` times (at most 200 requests);
/// the statuses the client got, in order, and every deployment called.
async fn until_called(
    gw: &Gateway,
    m: &MockHandle,
    group: &str,
    target: &str,
    times: usize,
) -> (Vec<u16>, Vec<String>) {
    let (mut statuses, mut seen) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        statuses.push(chat(gw, msg(group)).await.status().as_u16());
        seen.extend(calls(m));
        if seen.iter().filter(|d| *d == target).count() >= times {
            break;
        }
    }
    (statuses, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_allowed_fails_litellms_default_rule_cools_deployments() {
    // No allowed_fails: a 429 cools its deployment at once; 5xx cool it once more than half
    // of the minute's calls failed, counted from 5 calls (LiteLLM cooldown_handlers.py).
    let m = mock().await;
    script(&m, json!({"key": "east", "default": {"status": 429}}));
    let gw = Gateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  cooldown_time: 1\n",
    ));
    let (statuses, seen) = until_called(&gw, &m, "pair", "east", 1).await;
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    assert_eq!(seen.iter().filter(|d| *d == "east").count(), 1);
    for _ in 0..10 {
        assert_eq!(chat(&gw, msg("pair")).await.status(), 200);
    }
    assert_eq!(calls(&m), vec!["west".to_owned(); 10], "east cools at once");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (_, seen) = until_called(&gw, &m, "pair", "east", 1).await;
    assert_eq!(
        seen.last().map(String::as_str),
        Some("east"),
        "back after 1 s"
    );

    // 500s: east's every call fails, so it cools on its fifth failure, not before.
    script(&m, json!({"key": "east", "default": {"status": 500}}));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (statuses, seen) = until_called(&gw, &m, "pair", "east", 5).await;
    assert_eq!(seen.iter().filter(|d| *d == "east").count(), 5);
    assert_eq!(
        statuses.iter().filter(|s| **s == 500).count(),
        5,
        "{statuses:?}"
    );
    for _ in 0..10 {
        assert_eq!(chat(&gw, msg("pair")).await.status(), 200);
    }
    assert_eq!(
        calls(&m),
        vec!["west".to_owned(); 10],
        "east cools on the fifth"
    );

    // The only deployment of a group is never cooled by the default rule.
    script(&m, json!({"key": "solo", "default": {"status": 429}}));
    for _ in 0..3 {
        assert_eq!(chat(&gw, msg("solo")).await.status(), 429);
    }
    assert_eq!(calls(&m), vec!["solo".to_owned(); 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_own_short_timeout_does_not_cool_the_deployment() {
    let m = mock().await;
    let gw = Gateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  allowed_fails: 1\n  cooldown_time: 60\n",
    ));
    for _ in 0..3 {
        let mut b = msg("slowpoke");
        b["timeout"] = json!(0.1);
        assert_eq!(chat(&gw, b).await.status(), 504);
    }
    // The deployment is still healthy for a client without a short timeout.
    let r = chat(&gw, msg("slowpoke")).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_own_stream_timeout_bounds_its_first_byte_only() {
    let m = mock().await;
    let gw = Gateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  allowed_fails: 1\n  cooldown_time: 60\n",
    ));
    let stream = || {
        let mut b = msg("slowpoke");
        b["stream"] = json!(true);
        b
    };
    // header form and body form, each well under the mock's 1 s before the first byte
    let r = client()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", format!("Bearer {MASTER}"))
        .header("x-litellm-stream-timeout", "0.1")
        .json(&stream())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "upstream_timeout", "{v}");
    let mut b = stream();
    b["stream_timeout"] = json!(0.1);
    assert_eq!(chat(&gw, b).await.status(), 504);
    // a stream limit does not apply to a non-streamed request
    let mut b = msg("slowpoke");
    b["stream_timeout"] = json!(0.1);
    assert_eq!(chat(&gw, b).await.status(), 200);
    // The client's own limit did not cool the deployment (allowed_fails: 1)
    let r = chat(&gw, stream()).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("data: [DONE]"));
    // the upstream never saw the gateway-only field
    assert!(
        m.drain_observations()
            .iter()
            .all(|o| o.body.get("stream_timeout").is_none())
    );
}

/// `stream_timeout` bounds streams only: a non-streamed request has its deployment's whole
/// `timeout` to start answering (as in LiteLLM, which passes `stream_timeout` instead of
/// `timeout` only when `stream: true`). A 504 names whose limit ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_timeout_bounds_streams_and_timeout_the_rest() {
    let m = mock().await;
    script(
        &m,
        json!({"key": "patient", "default": {"first_byte_delay_ms": 700}}),
    );
    let gw = Gateway::start(&format!(
        "model_list:\n  - model_name: patient\n    litellm_params:\n      model: openai/mock-gpt\n      api_base: {}/d/patient/v1\n      api_key: {UPSTREAM_KEY}\n      timeout: 3\n      stream_timeout: 0.3\nrouter_settings:\n  num_retries: 0\n  disable_cooldowns: true\ngeneral_settings:\n  master_key: {MASTER}\n",
        m.base_url()
    ));
    let r = chat(&gw, msg("patient")).await;
    assert_eq!(r.status(), 200, "a 700 ms answer is within timeout: 3");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");

    let mut b = msg("patient");
    b["stream"] = json!(true);
    let r = chat(&gw, b.clone()).await;
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["error"]["message"],
        "The upstream did not start answering within 300 ms (the deployment's timeout)."
    );
    // The request's own shorter limit is named as such.
    b["stream_timeout"] = json!(0.2);
    let r = chat(&gw, b).await;
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["error"]["message"],
        "The upstream did not start answering within 200 ms (the request's timeout)."
    );
    let mut b = msg("patient");
    b["timeout"] = json!(0.5);
    let r = chat(&gw, b).await;
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["error"]["message"],
        "The upstream did not start answering within 500 ms (the request's timeout)."
    );
    assert_eq!(calls(&m), vec!["patient".to_owned(); 4]);
}

/// An `api_base` with a query (a key or an `api-version` some servers take there) keeps it
/// after the joined path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_on_api_base_follows_the_path() {
    let m = mock().await;
    let gw = Gateway::start(&format!(
        "model_list:\n  - model_name: q\n    litellm_params:\n      model: openai/mock-gpt\n      api_base: {}/d/east/v1?api-key=x\n      api_key: {UPSTREAM_KEY}\ngeneral_settings:\n  master_key: {MASTER}\n",
        m.base_url()
    ));
    let r = chat(&gw, msg("q")).await;
    assert_eq!(r.status(), 200);
    let seen = m.drain_observations();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/d/east/v1/chat/completions");
    assert_eq!(seen[0].query.as_deref(), Some("api-key=x"));
}

/// `cost-based-routing` without prices in the config ranks deployments by the built-in price
/// table: gpt-4o-mini (0.15/0.60 USD per 1M tokens) below gpt-4o (2.50/10.00).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cost_based_routing_prices_deployments_from_the_built_in_table() {
    let m = mock().await;
    let dep = |name: &str, model: &str| {
        format!(
            "  - model_name: mix\n    litellm_params:\n      model: openai/{model}\n      api_base: {}/d/{name}/v1\n      api_key: {UPSTREAM_KEY}\n",
            m.base_url()
        )
    };
    let gw = Gateway::start(&format!(
        "model_list:\n{}{}router_settings:\n  routing_strategy: cost-based-routing\n  num_retries: 0\ngeneral_settings:\n  master_key: {MASTER}\n",
        dep("east", "gpt-4o"),
        dep("west", "gpt-4o-mini"),
    ));
    for _ in 0..10 {
        assert_eq!(chat(&gw, msg("mix")).await.status(), 200);
    }
    assert_eq!(calls(&m), vec!["west".to_owned(); 10]);
}

fn weighted_config(mock: &str, router: &str) -> String {
    let dep = |group: &str, name: &str, extra: &str| {
        format!(
            "  - model_name: {group}\n    litellm_params:\n      model: openai/mock-gpt\n      api_base: {mock}/d/{name}/v1\n      api_key: {UPSTREAM_KEY}\n{extra}"
        )
    };
    format!(
        "model_list:\n{}{}{}{}{}{}{}{}{}{}{}{}router_settings:\n{router}general_settings:\n  master_key: {MASTER}\n",
        dep("weighted", "w3", "      weight: 3\n"),
        dep("weighted", "w1", "      weight: 1\n"),
        dep("tiered", "t1", "      order: 1\n"),
        dep("tiered", "t2", "      order: 2\n"),
        dep("lat", "fast", ""),
        dep("lat", "slow", ""),
        dep("failing", "f1", ""),
        dep("failing", "f2", ""),
        dep("failing", "f3", ""),
        dep("failing-fallback", "g1", ""),
        dep("failing-fallback", "g2", ""),
        dep("failing-fallback", "g3", ""),
    )
}

/// Sends `n` requests for `model`, 16 at a time.
async fn burst(gw: &Gateway, model: &str, n: usize) -> Vec<u16> {
    let c = client();
    let url = gw.url("/v1/chat/completions");
    let mut statuses = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(16) {
        let futs = chunk.iter().map(|_| {
            c.post(&url)
                .header("authorization", format!("Bearer {MASTER}"))
                .json(&msg(model))
                .send()
        });
        for r in futures_util::future::join_all(futs).await {
            statuses.push(r.unwrap().status().as_u16());
        }
    }
    statuses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_split_traffic_and_order_one_takes_all_while_healthy() {
    let m = tollgate_mock::start(MockConfig {
        max_records: 20_000,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let gw = Gateway::start(&weighted_config(&m.base_url(), "  num_retries: 0\n"));
    let statuses = burst(&gw, "weighted", 4000).await;
    assert!(statuses.iter().all(|s| *s == 200));
    let seen = calls(&m);
    let w3 = seen.iter().filter(|d| *d == "w3").count();
    assert_eq!(seen.len(), 4000);
    assert!(
        (2880..=3120).contains(&w3),
        "weight 3:1 gave {w3} of 4000 to the first"
    );
    burst(&gw, "tiered", 200).await;
    assert!(
        calls(&m).iter().all(|d| d == "t1"),
        "order 1 takes all traffic while healthy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_routing_moves_traffic_off_a_slow_deployment() {
    let m = mock().await;
    script(&m, json!({"key": "fast", "default": {"delay_ms": 2}}));
    script(&m, json!({"key": "slow", "default": {"delay_ms": 2}}));
    let gw = Gateway::start(&weighted_config(
        &m.base_url(),
        "  num_retries: 0\n  routing_strategy: latency-based-routing\n",
    ));
    burst(&gw, "lat", 64).await;
    calls(&m);
    // Make one deployment 30x slower (60 ms: well above a loaded debug build's own jitter);
    // within 200 requests >= 90 % of traffic leaves it.
    script(&m, json!({"key": "slow", "default": {"delay_ms": 60}}));
    let c = client();
    for _ in 0..200 {
        let r = c
            .post(gw.url("/v1/chat/completions"))
            .header("authorization", format!("Bearer {MASTER}"))
            .json(&msg("lat"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let seen = calls(&m);
    let slow = seen.iter().filter(|d| *d == "slow").count();
    assert!(
        slow <= 20,
        "{slow} of 200 still went to the slow deployment"
    );
}

/// Latency-based routing compares streams by time to first token, measured at the first event
/// relayed, not at the response head: "slow" sends its head at once and its first event after
/// 150 ms (a slow prefill), "fast" its head after 40 ms and its events straight after. Timed
/// at the head, "slow" would look 40 ms faster and take the streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_routing_times_a_stream_to_its_first_event_not_its_head() {
    let m = mock().await;
    script(
        &m,
        json!({"key": "slow", "default": {"delay_ms": 0, "first_event_delay_ms": 150}}),
    );
    script(
        &m,
        json!({"key": "fast", "default": {"delay_ms": 0, "first_byte_delay_ms": 40}}),
    );
    let gw = Gateway::start(&weighted_config(
        &m.base_url(),
        "  num_retries: 0\n  routing_strategy: latency-based-routing\n",
    ));
    let c = client();
    let stream = |c: &reqwest::Client| {
        let mut body = msg("lat");
        body["stream"] = json!(true);
        c.post(gw.url("/v1/chat/completions"))
            .header("authorization", format!("Bearer {MASTER}"))
            .json(&body)
            .send()
    };
    // Each deployment gets a first sample (one without a sample counts as fastest).
    for _ in 0..4 {
        let text = stream(&c).await.unwrap().text().await.unwrap();
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    }
    let warm = calls(&m);
    assert!(
        warm.iter().any(|d| d == "slow") && warm.iter().any(|d| d == "fast"),
        "{warm:?}"
    );
    for _ in 0..20 {
        let text = stream(&c).await.unwrap().text().await.unwrap();
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    }
    let seen = calls(&m);
    let fast = seen.iter().filter(|d| *d == "fast").count();
    assert!(
        fast >= 19,
        "{fast} of 20 streams went to the deployment with the earlier first token: {seen:?}"
    );
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_flat_across_failing_requests_with_retries_and_fallbacks() {
    let m = tollgate_mock::start(MockConfig {
        record: false,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    for d in ["f1", "f2", "f3", "g1", "g2", "g3"] {
        script(&m, json!({"key": d, "default": {"status": 500}}));
    }
    let gw = Gateway::start(&weighted_config(
        &m.base_url(),
        "  num_retries: 2\n  disable_cooldowns: true\n  fallbacks: [{\"failing\": [\"failing-fallback\"]}]\n",
    ));
    let pid = gw.child.id();
    let first = burst(&gw, "failing", 500).await;
    assert!(first.iter().all(|s| *s == 500));
    let after_first = rss_kb(pid);
    burst(&gw, "failing", 1000).await;
    let after_second = rss_kb(pid);
    // Three deployments per group: every retry goes to an untried deployment, so no backoff
    // sleeps. Router state must not grow with requests: a leak per failing request (each makes 3 + 3 upstream calls) would show as
    // growth proportional to the second, larger batch.
    assert!(
        after_second < after_first + 8 * 1024,
        "RSS grew from {after_first} kB to {after_second} kB"
    );
    assert_eq!(m.request_count(), 1500 * 6);
}

/// Ten requests (streamed or not) to the pair under usage-based-routing-v2, where each
/// answer from east reports 1,000 completion tokens and each from west 1: how many went to
/// (east, west).
async fn usage_based_split(stream: bool) -> (usize, usize) {
    let m = mock().await;
    script(&m, json!({"key": "east", "default": {"usage": [1, 1000]}}));
    script(&m, json!({"key": "west", "default": {"usage": [1, 1]}}));
    let gw = Gateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  routing_strategy: usage-based-routing-v2\n",
    ));
    for _ in 0..10 {
        let mut body = msg("pair");
        body["stream"] = json!(stream);
        let r = chat(&gw, body).await;
        assert_eq!(r.status(), 200);
        if stream {
            let text = r.text().await.unwrap();
            assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        } else {
            let v: Value = r.json().await.unwrap();
            let n = &v["usage"]["completion_tokens"];
            assert!(*n == 1000 || *n == 1, "{v}");
        }
    }
    let seen = calls(&m);
    let east = seen.iter().filter(|d| *d == "east").count();
    (east, seen.len() - east)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_based_routing_counts_the_completion_tokens_of_each_answer() {
    // Requests alone would alternate (each adds one request and the same prompt estimate,
    // ~20 tokens). East's one answer puts it 1,000 tokens ahead for the minute, so every
    // other request goes to west.
    assert_eq!(usage_based_split(false).await, (1, 9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_based_routing_counts_a_streams_completion_tokens_at_its_end() {
    // Usage arrives in the stream's last chunk: east's 1,000 tokens count from then on.
    assert_eq!(usage_based_split(true).await, (1, 9));
}

/// Under usage-based-routing-v2, one request whose body is ~40 KB (a prompt estimate of
/// ~10,000 tokens, as a base64 image would give) but whose answer reports 5 prompt tokens,
/// then ten small ones; every answer reports 5 prompt and 1 completion tokens. Returns how
/// many of the ten went to the deployment that took the large one.
async fn small_requests_after_a_large_estimate(stream: bool) -> usize {
    let m = mock().await;
    for d in ["east", "west"] {
        script(&m, json!({"key": d, "default": {"usage": [5, 1]}}));
    }
    let gw = Gateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  routing_strategy: usage-based-routing-v2\n",
    ));
    let padding = "A".repeat(40_000);
    for i in 0..11 {
        let mut body = msg("pair");
        if i == 0 {
            body["messages"][0]["content"] = json!(padding);
        }
        body["stream"] = json!(stream);
        let r = chat(&gw, body).await;
        assert_eq!(r.status(), 200);
        let text = r.text().await.unwrap();
        if stream {
            assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        } else {
            assert!(text.contains("\"prompt_tokens\":5"), "{text}");
        }
    }
    let seen = calls(&m);
    assert_eq!(seen.len(), 11);
    seen[1..].iter().filter(|d| **d == seen[0]).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_based_routing_swaps_a_prompt_estimate_for_the_reported_prompt_tokens() {
    // With the estimate kept, the large request's deployment stays ~10,000 tokens ahead for
    // the minute and gets none of the ten. With it swapped for the 5 reported, both stand at
    // 6 tokens per answer and share the ten: 1 goes to the other deployment, then they tie
    // after every second request.
    let n = small_requests_after_a_large_estimate(false).await;
    assert!((4..=5).contains(&n), "{n} of 10");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_based_routing_swaps_a_streams_prompt_estimate_at_its_end() {
    let n = small_requests_after_a_large_estimate(true).await;
    assert!((4..=5).contains(&n), "{n} of 10");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_busy_counts_a_stream_in_flight_until_its_last_event() {
    let m = mock().await;
    for d in ["east", "west"] {
        script(
            &m,
            json!({"key": d, "default": {"chunks": 4, "chunk_delay_ms": 400}}),
        );
    }
    let gw = Gateway::start(&config(
        &m.base_url(),
        "  num_retries: 0\n  routing_strategy: least-busy\n",
    ));
    // One stream's head has arrived; its events are still coming.
    let mut body = msg("pair");
    body["stream"] = json!(true);
    let open = chat(&gw, body).await;
    assert_eq!(open.status(), 200);
    let streaming = calls(&m);
    assert_eq!(streaming.len(), 1);
    let other = if streaming[0] == "east" {
        "west"
    } else {
        "east"
    };
    for d in ["east", "west"] {
        script(&m, json!({"key": d, "default": {}}));
    }
    for _ in 0..6 {
        assert_eq!(chat(&gw, msg("pair")).await.status(), 200);
    }
    assert_eq!(
        calls(&m),
        vec![other; 6],
        "the deployment serving the stream stays busy"
    );
    let text = open.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"));
}
