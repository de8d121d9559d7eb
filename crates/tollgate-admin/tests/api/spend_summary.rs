//! `GET /tollgate/spend/summary` and `/global/spend/report` over known spend-log rows written
//! straight into the store: exact sums per key, team, model, end user, tag and day.

use chrono::{DateTime, Utc};
use http::StatusCode;
use serde_json::{Value, json};
use tollgate_governance::store::{GovernanceStore, SpendLogRow};

use crate::common::H;

#[expect(clippy::unwrap_used, reason = "test helper: fixed RFC 3339 literals")]
fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// Three rows on 2026-03-14/15 (binary-exact spends) and one outside the range.
async fn seeded() -> (H, String) {
    let h = H::new().await;
    h.post("/team/new", json!({"team_id": "t1", "team_alias": "core"}))
        .await;
    let (_, hash) = h.key(json!({"key_alias": "ci", "team_id": "t1"})).await;
    let row = |id: &str, key: &str, at: &str, spend: f64, tags: Value| SpendLogRow {
        request_id: id.into(),
        call_type: "acompletion".into(),
        api_key: key.into(),
        spend,
        total_tokens: 10,
        start_time: t(at),
        end_time: t(at),
        model: if spend < 1.0 { "gpt-4o" } else { "claude" }.into(),
        team_id: (key != "other").then(|| "t1".to_owned()),
        end_user: (id == "r1").then(|| "cust-1".to_owned()),
        request_tags: tags,
        ..SpendLogRow::default()
    };
    let rows = [
        row("r1", &hash, "2026-03-14T08:00:00Z", 0.5, json!(["prod"])),
        row(
            "r2",
            &hash,
            "2026-03-15T09:00:00Z",
            0.25,
            json!(["prod", "web"]),
        ),
        row("r3", "other", "2026-03-15T10:00:00Z", 1.5, json!([])),
        row("r4", "other", "2026-03-17T10:00:00Z", 8.0, json!([])),
    ];
    assert_eq!(h.store.insert_spend_logs(&rows).await.ok(), Some(4));
    (h, hash)
}

const RANGE: &str = "start_date=2026-03-14&end_date=2026-03-15";

fn days() -> Value {
    json!([
        {"date": "2026-03-14", "spend": 0.5, "total_tokens": 10, "requests": 1},
        {"date": "2026-03-15", "spend": 1.75, "total_tokens": 20, "requests": 2}
    ])
}

fn row(group: Value, label: Value, spend: f64, tokens: i64, requests: i64) -> Value {
    json!({"group": group, "label": label, "spend": spend, "total_tokens": tokens,
        "requests": requests})
}

#[tokio::test]
async fn summary_sums_each_grouping_over_a_date_range() {
    let (h, hash) = seeded().await;
    let cases = [
        (
            "api_key",
            vec![
                row(json!("other"), json!("other"), 1.5, 10, 1),
                row(json!(hash), json!("ci"), 0.75, 20, 2),
            ],
        ),
        (
            "team",
            vec![
                row(Value::Null, Value::Null, 1.5, 10, 1),
                row(json!("t1"), json!("core"), 0.75, 20, 2),
            ],
        ),
        (
            "model",
            vec![
                row(json!("claude"), json!("claude"), 1.5, 10, 1),
                row(json!("gpt-4o"), json!("gpt-4o"), 0.75, 20, 2),
            ],
        ),
        (
            "end_user",
            vec![
                row(Value::Null, Value::Null, 1.75, 20, 2),
                row(json!("cust-1"), json!("cust-1"), 0.5, 10, 1),
            ],
        ),
        (
            "tag",
            vec![
                row(json!("prod"), json!("prod"), 0.75, 20, 2),
                row(json!("web"), json!("web"), 0.25, 10, 1),
            ],
        ),
        (
            "day",
            vec![
                row(json!("2026-03-15"), json!("2026-03-15"), 1.75, 20, 2),
                row(json!("2026-03-14"), json!("2026-03-14"), 0.5, 10, 1),
            ],
        ),
    ];
    for (by, groups) in cases {
        let (s, v) = h
            .get(&format!("/tollgate/spend/summary?{RANGE}&group_by={by}"))
            .await;
        assert_eq!(s, StatusCode::OK, "{by}");
        assert_eq!(
            v,
            json!({"group_by": by, "start_date": "2026-03-14", "end_date": "2026-03-15",
                "total_spend": 2.25, "total_tokens": 30, "requests": 3,
                "groups": groups, "days": days()}),
            "{by}"
        );
    }
    let (s, v) = h.get("/tollgate/spend/summary?group_by=user").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v["error"]["message"],
        json!("Invalid group_by=user; expected api_key, team, model, end_user, tag or day")
    );
    // no range: every row
    let (_, all) = h.get("/tollgate/spend/summary?group_by=day").await;
    assert_eq!(all["total_spend"], json!(10.25));
    assert_eq!(all["requests"], json!(4));
    // a range without spend sums to 0, not the -0 of an empty float sum (shown "-$0.00")
    let uri = "/tollgate/spend/summary?start_date=2025-01-01&end_date=2025-01-31&group_by=day";
    let (_, none) = h.get(uri).await;
    assert_eq!(none["total_spend"].to_string(), "0.0");
    assert_eq!(none["days"], json!([]));
}

