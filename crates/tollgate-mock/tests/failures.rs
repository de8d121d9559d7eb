//! Failures on demand: statuses per dialect, retry headers, mid-stream errors, delays, hang,
//! dropped connections, scripts, required key.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use tollgate_mock::{Behavior, MockConfig, ScriptRequest};

fn chat(model: &str) -> serde_json::Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn openai_statuses_and_headers() {
    let mock = start().await;
    let base = mock.base_url();
    for (status, code, ty) in [
        (429, "rate_limit_exceeded", "requests"),
        (401, "invalid_api_key", "invalid_request_error"),
        (404, "model_not_found", "invalid_request_error"),
        (503, "overloaded", "server_error"),
    ] {
        let s = status.to_string();
        let r = post(
            &base,
            "/v1/chat/completions",
            &[
                ("x-mock-status", &s),
                ("x-mock-retry-after", "7"),
                ("x-mock-retry-after-ms", "1500"),
            ],
            &chat("gpt-x"),
        )
        .await;
        assert_eq!(r.status, status);
        let v = r.json();
        assert_eq!(v["error"]["code"], code);
        assert_eq!(v["error"]["type"], ty);
        assert!(v["error"].as_object().unwrap().contains_key("param"));
        assert_eq!(r.header("retry-after"), Some("7"));
        assert_eq!(r.header("retry-after-ms"), Some("1500"));
        if status == 429 {
            assert_eq!(r.header("x-ratelimit-remaining-requests"), Some("0"));
        }
    }
    let r = post(&base, "/v1/chat/completions", &[], &chat("mock-status-500")).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.json()["error"]["type"], "server_error");
    assert!(r.header("retry-after").is_none());
    // headers win over the model name
    let r = post(
        &base,
        "/v1/chat/completions",
        &[("x-mock-status", "502")],
        &chat("mock-status-500"),
    )
    .await;
    assert_eq!(r.status, 502);
    mock.shutdown().await;
}

#[tokio::test]
async fn openai_midstream_error_has_no_done() {
    let mock = start().await;
    let mut body = chat("m");
    body["stream"] = json!(true);
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-midstream-error-after", "2")],
        &body,
    )
    .await;
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(!text.contains("[DONE]"));
    let data = r.sse_data();
    assert_eq!(data.len(), 1 + 2 + 1);
    assert_eq!(data[3]["error"]["type"], "server_error");
    assert!(text.ends_with("\n\n"));
    mock.shutdown().await;
}

#[tokio::test]
async fn delays_first_byte_and_global() {
    // Generous margins: the undelayed requests take ~1 ms, the bounds are 400 ms.
    let mock = start_with(MockConfig {
        delay_ms: 400,
        ..MockConfig::default()
    })
    .await;
    let t = Instant::now();
    let r = post(&mock.base_url(), "/v1/chat/completions", &[], &chat("m")).await;
    assert_eq!(r.status, 200);
    assert!(t.elapsed() >= Duration::from_millis(400));
    let t = Instant::now();
    post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-delay-ms", "0")],
        &chat("m"),
    )
    .await;
    assert!(t.elapsed() < Duration::from_millis(400));
    let t = Instant::now();
    post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[
            ("x-mock-delay-ms", "0"),
            ("x-mock-first-byte-delay-ms", "200"),
        ],
        &chat("m"),
    )
    .await;
    assert!(t.elapsed() >= Duration::from_millis(200));
    // models are not delayed by the global delay
    let t = Instant::now();
    get(&mock.base_url(), "/v1/models").await;
    assert!(t.elapsed() < Duration::from_millis(400));
    mock.shutdown().await;
}

#[tokio::test]
async fn drop_connection_and_hang() {
    let mock = start().await;
    let url = format!("{}/v1/chat/completions", mock.base_url());
    let req = http::Request::post(&url)
        .header("x-mock-drop-connection", "1")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&chat("m")).unwrap(),
        )))
        .unwrap();
    let res = tokio::time::timeout(Duration::from_secs(5), client().request(req))
        .await
        .expect("no hang");
    assert!(res.is_err(), "connection dropped without a response");

    let req = http::Request::post(&url)
        .header("x-mock-hang", "1")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&chat("m")).unwrap(),
        )))
        .unwrap();
    let res = tokio::time::timeout(Duration::from_millis(300), client().request(req)).await;
    assert!(res.is_err(), "hang never answers");
    mock.shutdown().await;
}

#[tokio::test]
async fn scripts_consumed_in_order_then_default() {
    let mock = start().await;
    let base = mock.base_url();
    let r = post(&base, "/__script", &[], &json!({"key": "east", "responses": [{"status": 500}, {"status": 429, "retry_after": 3}, {"status": 200}], "default": {"status": 503}})).await;
    assert_eq!(r.status, 200);
    let statuses = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(
                post(&base, "/d/east/v1/chat/completions", &[], &chat("m"))
                    .await
                    .status,
            );
        }
        v
    };
    assert_eq!(statuses, vec![500, 429, 200, 503, 503]);
    // other deployments unaffected; key matched by model as well
    assert_eq!(
        post(&base, "/d/west/v1/chat/completions", &[], &chat("m"))
            .await
            .status,
        200
    );
    mock.script(ScriptRequest {
        key: "m".into(),
        responses: vec![Behavior {
            status: Some(401),
            ..Default::default()
        }],
        default: None,
    });
    assert_eq!(
        post(&base, "/d/west/v1/chat/completions", &[], &chat("m"))
            .await
            .status,
        401
    );
    assert_eq!(
        post(&base, "/d/west/v1/chat/completions", &[], &chat("m"))
            .await
            .status,
        200
    );
    let r = send(http::Method::DELETE, &format!("{base}/__script"), &[], None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        post(&base, "/d/east/v1/chat/completions", &[], &chat("m"))
            .await
            .status,
        200
    );
    let bad = post(
        &base,
        "/__script",
        &[],
        &json!({"key": "x", "responses": [{"stauts": 1}]}),
    )
    .await;
    assert_eq!(bad.status, 400);
    mock.shutdown().await;
}

