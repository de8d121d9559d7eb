//! Usage billed whatever the upstream's JSON formatting: an OpenAI-compatible upstream
//! written in Python (`json.dumps`: `", "` and `": "`; the mock's `json_style: "python"`)
//! reports usage the gateway must read exactly, streamed or not, and the usage chunk the
//! gateway asked for on the client's behalf must not reach a client that did not ask for it.
//!
//! The upstream reports 1000 prompt and 50 completion tokens on every call; the deployment
//! costs X per input and Y per output token, so every call costs 1000 X + 50 Y = 1.1 USD.

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

const X: f64 = 0.001;
const Y: f64 = 0.002;
const PROMPT: u64 = 1000;
const COMPLETION: u64 = 50;
/// 1000 × 0.001 + 50 × 0.002 USD.
const COST: f64 = 1.1;

fn python_dep() -> Dep<'static> {
    Dep {
        group: "py",
        deployment: "py",
        upstream: "mock-gpt",
        id: "dep-py",
        input_cost: X,
        output_cost: Y,
    }
}

async fn setup() -> (tollgate_mock::MockHandle, GovGateway, String, String) {
    let m = mock().await;
    script_default(
        &m,
        "py",
        json!({"json_style": "python", "usage": [PROMPT, COMPLETION], "chunks": 3}),
    );
    let gw = GovGateway::start(&config(&m.base_url(), &[python_dep()], "", None));
    let (key, hash) = generate_key(&gw, json!({"key_alias": "python-upstream"})).await;
    (m, gw, key, hash)
}

/// The `data:` payloads of an SSE body, in order, as written.
fn data_lines(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .collect()
}

fn assert_rows(rows: &[Value], n: usize) {
    assert_eq!(rows.len(), n, "{rows:?}");
    for row in rows {
        assert_eq!(row["prompt_tokens"], PROMPT, "{row}");
        assert_eq!(row["completion_tokens"], COMPLETION, "{row}");
        let spend = row["spend"].as_f64().unwrap_or(-1.0);
        assert!(
            same_dollars(spend, COST),
            "row spend {spend} != {COST}: {row}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_style_answer_is_billed_from_its_usage() {
    let (_m, gw, key, hash) = setup().await;
    let r = chat(&gw, &key, &chat_body("py", "hello", 64)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text
            .contains(r#""usage": {"prompt_tokens": 1000, "completion_tokens": 50"#),
        "the upstream's bytes reach the client: {}",
        r.text
    );
    let cost = r.header_f64("x-litellm-response-cost");
    assert!(same_dollars(cost, COST), "x-litellm-response-cost {cost}");
    assert_rows(&spend_logs_n(&gw, &hash, 1).await, 1);
    let spend = key_spend_eventually(&gw, &key, COST).await;
    assert!(same_dollars(spend, COST), "key spend {spend}");
}

/// Without `stream_options.include_usage` the gateway asks the upstream for usage anyway
/// (it bills from it) and hides it: no `usage` member and no usage chunk reach the client;
/// the stream is billed from the upstream's usage, not from an estimate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_style_stream_is_billed_and_its_forced_usage_hidden() {
    let (m, gw, key, hash) = setup().await;
    let mut body = chat_body("py", "hello", 64);
    body["stream"] = json!(true);
    let r = chat(&gw, &key, &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let forwarded = upstream_calls(&m, "py");
    assert_eq!(forwarded.len(), 1);
    assert_eq!(
        forwarded[0].body["stream_options"],
        json!({"include_usage": true}),
        "the gateway asked the upstream for usage"
    );
    assert!(
        !r.text.contains("usage"),
        "no usage for this client: {}",
        r.text
    );
    let data = data_lines(&r.text);
    // Role chunk, 3 content chunks, finish chunk, [DONE]: the usage chunk is gone.
    assert_eq!(data.len(), 6, "{}", r.text);
    assert_eq!(data[5], "[DONE]");
    for d in &data[..5] {
        assert!(
            d.starts_with(r#"{"id": "chatcmpl-mock-"#) && d.ends_with("}]}"),
            "the chunk as the upstream wrote it, less its usage member: {d}"
        );
        let v: Value = serde_json::from_str(d).unwrap();
        assert!(!v["choices"].as_array().unwrap().is_empty(), "{d}");
    }
    assert!(
        data[4].contains(r#""finish_reason": "stop""#),
        "{}",
        data[4]
    );
    let text: String = data[..5]
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "This is a mock response to: hello");
    assert_rows(&spend_logs_n(&gw, &hash, 1).await, 1);
    let spend = key_spend_eventually(&gw, &key, COST).await;
    assert!(same_dollars(spend, COST), "key spend {spend}");
}

/// A client that asked for usage sees the upstream's chunks unchanged, usage chunk included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_asked_sees_the_upstreams_usage_chunk_unchanged() {
    let (_m, gw, key, hash) = setup().await;
    let mut body = chat_body("py", "hello", 64);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let r = chat(&gw, &key, &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let data = data_lines(&r.text);
    assert_eq!(data.len(), 7, "{}", r.text);
    for d in &data[..5] {
        assert!(d.ends_with(r#"], "usage": null}"#), "{d}");
    }
    let usage_chunk = data[5];
    let id = serde_json::from_str::<Value>(usage_chunk).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        usage_chunk,
        format!(
            r#"{{"id": "{id}", "object": "chat.completion.chunk", "created": 1767225600, "model": "mock-gpt", "service_tier": "default", "system_fingerprint": "fp_mock01", "choices": [], "usage": {{"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050, "prompt_tokens_details": {{"cached_tokens": 0, "audio_tokens": 0}}, "completion_tokens_details": {{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}}}}}"#
        )
    );
    assert_eq!(data[6], "[DONE]");
    assert_rows(&spend_logs_n(&gw, &hash, 1).await, 1);
    let spend = key_spend_eventually(&gw, &key, COST).await;
    assert!(same_dollars(spend, COST), "key spend {spend}");
}
