//! The budget window rule on the entities whose window lives on a budget tier (keys linked to a
//! tier, organizations, team members): a first `budget_duration` starts the window at 0, the
//! same one again changes nothing, a different one keeps the spend and moves the reset.
#![expect(
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

use chrono::{DateTime, Utc};
use http::StatusCode;
use serde_json::json;
use tollgate_governance::admission::{ScopeKey, ScopeKind};
use tollgate_governance::duration::BudgetDuration;

use crate::common::H;

/// Spend (USD) and next reset of a scope in the counters.
async fn counter(h: &H, scope: &ScopeKey) -> (f64, Option<DateTime<Utc>>) {
    let s = h
        .gov
        .admission()
        .spend(scope)
        .await
        .expect("in-process counters answer")
        .expect("scope was charged");
    (s.spend, s.budget_reset_at)
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// 1000 prompt + 500 completion tokens of `mock-gpt`: 0.002 USD.
const CALL: f64 = 0.002;

#[tokio::test]
async fn a_tier_window_reaches_its_linked_key_by_the_rule() {
    let h = H::new().await;
    let (s, _) = h
        .post("/budget/new", json!({"budget_id": "t", "max_budget": 1.0}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let (_, hash) = h.key(json!({"budget_id": "t"})).await;
    assert!(same(h.charge(&hash, "r1", 1000, 500, None).await, CALL));
    let key = ScopeKey::key(&hash);
    assert_eq!(counter(&h, &key).await, (CALL, None));

    let now = h.gov.admission().now();
    let (s, t) = h
        .post(
            "/budget/update",
            json!({"budget_id": "t", "budget_duration": "30d"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{t}");
    let reset = BudgetDuration::Days(30).next_reset(now);
    assert_eq!(t["budget_reset_at"], serde_json::to_value(reset).unwrap());
    assert_eq!(
        counter(&h, &key).await,
        (0.0, Some(reset)),
        "a first window starts at 0"
    );

    h.charge(&hash, "r2", 1000, 500, None).await;
    let (s, _) = h
        .post(
            "/budget/update",
            json!({"budget_id": "t", "budget_duration": "30d"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        counter(&h, &key).await,
        (CALL, Some(reset)),
        "the same window: untouched"
    );

    let (s, _) = h
        .post(
            "/budget/update",
            json!({"budget_id": "t", "budget_duration": "1d"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (spend, moved) = counter(&h, &key).await;
    assert!(same(spend, CALL), "a different window keeps the spend");
    assert_eq!(moved, Some(BudgetDuration::Days(1).next_reset(now)));
    let (_, info) = h.get(&format!("/key/info?key={hash}")).await;
    assert!(
        same(info["info"]["spend"].as_f64().unwrap(), CALL),
        "{info}"
    );
}

#[tokio::test]
async fn organizations_and_team_members_start_their_first_window_at_zero() {
    let h = H::new().await;
    let (s, v) = h
        .post(
            "/organization/new",
            json!({"organization_id": "o", "organization_alias": "O", "max_budget": 1.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = h.post("/team/new", json!({"team_id": "tm"})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = h
        .post(
            "/team/member_add",
            json!({"team_id": "tm", "member": {"user_id": "u", "role": "user"}, "max_budget_in_team": 1.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, hash) = h
        .key(json!({"organization_id": "o", "team_id": "tm", "user_id": "u"}))
        .await;
    h.charge(&hash, "r1", 1000, 500, None).await;
    let org = ScopeKey::new(ScopeKind::Organization, "o");
    let member = ScopeKey::team_member("tm", "u");
    assert!(same(counter(&h, &org).await.0, CALL));
    assert!(same(counter(&h, &member).await.0, CALL));

    let (s, v) = h
        .post(
            "/organization/update",
            json!({"organization_id": "o", "budget_duration": "1d"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = h
        .post(
            "/team/member_update",
            json!({"team_id": "tm", "user_id": "u", "budget_duration": "1d"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let next = BudgetDuration::Days(1).next_reset(h.gov.admission().now());
    assert_eq!(counter(&h, &org).await, (0.0, Some(next)));
    assert_eq!(counter(&h, &member).await, (0.0, Some(next)));
    let (_, info) = h.get("/organization/info?organization_id=o").await;
    assert_eq!(info["spend"], 0.0, "{info}");

    // the same update again: the windows keep the next call's spend
    h.charge(&hash, "r2", 1000, 500, None).await;
    h.post(
        "/organization/update",
        json!({"organization_id": "o", "budget_duration": "1d"}),
    )
    .await;
    h.post(
        "/team/member_update",
        json!({"team_id": "tm", "user_id": "u", "budget_duration": "1d"}),
    )
    .await;
    assert!(same(counter(&h, &org).await.0, CALL));
    assert!(same(counter(&h, &member).await.0, CALL));
}
