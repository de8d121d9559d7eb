//! `GET /health`, LiteLLM's active health check, against `tollgate-mock` scripted per
//! deployment: which deployments were called, with what, and what the caller was told.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};
use tollgate_mock::MockHandle;

/// Four deployments the mock serves: chat `east` and `west` in group `pair`, an embedding
/// deployment and an Anthropic one; a wildcard group (skipped) and an in-process mock
/// (healthy without a call).
fn config(mock: &str) -> String {
    format!(
        r#"model_list:
  - model_name: pair
    litellm_params: {{model: openai/mock-gpt, api_base: "{mock}/d/east/v1", api_key: {UPSTREAM_KEY}}}
  - model_name: pair
    litellm_params: {{model: openai/mock-gpt, api_base: "{mock}/d/west/v1", api_key: {UPSTREAM_KEY}}}
  - model_name: embed
    litellm_params: {{model: openai/mock-embed, api_base: "{mock}/d/vec/v1", api_key: {UPSTREAM_KEY}}}
    model_info: {{mode: embedding}}
  - model_name: claude
    litellm_params: {{model: anthropic/mock-claude, api_base: "{mock}/d/anth", api_key: {UPSTREAM_KEY}}}
  - model_name: "any/*"
    litellm_params: {{model: "openai/*", api_base: "{mock}/d/wild/v1", api_key: {UPSTREAM_KEY}}}
  - model_name: local
    litellm_params: {{model: mock/echo}}
general_settings:
  master_key: {MASTER}
"#
    )
}

async fn health(gw: &Gateway, query: &str, key: Option<&str>) -> (u16, Value) {
    let mut req = client().get(gw.url(&format!("/health{query}")));
    if let Some(k) = key {
        req = req.header("authorization", format!("Bearer {k}"));
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

fn script(m: &MockHandle, v: Value) {
    m.script(serde_json::from_value(v).unwrap());
}

fn names(entries: &Value) -> Vec<String> {
    let mut v: Vec<String> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["model_name"].as_str().unwrap(),
                e["model"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_probes_every_deployment_once_in_its_own_dialect() {
    let m = mock().await;
    script(
        &m,
        json!({"key": "west", "default": {"status": 500, "body": {"error": {"message": "west is down", "type": "server_error"}}}}),
    );
    let gw = Gateway::start(&config(&m.base_url()));
    let (status, v) = health(&gw, "", Some(MASTER)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["healthy_count"].clone(), v["unhealthy_count"].clone()),
        (json!(4), json!(1))
    );
    assert_eq!(
        names(&v["healthy_endpoints"]),
        [
            "claude anthropic/mock-claude",
            "embed openai/mock-embed",
            "local mock/echo",
            "pair openai/mock-gpt"
        ]
    );
    let bad = &v["unhealthy_endpoints"][0];
    assert_eq!(bad["model_name"], "pair");
    assert_eq!(bad["api_base"], format!("{}/d/west/v1", m.base_url()));
    assert_eq!(bad["error"], "upstream answered 500: west is down");
    assert!(!v.to_string().contains(UPSTREAM_KEY) && !v.to_string().contains(MASTER));

    // One call per probed deployment, each the smallest request of its kind.
    let mut seen: Vec<(String, String, Value)> = m
        .drain_observations()
        .into_iter()
        .map(|o| (o.deployment.unwrap_or_default(), o.path, o.body))
        .collect();
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    let ping = json!([{"role": "user", "content": "ping"}]);
    assert_eq!(
        seen,
        [
            (
                "anth".to_owned(),
                "/d/anth/v1/messages".to_owned(),
                json!({"model": "mock-claude", "max_tokens": 1, "messages": ping})
            ),
            (
                "east".to_owned(),
                "/d/east/v1/chat/completions".to_owned(),
                json!({"model": "mock-gpt", "max_tokens": 1, "messages": ping})
            ),
            (
                "vec".to_owned(),
                "/d/vec/v1/embeddings".to_owned(),
                json!({"model": "mock-embed", "input": ["ping"]})
            ),
            (
                "west".to_owned(),
                "/d/west/v1/chat/completions".to_owned(),
                json!({"model": "mock-gpt", "max_tokens": 1, "messages": ping})
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_selects_one_group_and_needs_the_master_key() {
    let m = mock().await;
    let gw = Gateway::start(&config(&m.base_url()));
    let (status, v) = health(&gw, "?model=embed", Some(MASTER)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(names(&v["healthy_endpoints"]), ["embed openai/mock-embed"]);
    assert_eq!(v["unhealthy_count"], 0);
    assert_eq!(m.drain_observations().len(), 1);

    let (status, v) = health(&gw, "?model=nope", Some(MASTER)).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (404, json!("model_not_found"))
    );
    let (status, v) = health(&gw, "", None).await;
    assert_eq!(status, 401, "{v}");
    let (status, _) = health(&gw, "", Some("sk-wrong")).await;
    assert_eq!(status, 401);
    assert_eq!(
        m.drain_observations().len(),
        0,
        "no probe without the master key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_masks_api_base_credentials_and_takes_aliases_and_wildcard_names() {
    let m = mock().await;
    let mock_base = m.base_url();
    let gw = Gateway::start(&format!(
        r#"model_list:
  - model_name: pair
    litellm_params: {{model: openai/mock-gpt, api_base: "{mock_base}/d/east/v1", api_key: {UPSTREAM_KEY}}}
  - model_name: locked
    litellm_params: {{model: openai/gpt-x, api_base: "http://admin:SECRETPW@127.0.0.1:9/v1", api_key: {UPSTREAM_KEY}}}
  - model_name: "any/*"
    litellm_params: {{model: "openai/*", api_base: "{mock_base}/d/wild/v1", api_key: {UPSTREAM_KEY}}}
router_settings:
  model_group_alias: {{fast: pair}}
general_settings:
  master_key: {MASTER}
"#
    ));
    // Nothing listens on port 9: the deployment is unhealthy, its password masked.
    let (status, v) = health(&gw, "", Some(MASTER)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(names(&v["healthy_endpoints"]), ["pair openai/mock-gpt"]);
    let bad = &v["unhealthy_endpoints"][0];
    assert_eq!(bad["model_name"], "locked");
    assert_eq!(bad["api_base"], "http://admin:****@127.0.0.1:9/v1");
    assert!(!bad["error"].as_str().unwrap().is_empty(), "{bad}");
    assert!(!v.to_string().contains("SECRETPW"), "{v}");
    assert!(!gw.log().contains("SECRETPW"));
    m.drain_observations();

    // An alias names its group; a name a wildcard group matches is asked for as such.
    let (status, v) = health(&gw, "?model=fast", Some(MASTER)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(names(&v["healthy_endpoints"]), ["pair openai/mock-gpt"]);
    let (status, v) = health(&gw, "?model=any/mock-gpt-4", Some(MASTER)).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(names(&v["healthy_endpoints"]), ["any/* openai/mock-gpt-4"]);
    let seen: Vec<(String, Value)> = m
        .drain_observations()
        .into_iter()
        .map(|o| (o.deployment.unwrap_or_default(), o.body["model"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            ("east".to_owned(), json!("mock-gpt")),
            ("wild".to_owned(), json!("mock-gpt-4"))
        ]
    );
}
