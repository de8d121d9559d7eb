//! Item 4: a stream cut short by its `stream_timeout` ends with one message on every dialect
//! pair.

use serde_json::{Value, json};

use super::gov::*;
use super::*;

// ---- 4. one message for a stream cut short -----------------------------------------------

/// A `stream_timeout` gap after content: every client dialect and pair ends with the same
/// message, in its own terminal error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_timeout_after_content_has_one_message_on_every_pair() {
    let dir = TempDir::new("fixtures");
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1,
                    "model": "mock-gpt", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    sse_fixture(
        &dir,
        "chat",
        &[
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "a"}), Value::Null),
            chunk(json!({"content": "b"}), Value::Null),
            chunk(json!({}), json!("stop")),
            "data: [DONE]\n\n".to_owned(),
        ],
        2,
    );
    let text = |t: &str| {
        data(
            json!({"id": "cmpl-s", "object": "text_completion", "created": 1, "model": "mock-gpt",
                    "choices": [{"text": t, "index": 0, "logprobs": null, "finish_reason": null}]}),
        )
    };
    sse_fixture(
        &dir,
        "completions",
        &[text("a"), text("b"), "data: [DONE]\n\n".to_owned()],
        1,
    );
    let delta = |t: &str| {
        named(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
        )
    };
    sse_fixture(
        &dir,
        "anthropic",
        &[
            named(
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant", "model": "mock-claude", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            ),
            named(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            delta("a"),
            delta("b"),
            named(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 2}}),
            ),
            named("message_stop", json!({"type": "message_stop"})),
        ],
        3,
    );
    let resp = json!({"id": "resp_s", "object": "response", "created_at": 1, "status": "in_progress",
                      "error": null, "model": "mock-gpt", "output": [], "usage": null});
    let rdelta = |t: &str, n: u64| {
        named(
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "item_id": "msg_s", "output_index": 0, "content_index": 0, "delta": t, "sequence_number": n}),
        )
    };
    sse_fixture(
        &dir,
        "responses",
        &[
            named(
                "response.created",
                json!({"type": "response.created", "response": resp, "sequence_number": 0}),
            ),
            rdelta("a", 1),
            rdelta("b", 2),
        ],
        2,
    );
    let m = mock_with(&dir).await;
    let gw = GovGateway::start(&gateway_config(&m.base_url(), "  num_retries: 0\n"));
    let openai_end = format!("error \"{IDLE}\"");
    let messages_end = format!("error \"api_error\" \"{IDLE}\"");
    let responses_end = format!("response.failed \"server_error\" \"{IDLE}\"");
    // (client path, deployment, fixture, the events the client saw)
    let cases: [(&str, &str, &str, Vec<String>); 9] = [
        (
            "/v1/chat/completions",
            "slow-gpt",
            "chat.sse",
            vec!["role".into(), "text \"a\"".into(), openai_end.clone()],
        ),
        (
            "/v1/chat/completions",
            "slow-claude",
            "anthropic.sse",
            vec!["role".into(), "text \"a\"".into(), openai_end.clone()],
        ),
        (
            "/v1/completions",
            "slow-gpt",
            "completions.sse",
            vec!["text \"a\"".into(), openai_end.clone()],
        ),
        (
            "/v1/completions",
            "slow-claude",
            "anthropic.sse",
            vec!["text \"a\"".into(), openai_end.clone()],
        ),
        (
            "/v1/messages",
            "slow-claude",
            "anthropic.sse",
            vec![
                "message_start".into(),
                "content_block_start".into(),
                "text \"a\"".into(),
                messages_end.clone(),
            ],
        ),
        (
            "/v1/messages",
            "slow-vllm",
            "chat.sse",
            vec![
                "message_start".into(),
                "content_block_start".into(),
                "text \"a\"".into(),
                messages_end.clone(),
            ],
        ),
        (
            "/v1/responses",
            "slow-gpt",
            "responses.sse",
            vec![
                "response.created".into(),
                "text \"a\"".into(),
                responses_end.clone(),
            ],
        ),
        ("/v1/responses", "slow-vllm", "chat.sse", Vec::new()),
        ("/v1/responses", "slow-claude", "anthropic.sse", Vec::new()),
    ];
    for (path, deployment, fixture, want) in cases {
        script(
            &m,
            deployment,
            json!({"fixture": fixture, "split_delay_ms": 700}),
        );
        let r = post_as(&gw, MASTER, path, &stream_body(path, deployment)).await;
        let case = format!("{path} -> {deployment}");
        assert_eq!(r.status, 200, "{case}: {}", r.text);
        let got = described(path, &r.text);
        if want.is_empty() {
            // Translated Responses: its opening events, "a", then the failure.
            assert_eq!(
                got.first().map(String::as_str),
                Some("response.created"),
                "{case}"
            );
            assert!(got.contains(&"text \"a\"".to_owned()), "{case}: {got:?}");
            assert_eq!(got.last(), Some(&responses_end), "{case}: {got:?}");
        } else {
            assert_eq!(got, want, "{case}: {}", r.text);
        }
        assert_eq!(r.text.matches(IDLE).count(), 1, "{case}: {}", r.text);
        for never in ["\"b\"", "[DONE]", "message_stop", "response.completed"] {
            assert!(!r.text.contains(never), "{case}: {never} in {}", r.text);
        }
        assert_eq!(calls(&m), [deployment], "{case}");
    }
}
