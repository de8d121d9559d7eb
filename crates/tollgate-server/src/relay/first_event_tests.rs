//! Unit tests of [`super`]: error detection, classification and the peek before the head.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;

use super::*;
use crate::relay::handlers::OpenAiPassthrough;
use crate::relay::stream::StreamRelay;
use crate::relay::{CallRecord, CallSink, Settled};

#[test]
fn fields_are_read_from_the_line_that_starts_with_them() {
    // reference: split into lines at every `\n` / `\r`, first line with the prefix
    fn by_split<'a>(raw: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
        raw.split(|b| *b == b'\n' || *b == b'\r')
            .find_map(|l| l.strip_prefix(prefix))
    }
    for raw in [
        "data: {\"a\":1}\n\n",
        "event: ping\ndata: {}\n\n",
        "data: {}\r\nevent: error\r\n\r\n",
        "data: {}\revent:error\r\r",
        ": comment\n\n",
        "event: x",
        "xdata: 1\n data: 2\ndata:3",
        "",
    ] {
        for prefix in [&b"data:"[..], b"event:"] {
            assert_eq!(
                line_with(raw.as_bytes(), prefix),
                by_split(raw.as_bytes(), prefix),
                "{raw:?}"
            );
        }
    }
    assert_eq!(event_field(b"data: {}\r\nevent: error\r\n\r\n"), b"error");
    assert!(!has_data(b": only a comment\n\n"));
}

#[test]
fn error_data_is_found_whatever_the_whitespace() {
    for yes in [
        r#"{"error":{"message":"m","type":"server_error"}}"#,
        r#"{"error": {"message": "m", "type": "server_error", "param": null, "code": null}}"#,
        r#"  { "error" :  {"message":"m"}}"#,
        r#"{"error":"Input validation error","error_type":"validation"}"#,
        r#"{"id":"gen-1","choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}],"error":{"code":502,"message":"m"}}"#,
    ] {
        assert!(is_error_data(yes.as_bytes()), "{yes}");
    }
    for no in [
        r#"{"error":null,"choices":[]}"#,
        r#"{"error" : null}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"say \"error\": loudly"}}]}"#,
        r#"{"type":"response.created","response":{"id":"r","error":null,"output":[{"error":"tool failed"}]}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}"#,
        "[DONE]",
        "",
    ] {
        assert!(!is_error_data(no.as_bytes()), "{no}");
    }
}

#[test]
fn error_events_by_name_or_data() {
    assert!(is_error_event(b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"));
    assert!(is_error_event(
        b"event: response.failed\r\ndata: {\"type\":\"response.failed\"}\r\n\r\n"
    ));
    assert!(is_error_event(
        b"data: {\"error\": {\"message\": \"m\"}}\n\n"
    ));
    assert!(!is_error_event(
        b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n"
    ));
    assert!(!is_error_event(b": keep-alive\n\n"));
    assert!(!is_error_event(b"data: [DONE]\n\n"));
}

fn read(s: &str) -> StreamError {
    StreamError::from_event(s.as_bytes()).unwrap_or_else(|| panic!("not an error: {s}"))
}

#[test]
fn statuses_and_classes_follow_the_errors_type_or_code() {
    let rl = read(
        "data: {\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\", \"param\": \"requests\", \"code\": \"rate_limit_exceeded\"}}\n\n",
    );
    assert_eq!((rl.status, rl.class()), (429, FailureClass::RateLimit));
    assert_eq!(rl.message, "Rate limit reached");
    let over = read(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    assert_eq!((over.status, over.class()), (429, FailureClass::RateLimit));
    assert_eq!(over.kind.as_deref(), Some("overloaded_error"));
    let api = read(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}\n\n",
    );
    assert_eq!((api.status, api.class()), (500, FailureClass::ServerError));
    let failed = read(
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}},\"sequence_number\":0}\n\n",
    );
    assert_eq!(
        (
            failed.status,
            failed.code.as_deref(),
            failed.message.as_str()
        ),
        (429, Some("rate_limit_exceeded"), "slow down")
    );
    let err = read(
        "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\",\"param\":null,\"sequence_number\":3}\n\n",
    );
    assert_eq!((err.status, err.message.as_str()), (500, "boom"));
    // vLLM: the HTTP status as a numeric code; the message makes it a context-window error.
    let vllm = read(
        "data: {\"error\": {\"object\": \"error\", \"message\": \"This model's maximum context length is 4096 tokens.\", \"type\": \"BadRequestError\", \"param\": null, \"code\": 400}}\n\n",
    );
    assert_eq!(
        (vllm.status, vllm.class(), vllm.code.as_deref()),
        (400, FailureClass::ContextWindowExceeded, None)
    );
    let tgi = read(
        "data: {\"error\":\"Request failed during generation\",\"error_type\":\"generation\"}\n\n",
    );
    assert_eq!(
        (tgi.status, tgi.message.as_str()),
        (500, "Request failed during generation")
    );
    let bare = read("event: error\ndata: not json\n\n");
    assert_eq!(bare.status, 500);
    assert_eq!(
        bare.message,
        "The upstream reported an error in its stream."
    );
    assert_eq!(StreamError::from_event(b"data: {\"choices\":[]}\n\n"), None);
}

