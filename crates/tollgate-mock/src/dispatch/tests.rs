use super::*;

#[test]
fn prefixes() {
    assert_eq!(
        parse_path("/d/east/v1/chat/completions"),
        ParsedPath {
            deployment: Some("east"),
            rest: "/chat/completions"
        }
    );
    assert_eq!(parse_path("/v1/messages").rest, "/messages");
    assert_eq!(parse_path("/chat/completions").rest, "/chat/completions");
    assert_eq!(parse_path("/d/x/embeddings").deployment, Some("x"));
    assert_eq!(parse_path("/d/x/embeddings").rest, "/embeddings");
    let az = parse_path("/openai/deployments/gpt4o/chat/completions");
    assert_eq!(
        (az.deployment, az.rest),
        (Some("gpt4o"), "/chat/completions")
    );
    assert_eq!(parse_path("/openai/v1/responses").rest, "/responses");
    assert_eq!(parse_path("/v1").rest, "/");
    assert_eq!(
        parse_path("/v1beta/models/x:generateContent").rest,
        "/v1beta/models/x:generateContent"
    );
}

#[test]
fn routes() {
    assert_eq!(
        route_of(&Method::POST, "/chat/completions"),
        Route::ChatCompletions
    );
    assert_eq!(route_of(&Method::GET, "/models"), Route::Models);
    assert_eq!(
        route_of(&Method::GET, "/models/mock-gpt-text"),
        Route::Model
    );
    assert_eq!(route_of(&Method::GET, "/chat/completions"), Route::Unknown);
    assert_eq!(
        route_of(&Method::POST, "/messages/count_tokens"),
        Route::CountTokens
    );
}

#[test]
fn sse_event_split() {
    let b = Bytes::from_static(b"data: a\n\ndata: b\r\n\r\ndata: [DONE]\n\ntrailing");
    let parts = split_events(&b);
    assert_eq!(
        parts,
        vec![
            "data: a\n\n",
            "data: b\r\n\r\n",
            "data: [DONE]\n\n",
            "trailing"
        ]
    );
    assert_eq!(parts.concat(), b.to_vec());
}

#[test]
fn key_check_forms() {
    let mut h = HeaderMap::new();
    h.insert("authorization", HeaderValue::from_static("Bearer sk-1"));
    assert!(key_ok(&h, "sk-1"));
    assert!(!key_ok(&h, "sk-2"));
    let mut h = HeaderMap::new();
    h.insert("x-api-key", HeaderValue::from_static("sk-1"));
    assert!(key_ok(&h, "sk-1"));
    assert!(!key_ok(&HeaderMap::new(), "sk-1"));
}
