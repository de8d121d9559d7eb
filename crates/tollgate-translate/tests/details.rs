//! End-user ids, images, `cache_control` and response ids across every dialect pair.

mod common;

use common::*;
use serde_json::{Value, json};
use tollgate_translate::responses_to_chat::{self, ResponseContext};
use tollgate_translate::{
    RequestOptions, anthropic_to_chat, chat_to_anthropic, responses_to_anthropic,
};

const CALL_ID: &str = "5f0e8a52-3c1b-4d2e-9a7f-6b8c9d0e1f2a";

fn opts() -> RequestOptions {
    RequestOptions::default()
}

fn hour() -> Value {
    json!({"type": "ephemeral", "ttl": "1h"})
}

#[test]
fn user_and_metadata_user_id_map_both_ways() {
    // OpenAI chat `user` → Anthropic `metadata.user_id`, and nothing else in metadata.
    let chat = json!({"model":"m","user":"user-42","metadata":{"tags":["a"],"trace_id":"t"},
        "messages":[{"role":"user","content":"hi"}]});
    let out = chat_to_anthropic::request(&chat, &opts()).unwrap();
    assert_eq!(out["metadata"], json!({"user_id": "user-42"}));
    // Without `user`, no metadata at all (LiteLLM's chat `metadata` is the gateway's).
    let chat =
        json!({"model":"m","metadata":{"user_id":"x"},"messages":[{"role":"user","content":"hi"}]});
    assert!(
        chat_to_anthropic::request(&chat, &opts())
            .unwrap()
            .get("metadata")
            .is_none()
    );

    // Anthropic `metadata.user_id` → OpenAI `user`; other metadata keys go nowhere.
    let msg = json!({"model":"m","max_tokens":5,"metadata":{"user_id":"user-7","tags":["x"]},
        "messages":[{"role":"user","content":"hi"}]});
    let out = anthropic_to_chat::request(&msg, &opts()).unwrap();
    assert_eq!(out["user"], "user-7");
    assert!(out.get("metadata").is_none() && out.get("tags").is_none());

    // Responses `user` → Chat `user` and, chained, Anthropic `metadata.user_id`.
    let resp = json!({"model":"m","input":"hi","user":"user-9","metadata":{"k":"v"}});
    assert_eq!(
        responses_to_chat::request(&resp, &opts(), &[]).unwrap()["user"],
        "user-9"
    );
    assert_eq!(
        responses_to_anthropic::request(&resp, &opts(), &[]).unwrap()["metadata"],
        json!({"user_id": "user-9"})
    );
}

#[test]
fn images_between_data_urls_and_base64_sources() {
    // Chat → Anthropic: jpg named jpeg, URL kept as a URL source.
    let chat = json!({"model":"m","messages":[{"role":"user","content":[
        {"type":"image_url","image_url":{"url":"data:IMAGE/JPG;base64,/9j/4AAQ"}},
        {"type":"image_url","image_url":"https://example.com/a.webp"}]}]});
    let out = chat_to_anthropic::request(&chat, &opts()).unwrap();
    assert_eq!(
        out["messages"][0]["content"],
        json!([
            {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"}},
            {"type":"image","source":{"type":"url","url":"https://example.com/a.webp"}}])
    );
    // Anthropic → Chat: base64 source → data URL, url source → URL.
    let msg = json!({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[
        {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}},
        {"type":"image","source":{"type":"url","url":"https://example.com/b.gif"}}]}]});
    let out = anthropic_to_chat::request(&msg, &opts()).unwrap();
    assert_eq!(
        out["messages"][0]["content"],
        json!([
            {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}},
            {"type":"image_url","image_url":{"url":"https://example.com/b.gif"}}])
    );
    let bad = json!({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[
        {"type":"image","source":{"type":"base64","data":"iVBORw0K"}}]}]});
    let err = anthropic_to_chat::request(&bad, &opts()).unwrap_err();
    assert_eq!(
        (err.status(), err.param()),
        (400, Some("messages[0].content[0].source.media_type"))
    );

    // Responses → Anthropic: the same source; a bad image names the Responses field.
    let resp = json!({"model":"m","input":[{"role":"user","content":[
        {"type":"input_image","image_url":"data:image/jpg;base64,/9j/"}]}]});
    let out = responses_to_anthropic::request(&resp, &opts(), &[]).unwrap();
    assert_eq!(
        out["messages"][0]["content"][0]["source"],
        json!({"type":"base64","media_type":"image/jpeg","data":"/9j/"})
    );
    for (url, status) in [
        ("data:image/png,AAAA", 400),
        ("data:image/tiff;base64,AAAA", 400),
        ("ftp://example.com/a.png", 400),
    ] {
        let resp = json!({"model":"m","input":[{"role":"user","content":[
            {"type":"input_image","image_url":url}]}]});
        let err = responses_to_anthropic::request(&resp, &opts(), &[]).unwrap_err();
        assert_eq!(
            (err.status(), err.param()),
            (status, Some("input[0].content[0].image_url")),
            "{url}"
        );
    }
    // Toward a Chat upstream only the data URL's shape is checked; the URL stays as sent.
    let resp = json!({"model":"m","input":[{"role":"user","content":[
        {"type":"input_image","image_url":"data:image/tiff;base64,AAAA"}]}]});
    let out = responses_to_chat::request(&resp, &opts(), &[]).unwrap();
    assert_eq!(
        out["messages"][0]["content"][0]["image_url"]["url"],
        "data:image/tiff;base64,AAAA"
    );
    let resp = json!({"model":"m","input":[{"role":"user","content":[
        {"type":"input_image","image_url":"data:image/png;base64,"}]}]});
    let err = responses_to_chat::request(&resp, &opts(), &[]).unwrap_err();
    assert_eq!(err.param(), Some("input[0].content[0].image_url"));
}

