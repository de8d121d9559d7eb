//! Per-model key budgets (`model_max_budget`): the window's spend across a restart, the name
//! a client calls through a wildcard group, warnings for names nothing serves, and numeric
//! strings.

use super::*;

/// LiteLLM's per-model refusal: 429 `budget_exceeded` naming the key's hash, alias, entry.
fn assert_model_refused(r: &Resp, hash: &str, alias: &str, model: &str) {
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.error_type(), "budget_exceeded", "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        format!(
            "LiteLLM Virtual Key: {hash}, key_alias: {alias}, exceeded budget for model={model}"
        ),
        "{}",
        r.text
    );
}

/// A key with `{"m1": 0.007}` spends 0.006 (three calls); `/key/update` gives the entry a
/// `1d` window, which starts at 0; one more call makes it 0.002. After a restart on the same
/// database the window still holds 0.002 (not the day's 0.008 from the spend logs), so three
/// more calls are admitted (0.002 → 0.008) and the next is refused.
async fn windowed_model_budget_across_a_restart(cfg: &str, m: &tollgate_mock::MockHandle) {
    let mut gw = GovGateway::start(cfg);
    let (key, hash) = generate_key(
        &gw,
        json!({"key_alias": "mw", "model_max_budget": {"m1": 0.007}}),
    )
    .await;
    calls_ok(&gw, &key, &hello("m1"), 3, 0.0).await;
    let windowed = json!({"m1": {"budget_limit": 0.007, "time_period": "1d"}});
    let upd = admin(
        &gw,
        "/key/update",
        json!({"key": key, "model_max_budget": windowed}),
    )
    .await;
    assert_eq!(upd["model_spend"]["m1"], 0.0, "{upd}");
    calls_ok(&gw, &key, &hello("m1"), 1, 0.006).await;
    let info = key_info(&gw, &key).await;
    assert!(same_dollars(f(&info["model_spend"]["m1"]), CALL), "{info}");
    assert!(gw.stop().await, "graceful shutdown");

    let gw = GovGateway::start(cfg);
    let info = key_info(&gw, &key).await;
    assert!(
        same_dollars(f(&info["model_spend"]["m1"]), CALL),
        "the window's spend after a restart: {info}"
    );
    assert!(same_dollars(f(&info["spend"]), 0.008), "{info}");
    assert_eq!(info["model_max_budget"], windowed);
    calls_ok(&gw, &key, &hello("m1"), 3, 0.008).await;
    assert_model_refused(&chat(&gw, &key, &hello("m1")).await, &hash, "mw", "m1");
    let info = key_info(&gw, &key).await;
    assert!(same_dollars(f(&info["model_spend"]["m1"]), 0.008), "{info}");
    assert_eq!(upstream_calls(m, "m1").len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_windowed_model_budget_counts_only_its_window_after_a_restart() {
    let m = mock().await;
    let dir = TempDir::new("budget-fixes-model-window");
    let db = format!("sqlite://{}", dir.0.join("t.db").display());
    windowed_model_budget_across_a_restart(&config(&m.base_url(), &deps(), "", Some(&db)), &m)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_windowed_model_budget_counts_only_its_window_after_a_restart_postgres() {
    let Some(db) = PgDb::create("budget_fixes_model_window").await else {
        return;
    };
    let m = mock().await;
    windowed_model_budget_across_a_restart(&config(&m.base_url(), &deps(), "", Some(&db.url)), &m)
        .await;
    // the window's end is Tollgate's own row; its spend stays in LiteLLM's model_spend column
    let mut c = db.connect().await;
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT model::text, budget_reset_at::text FROM \"tollgate_model_budget_window\"",
    )
    .fetch_all(&mut c)
    .await
    .expect("read tollgate_model_budget_window");
    let _ = sqlx::Connection::close(c).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, "m1");
    assert!(
        rows[0]
            .1
            .starts_with(&next_midnight().format("%Y-%m-%d 00:00:00").to_string()),
        "{rows:?}"
    );
}

/// Through the wildcard group `w/*`, a budget keyed by the name the client calls (`w/x`)
/// governs it: two calls (0.004 > 0.003), then 429 naming `w/x`, while `w/y` (no entry of its
/// own) still works; a budget keyed by the group (`w/*`) is shared by every name it serves;
/// with both, the requested name's entry governs its name and the group's the others. A key
/// alias is matched too. `/key/info` reports each entry's spend under its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_keyed_by_the_requested_name_govern_wildcard_calls() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));

    let (k1, h1) = generate_key(
        &gw,
        json!({"key_alias": "req", "model_max_budget": {"w/x": 0.003}}),
    )
    .await;
    calls_ok(&gw, &k1, &hello("w/x"), 2, 0.0).await;
    assert_model_refused(&chat(&gw, &k1, &hello("w/x")).await, &h1, "req", "w/x");
    calls_ok(&gw, &k1, &hello("w/y"), 3, 0.004).await;
    let info = key_info(&gw, &k1).await;
    assert!(
        same_dollars(f(&info["model_spend"]["w/x"]), 0.004),
        "{info}"
    );
    assert!(same_dollars(f(&info["spend"]), 0.010), "{info}");

    let (k2, h2) = generate_key(
        &gw,
        json!({"key_alias": "grp", "model_max_budget": {"w/*": 0.003}}),
    )
    .await;
    calls_ok(&gw, &k2, &hello("w/x"), 1, 0.0).await;
    calls_ok(&gw, &k2, &hello("w/y"), 1, CALL).await;
    assert_model_refused(&chat(&gw, &k2, &hello("w/z")).await, &h2, "grp", "w/*");
    assert!(same_dollars(
        f(&key_info(&gw, &k2).await["model_spend"]["w/*"]),
        0.004
    ));

    let (k3, h3) = generate_key(
        &gw,
        json!({"key_alias": "both", "model_max_budget": {"w/x": 1.0, "w/*": 0.003}}),
    )
    .await;
    calls_ok(&gw, &k3, &hello("w/y"), 2, 0.0).await;
    assert_model_refused(&chat(&gw, &k3, &hello("w/y")).await, &h3, "both", "w/*");
    calls_ok(&gw, &k3, &hello("w/x"), 3, 0.004).await;

    // a key alias: the budget keyed by the alias the client calls governs it
    let (k4, h4) = generate_key(
        &gw,
        json!({"key_alias": "alias", "aliases": {"fast": "m2"}, "model_max_budget": {"fast": 0.003}}),
    )
    .await;
    calls_ok(&gw, &k4, &hello("fast"), 2, 0.0).await;
    assert_model_refused(&chat(&gw, &k4, &hello("fast")).await, &h4, "alias", "fast");

    // what the upstream saw: the name behind the wildcard, never refused calls
    let seen: Vec<String> = upstream_calls(&m, "w")
        .iter()
        .map(|o| o.body["model"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        seen,
        ["x", "x", "y", "y", "y", "x", "y", "y", "y", "x", "x", "x"],
        "{seen:?}"
    );
    assert_eq!(upstream_calls(&m, "m2").len(), 2);
}

/// `model_max_budget` entries that no model group, wildcard group or alias serves are kept (as
/// LiteLLM keeps them) and named in a `warnings` list of the `/key/generate` and `/key/update`
/// answers; served ones (`w/x` through `w/*`, `m1`) are not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_for_names_nothing_serves_are_warned_about() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    let mmb = json!({"nonexistent-model": 1, "w/x": 0.003, "m1": 1});
    let r = post_as(
        &gw,
        MASTER,
        "/key/generate",
        &json!({"model_max_budget": mmb}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["model_max_budget"], mmb);
    let warning = "model_max_budget[nonexistent-model]: no model group, wildcard group or alias of this key serves this name, so this budget applies to no request until one does";
    assert_eq!(r.body["warnings"], json!([warning]), "{}", r.text);
    let key = r.body["key"].as_str().unwrap_or_default().to_owned();
    let upd = admin(
        &gw,
        "/key/update",
        json!({"key": key, "model_max_budget": {"m1": 1, "m9": 2}}),
    )
    .await;
    assert_eq!(
        upd["warnings"],
        json!([warning.replace("nonexistent-model", "m9")]),
        "{upd}"
    );
    let upd = admin(
        &gw,
        "/key/update",
        json!({"key": key, "model_max_budget": {"m1": 1}}),
    )
    .await;
    assert_eq!(upd.get("warnings"), None, "{upd}");
    assert!(gw.log().contains("model_max_budget[m9]: no model group"));
}

/// One amount rule in both shapes: a numeric string is the number (`"0.003"` flat or as
/// `budget_limit`: two calls, then 429); a string that is not an amount is a 400 naming the
/// entry, in either shape, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numeric_strings_are_amounts_in_both_shapes() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    for (alias, entry) in [
        ("flat", json!("0.003")),
        ("obj", json!({"budget_limit": "0.003", "time_period": "1d"})),
    ] {
        let (key, hash) = generate_key(
            &gw,
            json!({"key_alias": alias, "model_max_budget": {"m1": entry}}),
        )
        .await;
        calls_ok(&gw, &key, &hello("m1"), 2, 0.0).await;
        assert_model_refused(&chat(&gw, &key, &hello("m1")).await, &hash, alias, "m1");
        assert_eq!(key_info(&gw, &key).await["model_max_budget"]["m1"], entry);
    }
    for (entry, field) in [
        (json!("lots"), "model_max_budget[m1]: expected an amount"),
        (json!("-0.5"), "model_max_budget[m1]: expected an amount"),
        (
            json!({"budget_limit": "lots"}),
            "model_max_budget[m1].budget_limit: expected an amount",
        ),
    ] {
        let r = post_as(
            &gw,
            MASTER,
            "/key/generate",
            &json!({"key_alias": "bad", "model_max_budget": {"m1": entry}}),
        )
        .await;
        assert_eq!(r.status, 400, "{entry}: {}", r.text);
        let msg = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(field), "{entry}: {msg}");
    }
    let r = get_as(&gw, MASTER, "/key/list?key_alias=bad").await;
    assert_eq!(r.body["total_count"], 0, "{}", r.text);
    assert_eq!(upstream_calls(&m, "m1").len(), 4);
}
