//! `/spend/logs`, `/global/spend`, `/global/spend/report` after a settled call (the
//! write-behind is flushed by the route itself).

use http::StatusCode;
use serde_json::json;

use crate::common::{GLOBAL_MAX_BUDGET, H};

#[tokio::test]
async fn spend_logs_global_spend_and_report_after_a_settled_call() {
    let h = H::new().await;
    h.post("/team/new", json!({"team_id": "t1", "team_alias": "core"}))
        .await;
    let (raw, hash) = h.key(json!({"max_budget": 1.0, "team_id": "t1"})).await;
    // 1000 × 1e-6 + 500 × 2e-6
    let cost = h
        .charge(&hash, "chatcmpl-1", 1000, 500, Some("cust-9"))
        .await;
    assert_eq!(cost, 0.002);

    let (s, rows) = h.get(&format!("/spend/logs?api_key={raw}")).await;
    assert_eq!(s, StatusCode::OK, "{rows}");
    let rows = rows.as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (
            r["request_id"].clone(),
            r["call_type"].clone(),
            r["api_key"].clone(),
            r["spend"].clone(),
            r["prompt_tokens"].clone(),
            r["completion_tokens"].clone(),
            r["total_tokens"].clone(),
        ),
        (
            json!("chatcmpl-1"),
            json!("acompletion"),
            json!(hash),
            json!(cost),
            json!(1000),
            json!(500),
            json!(1500)
        )
    );
    assert_eq!(
        (
            r["status"].clone(),
            r["model"].clone(),
            r["end_user"].clone(),
            r["team_id"].clone()
        ),
        (
            json!("success"),
            json!("mock-gpt"),
            json!("cust-9"),
            json!("t1")
        )
    );
    assert!(r["startTime"].is_string() && r["endTime"].is_string());
    let day = r["startTime"].as_str().unwrap()[..10].to_owned();

    for (q, n) in [
        ("request_id=chatcmpl-1".to_owned(), 1),
        (format!("api_key={hash}"), 1),
        (format!("api_key={}", "0".repeat(64)), 0),
        ("start_date=2000-01-01&end_date=2000-01-02".to_owned(), 0),
        (format!("start_date={day}&end_date={day}"), 1),
    ] {
        let (_, v) = h.get(&format!("/spend/logs?{q}")).await;
        assert_eq!(v.as_array().unwrap().len(), n, "{q}");
    }
    let (s, _) = h.get("/spend/logs?start_date=14-03-2026").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    // key info and global spend agree with the log
    let (_, info) = h.get(&format!("/key/info?key={hash}")).await;
    assert_eq!(info["info"]["spend"], json!(cost));
    let (_, g) = h.get("/global/spend").await;
    assert_eq!(g, json!({"spend": cost, "max_budget": GLOBAL_MAX_BUDGET}));
    let (_, t) = h.get("/team/info?team_id=t1").await;
    assert_eq!(t["team_info"]["spend"], json!(cost));

    let model = json!([{"model": "mock-gpt", "spend": cost, "total_tokens": 1500}]);
    let (_, rep) = h.get("/global/spend/report").await;
    assert_eq!(
        rep,
        json!([{"group_by_day": day, "teams": [{"team_name": "core", "total_spend": cost, "metadata": model}]}])
    );
    let (_, rep) = h.get("/global/spend/report?group_by=customer").await;
    assert_eq!(
        rep,
        json!([{"group_by_day": day, "customers": [{"customer": "cust-9", "total_spend": cost, "metadata": model}]}])
    );
    let (_, rep) = h
        .get(&format!(
            "/global/spend/report?group_by=api_key&start_date={day}&end_date={day}"
        ))
        .await;
    assert_eq!(
        rep,
        json!([{"group_by_day": day, "api_keys": [{"api_key": hash, "total_spend": cost, "metadata": model}]}])
    );
    let (s, _) = h.get("/global/spend/report?group_by=model").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    // a non-admin key sees its own rows only
    let (other_raw, _) = h.key(json!({})).await;
    let (s, v) = h.call("GET", "/spend/logs", Some(&other_raw), None).await;
    assert_eq!((s, v), (StatusCode::OK, json!([])));
    let (s, v) = h.call("GET", "/spend/logs", Some(&raw), None).await;
    assert_eq!((s, v.as_array().unwrap().len()), (StatusCode::OK, 1));
    let (s, _) = h
        .call(
            "GET",
            &format!("/spend/logs?api_key={hash}"),
            Some(&other_raw),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = h.call("GET", "/global/spend", Some(&other_raw), None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}
