//! Item 2: an answer without usage is billed the same for every caller (a key with a budget,
//! one without, the master key): the prompt counted from the request, the completion from the
//! text produced (a unary answer's content; a stream's content deltas as relayed, not its
//! envelopes), also for a stream the client cut off or that failed after content.
#![expect(
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::gov::*;
use super::{IN, OUT, admin_get, openai};

/// 4000 bytes of prompt: 3 (reply priming) + 3 (message) + 1 ("user") + 1000 = 1007 tokens.
const PROMPT_TOKENS: u64 = 1007;

fn long_prompt(model: &str) -> Value {
    chat_body(model, &"x".repeat(4000), 64)
}

/// A key with a budget, a key without, and the master key.
async fn three_callers(gw: &GovGateway) -> Vec<(&'static str, String)> {
    let (budget, _) = generate_key(gw, json!({"max_budget": 10.0})).await;
    let (open, _) = generate_key(gw, json!({})).await;
    vec![
        ("key with max_budget", budget),
        ("key without budget", open),
        ("master key", MASTER.to_owned()),
    ]
}

/// The spend-log row of call `call_id` (`litellm_call_id`; polled until written).
async fn row_of(gw: &GovGateway, call_id: &str) -> Value {
    let of_call = |v: &Value| -> Vec<Value> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter(|r| r["litellm_call_id"] == call_id)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    let rows = poll(|| admin_get(gw, "/spend/logs"), |v| !of_call(v).is_empty()).await;
    let rows = of_call(&rows);
    assert_eq!(rows.len(), 1, "one row of call {call_id}: {rows:?}");
    rows[0].clone()
}

fn assert_row(row: &Value, who: &str, prompt: u64, completion: u64, status: &str) {
    assert_eq!(row["prompt_tokens"], prompt, "{who}: {row}");
    assert_eq!(row["completion_tokens"], completion, "{who}: {row}");
    assert_eq!(row["total_tokens"], prompt + completion, "{who}: {row}");
    assert_eq!(row["status"], status, "{who}: {row}");
    let want = prompt as f64 * IN + completion as f64 * OUT;
    let spend = row["spend"].as_f64().unwrap_or(-1.0);
    assert!(same_dollars(spend, want), "{who}: {spend} != {want}: {row}");
}

