//! End-to-end: every exit of an admitted attempt settles it exactly once, through the real
//! binary against `tollgate-mock` (SQLite store).
//!
//! Each case runs as its own virtual key (`tpm_limit: 150`, `max_parallel_requests: 1`) and
//! leaves the attempt by one exit after admission: a plan the deployment cannot serve,
//! a translation refusal, an unknown `previous_response_id`, an unreachable upstream, and the
//! client hanging up before the answer's head and in the middle of a stream. Then:
//!
//! - exactly one `"LiteLLM_SpendLogs"` row exists for the key (one settlement; none lost,
//!   none doubled — also after the upstream would have answered);
//! - the next request of the key (`max_tokens: 100`) is admitted: the parallel slot was
//!   released (a leaked one would refuse it at 1), and so was the TPM reservation (a leaked
//!   reservation of the prompt plus 100 tokens leaves no room for another in 150).

#[path = "common/governance.rs"]
mod gov;

use std::time::Duration;

use gov::*;
use serde_json::{Value, json};

/// Gateway config: `ok` answers normally, `claude` is an Anthropic deployment (embeddings not
/// served; chat and Responses translated), `gone` is unreachable, `slow` sends its head late,
/// `drip` streams slowly.
fn config(mock: &str) -> String {
    format!(
        r#"model_list:
  - model_name: ok
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/ok/v1
      api_key: {UPSTREAM_KEY}
  - model_name: claude
    litellm_params:
      model: anthropic/claude-mock
      api_base: {mock}/d/claude
      api_key: {UPSTREAM_KEY}
  - model_name: gone
    litellm_params:
      model: openai/mock-gpt
      api_base: http://127.0.0.1:1/v1
      api_key: {UPSTREAM_KEY}
  - model_name: slow
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/slow/v1
      api_key: {UPSTREAM_KEY}
  - model_name: drip
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/drip/v1
      api_key: {UPSTREAM_KEY}
router_settings:
  num_retries: 0
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
"#
    )
}

/// A key limited to one request in flight and 150 tokens a minute: `(key, hash)`.
async fn tight_key(gw: &GovGateway, extra: Value) -> (String, String) {
    let mut body = json!({"tpm_limit": 150, "max_parallel_requests": 1});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    generate_key(gw, body).await
}

/// Exactly one settlement for the key, then the key's next request is admitted and settled.
async fn settled_once_and_released(gw: &GovGateway, key: &str, hash: &str, exit: &str) {
    let rows = spend_logs_n(gw, hash, 1).await;
    assert_eq!(rows.len(), 1, "{exit}: one spend-log row: {rows:?}");
    let r = chat(gw, key, &chat_body("ok", "hi", 100)).await;
    assert_eq!(
        r.status, 200,
        "{exit}: the next request is admitted (slot and reservation released): {}",
        r.text
    );
    let rows = spend_logs_n(gw, hash, 2).await;
    assert_eq!(
        rows.len(),
        2,
        "{exit}: one more row, for the next request: {rows:?}"
    );
}

/// The one row of an attempt refused after admission: a failure, nothing billed.
fn assert_failed_unbilled(row: &Value, exit: &str) {
    assert_eq!(row["status"], "failure", "{exit}: {row}");
    assert_eq!(row["spend"].as_f64(), Some(0.0), "{exit}: {row}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exit_after_admission_settles_exactly_once() {
    let m = mock().await;
    script_default(&m, "slow", json!({"first_byte_delay_ms": 1500}));
    script_default(&m, "drip", json!({"chunks": 20, "chunk_delay_ms": 200}));
    let gw = GovGateway::start(&config(&m.base_url()));

    // plan error: an Anthropic deployment serves no embeddings (400 after admission)
    let (key, hash) = tight_key(&gw, json!({})).await;
    let r = post_as(
        &gw,
        &key,
        "/v1/embeddings",
        &json!({"model": "claude", "input": "hi"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_failed_unbilled(&spend_logs_n(&gw, &hash, 1).await[0], "plan error");
    settled_once_and_released(&gw, &key, &hash, "plan error").await;

    // translation error: `n: 2` cannot be translated to Anthropic Messages
    let (key, hash) = tight_key(&gw, json!({})).await;
    let mut body = chat_body("claude", "hi", 100);
    body["n"] = json!(2);
    let r = chat(&gw, &key, &body).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["error"]["param"], "n", "{}", r.text);
    assert_failed_unbilled(&spend_logs_n(&gw, &hash, 1).await[0], "translation error");
    settled_once_and_released(&gw, &key, &hash, "translation error").await;

    // unknown `previous_response_id`: a proxy admin's key passes the ownership check before
    // routing, so the id is looked up after admission, when the request is translated
    let u = post_as(
        &gw,
        MASTER,
        "/user/new",
        &json!({"user_id": "exits-admin", "user_role": "proxy_admin"}),
    )
    .await;
    assert_eq!(u.status, 200, "/user/new: {}", u.text);
    let (key, hash) = tight_key(&gw, json!({"user_id": "exits-admin"})).await;
    let r = post_as(
        &gw,
        &key,
        "/v1/responses",
        &json!({"model": "claude", "input": "hi", "max_output_tokens": 100,
                "previous_response_id": "resp_never_made"}),
    )
    .await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.body["error"]["code"], "previous_response_not_found");
    assert_failed_unbilled(
        &spend_logs_n(&gw, &hash, 1).await[0],
        "previous_response_id",
    );
    settled_once_and_released(&gw, &key, &hash, "unknown previous_response_id").await;

    // upstream unreachable: 502
    let (key, hash) = tight_key(&gw, json!({})).await;
    let r = chat(&gw, &key, &chat_body("gone", "hi", 100)).await;
    assert_eq!(r.status, 502, "{}", r.text);
    assert_failed_unbilled(&spend_logs_n(&gw, &hash, 1).await[0], "unreachable");
    settled_once_and_released(&gw, &key, &hash, "upstream unreachable").await;

    // client hang-up before the head: the client gives up while the upstream still thinks
    let (key, hash) = tight_key(&gw, json!({})).await;
    let gave_up = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_millis(300))
        .build()
        .expect("client")
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&chat_body("slow", "hi", 100))
        .send()
        .await;
    assert!(gave_up.is_err(), "the client timed out before the head");
    // past the upstream's answer: still one row, never a second
    tokio::time::sleep(Duration::from_millis(2000)).await;
    settled_once_and_released(&gw, &key, &hash, "hang-up before the head").await;

    // client hang-up mid-stream: one chunk read, then the connection dropped
    let (key, hash) = tight_key(&gw, json!({})).await;
    let mut body = chat_body("drip", "hi", 100);
    body["stream"] = json!(true);
    let mut resp = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&body)
        .send()
        .await
        .expect("stream starts");
    assert_eq!(resp.status(), 200);
    let first = resp.chunk().await.expect("a chunk");
    assert!(first.is_some_and(|c| !c.is_empty()));
    drop(resp);
    // once the gateway noticed the drop: one row (the stream would run 4 s more)
    tokio::time::sleep(Duration::from_millis(1000)).await;
    settled_once_and_released(&gw, &key, &hash, "hang-up mid-stream").await;
}
