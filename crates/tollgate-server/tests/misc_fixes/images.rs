//! Image data that is not base64 (`data:image/png;base64,!!!notb64`, or the same in an
//! Anthropic base64 source) is refused with a 400 in the client's dialect naming the field, and
//! nothing is sent; valid data is forwarded unchanged, in both directions.

use serde_json::{Value, json};

use crate::gov::*;

const BAD: &str = "!!!notb64";
/// The first bytes of a PNG, base64.
const PNG: &str = "iVBORw0KGgo=";

fn chat_with_image(model: &str, url: &str) -> Value {
    json!({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": url}}]}]})
}

fn messages_with_image(model: &str, data: &str) -> Value {
    json!({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "What is this?"}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_data_that_is_not_base64_is_a_400_naming_the_field() {
    let m = mock().await;
    let gw = GovGateway::start(&crate::config(&m.base_url()));

    // OpenAI client → Claude: OpenAI's error shape, `param` the field.
    for bad in [
        format!("data:image/png;base64,{BAD}"),
        "data:image/png;base64,iVBO Rw0K".into(),
    ] {
        let r = post_as(
            &gw,
            MASTER,
            "/v1/chat/completions",
            &chat_with_image("claude", &bad),
        )
        .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        assert_eq!(r.body["error"]["type"], "invalid_request_error");
        assert_eq!(
            r.body["error"]["param"],
            "messages[0].content[1].image_url.url"
        );
        let msg = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.starts_with("invalid `messages[0].content[1].image_url.url`: malformed data URL (the data is not base64"),
            "{msg}"
        );
    }
    // Responses client → Claude.
    let r = post_as(&gw, MASTER, "/v1/responses", &json!({"model": "claude", "input": [
        {"role": "user", "content": [{"type": "input_image", "image_url": format!("data:image/png;base64,{BAD}")}]}]}))
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["error"]["param"], "input[0].content[0].image_url");
    // Anthropic client → an OpenAI-dialect model: Anthropic's error shape, the field named in
    // the message (Anthropic errors have no `param`).
    let r = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &messages_with_image("gpt", BAD),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["type"], "error", "{}", r.text);
    assert_eq!(r.body["error"]["type"], "invalid_request_error");
    let msg = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with("invalid `messages[0].content[0].source.data`: the data is not base64"),
        "{msg}"
    );
    let seen = m.drain_observations();
    assert!(
        seen.is_empty(),
        "a refused image reached the upstream: {seen:?}"
    );

    // Valid data goes through unchanged, each way.
    let r = post_as(
        &gw,
        MASTER,
        "/v1/chat/completions",
        &chat_with_image("claude", &format!("data:image/png;base64,{PNG}")),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &messages_with_image("gpt", PNG),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = m.drain_observations();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].deployment.as_deref(), Some("claude"));
    assert_eq!(
        seen[0].body["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}})
    );
    assert_eq!(seen[1].deployment.as_deref(), Some("gpt"));
    assert_eq!(
        seen[1].body["messages"][0]["content"][0],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}})
    );
}
