//! [`GovernanceStore::spend_groups`] on SQLite and Postgres: the same rows give the same
//! totals per day, key, team, model, end user and tag.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::*;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn g(keys: &[Option<&str>], spend: f64, total_tokens: i64, requests: i64) -> SpendGroup {
    SpendGroup {
        keys: keys.iter().map(|k| k.map(str::to_owned)).collect(),
        spend,
        total_tokens,
        requests,
    }
}

/// Four rows over two days: per-dimension sums are exact (binary-exact spends).
pub(super) async fn spend_groups_case(s: &dyn GovernanceStore) {
    let row = |id: &str, key: &str, start: &str, spend: f64, team: Option<&str>| SpendLogRow {
        request_id: id.into(),
        call_type: "acompletion".into(),
        api_key: key.into(),
        spend,
        total_tokens: 100,
        start_time: t(start),
        end_time: t(start),
        model: if key == "h1" { "gpt-4o" } else { "claude" }.into(),
        team_id: team.map(str::to_owned),
        end_user: Some(if id == "r4" { "" } else { "eu1" }.into()),
        request_tags: if id == "r3" {
            json!(null)
        } else {
            json!(["prod", "web"])
        },
        ..SpendLogRow::default()
    };
    let rows = vec![
        row("r1", "h1", "2026-03-14T10:00:00Z", 0.5, Some("t1")),
        row("r2", "h1", "2026-03-15T23:59:59Z", 0.25, Some("t1")),
        row("r3", "h2", "2026-03-15T00:00:00Z", 0.125, None),
        row("r4", "h2", "2026-03-16T00:00:00Z", 2.0, None),
    ];
    assert_eq!(s.insert_spend_logs(&rows).await.unwrap(), 4);
    let q = |by: Vec<SpendDim>| SpendGroupQuery {
        by,
        start: Some(t("2026-03-14T00:00:00Z")),
        end: Some(t("2026-03-15T23:59:59.999Z")),
        ..SpendGroupQuery::default()
    };
    let run = |by: Vec<SpendDim>| async move { s.spend_groups(&q(by)).await.unwrap() };
    assert_eq!(
        run(vec![SpendDim::Day]).await,
        vec![
            g(&[Some("2026-03-14")], 0.5, 100, 1),
            g(&[Some("2026-03-15")], 0.375, 200, 2)
        ]
    );
    assert_eq!(
        run(vec![SpendDim::ApiKey]).await,
        vec![
            g(&[Some("h1")], 0.75, 200, 2),
            g(&[Some("h2")], 0.125, 100, 1)
        ]
    );
    assert_eq!(
        sorted(run(vec![SpendDim::Team]).await),
        vec![g(&[None], 0.125, 100, 1), g(&[Some("t1")], 0.75, 200, 2)]
    );
    assert_eq!(
        run(vec![SpendDim::Model]).await,
        vec![
            g(&[Some("claude")], 0.125, 100, 1),
            g(&[Some("gpt-4o")], 0.75, 200, 2)
        ]
    );
    assert_eq!(
        run(vec![SpendDim::Tag]).await,
        vec![
            g(&[Some("prod")], 0.75, 200, 2),
            g(&[Some("web")], 0.75, 200, 2)
        ]
    );
    assert_eq!(
        run(vec![SpendDim::Day, SpendDim::EndUser]).await,
        vec![
            g(&[Some("2026-03-14"), Some("eu1")], 0.5, 100, 1),
            g(&[Some("2026-03-15"), Some("eu1")], 0.375, 200, 2)
        ]
    );
    // no range, one key, no grouping: the key's total over all days (r4's empty end user too)
    let all = s
        .spend_groups(&SpendGroupQuery {
            api_key: Some("h2".into()),
            by: vec![SpendDim::EndUser],
            ..SpendGroupQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(
        sorted(all),
        vec![g(&[None], 2.0, 100, 1), g(&[Some("eu1")], 0.125, 100, 1)]
    );
    let none = s.spend_groups(&SpendGroupQuery::default()).await.unwrap();
    assert_eq!(none, vec![g(&[], 2.875, 400, 4)]);
}

/// NULL groups first (SQLite and Postgres order NULLs differently).
fn sorted(mut v: Vec<SpendGroup>) -> Vec<SpendGroup> {
    v.sort_by(|a, b| a.keys.cmp(&b.keys));
    v
}

#[tokio::test]
async fn sqlite_spend_groups() {
    let s = SqliteStore::open(":memory:").await.unwrap();
    s.migrate().await.unwrap();
    spend_groups_case(&s).await;
}

#[test]
fn sqlite_reads_the_whole_table_for_a_range_over_most_of_the_logs() {
    use super::spend_groups::{scan_whole, stmt};
    // logs over 90 days
    let span = Some((t("2026-01-01T00:00:00Z"), t("2026-04-01T00:00:00Z")));
    let q = |start: Option<&str>, end: Option<&str>| SpendGroupQuery {
        start: start.map(t),
        end: end.map(t),
        ..SpendGroupQuery::default()
    };
    let all = q(Some("2025-12-01T00:00:00Z"), Some("2026-04-01T23:59:59Z"));
    assert!(scan_whole(&all, span));
    // the last 31 of the 90 days: 34 %
    assert!(scan_whole(&q(Some("2026-03-01T00:00:00Z"), None), span));
    // the last 7: 8 %, the index
    assert!(!scan_whole(&q(Some("2026-03-25T00:00:00Z"), None), span));
    // no range, a range after the last log, no logs
    assert!(!scan_whole(&q(None, None), span));
    assert!(!scan_whole(&q(Some("2026-05-01T00:00:00Z"), None), span));
    assert!(!scan_whole(&all, None));
    let sql = |whole| stmt::<SqliteStore>(&all, whole).sql.into_owned();
    assert!(
        sql(true).contains(r#"AND +s."startTime" >= ? AND +s."startTime" <= ?"#),
        "{}",
        sql(true)
    );
    assert!(sql(false).contains(r#"AND s."startTime" >= ? AND s."startTime" <= ?"#));
    // Postgres plans from its statistics: never rewritten
    let pg = stmt::<PostgresStore>(&all, true).sql.into_owned();
    assert!(!pg.contains('+'), "{pg}");
}
