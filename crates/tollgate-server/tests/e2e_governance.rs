//! End-to-end governance: virtual keys, budgets, rate limits, model access and spend,
//! through the real `tollgate` binary in front of the priced mock upstream, using LiteLLM's
//! management API and JSON (`reference/litellm-surface.md` §4–§7) and the governance failures other
//! gateways shipped (`reference/field-failures.md`).
//!
//! Mock token rule (crates/tollgate-mock/README.md): prompt = ceil(bytes / 4) + 3 per message,
//! completion = ceil(reply bytes / 4), the reply cut to `max_tokens` × 4 bytes. So the message
//! `"hello"` with `max_tokens: 8` always costs 5 prompt + 8 completion tokens (the reply
//! "This is a mock response to: hello" is 33 bytes, cut to 32).
//!
//! Spend is written behind: the tests poll `/key/info` and `/spend/logs` (≤ ~5 s) and assert
//! on values, never on time. With `TOLLGATE_TEST_DATABASE_URL` set, the budget, concurrency and
//! secrets scenarios also run on Postgres, each in a fresh database, and the tests then read
//! LiteLLM's tables (`"LiteLLM_VerificationToken"`, `"LiteLLM_SpendLogs"`) directly.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use gov::*;
use serde_json::{Value, json};

/// Input price of the `priced` deployment, USD per token.
const X: f64 = 0.001;
/// Output price of the `priced` deployment, USD per token.
const Y: f64 = 0.002;
/// Cost of one `"hello"` / `max_tokens: 8` call on `priced`: 5 × X + 8 × Y.
const C1: f64 = 0.021;
/// Output price of the `flat` deployment (input is free there, so the admission estimate
/// `max_tokens × price` equals the actual cost exactly and the in-flight bound is computable).
const FLAT_Y: f64 = 0.001;
/// Cost of one `"hello"` / `max_tokens: 8` call on `flat`: 8 × FLAT_Y; also its admission
/// estimate.
const C2: f64 = 0.008;
/// Budget covering 10.5 calls on `flat`.
const BUDGET_10: f64 = 0.084;

fn priced() -> Dep<'static> {
    Dep {
        group: "priced",
        deployment: "priced",
        upstream: "mock-gpt",
        id: "dep-priced",
        input_cost: X,
        output_cost: Y,
    }
}

fn flat() -> Dep<'static> {
    Dep {
        group: "flat",
        deployment: "flat",
        upstream: "mock-flat",
        id: "dep-flat",
        input_cost: 0.0,
        output_cost: FLAT_Y,
    }
}

fn hello(model: &str) -> Value {
    chat_body(model, "hello", 8)
}

