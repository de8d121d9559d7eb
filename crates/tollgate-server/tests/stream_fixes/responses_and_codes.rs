//! Items 2 and 3: a Responses passthrough ends with `response.failed`; a numeric `code: 503`
//! reaches each client as the same upstream's HTTP 503 does.

use serde_json::json;

use super::gov::*;
use super::*;

// ---- 2. a Responses passthrough ends with response.failed -------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_passthrough_error_event_is_followed_by_response_failed() {
    let m = mock().await;
    script(
        &m,
        "solo-gpt",
        json!({"reply": "abcd", "chunks": 4, "midstream_error_after": 2, "stream_error_event": "error"}),
    );
    let gw = GovGateway::start(&gateway_config(&m.base_url(), "  num_retries: 0\n"));
    let (key, hash) = generate_key(&gw, json!({})).await;
    let r = post_as(
        &gw,
        &key,
        "/v1/responses",
        &stream_body("/v1/responses", "solo-gpt"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let evs = events(&r.text);
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "error",
            "response.failed",
        ]
    );
    // The upstream's error event, as it sent it.
    assert_eq!(
        evs[6].1,
        json!({"type": "error", "code": "server_error", "message": "The model produced an error.",
               "param": null, "sequence_number": 6})
    );
    // Then the stream's own response, failed, with the error and the next number.
    let mut failed = evs[0].1["response"].clone();
    assert_eq!(failed["status"], "in_progress");
    failed["status"] = json!("failed");
    failed["error"] = json!({"code": "server_error", "message": "The model produced an error."});
    assert_eq!(
        evs[7].1,
        json!({"type": "response.failed", "response": failed, "sequence_number": 7})
    );
    assert_eq!(evs[7].1["response"]["id"], evs[0].1["response"]["id"]);
    assert!(!r.text.contains("response.completed"), "{}", r.text);
    let logged = rows(&gw, &hash, 1).await;
    assert_eq!(logged[0].2, "failure", "{logged:?}");
}

// ---- 3. a numeric code 503 --------------------------------------------------------------

/// vLLM's `code: 503` in a first event and as an HTTP 503: the same answer to each client,
/// 529 `overloaded_error` for Messages (Anthropic's API has no 503), 503 for chat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_503_is_anthropics_529_for_a_messages_client_in_a_stream_or_not() {
    let dir = TempDir::new("fixtures");
    let error = json!({"object": "error", "message": "vllm failure", "type": "InternalServerError", "param": null, "code": 503});
    std::fs::write(
        dir.0.join("vllm_503_first.sse"),
        format!("data: {}\n\n", json!({"error": error})),
    )
    .unwrap();
    let m = mock_with(&dir).await;
    let gw = GovGateway::start(&gateway_config(&m.base_url(), "  num_retries: 0\n"));
    let messages =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "vllm failure"}});
    let chat = json!({"error": {"message": "vllm failure", "type": "InternalServerError", "param": null, "code": null}});
    for behavior in [
        json!({"fixture": "vllm_503_first.sse"}),
        json!({"status": 503, "body": error}),
    ] {
        script(&m, "solo-vllm", behavior.clone());
        for (path, status, body) in [
            ("/v1/messages", 529, &messages),
            ("/v1/chat/completions", 503, &chat),
        ] {
            let r = post_as(&gw, MASTER, path, &stream_body(path, "solo-vllm")).await;
            assert_eq!(r.status, status, "{path} {behavior}: {}", r.text);
            assert_eq!(&r.body, body, "{path} {behavior}");
        }
    }
}
