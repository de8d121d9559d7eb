//! Items 5 and 6: other servers' error bodies in the client's dialect; usage on every content
//! chunk hidden from a client that did not ask.

use serde_json::{Value, json};

use super::gov::*;
use super::*;

// ---- 5. other servers' error bodies -------------------------------------------------------

/// vLLM, TGI and Ollama bodies reach the client in its own dialect with the upstream's own
/// message (and for OpenAI clients its type and param); an OpenAI-shaped body is relayed as
/// sent; nothing is quoted as JSON text inside a message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_servers_error_bodies_reach_the_client_in_its_dialect() {
    let m = mock().await;
    let gw = GovGateway::start(&gateway_config(&m.base_url(), "  num_retries: 0\n"));
    let ctx =
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.";
    let vllm = json!({"object": "error", "message": ctx, "type": "BadRequestError", "param": null, "code": 400});
    let tgi = json!({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096", "error_type": "validation"});
    let ollama = json!({"error": "model 'llama9' not found, try pulling it first"});
    let openai = json!({"error": {"message": "Invalid 'messages': empty array.", "type": "invalid_request_error", "param": "messages", "code": "empty_array"}});
    // (client path, upstream status, upstream body, client status, the client's body)
    let cases = [
        (
            "/v1/chat/completions",
            400,
            &vllm,
            400,
            json!({"error": {"message": ctx, "type": "BadRequestError", "param": null, "code": null}}),
        ),
        (
            "/v1/responses",
            400,
            &vllm,
            400,
            json!({"error": {"message": ctx, "type": "BadRequestError", "param": null, "code": null}}),
        ),
        (
            "/v1/messages",
            400,
            &vllm,
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": ctx}}),
        ),
        (
            "/v1/chat/completions",
            422,
            &tgi,
            422,
            json!({"error": {"message": tgi["error"], "type": "validation", "param": null, "code": null}}),
        ),
        (
            "/v1/messages",
            422,
            &tgi,
            422,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": tgi["error"]}}),
        ),
        (
            "/v1/chat/completions",
            404,
            &ollama,
            404,
            json!({"error": {"message": ollama["error"], "type": "invalid_request_error", "param": null, "code": null}}),
        ),
        (
            "/v1/messages",
            404,
            &ollama,
            404,
            json!({"type": "error", "error": {"type": "not_found_error", "message": ollama["error"]}}),
        ),
        ("/v1/chat/completions", 400, &openai, 400, openai.clone()),
    ];
    for (path, status, body, want_status, want) in cases {
        script(&m, "solo-vllm", json!({"status": status, "body": body}));
        let mut req = stream_body(path, "solo-vllm");
        req["stream"] = json!(false);
        let r = post_as(&gw, MASTER, path, &req).await;
        let case = format!("{path} <- {status} {body}");
        assert_eq!(r.status, want_status, "{case}: {}", r.text);
        assert_eq!(r.header("content-type"), "application/json", "{case}");
        assert_eq!(r.body, want, "{case}: {}", r.text);
        assert!(
            !r.text.contains("\\\""),
            "{case}: JSON quoted in a message: {}",
            r.text
        );
        assert_eq!(calls(&m), ["solo-vllm"], "{case}");
    }
    // An OpenAI-shaped body keeps its bytes.
    script(&m, "solo-vllm", json!({"status": 400, "body": openai}));
    let mut req = stream_body("/v1/chat/completions", "solo-vllm");
    req["stream"] = json!(false);
    let r = post_as(&gw, MASTER, "/v1/chat/completions", &req).await;
    assert_eq!(r.text, openai.to_string());
}

// ---- 6. usage on every content chunk ------------------------------------------------------

/// vLLM's `continuous_usage_stats`: a usage object on every chunk. The gateway forced
/// `include_usage`, so a client that did not ask sees no usage member at all; the last one
/// is billed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_on_every_content_chunk_is_hidden_from_a_client_that_did_not_ask() {
    let dir = TempDir::new("fixtures");
    let chunk = |delta: Value, finish: Value, completion: u64| {
        data(
            json!({"id": "chatcmpl-u", "object": "chat.completion.chunk", "created": 1,
                    "model": "mock-gpt", "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": completion, "total_tokens": 1000 + completion}}),
        )
    };
    let events = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null, 0),
        chunk(json!({"content": "ab"}), Value::Null, 1),
        chunk(json!({"content": "cd"}), Value::Null, 2),
        chunk(json!({}), json!("stop"), 500),
        data(
            json!({"id": "chatcmpl-u", "object": "chat.completion.chunk", "created": 1, "model": "mock-gpt", "choices": [],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}}),
        ),
        "data: [DONE]\n\n".to_owned(),
    ];
    std::fs::write(dir.0.join("continuous.sse"), events.concat()).unwrap();
    let m = mock_with(&dir).await;
    script(&m, "solo-vllm", json!({"fixture": "continuous.sse"}));
    let gw = GovGateway::start(&gateway_config(&m.base_url(), "  num_retries: 0\n"));
    let (key, hash) = generate_key(&gw, json!({})).await;

    let r = chat(&gw, &key, &stream_body("/v1/chat/completions", "solo-vllm")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(!r.text.contains("usage"), "{}", r.text);
    let strip = |e: &String| {
        let mut v: Value = serde_json::from_str(e.strip_prefix("data: ").unwrap().trim()).unwrap();
        v.as_object_mut().unwrap().remove("usage");
        data(v)
    };
    let want: String = events[..4].iter().map(strip).collect::<String>() + "data: [DONE]\n\n";
    assert_eq!(r.text, want);
    // The gateway asked for the usage it hid.
    let seen = m.drain_observations();
    assert_eq!(seen[0].body["stream_options"]["include_usage"], true);
    let billed = 1000.0 * IN + 500.0 * OUT;
    assert_eq!(
        rows(&gw, &hash, 1).await,
        [(
            "solo-vllm".to_owned(),
            billed,
            "success".to_owned(),
            1000,
            500
        )]
    );

    // A client that asked for usage gets every chunk as the upstream wrote it.
    let mut body = stream_body("/v1/chat/completions", "solo-vllm");
    body["stream_options"] = json!({"include_usage": true});
    let r = chat(&gw, &key, &body).await;
    assert_eq!(r.text, events.concat());
}
