//! End-to-end translation details and ids, through the real `tollgate` binary in
//! front of `tollgate-mock`: Anthropic's own `metadata.user_id` (forwarded alone, mapped to and
//! from OpenAI `user`, counted as the end user), images and `cache_control` from every ingress
//! to Claude, and answers translated from an OpenAI-dialect model carrying `msg_` / `resp_` ids
//! that are the same in the body, the stream and the spend log.
//!
//! Every upstream answer here has a scripted usage of 1000 prompt + 500 completion tokens; at
//! the deployments' prices (1e-6 USD in, 2e-6 USD out per token) each call costs 0.002 USD.
#![expect(
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

/// USD per prompt token of both deployments.
const IN: f64 = 0.000_001;
/// USD per completion token of both deployments.
const OUT: f64 = 0.000_002;
/// One call: 1000 × IN + 500 × OUT.
const CALL_USD: f64 = 0.002;

fn config(mock: &str) -> String {
    format!(
        r#"
model_list:
  - model_name: claude
    litellm_params:
      model: anthropic/claude-mock
      api_base: {mock}/d/claude
      api_key: {UPSTREAM_KEY}
    model_info:
      id: claude-dep
      input_cost_per_token: {IN}
      output_cost_per_token: {OUT}
  # An OpenAI-compatible server (not OpenAI itself): /v1/responses is translated to chat.
  - model_name: gpt
    litellm_params:
      model: hosted_vllm/mock-gpt
      api_base: {mock}/d/gpt/v1
      api_key: {UPSTREAM_KEY}
    model_info:
      id: gpt-dep
      input_cost_per_token: {IN}
      output_cost_per_token: {OUT}
router_settings:
  num_retries: 0
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
"#
    )
}

async fn setup() -> (tollgate_mock::MockHandle, GovGateway) {
    setup_with("").await
}

/// [`config`] with `general` appended under `general_settings` (lines indented two spaces).
async fn setup_with(general: &str) -> (tollgate_mock::MockHandle, GovGateway) {
    let m = mock().await;
    let usage = json!({"usage": {"prompt_tokens": 1000, "completion_tokens": 500}});
    script_default(&m, "claude", usage.clone());
    script_default(&m, "gpt", usage);
    let gw = GovGateway::start(&format!("{}{general}", config(&m.base_url())));
    (m, gw)
}

/// `POST /v1/messages` as an Anthropic SDK sends it, with `extra` headers.
async fn messages(gw: &GovGateway, body: &Value, extra: &[(&str, &str)]) -> Resp {
    let mut r = client()
        .post(gw.url("/v1/messages"))
        .header("x-api-key", MASTER)
        .header("anthropic-version", "2023-06-01");
    for (k, v) in extra {
        r = r.header(*k, *v);
    }
    read(r.json(body).send().await.expect("reaches the gateway")).await
}

/// The one upstream request the mock saw for `deployment` since the last call (drained).
fn only_call(m: &tollgate_mock::MockHandle, deployment: &str) -> tollgate_mock::Observation {
    let mut calls: Vec<_> = m
        .drain_observations()
        .into_iter()
        .filter(|o| o.deployment.as_deref() == Some(deployment))
        .collect();
    assert_eq!(calls.len(), 1, "upstream calls to {deployment}: {calls:?}");
    calls.remove(0)
}

/// The spend-log row keyed by `request_id` (polled: streams settle when they end).
async fn spend_row(gw: &GovGateway, request_id: &str) -> Value {
    let rows = poll(
        || async {
            let r = get_as(gw, MASTER, &format!("/spend/logs?request_id={request_id}")).await;
            assert_eq!(r.status, 200, "/spend/logs: {}", r.text);
            r.body.as_array().cloned().unwrap_or_default()
        },
        |rows| !rows.is_empty(),
    )
    .await;
    assert_eq!(rows.len(), 1, "spend rows for {request_id}: {rows:?}");
    rows[0].clone()
}

/// (event name, data) of each SSE event.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|e| {
            let name = e.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = e.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((name.to_owned(), serde_json::from_str(data).ok()?))
        })
        .collect()
}

