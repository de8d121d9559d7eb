//! Item 3: dated model ids are priced by the built-in table, and every deployment no price
//! covers is named at start and by `check-config`; a local LiteLLM price map prices the rest.

use serde_json::json;

use super::gov::*;

/// Deployments without prices of their own: two dated model ids the built-in table prices
/// (OpenAI, Anthropic) and one model no table knows.
fn unpriced_config(mock: &str, extra: &str, db_url: Option<&str>) -> String {
    let mut s = format!(
        "model_list:\n\
         \x20 - model_name: gpt-dated\n    litellm_params:\n      model: openai/gpt-4o-2024-08-06\n      api_base: {mock}/d/gpt-dated/v1\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: dep-gpt-dated\n\
         \x20 - model_name: claude-dated\n    litellm_params:\n      model: anthropic/claude-sonnet-4-20250514\n      api_base: {mock}/d/claude-dated\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: dep-claude-dated\n\
         \x20 - model_name: house-model\n    litellm_params:\n      model: openai/house-llama-3\n      api_base: {mock}/d/house/v1\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: dep-house\n\
         router_settings:\n  num_retries: 0\n  disable_cooldowns: true\n\
         general_settings:\n  master_key: {MASTER}\n"
    );
    if let Some(u) = db_url {
        s.push_str(&format!("  database_url: \"{u}\"\n"));
    }
    s.push_str(extra);
    s
}

/// The unpriced-deployment warning lines of a log.
fn unpriced_warnings(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("no price: spend through"))
        .collect()
}

async fn unpriced_case(pg: Option<&PgDb>) {
    let m = mock().await;
    for d in ["gpt-dated", "claude-dated", "house"] {
        script_default(&m, d, json!({"usage": "1000,500"}));
    }
    let gw = GovGateway::start(&unpriced_config(
        &m.base_url(),
        "",
        pg.map(|p| p.url.as_str()),
    ));
    // Named at start: the one deployment no price covers, and only it.
    let log = gw.log();
    let warned = unpriced_warnings(&log);
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].contains(
            "1 deployment has no price: spend through it is recorded as $0 and budgets never trip"
        ) && warned[0]
            .contains("model_name \"house-model\" (deployment dep-house): openai/house-llama-3"),
        "{}",
        warned[0]
    );
    assert!(!warned[0].contains("gpt-dated") && !warned[0].contains("claude-dated"));

    // Dated ids are billed at their family's price: 1000 × 2.5e-6 + 500 × 10e-6 for
    // gpt-4o-2024-08-06, 1000 × 3e-6 + 500 × 15e-6 for claude-sonnet-4-20250514.
    let (key, hash) = generate_key(&gw, json!({"max_budget": 0.005})).await;
    let r = chat(&gw, &key, &chat_body("gpt-dated", "hi", 16)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(same_dollars(
        r.header_f64("x-litellm-response-cost"),
        0.0075
    ));
    let c = post_as(
        &gw,
        MASTER,
        "/v1/messages",
        &json!({"model": "claude-dated", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text);
    assert!(same_dollars(
        c.header_f64("x-litellm-response-cost"),
        0.0105
    ));
    // ... so the budget trips: 0.0075 spent of 0.005
    let spend = key_spend_eventually(&gw, &key, 0.0075).await;
    assert!(same_dollars(spend, 0.0075), "{spend}");
    let refused = chat(&gw, &key, &chat_body("gpt-dated", "hi", 16)).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert_eq!(refused.error_type(), "budget_exceeded", "{}", refused.text);
    assert_eq!(
        upstream_calls(&m, "gpt-dated").len(),
        1,
        "refused before the upstream"
    );
    let rows = spend_logs_n(&gw, &hash, 1).await;
    assert_eq!(rows.len(), 1);
    assert!(same_dollars(rows_spend(&rows), 0.0075));
    // The unpriced one is still $0, as the warning said.
    let h = chat(&gw, MASTER, &chat_body("house-model", "hi", 16)).await;
    assert_eq!(h.status, 200, "{}", h.text);
    assert!(same_dollars(h.header_f64("x-litellm-response-cost"), 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dated_model_ids_are_priced_and_unpriced_deployments_named_sqlite() {
    unpriced_case(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dated_model_ids_are_priced_and_unpriced_deployments_named_postgres() {
    let Some(pg) = PgDb::create("e2e_spend_integrity unpriced postgres").await else {
        return;
    };
    unpriced_case(Some(&pg)).await;
}

/// A LiteLLM-format price map in a local file (`LITELLM_MODEL_COST_MAP_URL`, here through the
/// config's `environment_variables`) prices what the table does not: no warning at start, the
/// map's price billed; `check-config` says the same before the server runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_litellm_price_map_prices_the_rest() {
    let m = mock().await;
    script_default(&m, "house", json!({"usage": "1000,500"}));
    let dir = TempDir::new("price-map");
    let map = dir.0.join("model_prices_and_context_window.json");
    std::fs::write(
        &map,
        r#"{"sample_spec": {"input_cost_per_token": 0, "litellm_provider": "one of https://docs.litellm.ai/docs/providers"},
            "house-llama-3": {"input_cost_per_token": 1e-7, "output_cost_per_token": 3e-7, "litellm_provider": "openai", "mode": "chat"}}"#,
    )
    .expect("write the map");
    let extra = format!(
        "environment_variables:\n  LITELLM_MODEL_COST_MAP_URL: \"{}\"\n",
        map.display()
    );
    let cfg = unpriced_config(&m.base_url(), &extra, None);

    // check-config, first without the map, then with it
    let cfg_path = dir.0.join("config.yaml");
    let check = |config: &str| {
        std::fs::write(&cfg_path, config).expect("write config");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .arg("check-config")
            .arg(&cfg_path)
            .env_remove("LITELLM_MODEL_COST_MAP_URL")
            .env_remove("DATABASE_URL")
            .env("TOLLGATE_DB_PATH", dir.0.join("unused.db"))
            .output()
            .expect("check-config runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = check(&unpriced_config(&m.base_url(), "", None));
    assert_eq!(code, Some(0), "{out}");
    let warned = unpriced_warnings(&out);
    assert_eq!(warned.len(), 1, "{out}");
    assert!(
        warned[0].starts_with("warning: 1 deployment has no price")
            && warned[0].ends_with(
                ": model_name \"house-model\" (deployment dep-house): openai/house-llama-3"
            ),
        "{out}"
    );
    let (code, out) = check(&cfg);
    assert_eq!(code, Some(0), "{out}");
    assert!(unpriced_warnings(&out).is_empty(), "{out}");
    assert!(
        out.contains(&format!(
            ", then LITELLM_MODEL_COST_MAP_URL={} (1 names), then each deployment's *_cost_per_token",
            map.display()
        )),
        "{out}"
    );

    // the server: no warning, the map's price: 1000 × 1e-7 + 500 × 3e-7
    let gw = GovGateway::start(&cfg);
    let log = gw.log();
    assert!(unpriced_warnings(&log).is_empty(), "{log}");
    let r = chat(&gw, MASTER, &chat_body("house-model", "hi", 16)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let cost = r.header_f64("x-litellm-response-cost");
    assert!(same_dollars(cost, 0.00025), "{cost}");
}