/// Asserts LiteLLM's over-budget error: 422, `budget_exceeded`, code "422", message with the
/// current cost and max budget (refused when spend >= max_budget).
fn assert_budget_exceeded(r: &Resp, max_budget: &str) {
    assert_eq!(r.status, 422, "{}", r.text);
    let e = &r.body["error"];
    assert_eq!(e["type"], "budget_exceeded", "{}", r.text);
    assert_eq!(e["code"], "422", "{}", r.text);
    assert_eq!(e["param"], Value::Null, "{}", r.text);
    let msg = e["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with("Budget has been exceeded!"), "{msg}");
    assert!(msg.contains("Current cost: "), "{msg}");
    assert!(msg.contains(&format!("Max budget: {max_budget}")), "{msg}");
    // LiteLLM's headers on errors too: cost 0, the key's spend and cap
    assert_eq!(r.header("x-litellm-response-cost"), "0");
    assert!(r.header_f64("x-litellm-key-spend") >= 0.0);
    if msg.contains("Key=") {
        assert_eq!(
            r.header_f64("x-litellm-key-max-budget"),
            max_budget.parse::<f64>().unwrap()
        );
    }
}

fn assert_rows_priced(rows: &[Value], hash: &str, prompt: u64, completion: u64, cost: f64) {
    for row in rows {
        assert_eq!(
            row["api_key"], hash,
            "spend rows carry the key's hash: {row}"
        );
        assert_eq!(row["prompt_tokens"], prompt, "{row}");
        assert_eq!(row["completion_tokens"], completion, "{row}");
        let spend = row["spend"].as_f64().unwrap_or(-1.0);
        assert!(
            same_dollars(spend, cost),
            "row spend {spend} != {cost}: {row}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Budget lockout
// ---------------------------------------------------------------------------------------------

/// Calls until 422, checks headers, upstream count, `/key/info` vs `/spend/logs`, then raises
/// the budget and calls once more. Returns the key hash and its final spend (4 × C1, 4 rows).
async fn budget_lockout(gw: &GovGateway, m: &tollgate_mock::MockHandle) -> (String, f64) {
    // Budget 2.5 calls: spend 0, C1, 2·C1 are < 0.0525 → admitted; 3·C1 = 0.063 → refused.
    let (key, hash) = generate_key(gw, json!({"max_budget": 0.0525, "key_alias": "lockout"})).await;
    let mut ids = BTreeSet::new();
    let mut refused = None;
    for _ in 0..10 {
        let r = chat(gw, &key, &hello("priced")).await;
        if r.status != 200 {
            refused = Some(r);
            break;
        }
        let n = ids.len() as f64 + 1.0;
        assert!(same_dollars(r.header_f64("x-litellm-response-cost"), C1));
        let key_spend_header = r.header_f64("x-litellm-key-spend");
        assert!(
            same_dollars(key_spend_header, n * C1),
            "x-litellm-key-spend {key_spend_header} after call {n} (includes this call)"
        );
        assert!(!r.header("x-litellm-call-id").is_empty());
        assert_eq!(r.header("x-litellm-model-id"), "dep-priced");
        assert_eq!(r.body["usage"]["prompt_tokens"], 5);
        assert_eq!(r.body["usage"]["completion_tokens"], 8);
        ids.insert(r.body["id"].as_str().unwrap_or_default().to_owned());
    }
    let refused = refused.expect("a key with max_budget is refused within 10 calls");
    assert_eq!(ids.len(), 3, "calls admitted while spend < max_budget");
    assert_budget_exceeded(&refused, "0.0525");
    assert_eq!(
        upstream_calls(m, "priced").len(),
        3,
        "the refused request never reaches the upstream"
    );

    let spend = key_spend_eventually(gw, &key, 3.0 * C1).await;
    assert!(same_dollars(spend, 3.0 * C1), "key spend {spend}");
    let rows = spend_logs_n(gw, &hash, 3).await;
    assert_eq!(rows.len(), 3, "one spend row per admitted call: {rows:?}");
    assert_rows_priced(&rows, &hash, 5, 8, C1);
    assert!(
        same_dollars(rows_spend(&rows), spend),
        "/key/info spend == Σ spend logs"
    );
    for row in &rows {
        assert_eq!(row["model_group"], "priced", "{row}");
    }
    let row_ids: BTreeSet<String> = rows
        .iter()
        .map(|r| r["request_id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(row_ids, ids, "request_id is the response id");

    // Raising the budget is in force on the very next request.
    let u = post_as(
        gw,
        MASTER,
        "/key/update",
        &json!({"key": key, "max_budget": 0.1}),
    )
    .await;
    assert_eq!(u.status, 200, "/key/update: {}", u.text);
    let r = chat(gw, &key, &hello("priced")).await;
    assert_eq!(r.status, 200, "after /key/update: {}", r.text);
    assert_eq!(upstream_calls(m, "priced").len(), 4);
    let spend = key_spend_eventually(gw, &key, 4.0 * C1).await;
    assert!(same_dollars(spend, 4.0 * C1), "key spend {spend}");
    let info = key_info(gw, &key).await;
    assert!(same_dollars(
        info["max_budget"].as_f64().unwrap_or(0.0),
        0.1
    ));
    let rows = spend_logs_n(gw, &hash, 4).await;
    assert_eq!(rows.len(), 4);
    assert!(same_dollars(rows_spend(&rows), spend));
    (hash, spend)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_lockout_then_update_restores_service() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &[priced()], "", None));
    budget_lockout(&gw, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_lockout_then_update_restores_service_postgres() {
    let Some(db) = PgDb::create("budget_lockout").await else {
        return;
    };
    let m = mock().await;
    let mut gw = GovGateway::start(&config(&m.base_url(), &[priced()], "", Some(&db.url)));
    let (hash, spend) = budget_lockout(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    assert_pg_key(&db, &hash, spend, 4).await;
}

/// LiteLLM's tables exist; the key's row holds its spend; `n` spend rows carry its hash and
/// sum to that spend (read after a graceful stop, which flushes write-behind spend).
async fn assert_pg_key(db: &PgDb, hash: &str, spend: f64, n: usize) {
    let tables = db.tables().await;
    for t in ["LiteLLM_VerificationToken", "LiteLLM_SpendLogs"] {
        assert!(
            tables.iter().any(|x| x == t),
            "table {t} missing: {tables:?}"
        );
    }
    let tokens = db.token_rows().await;
    let row = tokens.iter().find(|(t, _)| t == hash);
    let Some((_, s)) = row else {
        panic!("no LiteLLM_VerificationToken row for the key hash: {tokens:?}")
    };
    assert!(same_dollars(*s, spend), "token row spend {s} != {spend}");
    let rows: Vec<_> = db
        .spend_rows()
        .await
        .into_iter()
        .filter(|(k, _)| k == hash)
        .collect();
    assert_eq!(rows.len(), n, "LiteLLM_SpendLogs rows for the key");
    let sum: f64 = rows.iter().map(|(_, s)| s).sum();
    assert!(
        same_dollars(sum, spend),
        "Σ LiteLLM_SpendLogs.spend {sum} != {spend}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Concurrency: 50 requests against a budget covering 10
// ---------------------------------------------------------------------------------------------

/// Fires the 50 requests at once (barrier), each with `max_tokens: 8`, keys taken round-robin;
/// returns the responses.
async fn fire_50(gw: &GovGateway, keys: &[String]) -> Vec<Resp> {
    let c = client();
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let url = gw.url("/v1/chat/completions");
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let (c, b, url) = (c.clone(), Arc::clone(&barrier), url.clone());
            let key = keys[i % keys.len()].clone();
            tokio::spawn(async move {
                b.wait().await;
                let r = c
                    .post(url)
                    .bearer_auth(key)
                    .json(&hello("flat"))
                    .send()
                    .await
                    .expect("request reaches the gateway");
                read(r).await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(50);
    for t in tasks {
        out.push(t.await.expect("task"));
    }
    out
}

/// The admitted count is 10 or 11 (spend + reserved < 10.5 calls admits 10 or 11 depending on
/// whether the rule adds the request's own estimate), every refusal is 422 budget_exceeded,
/// and the upstream saw exactly the admitted requests. Returns the admitted count.
fn check_50(results: &[Resp], m: &tollgate_mock::MockHandle) -> usize {
    let n_ok = results.iter().filter(|r| r.status == 200).count();
    for r in results.iter().filter(|r| r.status != 200) {
        assert_budget_exceeded(r, "0.084");
    }
    assert!(
        (10..=11).contains(&n_ok),
        "admitted {n_ok} of 50 against a budget of 10.5 calls (estimate == actual cost)"
    );
    assert_eq!(
        upstream_calls(m, "flat").len(),
        n_ok,
        "the upstream saw no more requests than were admitted"
    );
    n_ok
}

/// Recorded spend is exact and within the documented bound: spend < max_budget + one
/// request's estimate (C2 here).
fn check_bound(spend: f64, n_ok: usize) {
    assert!(
        same_dollars(spend, n_ok as f64 * C2),
        "spend {spend} for {n_ok} calls"
    );
    assert!(
        spend <= BUDGET_10 + C2 + EPS,
        "spend {spend} exceeds budget {BUDGET_10} + in-flight bound {C2}"
    );
}

async fn concurrent_key_budget(
    gw: &GovGateway,
    m: &tollgate_mock::MockHandle,
) -> (String, f64, usize) {
    // Every upstream answer takes 300 ms, so all admissions happen while others are in flight.
    script_default(m, "flat", json!({"delay_ms": 300}));
    let (key, hash) = generate_key(gw, json!({"max_budget": BUDGET_10})).await;
    let results = fire_50(gw, std::slice::from_ref(&key)).await;
    let n_ok = check_50(&results, m);
    let spend = key_spend_eventually(gw, &key, n_ok as f64 * C2).await;
    check_bound(spend, n_ok);
    let rows = spend_logs_n(gw, &hash, n_ok).await;
    assert_eq!(rows.len(), n_ok, "one spend row per admitted request");
    assert!(
        same_dollars(rows_spend(&rows), spend),
        "/key/info spend == Σ spend logs"
    );
    (hash, spend, n_ok)
}

async fn concurrent_team_budget(
    gw: &GovGateway,
    m: &tollgate_mock::MockHandle,
) -> (String, [(String, f64, usize); 2]) {
    script_default(m, "flat", json!({"delay_ms": 300}));
    let team = new_team(gw, json!({"team_alias": "shared", "max_budget": BUDGET_10})).await;
    let (ka, ha) = generate_key(gw, json!({"team_id": team})).await;
    let (kb, hb) = generate_key(gw, json!({"team_id": team})).await;
    let results = fire_50(gw, &[ka.clone(), kb.clone()]).await;
    let n_ok = check_50(&results, m);
    let team_spend = poll(
        || async {
            let r = get_as(gw, MASTER, &format!("/team/info?team_id={team}")).await;
            assert_eq!(r.status, 200, "/team/info: {}", r.text);
            r.body["team_info"]["spend"].as_f64().unwrap_or(0.0)
        },
        |s| same_dollars(*s, n_ok as f64 * C2),
    )
    .await;
    check_bound(team_spend, n_ok);
    let sa = key_spend(gw, &ka).await;
    let sb = key_spend(gw, &kb).await;
    assert!(
        same_dollars(sa + sb, team_spend),
        "keys {sa} + {sb} != team {team_spend}"
    );
    let rows_a = spend_logs(gw, &ha).await;
    let rows_b = spend_logs(gw, &hb).await;
    assert_eq!(rows_a.len() + rows_b.len(), n_ok);
    assert!(same_dollars(rows_spend(&rows_a), sa));
    assert!(same_dollars(rows_spend(&rows_b), sb));
    for row in rows_a.iter().chain(&rows_b) {
        assert_eq!(row["team_id"], team.as_str(), "{row}");
    }
    (team, [(ha, sa, rows_a.len()), (hb, sb, rows_b.len())])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_stay_within_key_budget() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &[flat()], "", None));
    concurrent_key_budget(&gw, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_stay_within_shared_team_budget() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &[flat()], "", None));
    concurrent_team_budget(&gw, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_stay_within_key_budget_postgres() {
    let Some(db) = PgDb::create("concurrent_key").await else {
        return;
    };
    let m = mock().await;
    let mut gw = GovGateway::start(&config(&m.base_url(), &[flat()], "", Some(&db.url)));
    let (hash, spend, n) = concurrent_key_budget(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    assert_pg_key(&db, &hash, spend, n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_stay_within_shared_team_budget_postgres() {
    let Some(db) = PgDb::create("concurrent_team").await else {
        return;
    };
    let m = mock().await;
    let mut gw = GovGateway::start(&config(&m.base_url(), &[flat()], "", Some(&db.url)));
    let (team, keys) = concurrent_team_budget(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    let mut total = 0.0;
    for (hash, spend, n) in &keys {
        assert_pg_key(&db, hash, *spend, *n).await;
        total += spend;
    }
    let team_spend = db.team_spend(&team).await.expect("LiteLLM_TeamTable row");
    assert!(
        same_dollars(team_spend, total),
        "team row spend {team_spend} != {total}"
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Streamed billing
// ---------------------------------------------------------------------------------------------

/// The `data:` JSON events of an SSE body (skipping `[DONE]`).
fn sse_events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_are_billed_from_usage_and_hangups_for_what_was_produced() {
    let m = mock().await;
    let drip = Dep {
        group: "drip",
        deployment: "drip",
        upstream: "mock-drip",
        id: "dep-drip",
        input_cost: X,
        output_cost: Y,
    };
    // 2000 bytes = 500 completion tokens, in 100 events 30 ms apart (3 s if read to the end).
    let reply = "word ".repeat(400);
    script_default(
        &m,
        "drip",
        json!({"reply": reply, "chunks": 100, "chunk_delay_ms": 30}),
    );
    let gw = GovGateway::start(&config(&m.base_url(), &[priced(), drip], "", None));
    let (key, hash) = generate_key(&gw, json!({"key_alias": "streams"})).await;

    // (a) Unary and streamed-with-usage calls with the same usage are billed the same.
    let unary = chat(&gw, &key, &hello("priced")).await;
    assert_eq!(unary.status, 200, "{}", unary.text);
    assert!(same_dollars(
        unary.header_f64("x-litellm-response-cost"),
        C1
    ));
    let mut body = hello("priced");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let streamed = chat(&gw, &key, &body).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert!(!streamed.header("x-litellm-call-id").is_empty());
    assert_eq!(streamed.header("x-litellm-model-id"), "dep-priced");
    let events = sse_events(&streamed.text);
    let usage: Vec<&Value> = events
        .iter()
        .filter(|e| e["usage"].is_object())
        .map(|e| &e["usage"])
        .collect();
    assert_eq!(usage.len(), 1, "one final usage chunk: {}", streamed.text);
    assert_eq!(usage[0]["prompt_tokens"], 5);
    assert_eq!(usage[0]["completion_tokens"], 8);
    let rows = spend_logs_n(&gw, &hash, 2).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_rows_priced(&rows, &hash, 5, 8, C1);
    let spend = key_spend_eventually(&gw, &key, 2.0 * C1).await;
    assert!(
        same_dollars(spend, 2.0 * C1),
        "streamed traffic counts: {spend}"
    );

    // (b) A stream the client drops after 3 content events.
    let mut body = chat_body("drip", "hello", 1000);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let resp = client()
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&body)
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
    for _ in 0..100 {
        let Some(Ok(chunk)) = stream.next().await else {
            break;
        };
        seen.push_str(&String::from_utf8_lossy(&chunk));
        let contents = sse_events(&seen)
            .iter()
            .filter(|e| e["choices"][0]["delta"]["content"].is_string())
            .count();
        if contents >= 3 {
            break;
        }
    }
    drop(stream);
    let stream_id = sse_events(&seen)
        .first()
        .and_then(|e| e["id"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(!stream_id.is_empty(), "read a first event: {seen}");
    // The gateway cancels the upstream: the mock sees its client go away.
    let disconnected = poll(
        || async { upstream_calls(&m, "drip") },
        |o| o.iter().any(|o| o.client_disconnected),
    )
    .await;
    assert_eq!(disconnected.len(), 1);
    assert!(disconnected[0].client_disconnected, "upstream cancelled");

    let rows = spend_logs_n(&gw, &hash, 3).await;
    assert_eq!(rows.len(), 3, "the cut stream has its spend row: {rows:?}");
    let cut: Vec<&Value> = rows
        .iter()
        .filter(|r| {
            r["request_id"] == stream_id.as_str()
                || (!call_id.is_empty() && r["litellm_call_id"] == call_id.as_str())
        })
        .collect();
    assert_eq!(
        cut.len(),
        1,
        "row of the cut stream ({stream_id}): {rows:?}"
    );
    let row = cut[0];
    let prompt = row["prompt_tokens"].as_u64().unwrap_or(0);
    let completion = row["completion_tokens"].as_u64().unwrap_or(0);
    let cut_spend = row["spend"].as_f64().unwrap_or(0.0);
    assert!(
        (1..500).contains(&completion),
        "billed for the output produced before the hang-up, not 0 and not the full 500: {row}"
    );
    assert!(
        same_dollars(cut_spend, prompt as f64 * X + completion as f64 * Y),
        "cut stream priced from its tokens: {row}"
    );
    let full = 5.0 * X + 500.0 * Y;
    assert!(
        cut_spend > 0.0 && cut_spend < full,
        "0 < {cut_spend} < {full}"
    );
    let spend = key_spend_eventually(&gw, &key, 2.0 * C1 + cut_spend).await;
    assert!(
        same_dollars(spend, rows_spend(&rows)),
        "/key/info == Σ spend logs"
    );
}

// ---------------------------------------------------------------------------------------------
// 4. TPM counts tokens, RPM counts requests
// ---------------------------------------------------------------------------------------------

fn assert_rate_limited(r: &Resp) {
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.error_type(), "rate_limit_error", "{}", r.text);
    assert_eq!(r.body["error"]["code"], "429", "{}", r.text);
    let ra = r.header("retry-after");
    let secs: u64 = ra
        .parse()
        .unwrap_or_else(|_| panic!("retry-after {ra:?} is an integer"));
    assert!(
        (1..=60).contains(&secs),
        "retry-after {secs} within the 60 s window"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpm_counts_tokens_and_rpm_counts_requests() {
    let m = mock().await;
    let tpm = Dep {
        group: "tpm",
        deployment: "tpm",
        upstream: "mock-tpm",
        id: "dep-tpm",
        input_cost: X,
        output_cost: Y,
    };
    // Upstream reports 100 prompt + 50 completion tokens for every call.
    script_default(&m, "tpm", json!({"usage": [100, 50]}));
    let gw = GovGateway::start(&config(&m.base_url(), &[priced(), tpm], "", None));

    // TPM 30: the first request of the window is admitted (its estimate, 5 + 8, fits) and is
    // charged its real 150 tokens; the second is refused.
    let (k1, h1) = generate_key(&gw, json!({"tpm_limit": 30})).await;
    let r1 = chat(&gw, &k1, &hello("tpm")).await;
    assert_eq!(r1.status, 200, "{}", r1.text);
    assert_eq!(r1.header("x-ratelimit-api_key-limit-tokens"), "30");
    assert_eq!(
        r1.header("x-ratelimit-api_key-remaining-tokens"),
        "0",
        "150 real tokens used a 30-token window"
    );
    assert!(same_dollars(
        r1.header_f64("x-litellm-response-cost"),
        100.0 * X + 50.0 * Y
    ));
    let r2 = chat(&gw, &k1, &hello("tpm")).await;
    assert_rate_limited(&r2);
    assert_eq!(
        upstream_calls(&m, "tpm").len(),
        1,
        "the 429 never reached the upstream"
    );
    let rows = spend_logs_n(&gw, &h1, 1).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_rows_priced(&rows, &h1, 100, 50, 100.0 * X + 50.0 * Y);

    // RPM 2: remaining-requests 1, 0, then 429.
    let (k2, _) = generate_key(&gw, json!({"rpm_limit": 2})).await;
    for remaining in ["1", "0"] {
        let r = chat(&gw, &k2, &hello("priced")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.header("x-ratelimit-api_key-limit-requests"), "2");
        assert_eq!(
            r.header("x-ratelimit-api_key-remaining-requests"),
            remaining
        );
    }
    let r3 = chat(&gw, &k2, &hello("priced")).await;
    assert_rate_limited(&r3);
    assert_eq!(upstream_calls(&m, "priced").len(), 2);
}

// ---------------------------------------------------------------------------------------------
// 5. Model access after alias / URL / wildcard resolution; /v1/models
// ---------------------------------------------------------------------------------------------

/// What a key gets for a model name.
#[derive(Clone, Copy)]
enum Access {
    /// 200, served by this mock deployment.
    Ok(&'static str),
    /// 403 `*_model_access_denied`, `code: "403"`, no upstream call.
    Denied,
    /// A name this key cannot even resolve (a team alias seen from outside the team): refused
    /// with 404 `model_not_found` (Tollgate's answer for a name it cannot route, OpenAI's
    /// status), 400 (LiteLLM's) or 403, no upstream call.
    Unknown,
}

/// Calls every candidate model as `key`; asserts each outcome and that `/v1/models` lists
/// exactly the models that returned 200.
async fn check_access(
    gw: &GovGateway,
    m: &tollgate_mock::MockHandle,
    key: &str,
    who: &str,
    expect: &[(&str, Access)],
) {
    let mut allowed = BTreeSet::new();
    for (model, access) in expect {
        m.drain_observations();
        let r = chat(gw, key, &hello(model)).await;
        let seen = m.drain_observations();
        match access {
            Access::Ok(d) => {
                assert_eq!(r.status, 200, "{who} → {model}: {}", r.text);
                assert_eq!(seen.len(), 1, "{who} → {model}");
                assert_eq!(seen[0].deployment.as_deref(), Some(*d), "{who} → {model}");
                allowed.insert(model.to_string());
            }
            Access::Denied => {
                assert_eq!(r.status, 403, "{who} → {model}: {}", r.text);
                let t = r.error_type();
                assert!(
                    t.ends_with("_model_access_denied"),
                    "{who} → {model}: {}",
                    r.text
                );
                assert_eq!(r.body["error"]["code"], "403", "{}", r.text);
                assert!(
                    seen.is_empty(),
                    "{who} → {model}: a 403 reached the upstream"
                );
            }
            Access::Unknown => {
                assert!(
                    matches!(r.status, 400 | 403 | 404),
                    "{who} → {model}: {} {}",
                    r.status,
                    r.text
                );
                assert!(seen.is_empty(), "{who} → {model}: reached the upstream");
            }
        }
    }
    let r = get_as(gw, key, "/v1/models").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let listed: BTreeSet<String> = r.body["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        listed, allowed,
        "{who}: /v1/models lists exactly the models the key may call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aliases_urls_and_wildcards_never_widen_a_key_allow_list() {
    let m = mock().await;
    let dep = |group, deployment, upstream, id| Dep {
        group,
        deployment,
        upstream,
        id,
        input_cost: X,
        output_cost: Y,
    };
    let deps = [
        dep("cheap", "cheap", "mock-cheap", "dep-cheap"),
        dep("pricey", "pricey", "mock-pricey", "dep-pricey"),
        dep("openai/*", "wild", "*", "dep-wild"),
    ];
    let gw = GovGateway::start(&config(
        &m.base_url(),
        &deps,
        "  model_group_alias: {\"fast-alias\": \"cheap\"}\n",
        None,
    ));
    let team = new_team(
        &gw,
        json!({"team_alias": "t1", "models": ["cheap", "pricey"],
               "model_aliases": {"team-fast": "cheap"}}),
    )
    .await;
    let (ka, _) = generate_key(&gw, json!({"team_id": team, "models": ["pricey"]})).await;
    let (kb, _) = generate_key(&gw, json!({"team_id": team, "models": ["cheap"]})).await;
    let (kw, _) = generate_key(&gw, json!({"models": ["openai/gpt-4o-mini"]})).await;

    // The team alias and the router alias resolve to `cheap`, outside A's list.
    check_access(
        &gw,
        &m,
        &ka,
        "key A [pricey]",
        &[
            ("cheap", Access::Denied),
            ("pricey", Access::Ok("pricey")),
            ("team-fast", Access::Denied),
            ("fast-alias", Access::Denied),
            ("openai/gpt-4o", Access::Denied),
            ("openai/gpt-4o-mini", Access::Denied),
        ],
    )
    .await;
    // A key whose list holds the target may use the aliases.
    check_access(
        &gw,
        &m,
        &kb,
        "key B [cheap]",
        &[
            ("cheap", Access::Ok("cheap")),
            ("pricey", Access::Denied),
            ("team-fast", Access::Ok("cheap")),
            ("fast-alias", Access::Ok("cheap")),
            ("openai/gpt-4o", Access::Denied),
            ("openai/gpt-4o-mini", Access::Denied),
        ],
    )
    .await;
    // A wildcard group does not open its siblings.
    check_access(
        &gw,
        &m,
        &kw,
        "key W [openai/gpt-4o-mini]",
        &[
            ("cheap", Access::Denied),
            ("pricey", Access::Denied),
            ("team-fast", Access::Unknown),
            ("fast-alias", Access::Denied),
            ("openai/gpt-4o", Access::Denied),
            ("openai/gpt-4o-mini", Access::Ok("wild")),
        ],
    )
    .await;
    let w = chat(&gw, &kw, &hello("openai/gpt-4o")).await;
    assert_eq!(w.error_type(), "key_model_access_denied", "{}", w.text);
    assert_eq!(w.body["error"]["param"], "model", "{}", w.text);

    // A model named in the URL.
    m.drain_observations();
    let no_model = json!({"messages": [{"role": "user", "content": "hello"}], "max_tokens": 8});
    let r = post_as(&gw, &ka, "/v1/chat/completions?model=cheap", &no_model).await;
    assert!(
        r.status == 403 || r.status == 400,
        "?model=cheap without a body model: {} {}",
        r.status,
        r.text
    );
    let r = post_as(
        &gw,
        &ka,
        "/openai/deployments/cheap/chat/completions?api-version=2024-10-21",
        &no_model,
    )
    .await;
    assert!(
        [400, 403, 404].contains(&r.status),
        "Azure-style path naming cheap: {} {}",
        r.status,
        r.text
    );
    let r = post_as(
        &gw,
        &kw,
        "/v1/chat/completions?model=openai/gpt-4o",
        &no_model,
    )
    .await;
    assert!(
        r.status == 403 || r.status == 400,
        "{} {}",
        r.status,
        r.text
    );
    assert!(
        m.drain_observations().is_empty(),
        "no URL-named model reached the upstream"
    );
    // Body names an allowed model, the query another: never routed to the other.
    let r = post_as(
        &gw,
        &ka,
        "/v1/chat/completions?model=cheap",
        &hello("pricey"),
    )
    .await;
    let seen = m.drain_observations();
    match r.status {
        200 => {
            assert_eq!(seen.len(), 1);
            assert_eq!(
                seen[0].deployment.as_deref(),
                Some("pricey"),
                "routed to the allowed model"
            );
        }
        400 | 403 => assert!(seen.is_empty(), "a refusal reached the upstream"),
        s => panic!("body pricey + ?model=cheap: {s} {}", r.text),
    }
}

// ---------------------------------------------------------------------------------------------
// 6. No secrets in logs, store or errors
// ---------------------------------------------------------------------------------------------

const CANARIES: [&str; 3] = ["CANARY1", "CANARY2", "CANARY3"];

/// Drives the master key, a custom virtual key and a bogus key through the success,
/// budget-exceeded, invalid-key, `/key/info` and `/key/update` paths. Returns the key hash.
async fn secrets_scenario(gw: &GovGateway, m: &tollgate_mock::MockHandle) -> String {
    let custom = "sk-test-CANARY2";
    let g = post_as(
        gw,
        MASTER,
        "/key/generate",
        &json!({"key": custom, "max_budget": 0.01, "key_alias": "canary"}),
    )
    .await;
    assert_eq!(g.status, 200, "{}", g.text);
    assert_eq!(g.body["key"], custom, "the custom key is returned once");
    let hash = sha256_hex(custom);
    assert_eq!(g.body["token_id"], hash.as_str());

    let ok = chat(gw, custom, &hello("priced")).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let over = chat(gw, custom, &hello("priced")).await;
    assert_budget_exceeded(&over, "0.01");
    for c in CANARIES {
        assert!(
            !over.text.contains(c),
            "budget error leaks {c}: {}",
            over.text
        );
    }
    let bogus = chat(gw, "sk-bogus-CANARY3", &hello("priced")).await;
    assert_eq!(bogus.status, 401, "{}", bogus.text);
    for c in CANARIES {
        assert!(
            !bogus.text.contains(c),
            "auth error leaks {c}: {}",
            bogus.text
        );
    }
    let info = get_as(gw, MASTER, &format!("/key/info?key={custom}")).await;
    assert_eq!(info.status, 200, "{}", info.text);
    let u = post_as(
        gw,
        MASTER,
        "/key/update",
        &json!({"key": custom, "max_budget": 1.0}),
    )
    .await;
    assert_eq!(u.status, 200, "{}", u.text);
    let again = chat(gw, custom, &hello("priced")).await;
    assert_eq!(again.status, 200, "{}", again.text);

    let rows = spend_logs_n(gw, &hash, 2).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in &rows {
        assert_eq!(row["api_key"], hash.as_str(), "{row}");
        let text = row.to_string();
        for c in CANARIES {
            assert!(!text.contains(c), "spend row holds {c}: {text}");
        }
    }
    // The upstream sees the deployment's key only.
    for o in m.observations() {
        let seen = format!("{:?} {} {:?}", o.headers, o.body, o.query);
        for c in CANARIES {
            assert!(!seen.contains(c), "the upstream received {c}");
        }
    }
    hash
}

fn assert_log_clean(log: &str) {
    assert!(!log.is_empty(), "the gateway logged something");
    for c in CANARIES {
        let hits: Vec<&str> = log.lines().filter(|l| l.contains(c)).collect();
        assert!(
            hits.is_empty(),
            "{c} in {} log line(s), e.g. {:?}",
            hits.len(),
            hits.first()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_raw_key_in_logs_store_or_errors() {
    let m = mock().await;
    let mut gw = GovGateway::start_with_log(&config(&m.base_url(), &[priced()], "", None), "debug");
    secrets_scenario(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    assert_log_clean(&gw.log());
    assert!(
        gw.db_path().exists(),
        "the default store is <config dir>/tollgate.db"
    );
    for c in CANARIES {
        let hits = grep_dir(gw.dir(), c.as_bytes());
        assert!(hits.is_empty(), "{c} in the SQLite files: {hits:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_raw_key_in_logs_store_or_errors_postgres() {
    let Some(db) = PgDb::create("no_secrets").await else {
        return;
    };
    let m = mock().await;
    let mut gw = GovGateway::start_with_log(
        &config(&m.base_url(), &[priced()], "", Some(&db.url)),
        "debug",
    );
    let hash = secrets_scenario(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    assert_log_clean(&gw.log());
    for c in CANARIES {
        let hits = db.grep_tables(c).await;
        assert!(hits.is_empty(), "{c} in Postgres rows: {hits:?}");
    }
    assert_pg_key(&db, &hash, 2.0 * C1, 2).await;
}

// ---------------------------------------------------------------------------------------------
// 7. Blocked and expired keys; /key/info permissions
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_and_expired_keys_are_401_and_key_info_is_owner_only() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &[priced()], "", None));
    let (expiring, _) = generate_key(&gw, json!({"duration": "1s"})).await;
    let (k1, h1) = generate_key(&gw, json!({"key_alias": "one"})).await;
    let (k3, h3) = generate_key(&gw, json!({"key_alias": "three"})).await;

    assert_eq!(chat(&gw, &k1, &hello("priced")).await.status, 200);
    let b = post_as(&gw, MASTER, "/key/block", &json!({"key": k1})).await;
    assert_eq!(b.status, 200, "{}", b.text);
    let r = chat(&gw, &k1, &hello("priced")).await;
    assert_eq!(r.status, 401, "blocked key: {}", r.text);
    let u = post_as(&gw, MASTER, "/key/unblock", &json!({"key": k1})).await;
    assert_eq!(u.status, 200, "{}", u.text);
    assert_eq!(
        chat(&gw, &k1, &hello("priced")).await.status,
        200,
        "unblocked"
    );
    assert_eq!(
        upstream_calls(&m, "priced").len(),
        2,
        "the blocked call never left"
    );

    // Expired: created with duration 1s; 2 s later it is refused.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let r = chat(&gw, &expiring, &hello("priced")).await;
    assert_eq!(r.status, 401, "expired key: {}", r.text);
    assert_eq!(upstream_calls(&m, "priced").len(), 2);

    // /key/info: another key's is 403 for a non-admin key; its own is 200.
    let r = get_as(&gw, &k3, &format!("/key/info?key={k1}")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(!r.text.contains(&k1));
    let r = get_as(&gw, &k3, &format!("/key/info?key={h1}")).await;
    assert_eq!(r.status, 403, "by hash too: {}", r.text);
    let r = get_as(&gw, &k3, &format!("/key/info?key={k3}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["info"]["key_alias"], "three");
    let r = get_as(&gw, &k3, "/key/info").await;
    assert_eq!(r.status, 200, "own key without ?key=: {}", r.text);
    assert_eq!(r.body["info"]["key_alias"], "three");
    let r = get_as(&gw, MASTER, &format!("/key/info?key={h3}")).await;
    assert_eq!(r.status, 200, "admin reads any key by hash: {}", r.text);
    assert_eq!(r.body["info"]["key_alias"], "three");
}

// ---------------------------------------------------------------------------------------------
// 8. Budget window reset
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_resets_after_its_window() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &[priced()], "", None));
    // One call (C1 = 0.021) exhausts 0.01; the window is 2 s.
    let (key, _) = generate_key(&gw, json!({"max_budget": 0.01, "budget_duration": "2s"})).await;
    let info = key_info(&gw, &key).await;
    assert!(
        info["budget_reset_at"].is_string(),
        "budget_reset_at is set on create: {info}"
    );
    assert_eq!(info["budget_duration"], "2s");

    // Call until refused (a window boundary may fall between two calls, so allow a few).
    let mut oks = 0;
    let mut refused = None;
    for _ in 0..6 {
        let r = chat(&gw, &key, &hello("priced")).await;
        match r.status {
            200 => oks += 1,
            _ => {
                refused = Some(r);
                break;
            }
        }
    }
    let refused = refused.expect("an exhausted key is refused");
    assert_budget_exceeded(&refused, "0.01");
    assert_eq!(upstream_calls(&m, "priced").len(), oks);

    // After the window the spend is back to 0 and the key is admitted again (bounded poll).
    let mut back = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let r = chat(&gw, &key, &hello("priced")).await;
        if r.status == 200 {
            back = Some(r);
            break;
        }
        assert_budget_exceeded(&r, "0.01");
    }
    let back = back.expect("the key is admitted again after its 2 s budget window");
    assert!(
        same_dollars(back.header_f64("x-litellm-key-spend"), C1),
        "spend restarted from 0 in the new window"
    );
    assert_eq!(upstream_calls(&m, "priced").len(), oks + 1);
    let info = key_info(&gw, &key).await;
    assert!(
        info["budget_reset_at"].is_string(),
        "next reset time is set: {info}"
    );
}
