//! Stored Responses belong to their creator: key A's Response cannot be read
//! (`GET /v1/responses/{id}`) nor continued (`previous_response_id`) by an unrelated key, which
//! gets exactly the 404 of an unknown id and sends nothing upstream; A, another key of A's user
//! in the same team, the master key and a `proxy_admin` user's key may. Translated Responses
//! (kept by the gateway) and passthrough ones (stored by the `openai/` upstream) alike.

use serde_json::{Value, json};

use crate::gov::*;

const SECRET: &str = "my secret is 4242";

/// `/user/new` as the master key.
async fn new_user(gw: &GovGateway, body: Value) {
    let r = post_as(gw, MASTER, "/user/new", &body).await;
    assert_eq!(r.status, 200, "/user/new {body}: {}", r.text);
}

/// The keys of the test: A and A2 of user `u1`, C of user `u2`, B without a user, and a key of
/// the `proxy_admin` user `boss`.
struct Keys {
    a: String,
    a2: String,
    b: String,
    c: String,
    admin: String,
}

async fn keys(gw: &GovGateway) -> Keys {
    new_user(gw, json!({"user_id": "u1", "auto_create_key": false})).await;
    new_user(gw, json!({"user_id": "u2", "auto_create_key": false})).await;
    new_user(
        gw,
        json!({"user_id": "boss", "user_role": "proxy_admin", "auto_create_key": false}),
    )
    .await;
    Keys {
        a: generate_key(gw, json!({"user_id": "u1"})).await.0,
        a2: generate_key(gw, json!({"user_id": "u1"})).await.0,
        b: generate_key(gw, json!({})).await.0,
        c: generate_key(gw, json!({"user_id": "u2"})).await.0,
        admin: generate_key(gw, json!({"user_id": "boss"})).await.0,
    }
}

/// (event name, data) of an SSE body.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|e| {
            let name = e.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = e.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((name.to_owned(), serde_json::from_str(data).ok()?))
        })
        .collect()
}

