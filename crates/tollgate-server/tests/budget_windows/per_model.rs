//! Per-model budgets on keys (`model_max_budget` in both LiteLLM shapes),
//! enforced per model group with its own window and reported in `/key/info`.

use super::*;

// ---------------------------------------------------------------------------------------------
// Item 6: per-model budgets on keys
// ---------------------------------------------------------------------------------------------

/// The `model_max_budget` of the per-model test: a plain 2-call budget on `flat` (no reset) and
/// a 1-call budget per day on `flat-b`; `free-c` has none.
fn model_budgets() -> Value {
    json!({"flat": 0.016, "flat-b": {"budget_limit": 0.008, "time_period": "1d"}})
}

/// LiteLLM's per-model refusal: 429 `budget_exceeded` naming the key's hash, alias and model.
fn assert_model_refused(r: &Resp, hash: &str, model: &str) {
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.error_type(), "budget_exceeded", "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        format!(
            "LiteLLM Virtual Key: {hash}, key_alias: per-model, exceeded budget for model={model}"
        ),
        "{}",
        r.text
    );
}

/// Spends each budget, checks the refusals and that `free-c` still works, and `/key/info`.
/// Returns the key and its hash.
async fn per_model(gw: &GovGateway, m: &tollgate_mock::MockHandle) -> (String, String) {
    let (key, hash) = generate_key(
        gw,
        json!({"key_alias": "per-model", "model_max_budget": model_budgets()}),
    )
    .await;
    for model in ["flat", "flat", "flat-b"] {
        let r = chat(gw, &key, &hello(model)).await;
        assert_eq!(r.status, 200, "{model}: {}", r.text);
    }
    assert_model_refused(&chat(gw, &key, &hello("flat")).await, &hash, "flat");
    assert_model_refused(&chat(gw, &key, &hello("flat-b")).await, &hash, "flat-b");
    // another model on the same key still works
    let r = chat(gw, &key, &hello("free-c")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(same_dollars(r.header_f64("x-litellm-key-spend"), 0.032));
    assert_eq!(upstream_calls(m, "flat").len(), 2);
    assert_eq!(upstream_calls(m, "flat-b").len(), 1);
    assert_eq!(upstream_calls(m, "free-c").len(), 1);

    let info = key_info(gw, &key).await;
    assert_eq!(
        info["model_max_budget"],
        model_budgets(),
        "as stored: {info}"
    );
    let ms = &info["model_spend"];
    assert!(
        same_dollars(ms["flat"].as_f64().unwrap_or(-1.0), 0.016),
        "{info}"
    );
    assert!(
        same_dollars(ms["flat-b"].as_f64().unwrap_or(-1.0), 0.008),
        "{info}"
    );
    assert!(
        same_dollars(info["spend"].as_f64().unwrap_or(-1.0), 0.032),
        "{info}"
    );
    (key, hash)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_model_budgets_refuse_one_model_and_not_the_others() {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", None));
    let (key, hash) = per_model(&gw, &m).await;

    // the window rule holds for per-model budgets too: giving the spent plain `flat` budget a
    // period starts its window at 0 (one more call), re-sending it does not
    let windowed = json!({"flat": {"budget_limit": 0.008, "time_period": "1d"},
                          "flat-b": {"budget_limit": 0.008, "time_period": "1d"}});
    for _ in 0..2 {
        let upd = update_key(&gw, json!({"key": key, "model_max_budget": windowed})).await;
        assert_eq!(upd["model_max_budget"], windowed);
    }
    let info = key_info(&gw, &key).await;
    assert_eq!(info["model_spend"]["flat"], 0.0, "{info}");
    let r = chat(&gw, &key, &hello("flat")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_model_refused(&chat(&gw, &key, &hello("flat")).await, &hash, "flat");
    let r = update_key(&gw, json!({"key": key, "model_max_budget": windowed})).await;
    assert_eq!(r["model_spend"]["flat"], 0.008);
    assert_model_refused(&chat(&gw, &key, &hello("flat")).await, &hash, "flat");
    assert_model_refused(&chat(&gw, &key, &hello("flat-b")).await, &hash, "flat-b");
    assert_eq!(upstream_calls(&m, "flat").len(), 3);

    // bad entries are refused with 400, naming the model; nothing changes
    let r = post_as(
        &gw,
        MASTER,
        "/key/update",
        &json!({"key": key, "model_max_budget": {"flat": {"budget_limit": 1, "time_period": "1 day"}}}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("model_max_budget[flat].time_period"),
        "{}",
        r.text
    );
    assert_eq!(key_info(&gw, &key).await["model_max_budget"], windowed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_model_budgets_refuse_one_model_and_not_the_others_postgres() {
    let Some(db) = PgDb::create("per_model").await else {
        return;
    };
    let m = mock().await;
    let cfg = config(&m.base_url(), &deps(), "", Some(&db.url));
    let mut gw = GovGateway::start(&cfg);
    let (key, hash) = per_model(&gw, &m).await;
    assert!(gw.stop().await, "graceful shutdown");
    let (spend, _, model_spend) = pg_key_row(&db, &hash).await;
    assert!(same_dollars(spend, 0.032));
    assert!(
        same_dollars(model_spend["flat"].as_f64().unwrap_or(-1.0), 0.016),
        "{model_spend}"
    );
    assert!(
        same_dollars(model_spend["flat-b"].as_f64().unwrap_or(-1.0), 0.008),
        "{model_spend}"
    );
    // after a restart both budgets are still spent (the plain one from `model_spend`, the
    // windowed one from its stored window and `model_spend`); the other model still works
    let gw = GovGateway::start(&cfg);
    assert_model_refused(&chat(&gw, &key, &hello("flat")).await, &hash, "flat");
    assert_model_refused(&chat(&gw, &key, &hello("flat-b")).await, &hash, "flat-b");
    assert_eq!(chat(&gw, &key, &hello("free-c")).await.status, 200);
    let info = key_info(&gw, &key).await;
    assert!(same_dollars(
        info["model_spend"]["flat-b"].as_f64().unwrap_or(-1.0),
        0.008
    ));
    assert_eq!(upstream_calls(&m, "flat").len(), 2);
}
