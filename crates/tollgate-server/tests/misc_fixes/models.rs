//! `/v1/models` lists what the caller may call, wildcard groups included by their pattern (as
//! LiteLLM lists them): a key whose only entry is `bedrock/*` sees `bedrock/*`, can call a
//! `bedrock/...` model, and its 404 for another model names it among the models available.

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

    // A model nothing serves: the 404 names what the key may call.
    let r = post_as(&gw, &wild, "/v1/chat/completions", &hello("no-such-model")).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        "The model `no-such-model` does not exist or you do not have access to it. Models available: bedrock/*."
    );
    assert!(m.drain_observations().is_empty());
}