/// A's Response on `model`, streamed or not: the Response object the client received.
async fn create(gw: &GovGateway, key: &str, model: &str, stream: bool) -> Value {
    let r = post_as(
        gw,
        key,
        "/v1/responses",
        &json!({"model": model, "input": SECRET, "stream": stream}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    if !stream {
        return r.body;
    }
    let evs = events(&r.text);
    let (name, last) = evs.last().cloned().unwrap_or_default();
    assert_eq!(name, "response.completed", "{}", r.text);
    last["response"].clone()
}

/// The answer to an id nobody was given, with that id put in: what another caller must get.
async fn unknown_id_answer(
    gw: &GovGateway,
    key: &str,
    path: &str,
    body: Option<Value>,
    id: &str,
) -> (u16, Value) {
    let never = "resp_never0issued0by0this0gateway";
    let r = match &body {
        Some(b) => {
            let mut b = b.clone();
            b["previous_response_id"] = json!(never);
            post_as(gw, key, path, &b).await
        }
        None => get_as(gw, key, &format!("{path}/{never}")).await,
    };
    let text = r.text.replace(never, id);
    (r.status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_translated_response_is_its_creator_s_alone() {
    let m = mock().await;
    let gw = GovGateway::start(&crate::config(&m.base_url()));
    let k = keys(&gw).await;
    for stream in [false, true] {
        let first = create(&gw, &k.a, "gpt", stream).await;
        let id = first["id"].as_str().unwrap_or_default().to_owned();
        assert!(id.starts_with("resp_"), "{first}");
        m.drain_observations();

        // Unrelated keys: the unknown-id 404, byte for byte, and nothing upstream.
        let follow_up =
            json!({"model": "claude", "max_output_tokens": 32, "input": "What is my secret?"});
        for other in [&k.b, &k.c] {
            let got = get_as(&gw, other, &format!("/v1/responses/{id}")).await;
            assert_eq!(
                (got.status, got.body.clone()),
                unknown_id_answer(&gw, other, "/v1/responses", None, &id).await
            );
            assert_eq!(got.status, 404, "{}", got.text);
            assert_eq!(
                got.body["error"]["message"],
                format!("Response with id '{id}' not found.")
            );
            assert_eq!(got.body["error"]["param"], "response_id");
            let mut body = follow_up.clone();
            body["previous_response_id"] = json!(id);
            let r = post_as(&gw, other, "/v1/responses", &body).await;
            assert_eq!(
                (r.status, r.body.clone()),
                unknown_id_answer(&gw, other, "/v1/responses", Some(follow_up.clone()), &id).await
            );
            assert_eq!(
                r.body,
                json!({"error": {"message": format!("Previous response with id '{id}' not found."), "type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}})
            );
        }
        let seen = m.drain_observations();
        assert!(
            seen.is_empty(),
            "another key's follow-up reached an upstream: {seen:?}"
        );

        // The creator, a key of the same user, the master key and a proxy admin read it.
        for reader in [k.a.as_str(), k.a2.as_str(), MASTER, k.admin.as_str()] {
            let got = get_as(&gw, reader, &format!("/v1/responses/{id}")).await;
            assert_eq!(got.status, 200, "{}", got.text);
            assert_eq!(got.body["id"], first["id"]);
            assert_eq!(got.body["output"], first["output"]);
        }
        // ... and continue it: the upstream receives A's conversation.
        for continuer in [&k.a, &k.a2] {
            let body =
                json!({"model": "gpt", "input": "What is my secret?", "previous_response_id": id});
            let r = post_as(&gw, continuer, "/v1/responses", &body).await;
            assert_eq!(r.status, 200, "{}", r.text);
            let seen = m.drain_observations();
            assert_eq!(seen.len(), 1, "{seen:?}");
            assert_eq!(seen[0].deployment.as_deref(), Some("gpt"));
            assert_eq!(
                seen[0].body["messages"],
                json!([
                    {"role": "user", "content": SECRET},
                    {"role": "assistant", "content": format!("This is a mock response to: {SECRET}")},
                    {"role": "user", "content": "What is my secret?"}
                ]),
                "stream={stream}"
            );
        }
    }
}

/// Responses the `openai/` upstream stores: the gateway knows who created each id and fetches
/// or forwards it for that caller only; an id it did not hand out is refused to a virtual key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passthrough_response_is_fetched_and_continued_for_its_creator_only() {
    let m = mock().await;
    let gw = GovGateway::start(&crate::config(&m.base_url()));
    let k = keys(&gw).await;
    let first = create(&gw, &k.a, "oa-resp", false).await;
    let id = first["id"].as_str().unwrap_or_default().to_owned();
    assert!(id.starts_with("resp_"), "{first}");
    m.drain_observations();

    let got = get_as(&gw, &k.b, &format!("/v1/responses/{id}")).await;
    assert_eq!(
        (got.status, got.body.clone()),
        unknown_id_answer(&gw, &k.b, "/v1/responses", None, &id).await
    );
    assert_eq!(got.status, 404);
    let body =
        json!({"model": "oa-resp", "input": "What is my secret?", "previous_response_id": id});
    let r = post_as(&gw, &k.b, "/v1/responses", &body).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.body["error"]["code"], "previous_response_not_found");
    // An id the gateway never handed out: a virtual key cannot have the upstream look it up.
    let mut unmanaged = body.clone();
    unmanaged["previous_response_id"] = json!("resp_made_elsewhere");
    let r = post_as(&gw, &k.a, "/v1/responses", &unmanaged).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.body["error"]["code"], "previous_response_not_found");
    let seen = m.drain_observations();
    assert!(
        seen.is_empty(),
        "refused requests reached the upstream: {seen:?}"
    );

    // The creator: GET goes to the deployment that stores it, the follow-up carries the id.
    let _ = get_as(&gw, &k.a, &format!("/v1/responses/{id}")).await;
    let r = post_as(&gw, &k.a, "/v1/responses", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = m.drain_observations();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", format!("/d/oa/v1/responses/{id}").as_str())
    );
    assert_eq!(seen[1].deployment.as_deref(), Some("oa"));
    assert_eq!(seen[1].body["previous_response_id"], json!(id));
    // The master key may name any id, one the gateway never saw included.
    let r = post_as(&gw, MASTER, "/v1/responses", &unmanaged).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let seen = m.drain_observations();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].body["previous_response_id"], "resp_made_elsewhere");
}
