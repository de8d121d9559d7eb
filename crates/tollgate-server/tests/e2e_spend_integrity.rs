//! End-to-end: spend integrity, through the real binary against `tollgate-mock`, on SQLite and
//! (with `TOLLGATE_TEST_DATABASE_URL`) Postgres.
//!
//! 1. An upstream that repeats its response id (fixed-id servers, Ollama's wrapping
//!    `chatcmpl-<n>`) still gets one `"LiteLLM_SpendLogs"` row per call: the first call keeps
//!    the id, later ones are stored under their `x-litellm-call-id` with the id in
//!    `metadata.response_id`; the daily roll-ups count each call once, and `/global/spend`
//!    agrees with `/global/spend/report`.
//! 2. An answer without usage is billed the same for every caller (a key with a budget, one
//!    without, the master key): the prompt counted from the request, the completion from the
//!    text produced (a unary answer's content; a stream's content deltas as relayed, not its
//!    envelopes), also for a stream the client cut off or that failed after content.
//!
//! Every deployment is priced 1e-6 USD per prompt token and 2e-6 per completion token, and
//! names a model without a shipped tokenizer, so counted tokens are `ceil(bytes / 4)`.

#[path = "common/governance.rs"]
mod gov;

use std::collections::BTreeSet;

use futures_util::StreamExt;
use gov::*;
use serde_json::{Value, json};

/// USD per prompt / completion token.
const IN: f64 = 1e-6;
const OUT: f64 = 2e-6;
/// The id a fixed-id upstream answers every call with.
const FIXED: &str = "chatcmpl-FAKESPACED";