#[test]
fn the_client_gets_the_upstream_message_in_its_dialect() {
    let over = read(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let openai: serde_json::Value =
        serde_json::from_slice(&over.envelope(Dialect::OpenAi).to_json(Dialect::OpenAi)).unwrap();
    assert_eq!(
        openai,
        json!({"error": {"message": "Overloaded", "type": "rate_limit_error", "param": null, "code": "overloaded"}})
    );
    let env = over.envelope(Dialect::Anthropic);
    assert_eq!(env.status, 429);
    let anthropic: serde_json::Value =
        serde_json::from_slice(&env.to_json(Dialect::Anthropic)).unwrap();
    assert_eq!(
        anthropic,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Overloaded"}})
    );
    let api = read(
        "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n",
    );
    let env = api.envelope(Dialect::Anthropic);
    assert_eq!((env.status, env.message.as_str()), (500, "boom"));
    let anthropic: serde_json::Value =
        serde_json::from_slice(&env.to_json(Dialect::Anthropic)).unwrap();
    assert_eq!(anthropic["error"]["type"], "api_error");
}

pub(super) fn upstream(chunks: Vec<Result<&'static [u8], UpstreamError>>) -> UpstreamBytes {
    Box::pin(futures_util::stream::iter(
        chunks
            .into_iter()
            .map(|c| c.map(Bytes::from_static))
            .collect::<Vec<_>>(),
    ))
}

pub(super) const PEEK: Peek = Peek {
    idle: Duration::from_secs(5),
    client: Dialect::OpenAi,
    client_shortened: false,
};

#[derive(Debug, Default)]
struct Sink(Mutex<Vec<CallRecord>>);

impl CallSink for Sink {
    fn record(&self, r: CallRecord) -> Option<Settled> {
        self.0.lock().unwrap().push(r);
        None
    }
}

fn record() -> CallRecord {
    let now = Instant::now();
    CallRecord {
        call_id: "c".into(),
        call_type: "acompletion",
        model_group: "g".into(),
        deployment_id: "d".into(),
        upstream_model: "m".into(),
        stream: true,
        status: 200,
        usage: None,
        client_disconnected: false,
        upstream_failed: false,
        started: now,
        first_byte: None,
        ended: now,
        started_at: chrono::Utc::now(),
        events_out: 0,
        unreported: Default::default(),
        charge: None,
        response_id: None,
    }
}

/// What the client receives when `primed` is relayed through the OpenAI passthrough.
pub(super) async fn relayed(primed: Primed) -> (Vec<u8>, CallRecord) {
    let sink = Arc::new(Sink::default());
    let relay = StreamRelay::new(
        primed,
        Duration::from_secs(5),
        Box::new(OpenAiPassthrough::new(false)),
        record(),
        sink.clone(),
        None,
    );
    let out = relay
        .map(|r| r.unwrap().to_vec())
        .collect::<Vec<_>>()
        .await
        .concat();
    let rec = sink.0.lock().unwrap().pop().unwrap();
    (out, rec)
}

#[tokio::test]
async fn a_healthy_stream_is_relayed_byte_for_byte_from_the_first_event() {
    const BODY: &str = ": keep-alive\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\u{e9}\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let b = BODY.as_bytes();
    // Cut inside the comment, inside the first event (mid-character) and after it.
    let cuts: Vec<Result<&'static [u8], UpstreamError>> =
        vec![Ok(&b[..5]), Ok(&b[5..60]), Ok(&b[60..])];
    let primed = peek(upstream(cuts), &HeaderMap::new(), PEEK).await.unwrap();
    assert_eq!(primed.preamble.len(), 1);
    assert!(primed.first.is_some());
    let (out, rec) = relayed(primed).await;
    assert_eq!(String::from_utf8(out).unwrap(), BODY);
    assert!(!rec.upstream_failed);
    assert_eq!(rec.events_out, 4);
}

#[tokio::test]
async fn an_error_first_fails_the_attempt_with_the_upstream_headers() {
    let mut head = HeaderMap::new();
    head.insert("x-request-id", "req_7".parse().unwrap());
    head.insert("set-cookie", "a=b".parse().unwrap());
    let (e, class) = peek(
        upstream(vec![Ok(
            b"data: {\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\", \"param\": \"requests\", \"code\": \"rate_limit_exceeded\"}}\n\n",
        )]),
        &head,
        PEEK,
    )
    .await
    .unwrap_err();
    assert_eq!(class, FailureClass::RateLimit);
    assert_eq!(
        (
            e.envelope.status,
            e.envelope.message.as_str(),
            e.envelope.code.as_deref()
        ),
        (429, "Rate limit reached", Some("rate_limit_exceeded"))
    );
    assert_eq!(e.envelope.param.as_deref(), Some("requests"));
    let names: Vec<&str> = e.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["x-request-id", "llm_provider-x-request-id"]);
}

