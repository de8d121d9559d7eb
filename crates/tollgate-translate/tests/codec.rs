//! Every codec against the pair functions it stands for: same request, answer, stream bytes,
//! usage and errors; same-dialect codecs forward and relay without parsing.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use bytes::BytesMut;
use serde_json::{Value, json};
use tollgate_protocol::{Dialect, ParsedEvent};
use tollgate_translate::codec::passthrough::{
    ANTHROPIC_COUNT_TOKENS, ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_COMPLETIONS, OPENAI_EMBEDDINGS,
    RESPONSES,
};
use tollgate_translate::codec::{Answer, Codec, EventFormat, RequestRule, StreamRule};
use tollgate_translate::responses_to_chat::ResponseContext;
use tollgate_translate::{
    RequestOptions, StreamTranslate, TranslateError, anthropic_to_chat, chat_to_anthropic,
    completions_to_anthropic, errors, responses_to_anthropic, responses_to_chat,
};

const ANTHROPIC_MSG: &str = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":3}}"#;
const CHAT_COMPLETION: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":5,"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#;
const ANTHROPIC_STREAM: &[(&str, &str)] = &[
    (
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":5,"output_tokens":1}}}"#,
    ),
    (
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    ),
    (
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
    ),
    (
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
    ),
    ("message_stop", r#"{"type":"message_stop"}"#),
];
const CHAT_STREAM: &[&str] = &[
    r#"{"id":"c1","model":"gpt","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}"#,
    r#"{"id":"c1","model":"gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    r#"{"id":"c1","model":"gpt","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
    "[DONE]",
];

fn request_of(kind: &str) -> Value {
    match kind {
        "chat" => {
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 9})
        }
        "completions" => json!({"model": "m", "prompt": "hi", "max_tokens": 9}),
        "messages" => {
            json!({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]})
        }
        _ => json!({"model": "m", "input": "hi", "max_output_tokens": 9}),
    }
}

fn answer<'a>(request: &'a Value) -> Answer<'a> {
    Answer {
        call_id: "call-1",
        include_usage: true,
        context: ResponseContext {
            response_id: "resp_1",
            created_at: 1_700_000_000,
            completed_at: 1_700_000_000,
            request,
        },
    }
}

fn feed_all(t: &mut dyn StreamTranslate, anthropic: bool) -> Vec<u8> {
    let mut out = BytesMut::new();
    if anthropic {
        for (name, data) in ANTHROPIC_STREAM {
            t.feed_str(Some(name), data, &mut out).unwrap();
        }
    } else {
        for data in CHAT_STREAM {
            t.feed_str(None, data, &mut out).unwrap();
        }
    }
    t.finish(&mut out);
    out.to_vec()
}

fn translated(codec: &dyn Codec, a: &Answer<'_>) -> Box<dyn StreamTranslate> {
    match codec.stream(a) {
        StreamRule::Translate(t) => t,
        StreamRule::Relay(f) => panic!("{} relays {f:?}", codec.name()),
    }
}

fn translate(codec: &dyn Codec, req: &Value) -> Result<Value, TranslateError> {
    match codec.request() {
        RequestRule::Translate(f) => f(req, &RequestOptions::default(), &[]),
        RequestRule::Forward(r) => panic!("{} forwards {r:?}", codec.name()),
    }
}

#[test]
fn chat_to_anthropic_codec_is_the_pair_functions() {
    let codec = &chat_to_anthropic::ChatToAnthropic;
    let req = request_of("chat");
    let a = answer(&req);
    let opts = RequestOptions::default();
    assert_eq!(
        translate(codec, &req).unwrap(),
        chat_to_anthropic::request(&req, &opts).unwrap()
    );
    let msg: Value = serde_json::from_str(ANTHROPIC_MSG).unwrap();
    assert_eq!(
        codec.response(ANTHROPIC_MSG.as_bytes(), &a).unwrap(),
        Some(chat_to_anthropic::response(&msg, 1_700_000_000).unwrap())
    );
    let mut direct = chat_to_anthropic::StreamTranslator::new(chat_to_anthropic::StreamOptions {
        include_usage: true,
        created: 1_700_000_000,
        drop_reasoning: false,
    });
    assert_eq!(
        feed_all(translated(codec, &a).as_mut(), true),
        feed_all(&mut direct, true)
    );
    let u = codec.usage(ANTHROPIC_MSG.as_bytes()).unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens), (7, 3));
}

