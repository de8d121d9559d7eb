//! `x-mock-json-style: python`: bodies and stream events written as Python's `json.dumps`
//! writes them (`", "`, `": "`, non-ASCII escaped), the same values as the compact default.

mod common;

use common::*;
use serde_json::{Value, json};

const PY: (&str, &str) = ("x-mock-json-style", "python");
const USAGE: (&str, &str) = ("x-mock-usage", "1000,50");

fn req(stream: bool) -> Value {
    json!({"model": "gpt-test", "stream": stream, "stream_options": {"include_usage": true},
           "messages": [{"role": "user", "content": "héllo"}]})
}

#[tokio::test]
async fn a_chat_body_is_written_python_style() {
    let mock = start().await;
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[PY, USAGE],
        &req(false),
    )
    .await;
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(text.starts_with(r#"{"id": "chatcmpl-mock-"#), "{text}");
    assert!(
        text.contains(
            r#""usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050"#
        ),
        "{text}"
    );
    assert!(text.contains(r#"mock response to: h\u00e9llo"#), "{text}");
    // The same document as the compact default.
    let compact = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[USAGE],
        &req(false),
    )
    .await;
    let mut a = r.json();
    let mut b = compact.json();
    for v in [&mut a, &mut b] {
        v["id"] = Value::Null;
    }
    assert_eq!(a, b);
}

#[tokio::test]
async fn stream_events_are_written_python_style() {
    let mock = start().await;
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[PY, USAGE],
        &req(true),
    )
    .await;
    assert_eq!(r.status, 200);
    let text = r.text();
    let data: Vec<&str> = text
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"));
    for d in &data[..data.len() - 1] {
        assert!(d.starts_with(r#"{"id": "chatcmpl-mock-"#), "{d}");
    }
    let content = &data[..data.len() - 2];
    assert!(
        content.iter().all(|d| d.ends_with(r#"], "usage": null}"#)),
        "{data:?}"
    );
    assert!(
        data[data.len() - 2].contains(
            r#""choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050, "prompt_tokens_details": {"cached_tokens": 0"#
        ),
        "{data:?}"
    );
    // Anthropic events too.
    let r = post(
        &mock.base_url(),
        "/v1/messages",
        &[PY, USAGE],
        &json!({"model": "claude-test", "max_tokens": 64, "stream": true,
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let text = r.text();
    assert!(
        text.contains("event: message_start\ndata: {\"type\": \"message_start\", \"message\": {"),
        "{text}"
    );
    assert!(text.contains(r#""usage": {"input_tokens": 1000"#), "{text}");
}
