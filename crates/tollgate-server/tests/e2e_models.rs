//! End-to-end: deployments added and deleted at runtime through the management API
//! (`/model/new`, `/model/delete`, LiteLLM's `store_model_in_db`), with the real `tollgate`
//! binary in front of `tollgate-mock`. The gateway's SQLite store is a file in a directory the
//! test owns (`database_url: sqlite://…`), so a second gateway started on the same config reads
//! what the first one stored.
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// The credential of the runtime-added deployment; must never appear in an answer or in the
/// database file in the clear.
const DB_KEY: &str = "sk-db-upstream-CANARY7";

fn config(mock_base: &str, db: &Path) -> String {
    format!(
        r#"
model_list:
  - model_name: cfg-model
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock_base}/d/cfg/v1
      api_key: {UPSTREAM_KEY}
    model_info:
      id: cfg-1
router_settings:
  num_retries: 0
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
  database_url: "sqlite://{}"
"#,
        db.display()
    )
}

async fn call(gw: &Gateway, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let c = client();
    let req = match method {
        "GET" => c.get(gw.url(path)),
        _ => c.post(gw.url(path)),
    }
    .header("authorization", format!("Bearer {MASTER}"));
    let req = match body {
        Some(b) => req.json(&b),
        None => req,
    };
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    assert!(
        !text.contains(DB_KEY),
        "{path} answered the upstream key: {text}"
    );
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn chat(gw: &Gateway, model: &str) -> (u16, Value) {
    call(
        gw,
        "POST",
        "/v1/chat/completions",
        Some(json!({"model": model, "messages": [{"role": "user", "content": "hello"}]})),
    )
    .await
}

fn model_ids(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The `/model/info` entry with this deployment id.
fn info_entry(v: &Value, id: &str) -> Option<Value> {
    v["data"]
        .as_array()?
        .iter()
        .find(|e| e["model_info"]["id"] == id)
        .cloned()
}

/// Asserts the last upstream call went to the runtime deployment: `/v1` of the mock, upstream
/// model `x`, the deployment's own key.
fn assert_last_call_on_db_deployment(m: &MockHandle) {
    let obs = m.observations();
    let last = obs.last().expect("the mock saw the call");
    assert_eq!(last.path, "/v1/chat/completions");
    assert_eq!(last.deployment, None);
    assert_eq!(last.model.as_deref(), Some("x"));
    assert_eq!(
        last.headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {DB_KEY}").as_str())
    );
    assert_eq!(last.status, Some(200));
}

/// Stops the gateway with SIGTERM and waits for it to exit (bounded by the kill in `Drop`).
fn stop(mut gw: Gateway) {
    gw.terminate();
    for _ in 0..100 {
        if let Ok(Some(_)) = gw.child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Every file in `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read(e.path())
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_added_at_runtime_are_routed_listed_persisted_and_deleted() {
    let m = tollgate_mock::start(MockConfig::default()).await.unwrap();
    let dir = common::tempdir::TempDir::new("models");
    let db = dir.0.join("models.db");
    let cfg = config(&m.base_url(), &db);
    let gw = Gateway::start(&cfg);

    // Unknown before it is added.
    assert_eq!(chat(&gw, "db-model").await.0, 404);

    // /model/new: LiteLLM's row shape, a generated id, no credential in the answer.
    let (s, added) = call(
        &gw,
        "POST",
        "/model/new",
        Some(json!({
            "model_name": "db-model",
            "litellm_params": {
                "model": "openai/x",
                "api_base": format!("{}/v1", m.base_url()),
                "api_key": DB_KEY,
            },
            "model_info": {"mode": "chat"},
        })),
    )
    .await;
    assert_eq!(s, 200, "{added}");
    let id = added["model_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert_eq!(added["model_name"], "db-model");
    assert_eq!(
        added["litellm_params"],
        json!({"model": "openai/x", "api_base": format!("{}/v1", m.base_url())})
    );
    assert_eq!(
        added["model_info"],
        json!({"mode": "chat", "id": id, "db_model": true})
    );
    assert_eq!(added["created_by"], "litellm-proxy-master-key");

    // Callable at once, on that deployment.
    let (s, v) = chat(&gw, "db-model").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["object"], "chat.completion");
    assert_last_call_on_db_deployment(&m);

    // Listed by /v1/models and /model/info (no credential).
    let (_, v) = call(&gw, "GET", "/v1/models", None).await;
    assert_eq!(model_ids(&v), vec!["cfg-model", "db-model"]);
    let (s, info) = call(&gw, "GET", "/model/info", None).await;
    assert_eq!(s, 200);
    assert_eq!(info["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        info_entry(&info, &id),
        Some(json!({
            "model_name": "db-model",
            "litellm_params": {"model": "openai/x", "api_base": format!("{}/v1", m.base_url())},
            "model_info": {"mode": "chat", "id": id, "db_model": true,
                // the row's audit fields, as LiteLLM's get_model_info_with_id copies them in
                "created_at": added["created_at"], "updated_at": added["updated_at"],
                "created_by": "litellm-proxy-master-key", "updated_by": "litellm-proxy-master-key"},
        }))
    );
    let cfg_entry = info_entry(&info, "cfg-1").unwrap();
    assert_eq!(cfg_entry["model_info"]["db_model"], false);
    assert!(cfg_entry["litellm_params"].get("api_key").is_none());
    assert!(!info.to_string().contains(UPSTREAM_KEY));

    // Refusals: invalid deployments (400 with the building message), the config's own
    // deployment (400), an unknown id (404), a duplicate id (400).
    let (s, v) = call(
        &gw,
        "POST",
        "/model/new",
        Some(json!({"model_name": "bad", "litellm_params": {"model": "nope/x"}})),
    )
    .await;
    assert_eq!(s, 400);
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("provider 'nope' is not served by Tollgate"),
        "{msg}"
    );
    let (s, v) = call(
        &gw,
        "POST",
        "/model/new",
        Some(json!({"model_name": "bad", "litellm_params": {"model": "openai/x", "api_base": "not a url"}})),
    )
    .await;
    assert_eq!(s, 400);
    assert_eq!(
        v["error"]["message"],
        "litellm_params.api_base 'not a url' is not an http(s) URL"
    );
    let (s, v) = call(
        &gw,
        "POST",
        "/model/new",
        Some(json!({"model_name": "dup", "litellm_params": {"model": "openai/x", "api_base": "http://127.0.0.1:9/v1"}, "model_info": {"id": id}})),
    )
    .await;
    assert_eq!(
        (s, v["error"]["message"].clone()),
        (400, json!(format!("Model with id={id} already exists")))
    );
    let (s, v) = call(&gw, "POST", "/model/delete", Some(json!({"id": "cfg-1"}))).await;
    assert_eq!(s, 400, "{v}");
    assert_eq!(v["error"]["type"], "bad_request_error");
    let (s, v) = call(
        &gw,
        "POST",
        "/model/delete",
        Some(json!({"id": "no-such-id"})),
    )
    .await;
    assert_eq!(
        (s, v["error"]["message"].clone()),
        (404, json!("Model with id=no-such-id not found"))
    );
    assert_eq!(chat(&gw, "cfg-model").await.0, 200);
    let (_, v) = call(&gw, "GET", "/v1/models", None).await;
    assert_eq!(model_ids(&v), vec!["cfg-model", "db-model"]);

    // The credential is stored encrypted: the database files never hold it in the clear.
    assert_eq!(files_containing(&dir.0, DB_KEY), Vec::<String>::new());
    assert!(!files_containing(&dir.0, "LiteLLM_ProxyModelTable").is_empty());

    // A restart on the same config and database keeps it, callable.
    stop(gw);
    let gw = Gateway::start(&cfg);
    let (s, v) = chat(&gw, "db-model").await;
    assert_eq!(s, 200, "{v}");
    assert_last_call_on_db_deployment(&m);
    let (_, info) = call(&gw, "GET", "/model/info", None).await;
    assert_eq!(
        info_entry(&info, &id).map(|e| e["model_info"]["db_model"].clone()),
        Some(json!(true))
    );

    // /model/delete: gone from routing and listings at once, and after a restart.
    let (s, v) = call(&gw, "POST", "/model/delete", Some(json!({"id": id}))).await;
    assert_eq!(
        (s, v),
        (
            200,
            json!({"message": format!("Model: {id} deleted successfully")})
        )
    );
    let (s, v) = chat(&gw, "db-model").await;
    assert_eq!(s, 404, "{v}");
    assert_eq!(v["error"]["code"], "model_not_found");
    let (_, v) = call(&gw, "GET", "/v1/models", None).await;
    assert_eq!(model_ids(&v), vec!["cfg-model"]);
    let (s, _) = call(&gw, "POST", "/model/delete", Some(json!({"id": id}))).await;
    assert_eq!(s, 404);
    stop(gw);
    let gw = Gateway::start(&cfg);
    assert_eq!(chat(&gw, "db-model").await.0, 404);
    let (_, info) = call(&gw, "GET", "/model/info", None).await;
    assert_eq!(info["data"].as_array().map(Vec::len), Some(1));
    assert!(!gw.log().contains(DB_KEY), "the log shows the upstream key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_model_in_db_false_refuses_runtime_models() {
    let m = tollgate_mock::start(MockConfig::default()).await.unwrap();
    let dir = common::tempdir::TempDir::new("models-off");
    let cfg = config(&m.base_url(), &dir.0.join("models.db")) + "  store_model_in_db: false\n";
    let gw = Gateway::start(&cfg);
    let (s, v) = call(
        &gw,
        "POST",
        "/model/new",
        Some(json!({
            "model_name": "db-model",
            "litellm_params": {"model": "openai/x", "api_base": format!("{}/v1", m.base_url())},
        })),
    )
    .await;
    assert_eq!(s, 400, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("store_model_in_db"),
        "{v}"
    );
    assert_eq!(chat(&gw, "db-model").await.0, 404);
    assert_eq!(chat(&gw, "cfg-model").await.0, 200);
    stop(gw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_update_merges_params_and_is_routed_at_once() {
    let m = tollgate_mock::start(MockConfig::default()).await.unwrap();
    let dir = common::tempdir::TempDir::new("models-update");
    let db = dir.0.join("models.db");
    let cfg = config(&m.base_url(), &db);
    let gw = Gateway::start(&cfg);
    let (s, added) = call(
        &gw,
        "POST",
        "/model/new",
        Some(json!({
            "model_name": "db-model",
            "litellm_params": {
                "model": "openai/x",
                "api_base": format!("{}/d/one/v1", m.base_url()),
                "api_key": DB_KEY,
            },
            "model_info": {"id": "upd-1", "mode": "chat"},
        })),
    )
    .await;
    assert_eq!(s, 200, "{added}");
    assert_eq!(chat(&gw, "db-model").await.0, 200);
    assert_eq!(
        m.observations()
            .last()
            .and_then(|o| o.deployment.clone())
            .as_deref(),
        Some("one")
    );

    // POST /model/update: api_base moved, the key kept (merged), model_info merged
    let (s, v) = call(
        &gw,
        "POST",
        "/model/update",
        Some(json!({
            "model_info": {"id": "upd-1", "base_model": "gpt-4o"},
            "litellm_params": {"api_base": format!("{}/d/two/v1", m.base_url())},
        })),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["model_info"]["mode"], "chat", "{v}");
    assert_eq!(v["model_info"]["base_model"], "gpt-4o", "{v}");
    assert_eq!(chat(&gw, "db-model").await.0, 200);
    let last = m.observations().last().cloned().unwrap();
    assert_eq!(last.deployment.as_deref(), Some("two"));
    assert_eq!(
        last.headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {DB_KEY}").as_str()),
        "the stored key was kept"
    );

    // PATCH /model/{id}/update: renamed; the old name is gone at once
    let r = client()
        .patch(gw.url("/model/upd-1/update"))
        .header("authorization", format!("Bearer {MASTER}"))
        .json(&json!({"model_name": "renamed"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(chat(&gw, "db-model").await.0, 404);
    assert_eq!(chat(&gw, "renamed").await.0, 200);

    // unknown id 404; a config deployment 400
    let (s, _) = call(
        &gw,
        "POST",
        "/model/update",
        Some(json!({"model_info": {"id": "nope"}, "model_name": "x"})),
    )
    .await;
    assert_eq!(s, 404);
    let (s, _) = call(
        &gw,
        "POST",
        "/model/update",
        Some(json!({"model_info": {"id": "cfg-1"}, "model_name": "x"})),
    )
    .await;
    assert_eq!(s, 400);

    // the change survives a restart
    stop(gw);
    let gw = Gateway::start(&cfg);
    assert_eq!(chat(&gw, "renamed").await.0, 200);
    assert_eq!(
        m.observations()
            .last()
            .and_then(|o| o.deployment.clone())
            .as_deref(),
        Some("two")
    );
    stop(gw);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_models_access_groups_count_for_keys() {
    let m = tollgate_mock::start(MockConfig::default()).await.unwrap();
    let dir = common::tempdir::TempDir::new("models-groups");
    let gw = Gateway::start(&config(&m.base_url(), &dir.0.join("models.db")));
    let (s, k) = call(
        &gw,
        "POST",
        "/key/generate",
        Some(json!({"models": ["grp"]})),
    )
    .await;
    assert_eq!(s, 200, "{k}");
    let key = k["key"].as_str().unwrap().to_owned();
    let as_key = |model: &'static str| {
        client()
            .post(gw.url("/v1/chat/completions"))
            .header("authorization", format!("Bearer {key}"))
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
    };
    // nothing is in group `grp` yet: the key's list refuses the name (LiteLLM checks it
    // before routing)
    assert_eq!(as_key("db-model").await.unwrap().status(), 403);
    let (s, v) = call(
        &gw,
        "POST",
        "/model/new",
        Some(json!({
            "model_name": "db-model",
            "litellm_params": {"model": "openai/x", "api_base": format!("{}/v1", m.base_url())},
            "model_info": {"access_groups": ["grp"]},
        })),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(as_key("db-model").await.unwrap().status(), 200);
    // the config model is outside the key's group
    assert_eq!(as_key("cfg-model").await.unwrap().status(), 403);
    stop(gw);
}
