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
//! 3. Dated model ids (`gpt-4o-2024-08-06`, `claude-sonnet-4-20250514`) are priced by the
//!    built-in table, so their budgets trip; a deployment no price covers is named at start and
//!    by `check-config`, and a local LiteLLM price map prices it.
//!
//! Items 1 and 2 price every deployment at 1e-6 USD per prompt token and 2e-6 per completion
//! token, on models without a shipped tokenizer, so counted tokens are `ceil(bytes / 4)`.
#![expect(
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

// items 2 and 3, in their own files (this one holds item 1 and the shared helpers)
#[path = "spend_integrity/unpriced.rs"]
mod unpriced;
#[path = "spend_integrity/unreported.rs"]
mod unreported;

use std::collections::BTreeSet;

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
