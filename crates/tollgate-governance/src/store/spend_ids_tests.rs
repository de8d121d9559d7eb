//! Spend-log rows of an upstream that repeats its response ids (`spend_ids.rs`), on SQLite
//! here and on Postgres in `pg_tests.rs`: every attempt lands once, a retried batch adds
//! nothing, and the daily roll-ups count each attempt once.

use serde_json::json;

use super::tests::DailyDb;
use super::*;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A success row of attempt `attempt` of call `call`, answered with response id `id`.
fn attempt(id: &str, call: &str, attempt: u32, spend: f64) -> SpendLogRow {
    SpendLogRow {
        request_id: id.into(),
        call_type: "acompletion".into(),
        api_key: "h1".into(),
        spend,
        prompt_tokens: 1000,
        completion_tokens: 500,
        total_tokens: 1500,
        start_time: t("2026-03-14T10:00:00Z"),
        end_time: t("2026-03-14T10:00:01Z"),
        model: "gpt-4o".into(),
        model_group: Some("gpt-4o".into()),
        custom_llm_provider: Some("openai".into()),
        user: Some("u1".into()),
        end_user: Some("c1".into()),
        metadata: json!({"user_api_key_alias": "k", "attempt": attempt}),
        status: Some("success".into()),
        litellm_call_id: Some(call.into()),
        ..SpendLogRow::default()
    }
}

/// (request_id, spend, metadata.response_id) of every row, by request_id.
async fn stored(s: &dyn GovernanceStore) -> Vec<(String, f64, Option<String>)> {
    let mut v: Vec<_> = s
        .spend_logs(&SpendLogFilter::default())
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            let resp = r.metadata["response_id"].as_str().map(str::to_owned);
            (r.request_id, r.spend, resp)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

pub(super) async fn repeated_response_ids_case(s: &dyn GovernanceStore, db: &dyn DailyDb) {
    let fixed = "chatcmpl-FAKESPACED";
    // one batch: three calls answered with the same id, the third one a retry's second attempt
    let batch1 = vec![
        attempt(fixed, "call-1", 0, 0.5),
        attempt(fixed, "call-2", 0, 0.25),
        attempt(fixed, "call-3", 0, 0.125),
        attempt(fixed, "call-3", 1, 0.0625),
    ];
    assert_eq!(s.insert_spend_logs(&batch1).await.unwrap(), 4);
    let first = vec![
        ("call-2".to_owned(), 0.25, Some(fixed.to_owned())),
        ("call-3".to_owned(), 0.125, Some(fixed.to_owned())),
        (
            "call-3-attempt-1".to_owned(),
            0.0625,
            Some(fixed.to_owned()),
        ),
        (fixed.to_owned(), 0.5, None),
    ];
    assert_eq!(stored(s).await, first);
    // the batch retried (its commit had failed to be acknowledged): nothing more
    assert_eq!(s.insert_spend_logs(&batch1).await.unwrap(), 0);
    assert_eq!(stored(s).await, first);
    // a later batch: the id again, from a new call, and a retried row of the first batch
    let batch2 = vec![attempt(fixed, "call-4", 0, 1.0), batch1[1].clone()];
    assert_eq!(s.insert_spend_logs(&batch2).await.unwrap(), 1);
    let all = s.spend_since(None).await.unwrap();
    assert!((all - 1.9375).abs() < 1e-12, "{all}");
    // the response id still finds the call that first had it
    let by_id = s
        .spend_logs(&SpendLogFilter {
            request_id: Some(fixed.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(by_id.len(), 1);
    assert_eq!(by_id[0].litellm_call_id.as_deref(), Some("call-1"));
    // every attempt counted once in the roll-ups: 5 requests, 1.9375 USD, 5 × (1000, 500)
    for (table, col) in [
        ("LiteLLM_DailyUserSpend", "user_id"),
        ("LiteLLM_DailyEndUserSpend", "end_user_id"),
    ] {
        let d = db.daily(table, col).await;
        assert_eq!(d.len(), 1, "{table}");
        assert_eq!(d[0].requests, (5, 5, 0), "{table}");
        assert_eq!(d[0].tokens, (5000, 2500, 0, 0), "{table}");
        assert!(
            (d[0].spend - 1.9375).abs() < 1e-12,
            "{table}: {}",
            d[0].spend
        );
    }
}

#[tokio::test]
async fn repeated_response_ids_keep_every_attempt() {
    let s = SqliteStore::open(":memory:").await.unwrap();
    s.migrate().await.unwrap();
    repeated_response_ids_case(&s, &s).await;
}