#[test]
fn completions_to_anthropic_codec_is_the_pair_functions() {
    let codec = &completions_to_anthropic::CompletionsToAnthropic;
    let req = request_of("completions");
    let a = answer(&req);
    assert_eq!(
        translate(codec, &req).unwrap(),
        completions_to_anthropic::request(&req, &RequestOptions::default()).unwrap()
    );
    let msg: Value = serde_json::from_str(ANTHROPIC_MSG).unwrap();
    assert_eq!(
        codec.response(ANTHROPIC_MSG.as_bytes(), &a).unwrap(),
        Some(completions_to_anthropic::response(&msg, 1_700_000_000).unwrap())
    );
    let mut direct = completions_to_anthropic::StreamTranslator::new(true, 1_700_000_000);
    let bytes = feed_all(translated(codec, &a).as_mut(), true);
    assert_eq!(bytes, feed_all(&mut direct, true));
    assert!(
        String::from_utf8(bytes)
            .unwrap()
            .contains("text_completion")
    );
}

#[test]
fn messages_to_chat_codec_is_the_pair_functions() {
    let codec = &anthropic_to_chat::MessagesToChat;
    let req = request_of("messages");
    let a = answer(&req);
    assert_eq!(
        translate(codec, &req).unwrap(),
        anthropic_to_chat::request(&req, &RequestOptions::default()).unwrap()
    );
    let chat: Value = serde_json::from_str(CHAT_COMPLETION).unwrap();
    assert_eq!(
        codec.response(CHAT_COMPLETION.as_bytes(), &a).unwrap(),
        Some(anthropic_to_chat::response(&chat, "call-1").unwrap())
    );
    let mut direct = anthropic_to_chat::StreamTranslator::new("call-1");
    assert_eq!(
        feed_all(translated(codec, &a).as_mut(), false),
        feed_all(&mut direct, false)
    );
    let u = codec.usage(CHAT_COMPLETION.as_bytes()).unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens), (7, 3));
}

#[test]
fn responses_codecs_are_the_pair_functions() {
    let req = request_of("responses");
    let a = answer(&req);
    let history = [json!({"role": "user", "content": "before"})];
    let opts = RequestOptions::default();
    let (to_chat, to_anthropic) = (
        &responses_to_chat::ResponsesToChat,
        &responses_to_anthropic::ResponsesToAnthropic,
    );
    let RequestRule::Translate(f) = to_chat.request() else {
        panic!("responses→chat forwards")
    };
    assert_eq!(
        f(&req, &opts, &history).unwrap(),
        responses_to_chat::request(&req, &opts, &history).unwrap()
    );
    let RequestRule::Translate(f) = to_anthropic.request() else {
        panic!("responses→anthropic forwards")
    };
    assert_eq!(
        f(&req, &opts, &history).unwrap(),
        responses_to_anthropic::request(&req, &opts, &history).unwrap()
    );
    let chat: Value = serde_json::from_str(CHAT_COMPLETION).unwrap();
    let msg: Value = serde_json::from_str(ANTHROPIC_MSG).unwrap();
    assert_eq!(
        to_chat.response(CHAT_COMPLETION.as_bytes(), &a).unwrap(),
        Some(responses_to_chat::response(&chat, &a.context).unwrap())
    );
    assert_eq!(
        to_anthropic.response(ANTHROPIC_MSG.as_bytes(), &a).unwrap(),
        Some(responses_to_anthropic::response(&msg, &a.context).unwrap())
    );
    let mut t = translated(to_chat, &a);
    let bytes = feed_all(t.as_mut(), false);
    let mut direct = responses_to_chat::StreamTranslator::new(&a.context);
    assert_eq!(bytes, feed_all(&mut direct, false));
    assert_eq!(t.response(), direct.response());
    assert_eq!(t.response().unwrap()["id"], "resp_1");
    let mut t = translated(to_anthropic, &a);
    let mut direct = responses_to_anthropic::StreamTranslator::new(&a.context);
    assert_eq!(feed_all(t.as_mut(), true), feed_all(&mut direct, true));
    assert_eq!(t.response(), direct.response());
}

/// A translating pair's answer that is not JSON is an invalid response, never relayed.
#[test]
fn translating_codecs_refuse_a_body_that_is_not_json() {
    let req = request_of("chat");
    let a = answer(&req);
    let codecs: [&dyn Codec; 5] = [
        &chat_to_anthropic::ChatToAnthropic,
        &completions_to_anthropic::CompletionsToAnthropic,
        &anthropic_to_chat::MessagesToChat,
        &responses_to_chat::ResponsesToChat,
        &responses_to_anthropic::ResponsesToAnthropic,
    ];
    for c in codecs {
        match c.response(b"<html>", &a) {
            Err(TranslateError::InvalidResponse(m)) => assert!(m.starts_with("not JSON"), "{m}"),
            other => panic!("{}: {other:?}", c.name()),
        }
    }
}

