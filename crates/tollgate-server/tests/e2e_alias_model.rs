//! End-to-end: a request made through an alias is answered under the alias, as LiteLLM
//! restamps `model` to what the client requested (`_override_openai_response_model`,
//! `litellm/proxy/common_request_processing.py`): a key's `aliases`, a team's
//! `model_aliases`, unary and streamed, OpenAI chat and Anthropic Messages. After a fallback
//! the answering model is kept, as LiteLLM keeps it, and a request that names the group itself
//! is relayed as the upstream wrote it.

#![expect(
    clippy::expect_used,
    reason = "test support: a failed request fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

/// The `model` of every `data:` payload of an SSE body that has one (top level, or inside
/// `message` / `response`).
fn stream_models(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            [&v["model"], &v["message"]["model"], &v["response"]["model"]]
                .into_iter()
                .find_map(|m| m.as_str().map(str::to_owned))
        })
        .collect()
}

async fn stream_text(gw: &GovGateway, key: &str, path: &str, body: &Value) -> String {
    let r = client()
        .post(gw.url(path))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    r.text().await.expect("body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_carry_the_alias_the_client_sent() {
    let m = mock().await;
    let router = "  fallbacks: [{\"broken\": [\"flat\"]}]\n";
    let gw = GovGateway::start(&config(
        &m.base_url(),
        &[flat_dep("flat", 0.001), flat_dep("broken", 0.001)],
        router,
        None,
    ));
    script_default(&m, "broken", json!({"status": 500}));
    let team = new_team(&gw, json!({"model_aliases": {"team-nick": "flat"}})).await;
    let (key, _) = generate_key(
        &gw,
        json!({"team_id": team, "aliases": {"nick": "flat", "shaky": "broken"}}),
    )
    .await;

    // the group's own name: the upstream's model, as it wrote it
    let r = chat(&gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let upstream_model = r.body["model"].as_str().unwrap_or_default().to_owned();
    assert_ne!(upstream_model, "nick");
    assert!(!upstream_model.is_empty(), "{}", r.text);

    for alias in ["nick", "team-nick"] {
        let r = chat(&gw, &key, &chat_body(alias, "hello", 8)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["model"], alias, "{}", r.text);
        // everything else is the upstream's answer
        assert_eq!(r.body["choices"][0]["message"]["role"], "assistant");
        assert_eq!(r.body["usage"]["completion_tokens"], 8, "{}", r.text);

        let mut body = chat_body(alias, "hello", 8);
        body["stream"] = json!(true);
        let text = stream_text(&gw, &key, "/v1/chat/completions", &body).await;
        let models = stream_models(&text);
        assert!(!models.is_empty(), "{text}");
        assert!(models.iter().all(|m| m == alias), "{models:?}\n{text}");
        assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    }

    // Anthropic Messages through the alias, unary and streamed
    let msg = json!({"model": "nick", "max_tokens": 8, "messages": [{"role": "user", "content": "hello"}]});
    let r = post_as(&gw, &key, "/v1/messages", &msg).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["model"], "nick", "{}", r.text);
    assert_eq!(r.body["type"], "message");
    let mut streamed = msg.clone();
    streamed["stream"] = json!(true);
    let text = stream_text(&gw, &key, "/v1/messages", &streamed).await;
    assert!(text.contains("event: message_start"), "{text}");
    assert_eq!(stream_models(&text), vec!["nick".to_owned()], "{text}");

    // through an alias whose group fails and falls back: the answering model is kept
    let r = chat(&gw, &key, &chat_body("shaky", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-attempted-fallbacks"), "1");
    assert_eq!(r.body["model"], upstream_model.as_str(), "{}", r.text);
}