fn hour() -> Value {
    json!({"type": "ephemeral", "ttl": "1h"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_to_anthropic_forward_metadata_user_id_alone_and_cache_control_as_sent() {
    let (m, gw) = setup().await;
    let system = json!([{"type": "text", "text": "You are terse.", "cache_control": hour()}]);
    let content = json!([
        {"type": "text", "text": "A long document.", "cache_control": hour()},
        {"type": "text", "text": "Summarise it."}]);
    let body = json!({
        "model": "claude", "max_tokens": 64, "system": system,
        "metadata": {"user_id": "eu-anthropic-1", "tags": ["team-a"], "trace_id": "tr-1",
                     "generation_name": "gen"},
        "messages": [{"role": "user", "content": content}]});
    let r = messages(&gw, &body, &[]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = only_call(&m, "claude");
    assert_eq!(seen.body["metadata"], json!({"user_id": "eu-anthropic-1"}));
    assert_eq!(seen.body["system"], system);
    assert_eq!(seen.body["messages"][0]["content"], content);
    assert!(seen.body.get("tags").is_none() && seen.body.get("trace_id").is_none());

    let id = r.body["id"].as_str().unwrap();
    assert_eq!(id, format!("msg_mock_{}", seen.seq));
    let row = spend_row(&gw, id).await;
    assert_eq!(row["end_user"], "eu-anthropic-1");
    assert!(
        same_dollars(row["spend"].as_f64().unwrap(), CALL_USD),
        "{row}"
    );

    // Metadata without user_id: no metadata at all (Anthropic refuses the other keys).
    let body = json!({"model": "claude", "max_tokens": 64, "metadata": {"tags": ["team-a"]},
        "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(messages(&gw, &body, &[]).await.status, 200);
    assert!(only_call(&m, "claude").body.get("metadata").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_to_openai_send_user_and_images_and_answer_with_one_msg_id() {
    let (m, gw) = setup().await;
    let body = json!({
        "model": "gpt", "max_tokens": 64,
        "metadata": {"user_id": "eu-2", "tags": ["team-b"]},
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}]}]});
    let r = messages(&gw, &body, &[]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = only_call(&m, "gpt");
    assert_eq!(seen.body["user"], "eu-2");
    assert!(seen.body.get("metadata").is_none() && seen.body.get("tags").is_none());
    assert_eq!(
        seen.body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}])
    );
    // The mock answered `chatcmpl-mock-<seq>`; the Anthropic client sees `msg_mock<seq>`.
    let id = format!("msg_mock{}", seen.seq);
    assert_eq!(r.body["id"], id);
    let row = spend_row(&gw, &id).await;
    assert_eq!(row["end_user"], "eu-2");
    assert!(
        same_dollars(row["spend"].as_f64().unwrap(), CALL_USD),
        "{row}"
    );

    // Streamed: the same rule on message_start, and the spend log under that id.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let r = messages(&gw, &streamed, &[]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = only_call(&m, "gpt");
    assert_eq!(seen.body["user"], "eu-2");
    let evs = events(&r.text);
    assert_eq!(evs[0].0, "message_start");
    let id = format!("msg_mock{}", seen.seq);
    assert_eq!(evs[0].1["message"]["id"], id);
    assert!(!r.text.contains("chatcmpl-"), "{}", r.text);
    assert_eq!(evs.last().unwrap().0, "message_stop");
    let row = spend_row(&gw, &id).await;
    assert_eq!(row["end_user"], "eu-2");
    assert!(
        same_dollars(row["spend"].as_f64().unwrap(), CALL_USD),
        "{row}"
    );

    // A base64 image without its media type: 400 in Anthropic's shape, nothing sent.
    let bad = json!({"model": "gpt", "max_tokens": 64, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "data": "iVBORw0KGgo="}}]}]});
    let r = messages(&gw, &bad, &[]).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["type"], "error");
    assert_eq!(r.body["error"]["type"], "invalid_request_error");
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("messages[0].content[0].source.media_type"),
        "{msg}"
    );
    assert!(m.drain_observations().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_to_anthropic_maps_user_images_and_cache_control() {
    let (m, gw) = setup().await;
    let body = json!({
        "model": "claude", "max_tokens": 64, "user": "eu-3", "metadata": {"tags": ["t"]},
        "messages": [
            {"role": "system", "content": "Rules.", "cache_control": hour()},
            {"role": "user", "content": [
                {"type": "text", "text": "Big context", "cache_control": hour()},
                {"type": "image_url", "image_url": {"url": "data:image/jpg;base64,/9j/4AAQSkZJRg=="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/dog.webp", "detail": "low"}}]}],
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}},
                   "cache_control": hour()}]});
    let r = post_as(&gw, MASTER, "/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = only_call(&m, "claude");
    assert_eq!(seen.body["metadata"], json!({"user_id": "eu-3"}));
    assert_eq!(
        seen.body["system"],
        json!([{"type": "text", "text": "Rules.", "cache_control": hour()}])
    );
    assert_eq!(
        seen.body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Big context", "cache_control": hour()},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/dog.webp"}}])
    );
    assert_eq!(
        seen.body["tools"],
        json!([{"name": "lookup", "input_schema": {"type": "object"}, "cache_control": hour()}])
    );
    let row = spend_row(&gw, r.body["id"].as_str().unwrap()).await;
    assert_eq!(row["end_user"], "eu-3");
    assert!(
        same_dollars(row["spend"].as_f64().unwrap(), CALL_USD),
        "{row}"
    );

    // Malformed data URL, unaccepted media type, non-http URL: 400 in OpenAI's shape, the
    // field named, nothing sent upstream (the gateway never fetches an image).
    for (url, says) in [
        ("data:image/png;base64", "malformed data URL"),
        (
            "data:image/bmp;base64,Qk0=",
            "`image/bmp` is not accepted by Anthropic",
        ),
        ("file:///etc/passwd", "http(s) URL or a base64 data URL"),
    ] {
        let bad = json!({"model": "claude", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}]}]});
        let r = post_as(&gw, MASTER, "/v1/chat/completions", &bad).await;
        assert_eq!(r.status, 400, "{url}: {}", r.text);
        assert_eq!(r.body["error"]["type"], "invalid_request_error", "{url}");
        let msg = r.body["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("messages[0].content[0].image_url.url") && msg.contains(says),
            "{url}: {msg}"
        );
    }
    assert!(m.drain_observations().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_to_anthropic_carry_cache_control_images_and_user() {
    let (m, gw) = setup().await;
    let body = json!({
        "model": "claude", "max_output_tokens": 64, "user": "eu-4",
        "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "Big context", "cache_control": hour()},
            {"type": "input_image", "image_url": "data:image/JPG;base64,/9j/4AAQ"},
            {"type": "input_text", "text": "Describe."}]}]});
    let r = post_as(&gw, MASTER, "/v1/responses", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = only_call(&m, "claude");
    assert_eq!(seen.body["metadata"], json!({"user_id": "eu-4"}));
    assert_eq!(
        seen.body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "Big context", "cache_control": hour()},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
            {"type": "text", "text": "Describe."}]}])
    );
    let id = r.body["id"].as_str().unwrap();
    assert!(id.starts_with("resp_"), "{id}");
    let row = spend_row(&gw, id).await;
    assert_eq!(row["end_user"], "eu-4");
    assert!(
        same_dollars(row["spend"].as_f64().unwrap(), CALL_USD),
        "{row}"
    );

    let bad = json!({"model": "claude", "input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": "data:image/png,AAAA"}]}]});
    let r = post_as(&gw, MASTER, "/v1/responses", &bad).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["error"]["type"], "invalid_request_error");
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("input[0].content[0].image_url"), "{msg}");
    assert!(m.drain_observations().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_from_openai_have_one_resp_id_streamed_unary_and_logged() {
    let (m, gw) = setup().await;
    let body = json!({"model": "gpt", "input": "Hello", "max_output_tokens": 64});
    let r = post_as(&gw, MASTER, "/v1/responses", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    only_call(&m, "gpt");
    let id = r.body["id"].as_str().unwrap().to_owned();
    let hex = id.strip_prefix("resp_").unwrap();
    assert!(
        hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    assert_eq!(r.body["output"][0]["id"], format!("msg_{hex}"));
    assert!(!r.text.contains("chatcmpl-"), "{}", r.text);
    assert!(same_dollars(
        spend_row(&gw, &id).await["spend"].as_f64().unwrap(),
        CALL_USD
    ));

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let r = post_as(&gw, MASTER, "/v1/responses", &streamed).await;
    assert_eq!(r.status, 200, "{}", r.text);
    only_call(&m, "gpt");
    assert!(!r.text.contains("chatcmpl-"), "{}", r.text);
    let evs = events(&r.text);
    let created = &evs.iter().find(|(n, _)| n == "response.created").unwrap().1;
    let completed = &evs
        .iter()
        .find(|(n, _)| n == "response.completed")
        .unwrap()
        .1;
    let id = created["response"]["id"].as_str().unwrap().to_owned();
    assert_ne!(
        id,
        r.body["id"].as_str().unwrap_or_default(),
        "one id per response"
    );
    assert_eq!(completed["response"]["id"], id);
    let hex = id.strip_prefix("resp_").unwrap();
    let item_ids: Vec<&str> = evs
        .iter()
        .filter_map(|(_, d)| d.get("item_id").and_then(Value::as_str))
        .collect();
    assert!(!item_ids.is_empty());
    assert!(
        item_ids.iter().all(|i| *i == format!("msg_{hex}")),
        "{item_ids:?}"
    );
    assert_eq!(
        completed["response"]["output"][0]["id"],
        format!("msg_{hex}")
    );
    assert!(same_dollars(
        spend_row(&gw, &id).await["spend"].as_f64().unwrap(),
        CALL_USD
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_user_id_is_the_end_user_for_budgets_unless_a_header_names_one() {
    let (m, gw) = setup().await;
    let r = post_as(
        &gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "eu-broke", "max_budget": 0.0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = json!({"model": "claude", "max_tokens": 64,
        "metadata": {"user_id": "eu-broke"},
        "messages": [{"role": "user", "content": "hi"}]});
    // Anthropic client, Anthropic deployment: refused for that end user, in Anthropic's shape.
    let r = messages(&gw, &body, &[]).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["type"], "error");
    // LiteLLM's end-user budget wording, naming the id taken from metadata.user_id.
    let refusal = "ExceededBudget: End User=eu-broke over budget. Spend=0, Budget=0";
    assert_eq!(r.body["error"]["message"], refusal, "{}", r.text);
    // The same through translation to an OpenAI deployment.
    let mut to_gpt = body.clone();
    to_gpt["model"] = json!("gpt");
    let r = messages(&gw, &to_gpt, &[]).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["error"]["message"], refusal, "{}", r.text);
    assert!(
        m.drain_observations().is_empty(),
        "nothing reached an upstream"
    );

    // LiteLLM's order: the end-user header comes first.
    let r = messages(&gw, &body, &[("x-litellm-end-user-id", "eu-paying")]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // The body's metadata still reaches Anthropic as the client sent its user_id.
    assert_eq!(
        only_call(&m, "claude").body["metadata"],
        json!({"user_id": "eu-broke"})
    );
    let row = spend_row(&gw, r.body["id"].as_str().unwrap()).await;
    assert_eq!(row["end_user"], "eu-paying");
    assert!(
        same_dollars(row["spend"].as_f64().unwrap(), CALL_USD),
        "{row}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_header_name_names_the_end_user_after_the_standard_headers() {
    let (m, gw) = setup_with("  user_header_name: X-OpenWebUI-User-Id\n").await;
    let body = json!({"model": "claude", "max_tokens": 64, "metadata": {"user_id": "eu-body"},
        "messages": [{"role": "user", "content": "hi"}]});
    let gw = &gw;
    let end_user_of = |r: Resp| async move {
        assert_eq!(r.status, 200, "{}", r.text);
        spend_row(gw, r.body["id"].as_str().unwrap()).await["end_user"].clone()
    };
    let r = messages(gw, &body, &[("x-openwebui-user-id", "webui-9")]).await;
    assert_eq!(end_user_of(r).await, "webui-9");
    let r = messages(
        gw,
        &body,
        &[
            ("x-openwebui-user-id", "webui-9"),
            ("x-litellm-customer-id", "cust-1"),
        ],
    )
    .await;
    assert_eq!(end_user_of(r).await, "cust-1");
    let r = messages(gw, &body, &[]).await;
    assert_eq!(end_user_of(r).await, "eu-body");
    // The header is the gateway's: Anthropic still gets the body's user_id, and only it.
    let calls = m.drain_observations();
    assert_eq!(calls.len(), 3);
    assert!(
        calls
            .iter()
            .all(|c| c.body["metadata"] == json!({"user_id": "eu-body"}))
    );
}