#[tokio::test]
async fn report_is_summed_per_day_group_and_model() {
    let (h, hash) = seeded().await;
    let (_, rep) = h
        .get(&format!("/global/spend/report?{RANGE}&group_by=api_key"))
        .await;
    let m = |model: &str, spend: f64, tokens: i64| json!([{"model": model, "spend": spend, "total_tokens": tokens}]);
    assert_eq!(
        rep,
        json!([
            {"group_by_day": "2026-03-14", "api_keys": [
                {"api_key": hash, "total_spend": 0.5, "metadata": m("gpt-4o", 0.5, 10)}]},
            {"group_by_day": "2026-03-15", "api_keys": [
                {"api_key": hash, "total_spend": 0.25, "metadata": m("gpt-4o", 0.25, 10)},
                {"api_key": "other", "total_spend": 1.5, "metadata": m("claude", 1.5, 10)}]}
        ])
    );
}

#[tokio::test]
async fn a_users_key_sees_the_spend_of_all_that_users_keys_and_no_one_elses() {
    let h = H::new().await;
    let (_, v) = h.post("/user/new", json!({"user_id": "ann"})).await;
    let ann = v["key"].as_str().unwrap().to_owned();
    let ann_first = v["token_id"].as_str().unwrap().to_owned();
    let (_, ann_second) = h.key(json!({"user_id": "ann"})).await;
    let (bob, bob_hash) = h.key(json!({})).await;
    let row = |id: &str, key: &str, user: Option<&str>, spend: f64| SpendLogRow {
        request_id: id.into(),
        call_type: "acompletion".into(),
        api_key: key.into(),
        user: user.map(str::to_owned),
        spend,
        total_tokens: 10,
        start_time: t("2026-03-14T08:00:00Z"),
        end_time: t("2026-03-14T08:00:00Z"),
        model: "gpt-4o".into(),
        ..SpendLogRow::default()
    };
    let rows = [
        row("a1", &ann_first, Some("ann"), 0.5),
        row("a2", &ann_second, Some("ann"), 0.25),
        row("b1", &bob_hash, None, 1.0),
    ];
    assert_eq!(h.store.insert_spend_logs(&rows).await.ok(), Some(3));
    let uri = format!("/tollgate/spend/summary?{RANGE}&group_by=day");
    let (s, v) = h.call("GET", &uri, Some(&ann), None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["total_spend"], &v["requests"]),
        (&json!(0.75), &json!(2))
    );
    // a key without a user sees its own spend only
    let (s, v) = h.call("GET", &uri, Some(&bob), None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["total_spend"], &v["requests"]),
        (&json!(1.0), &json!(1))
    );
}
