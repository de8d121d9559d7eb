//! OpenAI Chat Completions: non-streaming, streaming with/without include_usage, tools, n, usage rule.

mod common;

use common::*;
use serde_json::json;

fn req(stream: bool) -> serde_json::Value {
    json!({"model": "gpt-test", "stream": stream, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Tell me about the Eiffel Tower and its history in detail please"}
    ]})
}

#[tokio::test]
async fn non_streaming_shape_and_usage_rule() {
    let mock = start().await;
    let r = post(&mock.base_url(), "/v1/chat/completions", &[], &req(false)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "gpt-test");
    assert_eq!(v["created"], 1767225600);
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let text = "This is a mock response to: Tell me about the Eiffel Tower and its h";
    assert_eq!(v["choices"][0]["message"]["content"], text);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    // prompt: ceil((9 + 62) / 4) + 3 * 2 = 18 + 6
    let user_len = "Tell me about the Eiffel Tower and its history in detail please".len();
    let expected_prompt = (9 + user_len as u64).div_ceil(4) + 6;
    assert_eq!(v["usage"]["prompt_tokens"], expected_prompt);
    assert_eq!(
        v["usage"]["completion_tokens"],
        (text.len() as u64).div_ceil(4)
    );
    assert_eq!(
        v["usage"]["total_tokens"],
        expected_prompt + (text.len() as u64).div_ceil(4)
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn streaming_without_usage_has_no_usage_key() {
    let mock = start().await;
    let r = post(
        &mock.base_url(),
        "/chat/completions",
        &[("x-mock-chunks", "4")],
        &req(true),
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = r.text();
    assert!(text.ends_with("data: [DONE]\n\n"));
    let chunks = r.sse_data();
    assert_eq!(chunks.len(), 1 + 4 + 1);
    for c in &chunks {
        assert!(
            c.get("usage").is_none(),
            "no usage key without include_usage: {c}"
        );
        assert_eq!(c["object"], "chat.completion.chunk");
    }
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": "", "refusal": null})
    );
    let content: String = chunks[1..5]
        .iter()
        .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        content,
        "This is a mock response to: Tell me about the Eiffel Tower and its h"
    );
    assert_eq!(chunks[5]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[5]["choices"][0]["delta"], json!({}));
    mock.shutdown().await;
}

#[tokio::test]
async fn streaming_with_include_usage() {
    let mock = start().await;
    let mut body = req(true);
    body["stream_options"] = json!({"include_usage": true});
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-usage", "1000,500,24")],
        &body,
    )
    .await;
    let chunks = r.sse_data();
    assert_eq!(chunks.len(), 1 + 8 + 1 + 1);
    for c in &chunks[..chunks.len() - 1] {
        assert_eq!(c["usage"], serde_json::Value::Null);
        assert!(c.as_object().unwrap().contains_key("usage"));
    }
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], 1000);
    assert_eq!(last["usage"]["completion_tokens"], 500);
    assert_eq!(last["usage"]["total_tokens"], 1500);
    assert_eq!(last["usage"]["prompt_tokens_details"]["cached_tokens"], 24);
    assert!(r.text().ends_with("\n\ndata: [DONE]\n\n"));
    mock.shutdown().await;
}