/// One OpenAI-dialect deployment onto the mock (`/d/{deployment}/v1`), priced.
fn openai(group: &'static str, deployment: &'static str, upstream: &'static str) -> Dep<'static> {
    Dep {
        group,
        deployment,
        upstream,
        id: deployment,
        input_cost: IN,
        output_cost: OUT,
    }
}

/// `GET path` as the master key, 200 asserted.
async fn admin_get(gw: &GovGateway, path: &str) -> Value {
    let r = get_as(gw, MASTER, path).await;
    assert_eq!(r.status, 200, "GET {path}: {}", r.text);
    r.body
}

/// `(api_requests, spend, prompt_tokens, completion_tokens)` summed over the rows of a daily
/// table for one entity, read from the gateway's store (its SQLite file, or `pg`).
async fn daily(
    gw: &GovGateway,
    pg: Option<&PgDb>,
    table: &str,
    col: &str,
    id: &str,
) -> (i64, f64, i64, i64) {
    let sql = format!(
        "SELECT CAST(COALESCE(SUM(\"api_requests\"), 0) AS BIGINT), CAST(COALESCE(SUM(\"spend\"), 0) AS DOUBLE PRECISION), \
         CAST(COALESCE(SUM(\"prompt_tokens\"), 0) AS BIGINT), CAST(COALESCE(SUM(\"completion_tokens\"), 0) AS BIGINT) \
         FROM \"{table}\" WHERE \"{col}\" = $1"
    );
    match pg {
        Some(pg) => {
            let mut c = pg.connect().await;
            let row: (i64, f64, i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .fetch_one(&mut c)
                .await
                .expect("read a daily table");
            let _ = sqlx::Connection::close(c).await;
            row
        }
        None => {
            let store = tollgate_governance::store::SqliteStore::open(
                gw.db_path().to_str().expect("utf-8 path"),
            )
            .await
            .expect("open the gateway's SQLite store");
            let row: (i64, f64, i64, i64) =
                sqlx::query_as(sqlx::AssertSqlSafe(sql.replace("$1", "?")))
                    .bind(id)
                    .fetch_one(store.pool())
                    .await
                    .expect("read a daily table");
            store.pool().close().await;
            row
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Repeated response ids
// ---------------------------------------------------------------------------------------------

/// A chat completion that always carries the id [`FIXED`] and 1000 / 500 tokens of usage
/// (0.002 USD at the test prices).
fn fixed_id_answer() -> Value {
    json!({
        "id": FIXED, "object": "chat.completion", "created": 1, "model": "local-fixed",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello from fake upstream."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    })
}

async fn repeated_response_ids_case(pg: Option<&PgDb>) {
    let m = mock().await;
    script_default(&m, "fixed", json!({"body": fixed_id_answer()}));
    let deps = [openai("fixed", "fixed", "local-fixed")];
    let gw = GovGateway::start(&config(
        &m.base_url(),
        &deps,
        "",
        pg.map(|p| p.url.as_str()),
    ));
    let per_call = 1000.0 * IN + 500.0 * OUT;

    // Another caller (the master key) is answered with the id first.
    let first = chat(&gw, MASTER, &chat_body("fixed", "hi", 16)).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["id"], FIXED);
    let first_call = first.header("x-litellm-call-id");

    let u = post_as(&gw, MASTER, "/user/new", &json!({"user_id": "u-fixed"})).await;
    assert_eq!(u.status, 200, "/user/new: {}", u.text);
    let (key, hash) = generate_key(&gw, json!({"user_id": "u-fixed"})).await;
    let mut calls = Vec::new();
    for i in 0..5 {
        let mut body = chat_body("fixed", &format!("call {i}"), 16);
        body["user"] = json!("end-fixed");
        let r = chat(&gw, &key, &body).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["id"], FIXED, "the client sees the upstream's id");
        assert!(same_dollars(
            r.header_f64("x-litellm-response-cost"),
            per_call
        ));
        calls.push(r.header("x-litellm-call-id"));
    }
    let spend = key_spend_eventually(&gw, &key, 5.0 * per_call).await;
    assert!(same_dollars(spend, 5.0 * per_call), "key spend {spend}");

    // One row per call, each under its call id, the repeated response id kept in metadata.
    let rows = spend_logs_n(&gw, &hash, 5).await;
    assert_eq!(rows.len(), 5, "{rows:?}");
    for row in &rows {
        assert_eq!(row["request_id"], row["litellm_call_id"], "{row}");
        assert_eq!(row["metadata"]["response_id"], FIXED, "{row}");
        assert_eq!(row["prompt_tokens"], 1000, "{row}");
        assert_eq!(row["completion_tokens"], 500, "{row}");
        assert!(same_dollars(row["spend"].as_f64().unwrap_or(0.0), per_call));
    }
    let ids: BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| r["request_id"].as_str())
        .collect();
    assert_eq!(
        ids,
        calls.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );
    assert!(
        same_dollars(rows_spend(&rows), spend),
        "Σ rows == key spend"
    );

    // The response id still finds the call that first had it; a call id finds its own row.
    let by_id = admin_get(&gw, &format!("/spend/logs?request_id={FIXED}")).await;
    let by_id = by_id.as_array().expect("a list");
    assert_eq!(by_id.len(), 1, "{by_id:?}");
    assert_eq!(by_id[0]["litellm_call_id"], first_call.as_str());
    assert_eq!(by_id[0]["api_key"], "litellm-proxy-master-key");
    let third = admin_get(&gw, &format!("/spend/logs?request_id={}", calls[2])).await;
    assert_eq!(third.as_array().map(Vec::len), Some(1), "{third}");
    assert_eq!(third[0]["api_key"], hash.as_str());

    // The whole proxy: the counter and the report over the logs agree.
    let total = 6.0 * per_call;
    let global = admin_get(&gw, "/global/spend").await;
    assert!(
        same_dollars(global["spend"].as_f64().unwrap_or(0.0), total),
        "{global}"
    );
    let report = admin_get(&gw, "/global/spend/report?group_by=api_key").await;
    let mut reported = 0.0;
    let mut of_key = 0.0;
    for day in report.as_array().expect("a list of days") {
        for e in day["api_keys"].as_array().expect("api_keys") {
            let s = e["total_spend"].as_f64().unwrap_or(0.0);
            reported += s;
            if e["api_key"] == hash.as_str() {
                of_key += s;
            }
        }
    }
    assert!(same_dollars(reported, total), "report {reported}: {report}");
    assert!(same_dollars(of_key, 5.0 * per_call), "{report}");

    // The daily roll-ups count every call once.
    let want = (5, 5.0 * per_call, 5000, 2500);
    for (table, col, id) in [
        ("LiteLLM_DailyUserSpend", "user_id", "u-fixed"),
        ("LiteLLM_DailyEndUserSpend", "end_user_id", "end-fixed"),
    ] {
        let got = daily(&gw, pg, table, col, id).await;
        assert_eq!((got.0, got.2, got.3), (want.0, want.2, want.3), "{table}");
        assert!(same_dollars(got.1, want.1), "{table}: {got:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_response_ids_keep_one_row_per_call_sqlite() {
    repeated_response_ids_case(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_response_ids_keep_one_row_per_call_postgres() {
    let Some(pg) = PgDb::create("e2e_spend_integrity repeated_response_ids postgres").await else {
        return;
    };
    repeated_response_ids_case(Some(&pg)).await;
}

// ---------------------------------------------------------------------------------------------
// 2. Answers without usage
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// 3. Unpriced models
// ---------------------------------------------------------------------------------------------

/// Deployments without prices of their own: two dated model ids the built-in table prices
/// (OpenAI, Anthropic) and one model no table knows.
fn unpriced_config(mock: &str, extra: &str, db_url: Option<&str>) -> String {
    let mut s = format!(
        "model_list:\n\
         \x20 - model_name: gpt-dated\n    litellm_params:\n      model: openai/gpt-4o-2024-08-06\n      api_base: {mock}/d/gpt-dated/v1\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: dep-gpt-dated\n\
         \x20 - model_name: claude-dated\n    litellm_params:\n      model: anthropic/claude-sonnet-4-20250514\n      api_base: {mock}/d/claude-dated\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: dep-claude-dated\n\
         \x20 - model_name: house-model\n    litellm_params:\n      model: openai/house-llama-3\n      api_base: {mock}/d/house/v1\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: dep-house\n\
         router_settings:\n  num_retries: 0\n  disable_cooldowns: true\n\
         general_settings:\n  master_key: {MASTER}\n"
    );
    if let Some(u) = db_url {
        s.push_str(&format!("  database_url: \"{u}\"\n"));
    }
    s.push_str(extra);
    s
}

/// The unpriced-deployment warning lines of a log.
fn unpriced_warnings(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("no price: spend through"))
        .collect()
}

async fn unpriced_case(pg: Option<&PgDb>) {
    let m = mock().await;
    for d in ["gpt-dated", "claude-dated", "house"] {
        script_default(&m, d, json!({"usage": "1000,500"}));
    }
    let gw = GovGateway::start(&unpriced_config(
        &m.base_url(),
        "",
        pg.map(|p| p.url.as_str()),
    ));
    // Named at start: the one deployment no price covers, and only it.
    let log = gw.log();
    let warned = unpriced_warnings(&log);
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].contains(
            "1 deployment has no price: spend through it is recorded as $0 and budgets never trip"
        ) && warned[0]
            .contains("model_name \"house-model\" (deployment dep-house): openai/house-llama-3"),
        "{}",
        warned[0]
    );
    assert!(!warned[0].contains("gpt-dated") && !warned[0].contains("claude-dated"));

    // Dated ids are billed at their family's price: 1000 × 2.5e-6 + 500 × 10e-6 for
    // gpt-4o-2024-08-06, 1000 × 3e-6 + 500 × 15e-6 for claude-sonnet-4-20250514.
    let (key, hash) = generate_key(&gw, json!({"max_budget": 0.005})).await;
    let r = chat(&gw, &key, &chat_body("gpt-dated", "hi", 16)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(same_dollars(
        r.header_f64("x-litellm-response-cost"),
        0.0075
    ));
    let c = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &json!({"model": "claude-dated", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text);
    assert!(same_dollars(
        c.header_f64("x-litellm-response-cost"),
        0.0105
    ));
    // ... so the budget trips: 0.0075 spent of 0.005
    let spend = key_spend_eventually(&gw, &key, 0.0075).await;
    assert!(same_dollars(spend, 0.0075), "{spend}");
    let refused = chat(&gw, &key, &chat_body("gpt-dated", "hi", 16)).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert_eq!(refused.error_type(), "budget_exceeded", "{}", refused.text);
    assert_eq!(
        upstream_calls(&m, "gpt-dated").len(),
        1,
        "refused before the upstream"
    );
    let rows = spend_logs_n(&gw, &hash, 1).await;
    assert_eq!(rows.len(), 1);
    assert!(same_dollars(rows_spend(&rows), 0.0075));
    // The unpriced one is still $0, as the warning said.
    let h = chat(&gw, MASTER, &chat_body("house-model", "hi", 16)).await;
    assert_eq!(h.status, 200, "{}", h.text);
    assert!(same_dollars(h.header_f64("x-litellm-response-cost"), 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dated_model_ids_are_priced_and_unpriced_deployments_named_sqlite() {
    unpriced_case(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dated_model_ids_are_priced_and_unpriced_deployments_named_postgres() {
    let Some(pg) = PgDb::create("e2e_spend_integrity unpriced postgres").await else {
        return;
    };
    unpriced_case(Some(&pg)).await;
}

/// A LiteLLM-format price map in a local file (`LITELLM_MODEL_COST_MAP_URL`, here through the
/// config's `environment_variables`) prices what the table does not: no warning at start, the
/// map's price billed; `check-config` says the same before the server runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_litellm_price_map_prices_the_rest() {
    let m = mock().await;
    script_default(&m, "house", json!({"usage": "1000,500"}));
    let dir = TempDir::new("price-map");
    let map = dir.0.join("model_prices_and_context_window.json");
    std::fs::write(
        &map,
        r#"{"sample_spec": {"input_cost_per_token": 0, "litellm_provider": "one of https://docs.litellm.ai/docs/providers"},
            "house-llama-3": {"input_cost_per_token": 1e-7, "output_cost_per_token": 3e-7, "litellm_provider": "openai", "mode": "chat"}}"#,
    )
    .expect("write the map");
    let extra = format!(
        "environment_variables:\n  LITELLM_MODEL_COST_MAP_URL: \"{}\"\n",
        map.display()
    );
    let cfg = unpriced_config(&m.base_url(), &extra, None);

    // check-config, first without the map, then with it
    let cfg_path = dir.0.join("config.yaml");
    let check = |config: &str| {
        std::fs::write(&cfg_path, config).expect("write config");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .arg("check-config")
            .arg(&cfg_path)
            .env_remove("LITELLM_MODEL_COST_MAP_URL")
            .env_remove("DATABASE_URL")
            .env("TOLLGATE_DB_PATH", dir.0.join("unused.db"))
            .output()
            .expect("check-config runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = check(&unpriced_config(&m.base_url(), "", None));
    assert_eq!(code, Some(0), "{out}");
    let warned = unpriced_warnings(&out);
    assert_eq!(warned.len(), 1, "{out}");
    assert!(
        warned[0].starts_with("warning: 1 deployment has no price")
            && warned[0].ends_with(
                ": model_name \"house-model\" (deployment dep-house): openai/house-llama-3"
            ),
        "{out}"
    );
    let (code, out) = check(&cfg);
    assert_eq!(code, Some(0), "{out}");
    assert!(unpriced_warnings(&out).is_empty(), "{out}");
    assert!(
        out.contains(&format!(
            ", then LITELLM_MODEL_COST_MAP_URL={} (1 names), then each deployment's *_cost_per_token",
            map.display()
        )),
        "{out}"
    );

    // the server: no warning, the map's price: 1000 × 1e-7 + 500 × 3e-7
    let gw = GovGateway::start(&cfg);
    let log = gw.log();
    assert!(unpriced_warnings(&log).is_empty(), "{log}");
    let r = chat(&gw, MASTER, &chat_body("house-model", "hi", 16)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let cost = r.header_f64("x-litellm-response-cost");
    assert!(same_dollars(cost, 0.00025), "{cost}");
}
