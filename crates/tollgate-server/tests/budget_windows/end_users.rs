//! LiteLLM's default end-user budget (`litellm_settings.max_end_user_budget`,
//! `max_end_user_budget_id`) for end users without their own tier, new ones included, under a
//! burst of simultaneous first requests.
#![expect(
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

use std::sync::Arc;

use super::*;

// ---------------------------------------------------------------------------------------------
// Item 5: LiteLLM's default end-user budget
// ---------------------------------------------------------------------------------------------

/// Fires `n` simultaneous requests (barrier) on `flat` as `end_user` with `key`; the mock
/// answers each after 300 ms, so every admission happens while the others are in flight.
async fn burst(gw: &GovGateway, key: &str, end_user: &str, n: usize) -> Vec<Resp> {
    let c = client();
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let url = gw.url("/v1/chat/completions");
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (c, b, url, key) = (c.clone(), Arc::clone(&barrier), url.clone(), key.to_owned());
            let body = hello_as("flat", end_user);
            tokio::spawn(async move {
                b.wait().await;
                let r = c
                    .post(url)
                    .bearer_auth(key)
                    .json(&body)
                    .send()
                    .await
                    .expect("request reaches the gateway");
                read(r).await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(t.await.expect("task"));
    }
    out
}

/// Exactly `fits` of the burst were admitted, the rest refused with LiteLLM's end-user
/// message naming `budget`, and the mock saw exactly the admitted ones (on top of `seen`).
fn check_burst(
    results: &[Resp],
    m: &tollgate_mock::MockHandle,
    end_user: &str,
    budget: &str,
    fits: usize,
    seen: usize,
) {
    let ok = results.iter().filter(|r| r.status == 200).count();
    assert_eq!(ok, fits, "admitted of {}", results.len());
    for r in results.iter().filter(|r| r.status != 200) {
        assert_refused(
            r,
            &format!("ExceededBudget: End User={end_user} over budget. Spend="),
            &format!(", Budget={budget}"),
        );
    }
    assert_eq!(upstream_calls(m, "flat").len(), seen + fits);
}

/// `max_end_user_budget: 0.032` (4 calls): a burst of 16 first requests from a never-seen end
/// user admits exactly 4; then it is refused at its full spend; another new end user has its
/// own 0.032; an end user with its own budget tier is not held to the default.
async fn default_budget_burst(gw: &GovGateway, m: &tollgate_mock::MockHandle) {
    script_default(m, "flat", json!({"delay_ms": 300}));
    let (key, _) = generate_key(gw, json!({"key_alias": "app"})).await;
    let results = burst(gw, &key, "eu-new-1", 16).await;
    check_burst(&results, m, "eu-new-1", "0.032", 4, 0);
    let r = chat(gw, &key, &hello_as("flat", "eu-new-1")).await;
    assert_refused(
        &r,
        "ExceededBudget: End User=eu-new-1 over budget. Spend=0.032, Budget=0.032",
        "",
    );
    let rows = poll(
        || async {
            let r = get_as(gw, MASTER, "/spend/logs?end_user=eu-new-1").await;
            r.body.as_array().cloned().unwrap_or_default()
        },
        |rows| rows.len() >= 4,
    )
    .await;
    assert_eq!(rows.len(), 4);
    assert!(same_dollars(rows_spend(&rows), 0.032));

    // each end user has its own default budget
    script_default(m, "flat", json!({}));
    for i in 0..4 {
        let r = chat(gw, &key, &hello_as("flat", "eu-new-2")).await;
        assert_eq!(r.status, 200, "call {i}: {}", r.text);
    }
    let r = chat(gw, &key, &hello_as("flat", "eu-new-2")).await;
    assert_refused(
        &r,
        "ExceededBudget: End User=eu-new-2 over budget.",
        "Budget=0.032",
    );

    // an end user with its own tier follows it, not the default (6 × 0.008 > 0.032)
    let r = post_as(
        gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "eu-vip", "max_budget": 1.0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    for i in 0..6 {
        let r = chat(gw, &key, &hello_as("flat", "eu-vip")).await;
        assert_eq!(r.status, 200, "own budget, call {i}: {}", r.text);
    }
    assert_eq!(upstream_calls(m, "flat").len(), 4 + 4 + 6);
}

fn end_user_settings(extra: &str) -> String {
    format!("litellm_settings:\n{extra}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_end_user_budget_holds_for_a_burst_of_first_requests() {
    let m = mock().await;
    let extra = end_user_settings("  max_end_user_budget: 0.032\n");
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), &extra, None));
    default_budget_burst(&gw, &m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_end_user_budget_holds_for_a_burst_of_first_requests_postgres() {
    let Some(db) = PgDb::create("default_end_user").await else {
        return;
    };
    let m = mock().await;
    let extra = end_user_settings("  max_end_user_budget: 0.032\n");
    let mut gw = GovGateway::start(&config(&m.base_url(), &deps(), &extra, Some(&db.url)));
    default_budget_burst(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    // LiteLLM's end-user rows were created with their spend
    let mut c = db.connect().await;
    let rows: Vec<(String, f64)> = sqlx::query_as(
        "SELECT user_id::text, spend::float8 FROM \"LiteLLM_EndUserTable\" ORDER BY 1",
    )
    .fetch_all(&mut c)
    .await
    .expect("LiteLLM_EndUserTable");
    let _ = sqlx::Connection::close(c).await;
    let spend = |id: &str| rows.iter().find(|(u, _)| u == id).map(|(_, s)| *s);
    assert!(
        same_dollars(spend("eu-new-1").unwrap_or(-1.0), 0.032),
        "{rows:?}"
    );
    assert!(
        same_dollars(spend("eu-new-2").unwrap_or(-1.0), 0.032),
        "{rows:?}"
    );
    assert!(
        same_dollars(spend("eu-vip").unwrap_or(-1.0), 0.048),
        "{rows:?}"
    );
}

/// `max_end_user_budget_id` names a tier created after start (`/budget/new`): until it exists
/// `max_end_user_budget` (0.024, 3 calls) holds alone; once it exists with 0.016 (2 calls) the
/// tighter cap holds for a new end user's burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_end_user_budget_tier_applies_once_created() {
    let m = mock().await;
    let extra =
        end_user_settings("  max_end_user_budget: 0.024\n  max_end_user_budget_id: eu-tier\n");
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), &extra, None));
    assert!(
        gw.log()
            .contains("max_end_user_budget_id names no budget tier yet"),
        "start-up warns about the missing tier:\n{}",
        gw.log()
    );
    let (key, _) = generate_key(&gw, json!({})).await;
    for _ in 0..3 {
        let r = chat(&gw, &key, &hello_as("flat", "early")).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = chat(&gw, &key, &hello_as("flat", "early")).await;
    assert_refused(
        &r,
        "ExceededBudget: End User=early over budget. Spend=0.024",
        "Budget=0.024",
    );

    let r = post_as(
        &gw,
        MASTER,
        "/budget/new",
        &json!({"budget_id": "eu-tier", "max_budget": 0.016}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    script_default(&m, "flat", json!({"delay_ms": 300}));
    let results = burst(&gw, &key, "late", 16).await;
    check_burst(&results, &m, "late", "0.016", 2, 3);
}
