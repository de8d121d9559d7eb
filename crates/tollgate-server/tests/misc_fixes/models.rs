//! `/v1/models` lists what the caller may call, wildcard groups included by their pattern (as
//! LiteLLM lists them): a key whose only entry is `bedrock/*` sees `bedrock/*`, can call a
//! `bedrock/...` model, and another model (one nothing serves included) is its list's 403.

use serde_json::{Value, json};

use crate::gov::*;

async fn listed(gw: &GovGateway, key: &str) -> Vec<String> {
    let r = get_as(gw, key, "/v1/models").await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn hello(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_only_key_lists_and_calls_its_wildcard_group() {
    let m = mock().await;
    let gw = GovGateway::start(&crate::config(&m.base_url()));
    let (wild, _) = generate_key(&gw, json!({"models": ["bedrock/*"]})).await;
    let (narrow, _) = generate_key(&gw, json!({"models": ["bedrock/anthropic.*"]})).await;
    let (named, _) = generate_key(&gw, json!({"models": ["gpt"]})).await;

    assert_eq!(listed(&gw, &wild).await, ["bedrock/*"]);
    assert_eq!(listed(&gw, &narrow).await, ["bedrock/anthropic.*"]);
    assert_eq!(listed(&gw, &named).await, ["gpt"]);
    assert_eq!(
        listed(&gw, MASTER).await,
        ["byok-a", "byok-b", "claude", "gpt", "oa-resp", "bedrock/*"]
    );

    // What is listed is callable.
    let r = post_as(
        &gw,
        &wild,
        "/v1/chat/completions",
        &hello("bedrock/anthropic.claude-3"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = m.drain_observations();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].deployment.as_deref(), Some("bedrock"));
    assert_eq!(seen[0].body["model"], "anthropic.claude-3");

    // A model nothing serves, which the key's list does not admit either: the list's 403,
    // as LiteLLM checks the key's models before routing.
    let r = post_as(&gw, &wild, "/v1/chat/completions", &hello("no-such-model")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.body["error"],
        json!({"message": "The requested model 'no-such-model' is not available for this API key, or the model name is invalid. Call `/v1/models` to view the models available to your key.",
               "type": "key_model_access_denied", "param": "model", "code": "403"})
    );
    assert!(m.drain_observations().is_empty());
}