#[tokio::test]
async fn required_key_both_dialects() {
    let mock = start_with(MockConfig {
        require_key: Some("sk-mock".into()),
        ..MockConfig::default()
    })
    .await;
    let base = mock.base_url();
    let r = post(
        &base,
        "/v1/chat/completions",
        &[("authorization", "Bearer nope")],
        &chat("m"),
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["code"], "invalid_api_key");
    let r = post(
        &base,
        "/v1/chat/completions",
        &[("authorization", "Bearer sk-mock")],
        &chat("m"),
    )
    .await;
    assert_eq!(r.status, 200);
    let r = post(
        &base,
        "/v1/messages",
        &[("x-api-key", "bad")],
        &json!({"model": "c", "max_tokens": 5, "messages": []}),
    )
    .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["type"], "authentication_error");
    mock.shutdown().await;
}

#[tokio::test]
async fn drop_after_chunks_resets_mid_stream() {
    use http_body_util::BodyExt;
    let mock = start().await;
    let url = format!("{}/v1/chat/completions", mock.base_url());
    let mut body = chat("m");
    body["stream"] = json!(true);
    let req = http::Request::post(&url)
        .header("x-mock-drop-after-chunks", "3")
        .header("x-mock-chunk-delay-ms", "5")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&body).unwrap(),
        )))
        .unwrap();
    let resp = client().request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut b = resp.into_body();
    let mut got = Vec::new();
    let mut errored = false;
    while let Some(f) = tokio::time::timeout(Duration::from_secs(5), b.frame())
        .await
        .unwrap()
    {
        match f {
            Ok(f) => got.extend_from_slice(&f.into_data().unwrap()),
            Err(_) => {
                errored = true;
                break;
            }
        }
    }
    assert!(errored, "body ended with an error (connection reset)");
    let text = String::from_utf8(got).unwrap();
    assert_eq!(text.matches("data: ").count(), 3);
    assert!(!text.contains("[DONE]"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let o = &mock.drain_observations()[0];
    assert!(o.dropped_by_mock);
    assert!(!o.client_disconnected);
    mock.shutdown().await;
}

#[tokio::test]
async fn leaked_internal_fields_rejected_when_enabled() {
    let mock = start_with(MockConfig {
        reject_internal_fields: true,
        ..MockConfig::default()
    })
    .await;
    let base = mock.base_url();
    let mut body = chat("m");
    body["litellm_metadata"] = json!({"x": 1});
    body["rpm"] = json!(10);
    let r = post(&base, "/v1/chat/completions", &[], &body).await;
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["code"], "leaked_internal_field");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("litellm_metadata, rpm")
    );
    assert_eq!(
        post(&base, "/v1/chat/completions", &[], &chat("m"))
            .await
            .status,
        200
    );
    let r = post(
        &base,
        "/v1/messages",
        &[],
        &json!({"model": "c", "max_tokens": 5, "messages": [], "timeout": 3}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    mock.shutdown().await;

    // off by default, on per deployment through a script
    let mock = start().await;
    let base = mock.base_url();
    assert_eq!(
        post(&base, "/v1/chat/completions", &[], &body).await.status,
        200
    );
    post(
        &base,
        "/__script",
        &[],
        &json!({"key": "strict", "default": {"reject_internal_fields": true}}),
    )
    .await;
    assert_eq!(
        post(&base, "/d/strict/v1/chat/completions", &[], &body)
            .await
            .status,
        400
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn first_event_delay_sends_the_head_at_once_and_the_first_event_later() {
    use http_body_util::BodyExt;
    let mock = start().await;
    let url = format!("{}/v1/chat/completions", mock.base_url());
    let mut body = chat("m");
    body["stream"] = json!(true);
    let req = http::Request::post(&url)
        .header("x-mock-delay-ms", "0")
        .header("x-mock-first-event-delay-ms", "300")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&body).unwrap(),
        )))
        .unwrap();
    let t = Instant::now();
    let resp = client().request(req).await.unwrap();
    let head = t.elapsed();
    assert_eq!(resp.status(), 200);
    assert!(head < Duration::from_millis(250), "head after {head:?}");
    let mut b = resp.into_body();
    let first = b.frame().await.unwrap().unwrap().into_data().unwrap();
    let first_at = t.elapsed();
    assert!(first_at >= Duration::from_millis(300), "{first_at:?}");
    assert!(first.starts_with(b"data: "), "{first:?}");
    // The rest follows without a pause, and the stream is whole.
    let rest = b.collect().await.unwrap().to_bytes();
    assert!(t.elapsed() < first_at + Duration::from_millis(250));
    let text = String::from_utf8([first.as_ref(), rest.as_ref()].concat()).unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    mock.shutdown().await;
}