async fn unary_without_usage_case(pg: Option<&PgDb>) {
    let m = mock().await;
    // no `usage`, no `id`: the row is keyed by the call id
    script_default(
        &m,
        "nousage",
        json!({"body": {"object": "chat.completion", "created": 1, "model": "local-llama",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello from fake upstream."}, "finish_reason": "stop"}]}}),
    );
    let deps = [openai("nousage", "nousage", "local-llama")];
    let gw = GovGateway::start(&config(
        &m.base_url(),
        &deps,
        "",
        pg.map(|p| p.url.as_str()),
    ));
    // "Hello from fake upstream." = 25 bytes = 7 tokens
    let want = PROMPT_TOKENS as f64 * IN + 7.0 * OUT;
    for (who, key) in three_callers(&gw).await {
        let r = chat(&gw, &key, &long_prompt("nousage")).await;
        assert_eq!(r.status, 200, "{who}: {}", r.text);
        assert_eq!(
            r.body["choices"][0]["message"]["content"],
            "Hello from fake upstream."
        );
        assert!(r.body.get("usage").is_none(), "relayed as sent: {}", r.text);
        let cost = r.header_f64("x-litellm-response-cost");
        assert!(same_dollars(cost, want), "{who}: cost {cost} != {want}");
        let row = row_of(&gw, &r.header("x-litellm-call-id")).await;
        assert_row(&row, who, PROMPT_TOKENS, 7, "success");
    }
    assert_eq!(upstream_calls(&m, "nousage").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_usage_is_billed_the_same_for_every_caller_sqlite() {
    unary_without_usage_case(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_without_usage_is_billed_the_same_for_every_caller_postgres() {
    let Some(pg) = PgDb::create("e2e_spend_integrity unary_without_usage postgres").await else {
        return;
    };
    unary_without_usage_case(Some(&pg)).await;
}

/// The `data:` JSON events of an SSE body (skipping `[DONE]`).
fn sse_data(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// Streams `body` to `path` as `key` and hangs up once `content_events` content deltas arrived;
/// returns the call id.
async fn stream_and_hang_up(
    gw: &GovGateway,
    key: &str,
    path: &str,
    body: &Value,
    content_events: usize,
) -> String {
    let resp = client()
        .post(gw.url(path))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("stream starts");
    assert_eq!(resp.status(), 200);
    let call_id = resp
        .headers()
        .get("x-litellm-call-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        let contents = sse_data(&seen)
            .iter()
            .filter(|e| {
                e["choices"][0]["delta"]["content"]
                    .as_str()
                    .is_some_and(|c| !c.is_empty())
                    || e["delta"]["text"].is_string()
            })
            .count();
        if contents >= content_events {
            break;
        }
    }
    drop(stream);
    call_id
}

async fn streams_without_usage_case(pg: Option<&PgDb>) {
    let m = tollgate_mock::start(tollgate_mock::MockConfig::with_shared_fixtures())
        .await
        .expect("mock starts");
    // 16 bytes in 4 content deltas of 4 bytes (1 token each), slow enough to hang up between
    script_default(
        &m,
        "drip",
        json!({"reply": "abcdefghijklmnop", "chunks": 4, "chunk_delay_ms": 500}),
    );
    // the same reply failing after its second delta
    script_default(
        &m,
        "dies",
        json!({"reply": "abcdefghijklmnop", "chunks": 4, "midstream_error_after": 2}),
    );
    // a complete stream without a usage chunk (the fixture ignores include_usage)
    script_default(
        &m,
        "replay",
        json!({"fixture": "openai/chat/text.stream.sse"}),
    );
    let deps = [
        openai("drip", "drip", "local-llama"),
        openai("dies", "dies", "local-llama"),
        openai("replay", "replay", "local-llama"),
    ];
    let gw = GovGateway::start(&config(
        &m.base_url(),
        &deps,
        "",
        pg.map(|p| p.url.as_str()),
    ));
    let fixture = String::from_utf8(
        std::fs::read(
            tollgate_mock::shared_fixtures_dir()
                .expect("shared fixtures")
                .join("openai/chat/text.stream.sse"),
        )
        .expect("fixture"),
    )
    .expect("utf-8");
    let replayed: String = sse_data(&fixture)
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    let replayed_tokens = (replayed.len() as u64).div_ceil(4);
    assert!(replayed_tokens > 10, "{replayed}");

    for (who, key) in three_callers(&gw).await {
        let mut body = long_prompt("drip");
        body["stream"] = json!(true);
        // (a) cut off after "abcd" + "efgh": 2 tokens (not 3 events: the role chunk is none)
        let call = stream_and_hang_up(&gw, &key, "/v1/chat/completions", &body, 2).await;
        let row = row_of(&gw, &call).await;
        assert_row(&row, who, PROMPT_TOKENS, 2, "success");

        // (b) failing after "abcd" + "efgh"
        body["model"] = json!("dies");
        let r = post_as(&gw, &key, "/v1/chat/completions", &body).await;
        assert_eq!(r.status, 200, "{who}: {}", r.text);
        let events = sse_data(&r.text);
        let text: String = events
            .iter()
            .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "abcdefgh", "{who}: {}", r.text);
        assert!(events.last().is_some_and(|e| e["error"].is_object()));
        let row = row_of(&gw, &r.header("x-litellm-call-id")).await;
        assert_row(&row, who, PROMPT_TOKENS, 2, "failure");

        // (c) complete, without usage: the fixture's content deltas
        body["model"] = json!("replay");
        let r = post_as(&gw, &key, "/v1/chat/completions", &body).await;
        assert_eq!(r.status, 200, "{who}: {}", r.text);
        let row = row_of(&gw, &r.header("x-litellm-call-id")).await;
        assert_row(&row, who, PROMPT_TOKENS, replayed_tokens, "success");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_without_usage_bill_the_content_relayed_sqlite() {
    streams_without_usage_case(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_without_usage_bill_the_content_relayed_postgres() {
    let Some(pg) = PgDb::create("e2e_spend_integrity streams_without_usage postgres").await else {
        return;
    };
    streams_without_usage_case(Some(&pg)).await;
}

/// An Anthropic stream failing after two text deltas: `message_start`, `content_block_start`
/// and `ping` are no output; the prompt is the one `message_start` reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_stream_cut_short_bills_its_text_deltas() {
    let m = mock().await;
    script_default(
        &m,
        "claude",
        json!({"reply": "abcdefghijklmnop", "chunks": 4, "midstream_error_after": 2, "usage": "900,40"}),
    );
    let cfg = format!(
        "model_list:\n  - model_name: claude-local\n    litellm_params:\n      model: anthropic/claude-local\n      api_base: {}/d/claude\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: claude\n      input_cost_per_token: {IN}\n      output_cost_per_token: {OUT}\nrouter_settings:\n  num_retries: 0\n  disable_cooldowns: true\ngeneral_settings:\n  master_key: {MASTER}\n",
        m.base_url()
    );
    let gw = GovGateway::start(&cfg);
    for (who, key) in three_callers(&gw).await {
        let body = json!({"model": "claude-local", "max_tokens": 64, "stream": true,
            "messages": [{"role": "user", "content": "hi"}]});
        let r = post_as(&gw, &key, "/v1/messages", &body).await;
        assert_eq!(r.status, 200, "{who}: {}", r.text);
        let text: String = sse_data(&r.text)
            .iter()
            .filter_map(|e| e["delta"]["text"].as_str())
            .collect();
        assert_eq!(text, "abcdefgh", "{who}: {}", r.text);
        assert!(r.text.contains("event: error"), "{who}: {}", r.text);
        let row = row_of(&gw, &r.header("x-litellm-call-id")).await;
        // message_start's usage: 900 prompt tokens (kept), 1 output token (below the 2 relayed)
        assert_row(&row, who, 900, 2, "failure");
    }
}
