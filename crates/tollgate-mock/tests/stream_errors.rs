//! Errors inside a 200 stream: the first event an error (`first_event_error`), and the error
//! after N content events (`midstream_error_after`) with a chosen kind, per upstream dialect,
//! compact or Python-spaced.

mod common;

use common::*;
use serde_json::{Value, json};
use tollgate_mock::{MockConfig, ScriptRequest};

fn chat() -> Value {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
}

fn messages() -> Value {
    json!({"model": "c", "stream": true, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]})
}

fn responses() -> Value {
    json!({"model": "r", "stream": true, "input": "hi"})
}

async fn mock() -> tollgate_mock::MockHandle {
    start_with(MockConfig::default()).await
}

#[tokio::test]
async fn openai_first_event_errors_compact_and_python_spaced() {
    let m = mock().await;
    let base = m.base_url();
    let r = post(
        &base,
        "/v1/chat/completions",
        &[("x-mock-first-event-error", "rate_limit")],
        &chat(),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(
        r.text(),
        "data: {\"error\":{\"message\":\"Rate limit reached for m on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms.\",\"type\":\"requests\",\"param\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n"
    );
    let r = post(
        &base,
        "/v1/chat/completions",
        &[
            ("x-mock-first-event-error", "server_error"),
            ("x-mock-stream-error-style", "python"),
        ],
        &chat(),
    )
    .await;
    assert_eq!(
        r.text(),
        "data: {\"error\": {\"message\": \"The server had an error while processing your request. Sorry about that!\", \"type\": \"server_error\", \"param\": null, \"code\": null}}\n\n"
    );
    // Legacy completions speak the same chunk dialect.
    let r = post(
        &base,
        "/v1/completions",
        &[("x-mock-first-event-error", "overloaded")],
        &json!({"model": "m", "stream": true, "prompt": "hi"}),
    )
    .await;
    assert_eq!(
        r.sse_data(),
        vec![
            json!({"error": {"message": "The engine is currently overloaded, please try again later.", "type": "server_error", "param": null, "code": "overloaded"}})
        ]
    );
    // Not streamed: the flag does nothing.
    let mut body = chat();
    body["stream"] = json!(false);
    let r = post(
        &base,
        "/v1/chat/completions",
        &[("x-mock-first-event-error", "rate_limit")],
        &body,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["object"], "chat.completion");
    m.shutdown().await;
}

#[tokio::test]
async fn anthropic_first_event_errors() {
    let m = mock().await;
    for (kind, ty, msg) in [
        ("overloaded_error", "overloaded_error", "Overloaded"),
        ("api_error", "api_error", "Internal server error"),
        (
            "rate_limit",
            "rate_limit_error",
            "Number of requests has exceeded your per-minute rate limit.",
        ),
    ] {
        let r = post(
            &m.base_url(),
            "/v1/messages",
            &[("x-mock-first-event-error", kind)],
            &messages(),
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(
            r.sse_events(),
            vec![(
                "error".to_owned(),
                json!({"type": "error", "error": {"type": ty, "message": msg}})
            )],
            "{kind}"
        );
    }
    m.shutdown().await;
}

#[tokio::test]
async fn responses_first_event_failed_or_error() {
    let m = mock().await;
    let r = post(
        &m.base_url(),
        "/v1/responses",
        &[("x-mock-first-event-error", "rate_limit")],
        &responses(),
    )
    .await;
    let ev = r.sse_events();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].0, "response.failed");
    assert_eq!(ev[0].1["type"], "response.failed");
    assert_eq!(ev[0].1["sequence_number"], 0);
    assert_eq!(ev[0].1["response"]["status"], "failed");
    assert_eq!(ev[0].1["response"]["id"], "resp_mock_1");
    assert_eq!(
        ev[0].1["response"]["error"],
        json!({"code": "rate_limit_exceeded", "message": "Rate limit reached for r on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms."})
    );
    let r = post(
        &m.base_url(),
        "/v1/responses",
        &[
            ("x-mock-first-event-error", "server_error"),
            ("x-mock-stream-error-event", "error"),
            ("x-mock-stream-error-style", "python"),
        ],
        &responses(),
    )
    .await;
    assert_eq!(
        r.text(),
        "event: error\ndata: {\"type\": \"error\", \"code\": \"server_error\", \"message\": \"The model produced an error.\", \"param\": null, \"sequence_number\": 0}\n\n"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn midstream_errors_of_a_chosen_kind_after_n_content_events() {
    let m = mock().await;
    let base = m.base_url();
    // OpenAI: role chunk, 2 content chunks, then the rate-limit error; no finish, no [DONE].
    let r = post(
        &base,
        "/v1/chat/completions",
        &[
            ("x-mock-midstream-error-after", "2"),
            ("x-mock-stream-error", "rate_limit"),
            ("x-mock-stream-error-style", "python"),
        ],
        &chat(),
    )
    .await;
    let text = r.text();
    assert!(!text.contains("[DONE]") && !text.contains("\"finish_reason\":\"stop\""));
    assert!(
        text.ends_with("data: {\"error\": {\"message\": \"Rate limit reached for m on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms.\", \"type\": \"requests\", \"param\": \"requests\", \"code\": \"rate_limit_exceeded\"}}\n\n"),
        "{text}"
    );
    assert_eq!(r.sse_data().len(), 1 + 2 + 1);
    // Anthropic: api_error instead of the default overloaded_error.
    let r = post(
        &base,
        "/v1/messages",
        &[
            ("x-mock-midstream-error-after", "1"),
            ("x-mock-stream-error", "api_error"),
        ],
        &messages(),
    )
    .await;
    let ev = r.sse_events();
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "error"
        ]
    );
    assert_eq!(
        ev[4].1,
        json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}})
    );
    // Responses: the stream-level error event, numbered in sequence.
    let r = post(
        &base,
        "/v1/responses",
        &[
            ("x-mock-midstream-error-after", "1"),
            ("x-mock-stream-error-event", "error"),
        ],
        &responses(),
    )
    .await;
    let ev = r.sse_events();
    let last = ev.last().unwrap();
    assert_eq!(last.0, "error");
    assert_eq!(
        last.1,
        json!({"type": "error", "code": "server_error", "message": "The model produced an error.", "param": null, "sequence_number": 5})
    );
    assert!(ev.iter().all(|(n, _)| n != "response.completed"));
    m.shutdown().await;
}

#[tokio::test]
async fn scripts_choose_stream_errors_per_deployment() {
    let m = mock().await;
    m.script(
        serde_json::from_value::<ScriptRequest>(json!({
            "key": "east",
            "responses": [{"first_event_error": "overloaded"}],
        }))
        .unwrap(),
    );
    let r = post(&m.base_url(), "/d/east/v1/messages", &[], &messages()).await;
    assert_eq!(
        r.sse_events()[0].1["error"]["type"],
        "overloaded_error",
        "{}",
        r.text()
    );
    // The script was one response: the next stream is healthy.
    let r = post(&m.base_url(), "/d/east/v1/messages", &[], &messages()).await;
    assert_eq!(r.sse_events().last().unwrap().0, "message_stop");
    m.shutdown().await;
}
