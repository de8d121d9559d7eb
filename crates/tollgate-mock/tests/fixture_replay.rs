//! Byte-exact fixture replay, `.splits.json` flush points, `x-mock-split-every`, error fixtures.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::json;

fn file(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(rel)).unwrap()
}

#[tokio::test]
async fn header_replay_is_byte_exact() {
    let mock = start().await;
    for rel in [
        "openai/chat/tools.stream.sse",
        "openai/chat/text.response.json",
        "anthropic/messages/text.stream.sse",
    ] {
        let path = if rel.starts_with("anthropic") {
            "/v1/messages"
        } else {
            "/v1/chat/completions"
        };
        let r = post(
            &mock.base_url(),
            path,
            &[("x-mock-fixture", rel)],
            &json!({"model": "m"}),
        )
        .await;
        assert_eq!(r.status, 200, "{rel}");
        assert_eq!(r.body(), file(rel), "{rel}");
        let ct = if rel.ends_with(".sse") {
            "text/event-stream"
        } else {
            "application/json"
        };
        assert_eq!(r.header("content-type"), Some(ct));
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn model_name_selects_fixture() {
    let mock = start().await;
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[],
        &json!({"model": "fixture/openai/chat/text.stream_usage.sse", "messages": []}),
    )
    .await;
    assert_eq!(r.body(), file("openai/chat/text.stream_usage.sse"));
    mock.shutdown().await;
}

#[tokio::test]
async fn splits_json_cuts_reads_at_offsets() {
    let mock = start().await;
    let rel = "openai/chat/unicode.stream.sse";
    let offsets: Vec<usize> =
        serde_json::from_slice(&file("openai/chat/unicode.stream.splits.json")).unwrap();
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-fixture", rel)],
        &json!({}),
    )
    .await;
    assert_eq!(r.body(), file(rel));
    assert!(
        r.frames.len() > offsets.len(),
        "{} frames for {} offsets",
        r.frames.len(),
        offsets.len()
    );
    // every split offset is a frame boundary
    let mut boundaries = std::collections::HashSet::new();
    let mut pos = 0;
    for f in &r.frames {
        pos += f.len();
        boundaries.insert(pos);
    }
    for o in offsets {
        assert!(boundaries.contains(&o), "offset {o} is a read boundary");
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn split_every_one_byte() {
    let mock = start().await;
    let rel = "openai/errors/400_missing_param.json";
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[
            ("x-mock-fixture", rel),
            ("x-mock-split-every", "1"),
            ("x-mock-split-delay-ms", "0"),
        ],
        &json!({}),
    )
    .await;
    let expected = file(rel);
    assert_eq!(r.body(), expected);
    assert_eq!(r.frames.len(), expected.len());
    // generated streams too
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-split-every", "7")],
        &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let body = r.body();
    assert!(r.frames.len() >= body.len() / 7);
    assert!(r.text().ends_with("data: [DONE]\n\n"));
    mock.shutdown().await;
}

#[tokio::test]
async fn error_fixture_status_from_name() {
    let mock = start().await;
    let rel = "openai/errors/429_rate_limit.json";
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-fixture", rel)],
        &json!({}),
    )
    .await;
    assert_eq!(r.status, 429);
    assert_eq!(r.body(), file(rel));
    let rel = "anthropic/errors/529_overloaded.json";
    let r = post(
        &mock.base_url(),
        "/v1/messages",
        &[("x-mock-fixture", rel)],
        &json!({}),
    )
    .await;
    assert_eq!(r.status, 529);
    assert_eq!(r.body(), file(rel));
    mock.shutdown().await;
}

#[tokio::test]
async fn unknown_fixture_is_404_and_any_post_path_replays() {
    let mock = start().await;
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-fixture", "nope.json")],
        &json!({}),
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "mock_fixture_not_found");
    let rel = "gemini/stream_generate_content.sse";
    let r = post(
        &mock.base_url(),
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        &[("x-mock-fixture", rel)],
        &json!({}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body(), file(rel));
    mock.shutdown().await;
}

#[tokio::test]
async fn sse_fixture_with_chunk_delay_is_sent_event_by_event() {
    let mock = start().await;
    let rel = "anthropic/messages/text.stream.sse";
    let t = std::time::Instant::now();
    let r = post(
        &mock.base_url(),
        "/v1/messages",
        &[("x-mock-fixture", rel), ("x-mock-chunk-delay-ms", "20")],
        &json!({}),
    )
    .await;
    let expected = file(rel);
    assert_eq!(r.body(), expected);
    let events = String::from_utf8(expected).unwrap().matches("\n\n").count();
    assert!(
        r.frames.len() >= events,
        "{} frames for {events} events",
        r.frames.len()
    );
    assert!(t.elapsed() >= std::time::Duration::from_millis(20 * (events as u64 - 1)));
    mock.shutdown().await;
}