/// Upstream errors are reshaped into the client's dialect by a translating pair (status
/// kept), and relayed as they are by a same-dialect one.
#[test]
fn upstream_errors_in_the_client_dialect() {
    let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#;
    for c in [
        &chat_to_anthropic::ChatToAnthropic as &dyn Codec,
        &completions_to_anthropic::CompletionsToAnthropic,
        &responses_to_anthropic::ResponsesToAnthropic,
    ] {
        assert_eq!(
            c.upstream_error(529, body),
            Some(errors::map_upstream_error(529, body, Dialect::OpenAi)),
            "{}",
            c.name()
        );
    }
    let body = br#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#;
    let e = anthropic_to_chat::MessagesToChat
        .upstream_error(429, body)
        .unwrap();
    assert_eq!(e, errors::map_upstream_error(429, body, Dialect::Anthropic));
    assert_eq!((e.status, e.message.as_str()), (429, "slow down"));
    assert_eq!(
        responses_to_chat::ResponsesToChat.upstream_error(429, body),
        Some(errors::map_upstream_error(429, body, Dialect::OpenAi))
    );
    for p in [&OPENAI_CHAT, &ANTHROPIC_MESSAGES, &RESPONSES] {
        assert_eq!(p.upstream_error(429, body), None, "{}", p.name());
    }
}

/// Same-dialect codecs: the raw body forwarded, the answer relayed unparsed (even when it is
/// not JSON), the stream relayed in its format, usage read in the upstream's dialect.
#[test]
fn passthroughs_forward_relay_and_read_usage() {
    let req = Value::Null;
    let a = answer(&req);
    let rows = [
        (
            &OPENAI_CHAT,
            "/chat/completions",
            EventFormat::OpenAiChunks,
            true,
            false,
        ),
        (
            &OPENAI_COMPLETIONS,
            "/completions",
            EventFormat::OpenAiChunks,
            true,
            false,
        ),
        (
            &OPENAI_EMBEDDINGS,
            "/embeddings",
            EventFormat::OpenAiChunks,
            true,
            false,
        ),
        (
            &ANTHROPIC_MESSAGES,
            "/v1/messages",
            EventFormat::AnthropicEvents,
            false,
            true,
        ),
        (
            &ANTHROPIC_COUNT_TOKENS,
            "/v1/messages/count_tokens",
            EventFormat::AnthropicEvents,
            false,
            false,
        ),
        (
            &RESPONSES,
            "/responses",
            EventFormat::ResponsesEvents,
            false,
            false,
        ),
    ];
    for (c, path, format, force, metadata) in rows {
        assert_eq!(c.upstream_path(), path);
        match c.request() {
            RequestRule::Forward(r) => {
                assert_eq!(
                    (r.force_stream_usage, r.anthropic_metadata),
                    (force, metadata)
                );
            }
            RequestRule::Translate(_) => panic!("{} translates", c.name()),
        }
        assert_eq!(c.response(b"<not json>", &a).unwrap(), None);
        assert!(matches!(c.stream(&a), StreamRule::Relay(f) if f == format));
    }
    let u = OPENAI_CHAT.usage(CHAT_COMPLETION.as_bytes()).unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens), (7, 3));
    let u = ANTHROPIC_MESSAGES.usage(ANTHROPIC_MSG.as_bytes()).unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens), (7, 3));
    let resp = br#"{"id":"resp_9","object":"response","usage":{"input_tokens":11,"output_tokens":4,"total_tokens":15}}"#;
    let u = RESPONSES.usage(resp).unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens), (11, 4));
    assert_eq!(OPENAI_CHAT.usage(br#"{"id":"c","choices":[]}"#), None);
}

/// The shared `feed` opening: an event without a `data:` line (a comment, a bare `event:`)
/// writes nothing and does not end the stream; one with data is translated.
#[test]
fn feed_skips_events_without_data() {
    let req = request_of("chat");
    let a = answer(&req);
    let mut t = translated(&chat_to_anthropic::ChatToAnthropic, &a);
    let mut out = BytesMut::new();
    let ping = ParsedEvent {
        event: Some("ping"),
        data: "".into(),
        id: None,
        has_data: false,
    };
    t.feed(&ping, &mut out).unwrap();
    assert!(out.is_empty());
    assert_eq!(t.outcome(), tollgate_translate::StreamOutcome::InProgress);
    let (name, data) = ANTHROPIC_STREAM[0];
    let start = ParsedEvent {
        event: Some(name),
        data: data.into(),
        id: None,
        has_data: true,
    };
    t.feed(&start, &mut out).unwrap();
    assert!(std::str::from_utf8(&out).unwrap().starts_with("data: {"));
}