#[test]
fn cache_control_from_chat_tools_and_system() {
    let cc = hour();
    let chat = json!({"model":"m","messages":[
        {"role":"system","content":[{"type":"text","text":"rules","cache_control":cc}]},
        {"role":"user","content":"q"}],
        "tools":[
            {"type":"function","function":{"name":"a","cache_control":cc}},
            {"type":"function","function":{"name":"b"},"cache_control":{"type":"ephemeral"}}]});
    let out = chat_to_anthropic::request(&chat, &opts()).unwrap();
    assert_eq!(
        out["system"],
        json!([{"type":"text","text":"rules","cache_control":cc}])
    );
    assert_eq!(out["tools"][0]["cache_control"], cc);
    assert_eq!(
        out["tools"][1]["cache_control"],
        json!({"type":"ephemeral"})
    );
}

#[test]
fn cache_control_from_responses_reaches_anthropic_only() {
    let cc = hour();
    let req = json!({"model":"m","input":[
        {"type":"message","role":"developer","content":[
            {"type":"input_text","text":"rules","cache_control":cc},
            {"type":"input_text","text":"more"}]},
        {"role":"user","content":[
            {"type":"input_text","text":"long doc","cache_control":cc},
            {"type":"input_text","text":"question"}]},
        {"role":"user","content":"again","cache_control":cc}],
        "tools":[{"type":"function","name":"f","parameters":{"type":"object"},"cache_control":cc}]});
    let out = responses_to_anthropic::request(&req, &opts(), &[]).unwrap();
    assert_eq!(
        out["system"],
        json!([{"type":"text","text":"rules","cache_control":cc},{"type":"text","text":"more"}])
    );
    assert_eq!(
        out["messages"][0]["content"],
        json!([
            {"type":"text","text":"long doc","cache_control":cc},
            {"type":"text","text":"question"},
            {"type":"text","text":"again","cache_control":cc}])
    );
    assert_eq!(out["tools"][0]["cache_control"], cc);

    // Toward a Chat upstream nothing of it is sent.
    let out = responses_to_chat::request(&req, &opts(), &[]).unwrap();
    assert!(
        !out.to_string().contains("cache_control"),
        "cache_control leaked to a Chat upstream: {out}"
    );
    assert_eq!(
        out["messages"][0],
        json!({"role":"developer","content":[
        {"type":"text","text":"rules"},{"type":"text","text":"more"}]})
    );
}

#[test]
fn message_ids_are_anthropic_and_the_same_streamed_or_not() {
    let chat = fixture("openai/chat/text.response.json");
    let unary = anthropic_to_chat::response(&chat, CALL_ID).unwrap();
    let id = unary["id"].as_str().unwrap().to_owned();
    assert_eq!(id, "msg_mockText001");
    let streamed = run_pieces(
        &mut anthropic_to_chat::StreamTranslator::new(CALL_ID),
        &[&fixture_bytes("openai/chat/text.stream.sse")],
    );
    let text = String::from_utf8(streamed).unwrap();
    assert!(
        text.contains(&format!(r#""message":{{"id":"{id}""#)),
        "{text}"
    );
    assert!(!text.contains("chatcmpl-"));

    // An upstream without ids: the call id, in both forms.
    let mut bare = chat.clone();
    bare.as_object_mut().unwrap().remove("id");
    let unary = anthropic_to_chat::response(&bare, CALL_ID).unwrap();
    assert_eq!(unary["id"], "msg_5f0e8a523c1b4d2e9a7f6b8c9d0e1f2a");
    let chunk = br#"data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}

data: [DONE]

"#;
    let out = run_pieces(
        &mut anthropic_to_chat::StreamTranslator::new(CALL_ID),
        &[chunk],
    );
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains(r#""id":"msg_5f0e8a523c1b4d2e9a7f6b8c9d0e1f2a""#),
        "{text}"
    );
}

#[test]
fn responses_ids_come_from_the_context_in_both_forms() {
    let req = fixture("openai/responses/text.request.json");
    let ctx = ResponseContext {
        response_id: "resp_5f0e8a523c1b4d2e9a7f6b8c9d0e1f2a",
        created_at: 1,
        completed_at: 2,
        request: &req,
    };
    let unary =
        responses_to_chat::response(&fixture("openai/chat/text.response.json"), &ctx).unwrap();
    assert_eq!(unary["id"], ctx.response_id);
    assert_eq!(
        unary["output"][0]["id"],
        "msg_5f0e8a523c1b4d2e9a7f6b8c9d0e1f2a"
    );
    let out = run_pieces(
        &mut responses_to_chat::StreamTranslator::new(&ctx),
        &[&fixture_bytes("openai/chat/text.stream.sse")],
    );
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("chatcmpl-"), "{text}");
    let completed = text
        .split("\n\n")
        .find(|e| e.contains("response.completed"))
        .and_then(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str::<Value>(d).unwrap())
        .unwrap();
    assert_eq!(completed["response"]["id"], ctx.response_id);
    assert_eq!(completed["response"]["output"], unary["output"]);
}