#[tokio::test]
async fn tool_call_required_non_stream_and_stream() {
    let mock = start().await;
    let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}}}]);
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "weather?"}], "tools": tools, "tool_choice": "required"});
    let v = post(&mock.base_url(), "/v1/chat/completions", &[], &body)
        .await
        .json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], serde_json::Value::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(
        call["function"]["arguments"],
        r#"{"city":"mock-city","unit":"celsius"}"#
    );

    // auto without the header: plain text
    let mut auto = body.clone();
    auto["tool_choice"] = json!("auto");
    let v = post(&mock.base_url(), "/v1/chat/completions", &[], &auto)
        .await
        .json();
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    // auto with the header: tool call, streamed
    auto["stream"] = json!(true);
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-tool-call", "1"), ("x-mock-chunks", "5")],
        &auto,
    )
    .await;
    let chunks = r.sse_data();
    let first = &chunks[0]["choices"][0]["delta"];
    assert_eq!(first["content"], serde_json::Value::Null);
    assert_eq!(first["tool_calls"][0]["index"], 0);
    assert_eq!(first["tool_calls"][0]["type"], "function");
    assert_eq!(first["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(first["tool_calls"][0]["function"]["arguments"], "");
    let frags: Vec<&str> = chunks[1..chunks.len() - 1]
        .iter()
        .map(|c| {
            c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(frags.len(), 5);
    assert_eq!(frags.concat(), r#"{"city":"mock-city","unit":"celsius"}"#);
    assert!(
        serde_json::from_str::<serde_json::Value>(frags[0]).is_err(),
        "fragments split mid-token"
    );
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn n_choices_and_max_tokens_length() {
    let mock = start().await;
    let body = json!({"model": "m", "n": 2, "max_tokens": 3, "messages": [{"role": "user", "content": "hello there"}]});
    let v = post(&mock.base_url(), "/v1/chat/completions", &[], &body)
        .await
        .json();
    assert_eq!(v["choices"].as_array().unwrap().len(), 2);
    assert_eq!(v["choices"][1]["index"], 1);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["choices"][0]["message"]["content"], "This is a mo");
    assert_eq!(v["usage"]["completion_tokens"], 6);
    mock.shutdown().await;
}

#[tokio::test]
async fn missing_messages_is_400() {
    let mock = start().await;
    let r = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[],
        &json!({"model": "m"}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], "missing_required_parameter");
    let r = send_raw(
        http::Method::POST,
        &format!("{}/v1/chat/completions", mock.base_url()),
        &[],
        bytes::Bytes::from_static(b"{not json"),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    mock.shutdown().await;
}

#[tokio::test]
async fn logprobs_and_n2_stream_interleave() {
    let mock = start().await;
    let body = json!({"model": "m", "logprobs": true, "top_logprobs": 2, "messages": [{"role": "user", "content": "Hi"}]});
    let v = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-chunks", "3")],
        &body,
    )
    .await
    .json();
    let content = v["choices"][0]["logprobs"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 3);
    let joined: String = content
        .iter()
        .map(|c| c["token"].as_str().unwrap())
        .collect();
    assert_eq!(
        joined,
        v["choices"][0]["message"]["content"].as_str().unwrap()
    );
    let first = &content[0];
    let tok = first["token"].as_str().unwrap();
    let bytes: Vec<u8> = first["bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap() as u8)
        .collect();
    assert_eq!(bytes, tok.as_bytes());
    assert_eq!(first["top_logprobs"].as_array().unwrap().len(), 2);
    assert!(first["logprob"].as_f64().unwrap() < 0.0);

    let body = json!({"model": "m", "n": 2, "stream": true, "logprobs": true, "messages": [{"role": "user", "content": "Hi"}]});
    let chunks = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-chunks", "2")],
        &body,
    )
    .await
    .sse_data();
    let idx: Vec<u64> = chunks
        .iter()
        .map(|c| c["choices"][0]["index"].as_u64().unwrap())
        .collect();
    assert_eq!(idx, vec![0, 1, 0, 1, 0, 1, 0, 1]);
    assert!(chunks[2]["choices"][0]["logprobs"]["content"][0]["token"].is_string());
    assert_eq!(chunks[7]["choices"][0]["finish_reason"], "stop");
    mock.shutdown().await;
}

#[tokio::test]
async fn legacy_completions_stream_and_not() {
    let mock = start().await;
    let v = post(
        &mock.base_url(),
        "/v1/completions",
        &[],
        &json!({"model": "m", "prompt": "Say this is a test"}),
    )
    .await
    .json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(
        v["choices"][0]["text"],
        "This is a mock response to: Say this is a test"
    );
    assert_eq!(v["usage"]["prompt_tokens"], 5);
    let r = post(&mock.base_url(), "/completions", &[("x-mock-chunks", "3")],
        &json!({"model": "m", "prompt": "Say this is a test", "stream": true, "stream_options": {"include_usage": true}})).await;
    let chunks = r.sse_data();
    assert_eq!(chunks.len(), 3 + 1 + 1);
    let text: String = chunks[..3]
        .iter()
        .map(|c| c["choices"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "This is a mock response to: Say this is a test");
    assert_eq!(chunks[3]["choices"][0]["finish_reason"], "stop");
    assert_eq!(chunks[3]["usage"], serde_json::Value::Null);
    assert_eq!(chunks[4]["choices"], json!([]));
    assert_eq!(chunks[4]["usage"]["total_tokens"], 5 + 12);
    assert!(r.text().ends_with("data: [DONE]\n\n"));
    mock.shutdown().await;
}