#[tokio::test]
async fn a_stream_broken_before_its_first_event_fails_the_attempt() {
    // EOF with only a comment
    let (e, class) = peek(upstream(vec![Ok(b": ping\n\n")]), &HeaderMap::new(), PEEK)
        .await
        .unwrap_err();
    assert_eq!((e.envelope.status, class), (502, FailureClass::Connection));
    assert_eq!(
        e.envelope.message,
        "Upstream closed the stream before its first event with content"
    );
    // a reset
    let (e, class) = peek(
        upstream(vec![Err(UpstreamError::Read("connection reset".into()))]),
        &HeaderMap::new(),
        PEEK,
    )
    .await
    .unwrap_err();
    assert_eq!((e.envelope.status, class), (502, FailureClass::Connection));
    // a last event without its blank line still counts
    let primed = peek(upstream(vec![Ok(b"data: [DONE]")]), &HeaderMap::new(), PEEK)
        .await
        .unwrap();
    assert_eq!(relayed(primed).await.0, b"data: [DONE]");
}

#[tokio::test]
async fn silence_before_the_first_event_is_a_timeout_of_whoever_set_the_limit() {
    let silent = || -> UpstreamBytes { Box::pin(futures_util::stream::pending()) };
    let p = Peek {
        idle: Duration::from_millis(30),
        ..PEEK
    };
    let (e, class) = peek(silent(), &HeaderMap::new(), p).await.unwrap_err();
    assert_eq!((e.envelope.status, class), (504, FailureClass::Timeout));
    assert_eq!(
        e.envelope.message,
        "The upstream sent nothing for 30 ms (the deployment's timeout)."
    );
    let p = Peek {
        client_shortened: true,
        ..p
    };
    let (_, class) = peek(silent(), &HeaderMap::new(), p).await.unwrap_err();
    assert_eq!(class, FailureClass::ClientTimeout);
}
