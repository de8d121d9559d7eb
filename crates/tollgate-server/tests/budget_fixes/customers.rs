//! End users and customers: the default end-user budget kept through `/customer/update`, end
//! users created by traffic managed at once, and a shared tier's window armed for every
//! customer on it.

use super::*;

fn default_budget(settings: &str) -> String {
    format!("litellm_settings:\n{settings}")
}

fn over(id: &str, spend: &str, budget: &str) -> String {
    format!("ExceededBudget: End User={id} over budget. Spend={spend}, Budget={budget}")
}

async fn customer_info(gw: &GovGateway, id: &str) -> Value {
    let r = get_as(gw, MASTER, &format!("/customer/info?end_user_id={id}")).await;
    assert_eq!(r.status, 200, "/customer/info {id}: {}", r.text);
    r.body
}

/// `max_end_user_budget: 0.005`: `newuser1`, never created, spends 0.006 in three calls and
/// is refused; it is listed and readable at once (its row was created by its traffic);
/// `/customer/update` with only `budget_duration: "1d"` gives it its own tier carrying the
/// default's 0.005 with a window starting now at 0 (ending at the next midnight), so exactly
/// three more calls are admitted (0 → 0.006) and the fourth is refused at 0.006 > 0.005.
/// Without the fix the update answered 404 (unknown customer) or, once known, lifted the cap.
async fn duration_alone_keeps_the_default_cap(gw: &GovGateway, m: &tollgate_mock::MockHandle) {
    let (key, _) = generate_key(gw, json!({})).await;
    let body = hello_as("m1", "newuser1");
    calls_ok(gw, &key, &body, 3, 0.0).await;
    assert_refused(
        &chat(gw, &key, &body).await,
        &over("newuser1", "0.006", "0.005"),
    );

    let info = customer_info(gw, "newuser1").await;
    assert_eq!(info["user_id"], "newuser1", "{info}");
    assert!(same_dollars(f(&info["spend"]), 0.006), "{info}");
    assert_eq!(info["budget_id"], Value::Null, "{info}");
    let list = get_as(gw, MASTER, "/customer/list").await;
    assert_eq!(list.status, 200, "{}", list.text);
    let listed: Vec<&Value> = list
        .body
        .as_array()
        .map(|a| a.iter().filter(|c| c["user_id"] == "newuser1").collect())
        .unwrap_or_default();
    assert_eq!(listed.len(), 1, "{}", list.text);
    assert!(same_dollars(f(&listed[0]["spend"]), 0.006));

    let upd = admin(
        gw,
        "/customer/update",
        json!({"user_id": "newuser1", "budget_duration": "1d"}),
    )
    .await;
    let tier = &upd["litellm_budget_table"];
    assert_eq!(
        tier["max_budget"], 0.005,
        "the default's cap, carried: {upd}"
    );
    assert_eq!(tier["budget_duration"], "1d", "{upd}");
    assert_eq!(time(&tier["budget_reset_at"]), next_midnight(), "{upd}");
    assert_eq!(upd["budget_id"], tier["budget_id"], "{upd}");
    assert_eq!(upd["spend"], 0.0, "a new window at 0: {upd}");

    calls_ok(gw, &key, &body, 3, 0.006).await;
    assert_refused(
        &chat(gw, &key, &body).await,
        &over("newuser1", "0.006", "0.005"),
    );
    assert_eq!(upstream_calls(m, "m1").len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duration_alone_keeps_the_default_end_user_cap() {
    let m = mock().await;
    let extra = default_budget("  max_end_user_budget: 0.005\n");
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), &extra, None));
    duration_alone_keeps_the_default_cap(&gw, &m).await;
}

/// The same on LiteLLM's Postgres tables, and after a restart the customer's own tier, its
/// window's spend and the cap are still in force: refused, nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duration_alone_keeps_the_default_end_user_cap_postgres() {
    let Some(db) = PgDb::create("budget_fixes_default_cap").await else {
        return;
    };
    let m = mock().await;
    let extra = default_budget("  max_end_user_budget: 0.005\n");
    let cfg = config(&m.base_url(), &deps(), &extra, Some(&db.url));
    let mut gw = GovGateway::start(&cfg);
    duration_alone_keeps_the_default_cap(&gw, &m).await;
    let before = customer_info(&gw, "newuser1").await;
    assert!(gw.stop().await, "graceful shutdown");
    let gw = GovGateway::start(&cfg);
    let after = customer_info(&gw, "newuser1").await;
    assert_eq!(after["budget_id"], before["budget_id"], "{after}");
    assert_eq!(
        after["litellm_budget_table"]["max_budget"], 0.005,
        "{after}"
    );
    assert!(same_dollars(f(&after["spend"]), 0.006), "{after}");
    let (key, _) = generate_key(&gw, json!({})).await;
    assert_refused(
        &chat(&gw, &key, &hello_as("m1", "newuser1")).await,
        &over("newuser1", "0.006", "0.005"),
    );
    assert_eq!(upstream_calls(&m, "m1").len(), 6);
}

