//! End-to-end: the real `tollgate` binary in front of `tollgate-mock`, OpenAI dialect.
//! Byte-for-byte checks use the shared fixtures (`../shared/fixtures/openai`).
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use futures_util::StreamExt;
use serde_json::{Value, json};

fn auth() -> String {
    format!("Bearer {MASTER}")
}

async fn post(gw: &Gateway, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(gw.url(path))
        .header("authorization", auth())
        .json(&body)
        .send()
        .await
        .unwrap()
}

macro_rules! need_fixtures {
    () => {
        if !fixtures_available() {
            eprintln!("skipped: shared fixtures not found (set TOLLGATE_SHARED_DIR)");
            return;
        }
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_streams_are_relayed_byte_for_byte() {
    need_fixtures!();
    let m = mock().await;
    let gw = Gateway::start(&standard_config(&m.base_url()));
    for (name, include_usage) in [
        ("openai/chat/text.stream.sse", false),
        ("openai/chat/text.stream_usage.sse", true),
        ("openai/chat/tools.stream.sse", true),
        ("openai/chat/unicode.stream.sse", false),
        ("openai/chat/midstream_error.stream.sse", false),
    ] {
        let mut body = json!({"model": format!("fixture/{name}"), "stream": true,
                              "messages": [{"role": "user", "content": "hi"}]});
        if include_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        let resp = post(&gw, "/v1/chat/completions", body).await;
        assert_eq!(resp.status(), 200, "{name}");
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let got = resp.bytes().await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&fixture(name)),
            "{name} differs"
        );
    }
    // The unicode fixture is flushed by the mock at offsets inside multi-byte characters
    // (unicode.stream.splits.json); the relay re-frames per event, so the bytes still match.
    let seen = m.drain_observations();
    assert!(seen.iter().all(|o| o.status == Some(200)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_responses_are_relayed_byte_for_byte() {
    need_fixtures!();
    let m = mock().await;
    let gw = Gateway::start(&standard_config(&m.base_url()));
    for name in [
        "openai/chat/text.response.json",
        "openai/chat/tools.response.json",
        "openai/chat/unicode.response.json",
        "openai/chat/n2_logprobs.response.json",
    ] {
        let resp = post(
            &gw,
            "/v1/chat/completions",
            json!({"model": format!("fixture/{name}"), "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.bytes().await.unwrap().to_vec(),
            fixture(name),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_reach_upstream_and_gateway_fields_do_not() {
    let m = mock().await;
    let gw = Gateway::start(&standard_config(&m.base_url()));
    let resp = post(
        &gw,
        "/v1/chat/completions",
        json!({
            "model": "gpt-test",
            "messages": [{"role": "user", "content": "hello"}],
            "user": "end-user-42",
            "brand_new_param": {"nested": [1, 2, {"x": null}]},
            "chat_template_kwargs": {"thinking": true},
            "metadata": {"tags": ["a"]}, "tags": ["t"], "cache": {"no-cache": true},
            "fallbacks": ["other"], "num_retries": 3
        }),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().contains_key("x-litellm-call-id"));
    assert_eq!(resp.headers()["x-litellm-model-group"], "gpt-test");
    let obs = m.drain_observations();
    assert_eq!(obs.len(), 1);
    let o = &obs[0];
    assert_eq!(o.route.as_deref(), Some("/chat/completions"));
    assert_eq!(
        o.body,
        json!({
            "model": "mock-gpt",
            "messages": [{"role": "user", "content": "hello"}],
            "user": "end-user-42",
            "brand_new_param": {"nested": [1, 2, {"x": null}]},
            "chat_template_kwargs": {"thinking": true},
            "seed": 7
        })
    );
    // The upstream sees the deployment's key, never the client's master key.
    assert_eq!(o.headers["authorization"], format!("Bearer {UPSTREAM_KEY}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_matches_direct_upstream_with_and_without_usage() {
    let m = mock().await;
    let gw = Gateway::start(&standard_config(&m.base_url()));
    for include_usage in [false, true] {
        let mut body = json!({"model": "mock-gpt", "stream": true,
                              "messages": [{"role": "user", "content": "Tell me something"}]});
        if include_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        let direct = client()
            .post(format!("{}/v1/chat/completions", m.base_url()))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        body["model"] = json!("gpt-test");
        let via = post(&gw, "/v1/chat/completions", body)
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(
            normalize_ids(&via),
            normalize_ids(&direct),
            "include_usage={include_usage}"
        );
        assert_eq!(via.contains("\"usage\""), include_usage);
    }
    // The upstream was always asked for usage.
    let obs = m.drain_observations();
    let via_gateway: Vec<_> = obs
        .iter()
        .filter(|o| {
            o.model.as_deref() == Some("mock-gpt") && o.headers.contains_key("authorization")
        })
        .collect();
    assert_eq!(via_gateway.len(), 2);
    for o in via_gateway {
        assert_eq!(o.body["stream_options"]["include_usage"], true);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_in_openai_shape() {
    let m = mock().await;
    let gw = Gateway::start(&standard_config(&m.base_url()));
    let c = client();
    // 401: no key, wrong key.
    let r = c
        .post(gw.url("/v1/chat/completions"))
        .json(&json!({"model":"gpt-test","messages":[]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "authentication_error");
    assert_eq!(
        v["error"]["message"],
        "Authentication Error, No api key passed in."
    );
    let r = c
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", "Bearer sk-wrong-CANARY3")
        .json(&json!({"model":"gpt-test","messages":[]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let text = r.text().await.unwrap();
    assert!(!text.contains("CANARY3"));
    // 400: malformed JSON names the problem.
    let r = c
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", auth())
        .header("content-type", "application/json")
        .body("{\"model\": \"gpt-test\",")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("EOF while parsing"),
        "{v}"
    );
    // 405 in the same error shape.
    let r = c
        .get(gw.url("/v1/chat/completions"))
        .header("authorization", auth())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["error"]["message"],
        "Method GET is not allowed on /v1/chat/completions"
    );
    // 400: missing messages.
    let r = post(&gw, "/v1/chat/completions", json!({"model": "gpt-test"})).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"error": {"message": "Missing required parameter: 'messages'.", "type": "invalid_request_error", "param": "messages", "code": "missing_required_parameter"}})
    );
    // 400: an empty conversation (OpenAI's wording and code).
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "gpt-test", "messages": []}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"error": {"message": "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "type": "invalid_request_error", "param": "messages", "code": "empty_array"}})
    );
    // 404: unknown model, naming it and listing what may be called.
    let gw2 = Gateway::start(&standard_config(&m.base_url()).replace(
        "  - model_name: \"any/*\"\n    litellm_params:\n      model: openai/*\n",
        "  - model_name: \"any-disabled/*\"\n    litellm_params:\n      model: openai/*\n",
    ));
    let r = post(
        &gw2,
        "/v1/chat/completions",
        json!({"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "model_not_found");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("`no-such-model`") && msg.contains("gpt-test, slow-gpt, dead-gpt, mock-echo"),
        "{msg}"
    );
    assert!(
        !gw.log().contains(MASTER)
            && !gw.log().contains("CANARY3")
            && !gw.log().contains(UPSTREAM_KEY)
    );
    assert_eq!(
        m.drain_observations().len(),
        0,
        "no rejected request reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_paths_without_a_master_key_say_how_to_turn_them_on() {
    let m = mock().await;
    let config = standard_config(&m.base_url())
        .replace(&format!("general_settings:\n  master_key: {MASTER}\n"), "");
    assert!(!config.contains("master_key"));
    let gw = Gateway::start(&config);
    for path in ["/key/generate", "/team/new", "/v1/model/info"] {
        let r = post(&gw, path, json!({})).await;
        assert_eq!(r.status(), 400, "{path}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "management_api_off", "{v}");
        assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with(&format!("{path} is part of the management API"))
                && msg.contains("general_settings.master_key"),
            "{msg}"
        );
    }
    // Other unknown paths stay 404, and inference still runs without a key.
    let r = post(&gw, "/v2/nothing", json!({})).await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["message"], "Unknown route: /v2/nothing");
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "gpt-test", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_get_413_in_the_clients_dialect() {
    let m = mock().await;
    let config = standard_config(&m.base_url()).replace(
        "general_settings:\n",
        "general_settings:\n  max_request_size_mb: 1\n",
    );
    let gw = Gateway::start(&config);
    let c = client();
    let big = json!({"model": "gpt-test",
                     "messages": [{"role": "user", "content": "a".repeat(1_100_000)}]});
    let message = "The request body is larger than this gateway accepts (1 MiB; general_settings.max_request_size_mb).";
    // With a content-length: refused in the OpenAI shape on an OpenAI route ...
    let r = post(&gw, "/v1/chat/completions", big.clone()).await;
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["message"], message);
    // ... and in Anthropic's on the Messages route.
    let r = post(&gw, "/v1/messages", big).await;
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "request_too_large");
    assert_eq!(v["error"]["message"], message);
    // Chunked, with no length announced: refused once 1 MiB has arrived.
    let chunks = (0..32).map(|_| Ok::<_, std::io::Error>(vec![b' '; 64 * 1024]));
    let r = c
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", auth())
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["message"], message);
    // Just under the limit: served.
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "gpt-test",
               "messages": [{"role": "user", "content": "a".repeat(1_000_000)}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_keep_status_body_and_retry_headers() {
    let m = mock().await;
    m.script(serde_json::from_value(json!({"key": "limited", "default": {"status": 429, "retry_after": 7, "retry_after_ms": 6500}})).unwrap());
    let gw = Gateway::start(&standard_config(&m.base_url()));
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "any/limited", "messages": [{"role":"user","content":"x"}]}),
    )
    .await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "7");
    assert_eq!(r.headers()["retry-after-ms"], "6500");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    for status in [400u16, 401, 403, 404, 408, 409, 422, 500, 502, 503, 504] {
        let r = post(&gw, "/v1/chat/completions", json!({"model": format!("any/mock-status-{status}"), "messages": [{"role":"user","content":"x"}]})).await;
        assert_eq!(r.status().as_u16(), status);
        let v: Value = r.json().await.unwrap();
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{status}: {v}"
        );
    }
    // Unreachable upstream → 502; first-byte timeout → 504.
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "dead-gpt", "messages": [{"role":"user","content":"x"}]}),
    )
    .await;
    assert_eq!(r.status(), 502);
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "slow-gpt", "messages": [{"role":"user","content":"x"}]}),
    )
    .await;
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "upstream_timeout");
    assert_eq!(
        v["error"]["message"],
        "The upstream did not start answering within 300 ms (the deployment's timeout)."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_connection_lost_mid_stream_becomes_error_event() {
    let m = mock().await;
    m.script(
        serde_json::from_value(
            json!({"key": "dying", "default": {"drop_after_chunks": 3, "chunk_delay_ms": 30}}),
        )
        .unwrap(),
    );
    let gw = Gateway::start(&standard_config(&m.base_url()));
    let text = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "any/dying", "stream": true, "messages": [{"role":"user","content":"x"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let last = text.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("data: {\"error\":{"), "{text}");
    assert!(!text.contains("[DONE]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hangup_cancels_upstream_within_100ms() {
    let m = mock().await;
    m.script(
        serde_json::from_value(
            json!({"key": "long", "default": {"chunks": 200, "chunk_delay_ms": 20}}),
        )
        .unwrap(),
    );
    let gw = Gateway::start(&standard_config(&m.base_url()));
    let resp = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "any/long", "stream": true, "messages": [{"role":"user","content":"x"}]}),
    )
    .await;
    let mut body = resp.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    drop(body);
    let hung_up = now_ms();
    let at = disconnect_seen_at(&m).await;
    assert!(
        at - hung_up < 100.0,
        "upstream saw the hang-up {} ms later",
        at - hung_up
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hangup_before_first_byte_cancels_upstream() {
    let m = mock().await;
    m.script(serde_json::from_value(json!({"key": "hangs", "default": {"hang": true}})).unwrap());
    let gw = Gateway::start(&standard_config(&m.base_url()));
    for stream in [false, true] {
        let c = reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_millis(300))
            .build()
            .unwrap();
        let r = c.post(gw.url("/v1/chat/completions")).header("authorization", auth())
            .json(&json!({"model": "any/hangs", "stream": stream, "messages": [{"role":"user","content":"x"}]}))
            .send().await;
        assert!(r.is_err(), "client timed out");
        let hung_up = now_ms();
        let at = disconnect_seen_at(&m).await;
        assert!(
            at - hung_up < 100.0,
            "stream={stream}: upstream saw the hang-up {} ms later",
            at - hung_up
        );
        m.drain_observations();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_streams_complete_in_order() {
    let m = mock().await;
    m.script(
        serde_json::from_value(
            json!({"key": "many", "default": {"chunks": 20, "chunk_delay_ms": 5}}),
        )
        .unwrap(),
    );
    let gw = Gateway::start(&standard_config(&m.base_url()));
    let c = client();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let c = c.clone();
            let url = gw.url("/v1/chat/completions");
            tokio::spawn(async move {
                let text = c.post(url).header("authorization", auth())
                    .json(&json!({"model": "any/many", "stream": true, "stream_options": {"include_usage": true},
                                  "messages": [{"role": "user", "content": format!("client {i} says hello to everyone")}]}))
                    .send().await.unwrap().text().await.unwrap();
                (i, text)
            })
        })
        .collect();
    for t in tasks {
        let (i, text) = t.await.unwrap();
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 1 + 20 + 1 + 1 + 1, "client {i}");
        assert_eq!(*events.last().unwrap(), "data: [DONE]");
        let content: String = events[1..21]
            .iter()
            .map(|e| {
                let v: Value = serde_json::from_str(&e[6..]).unwrap();
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            content,
            format!(
                "This is a mock response to: {}",
                &format!("client {i} says hello to everyone")[..]
            ),
            "client {i}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_models_and_mock_provider() {
    let m = mock().await;
    let gw = Gateway::start(&standard_config(&m.base_url()));
    for fmt in ["float", "base64"] {
        let body = json!({"model": "mock-text-embedding", "input": ["alpha", "beta"], "encoding_format": fmt});
        let direct = client()
            .post(format!("{}/v1/embeddings", m.base_url()))
            .json(&body)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let mut b2 = body.clone();
        b2["model"] = json!("any/mock-text-embedding");
        let via = post(&gw, "/v1/embeddings", b2).await.bytes().await.unwrap();
        assert_eq!(via, direct, "encoding {fmt}");
    }
    let v: Value = client()
        .get(gw.url("/v1/models"))
        .header("authorization", auth())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![
            "gpt-test",
            "slow-gpt",
            "dead-gpt",
            "mock-echo",
            "mock-embedding",
            // Wildcard groups by their pattern, after the concrete groups (as LiteLLM lists
            // them for a caller who may use them).
            "fixture/*",
            "any/*"
        ]
    );
    assert_eq!(v["object"], "list");
    let r = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "mock-echo", "messages": [{"role":"user","content":"ping pong"}]}),
    )
    .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "ping pong");
    let text = post(&gw, "/v1/chat/completions", json!({"model": "mock-echo", "stream": true, "messages": [{"role":"user","content":"ping pong"}]})).await.text().await.unwrap();
    assert!(
        !text.contains("usage"),
        "usage chunk hidden from a client that did not ask: {text}"
    );
    assert!(text.ends_with("data: [DONE]\n\n"));
    let r = client()
        .get(gw.url("/health/liveliness"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.text().await.unwrap(), "\"I'm alive!\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_lets_streams_finish() {
    let m = mock().await;
    m.script(
        serde_json::from_value(
            json!({"key": "drain", "default": {"chunks": 10, "chunk_delay_ms": 50}}),
        )
        .unwrap(),
    );
    let mut gw = Gateway::start(&standard_config(&m.base_url()));
    let resp = post(
        &gw,
        "/v1/chat/completions",
        json!({"model": "any/drain", "stream": true, "messages": [{"role":"user","content":"x"}]}),
    )
    .await;
    gw.terminate();
    let text = resp.text().await.unwrap();
    assert!(
        text.ends_with("data: [DONE]\n\n"),
        "stream finished after SIGTERM: {text}"
    );
    let status = gw.child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
}

/// A second SIGTERM during the drain exits at once, even while a client holds a request open
/// (here: a head that promises a body that never comes), instead of after `--drain-seconds`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_ends_the_drain_at_once() {
    use tokio::io::AsyncWriteExt;
    let m = mock().await;
    let mut gw = Gateway::start(&standard_config(&m.base_url()));
    let addr = gw.base.trim_start_matches("http://").to_owned();
    let mut stuck = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stuck
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{")
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    gw.terminate();
    // Still draining: the stuck request keeps the gateway up.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        gw.child.try_wait().unwrap().is_none(),
        "exited before the drain ended"
    );
    let second = std::time::Instant::now();
    gw.terminate();
    let status = loop {
        if let Some(s) = gw.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            second.elapsed() < std::time::Duration::from_secs(5),
            "still running 5 s after the second signal"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(gw.log().contains("second shutdown signal"), "{}", gw.log());
    drop(stuck);
}

/// `n` clients, each on its own connection (so that they spread over the workers), all in
/// flight at once: each gets its own echo back, none lost or crossed between workers.
async fn each_client_gets_its_own_echo(gw: &Gateway, n: usize) {
    let calls = (0..n).map(|i| {
        let url = gw.url("/v1/chat/completions");
        async move {
            let r = client()
                .post(url)
                .header("authorization", auth())
                .json(&json!({"model": "mock-echo", "messages": [{"role":"user","content": format!("n{i}")}]}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            let v: Value = r.json().await.unwrap();
            v["choices"][0]["message"]["content"].as_str().unwrap().to_owned()
        }
    });
    let got = futures_util::future::join_all(calls).await;
    let want: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    assert_eq!(got, want);
}

/// Four workers share one listener: 48 clients all get their own echo back, and SIGTERM
/// still ends the process cleanly once every worker has drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_workers_share_the_listener_and_drain() {
    let m = mock().await;
    let mut gw = Gateway::start_with_args(&standard_config(&m.base_url()), &["--num_workers", "4"]);
    assert!(gw.log().contains("workers=4"), "{}", gw.log());
    each_client_gets_its_own_echo(&gw, 48).await;
    gw.terminate();
    let status = gw.child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
}

/// With no flag one worker per core serves; `--work-stealing` serves on one multi-threaded
/// runtime (of `--num_workers` threads when given). Each way, clients on connections of their
/// own, more than there are workers, all get their own echo back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_per_core_by_default_or_one_work_stealing_runtime() {
    let m = mock().await;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (args, want) in [
        (&[][..], format!("workers={cores} work_stealing=false")),
        (
            &["--work-stealing"][..],
            format!("workers={cores} work_stealing=true"),
        ),
        (
            &["--work-stealing", "--num_workers", "3"][..],
            "workers=3 work_stealing=true".to_owned(),
        ),
    ] {
        let gw = Gateway::start_with_args(&standard_config(&m.base_url()), args);
        assert!(gw.log().contains(&want), "{args:?}: {}", gw.log());
        each_client_gets_its_own_echo(&gw, 2 * cores + 1).await;
    }
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}