/// `max_end_user_budget_id` names a tier with a `1d` window and 0.005: the end user is already
/// in that window, so `/customer/update` with the same `budget_duration` gives it its own tier
/// with the same cap and the window going on (spend 0.006 kept, same end): refused. The
/// default tier itself is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duration_alone_keeps_a_default_tier_and_its_window() {
    let m = mock().await;
    let extra = default_budget("  max_end_user_budget_id: eu-tier\n");
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), &extra, None));
    let eu_tier = admin(
        &gw,
        "/budget/new",
        json!({"budget_id": "eu-tier", "max_budget": 0.005, "budget_duration": "1d"}),
    )
    .await;
    let (key, _) = generate_key(&gw, json!({})).await;
    let body = hello_as("m1", "newuser2");
    calls_ok(&gw, &key, &body, 3, 0.0).await;
    assert_refused(
        &chat(&gw, &key, &body).await,
        &over("newuser2", "0.006", "0.005"),
    );
    let upd = admin(
        &gw,
        "/customer/update",
        json!({"user_id": "newuser2", "budget_duration": "1d"}),
    )
    .await;
    let tier = &upd["litellm_budget_table"];
    assert_ne!(upd["budget_id"], "eu-tier", "its own tier: {upd}");
    assert_eq!(tier["max_budget"], 0.005, "{upd}");
    assert_eq!(tier["budget_duration"], "1d", "{upd}");
    assert_eq!(time(&tier["budget_reset_at"]), next_midnight(), "{upd}");
    assert!(
        same_dollars(f(&upd["spend"]), 0.006),
        "the same window: {upd}"
    );
    assert_refused(
        &chat(&gw, &key, &body).await,
        &over("newuser2", "0.006", "0.005"),
    );
    let r = post_as(
        &gw,
        MASTER,
        "/budget/info",
        &json!({"budgets": ["eu-tier"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body[0], eu_tier, "{}", r.text);
    assert_eq!(upstream_calls(&m, "m1").len(), 3);
}

/// An end user created by traffic can be updated at once: a `max_budget` of 0.003 on its new
/// tier admits one more call (0.002 → 0.004) and then refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_end_user_created_by_traffic_is_managed_at_once() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    let (key, _) = generate_key(&gw, json!({})).await;
    let body = hello_as("m1", "from-traffic");
    calls_ok(&gw, &key, &body, 1, 0.0).await;
    let info = customer_info(&gw, "from-traffic").await;
    assert!(same_dollars(f(&info["spend"]), CALL), "{info}");
    let upd = admin(
        &gw,
        "/customer/update",
        json!({"user_id": "from-traffic", "max_budget": 0.003}),
    )
    .await;
    assert_eq!(upd["litellm_budget_table"]["max_budget"], 0.003, "{upd}");
    assert!(same_dollars(f(&upd["spend"]), CALL), "{upd}");
    calls_ok(&gw, &key, &body, 1, CALL).await;
    assert_refused(
        &chat(&gw, &key, &body).await,
        &over("from-traffic", "0.004", "0.003"),
    );
    // creating it again is refused: it exists
    let r = post_as(
        &gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "from-traffic"}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(upstream_calls(&m, "m1").len(), 2);
}

/// Two customers share tier `shared` (0.003, no window) and both spent 0.004. LiteLLM's
/// `/customer/update` changes the linked tier in place, so `budget_duration: "1d"` on `c1`
/// gives both the window, and by the one window rule it starts at 0 for both: each is admitted
/// twice more, then refused. The same update again leaves both windows alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_tier_arms_the_window_for_every_customer_on_it() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    admin(
        &gw,
        "/budget/new",
        json!({"budget_id": "shared", "max_budget": 0.003}),
    )
    .await;
    for c in ["c1", "c2"] {
        admin(
            &gw,
            "/customer/new",
            json!({"user_id": c, "budget_id": "shared"}),
        )
        .await;
    }
    let (key, _) = generate_key(&gw, json!({})).await;
    let mut spent = 0.0;
    for c in ["c1", "c2"] {
        calls_ok(&gw, &key, &hello_as("m1", c), 2, spent).await;
        spent += 2.0 * CALL;
        assert_refused(
            &chat(&gw, &key, &hello_as("m1", c)).await,
            &over(c, "0.004", "0.003"),
        );
    }
    let upd = admin(
        &gw,
        "/customer/update",
        json!({"user_id": "c1", "budget_duration": "1d"}),
    )
    .await;
    assert_eq!(upd["budget_id"], "shared", "{upd}");
    assert_eq!(upd["litellm_budget_table"]["budget_duration"], "1d");
    assert_eq!(
        time(&upd["litellm_budget_table"]["budget_reset_at"]),
        next_midnight()
    );
    for c in ["c1", "c2"] {
        let info = customer_info(&gw, c).await;
        assert_eq!(info["spend"], 0.0, "{c}: {info}");
        assert_eq!(info["litellm_budget_table"]["budget_duration"], "1d");
    }
    for c in ["c1", "c2"] {
        calls_ok(&gw, &key, &hello_as("m1", c), 2, spent).await;
        spent += 2.0 * CALL;
        assert_refused(
            &chat(&gw, &key, &hello_as("m1", c)).await,
            &over(c, "0.004", "0.003"),
        );
    }
    admin(
        &gw,
        "/customer/update",
        json!({"user_id": "c1", "budget_duration": "1d"}),
    )
    .await;
    for c in ["c1", "c2"] {
        assert!(same_dollars(
            f(&customer_info(&gw, c).await["spend"]),
            0.004
        ));
    }
    assert_eq!(upstream_calls(&m, "m1").len(), 8);
}
