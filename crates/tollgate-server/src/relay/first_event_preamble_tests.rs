//! Unit tests of [`super::peek`] with content-free events before the first content event.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::HeaderMap;
use tollgate_protocol::Dialect;
use tollgate_router::FailureClass;

use super::tests::{PEEK, relayed, upstream};
use super::*;

const ROLE: &[u8] = b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";
const HI: &[u8] =
    b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
const RATE_LIMITED: &[u8] = b"data: {\"error\": {\"message\": \"Rate limit reached (fake)\", \"type\": \"rate_limit_error\", \"param\": null, \"code\": 429}}\n\n";

/// The upstream's events, the client's dialect, and the status, class and message expected.
type Case = (
    &'static [&'static [u8]],
    Dialect,
    u16,
    FailureClass,
    &'static str,
);

/// An OpenAI role chunk, Anthropic's `message_start` + `ping`, Responses' `response.created` +
/// `response.in_progress`: an error after them fails the attempt as a first-event error does.
#[tokio::test]
async fn an_error_after_content_free_events_fails_the_attempt() {
    let cases: [Case; 3] = [
        (
            &[ROLE, RATE_LIMITED],
            Dialect::OpenAi,
            429,
            FailureClass::RateLimit,
            "Rate limit reached (fake)",
        ),
        (
            &[
                b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"content\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
                b"event: ping\ndata: {\"type\": \"ping\"}\n\n",
                b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            ],
            Dialect::Anthropic,
            429,
            FailureClass::RateLimit,
            "Overloaded",
        ),
        (
            &[
                b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]},\"sequence_number\":0}\n\n",
                b"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"response\":{\"id\":\"resp_1\"},\"sequence_number\":1}\n\n",
                b"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\",\"param\":null,\"sequence_number\":2}\n\n",
            ],
            Dialect::OpenAi,
            500,
            FailureClass::ServerError,
            "boom",
        ),
    ];
    for (events, client, status, class, message) in cases {
        let p = Peek { client, ..PEEK };
        let chunks = events.iter().map(|e| Ok(*e)).collect();
        let (e, got) = peek(upstream(chunks), &HeaderMap::new(), p)
            .await
            .unwrap_err();
        assert_eq!(
            (e.envelope.status, got, e.envelope.message.as_str()),
            (status, class, message)
        );
    }
}

/// The held events reach the client at once with the first content event, in order and
/// unchanged.
#[tokio::test]
async fn held_events_are_relayed_with_the_first_content_event() {
    let comment: &'static [u8] = b": OPENROUTER PROCESSING\n\n";
    let primed = peek(
        upstream(vec![Ok(comment), Ok(ROLE), Ok(HI), Ok(b"data: [DONE]\n\n")]),
        &HeaderMap::new(),
        PEEK,
    )
    .await
    .unwrap();
    assert_eq!(primed.preamble.len(), 2);
    assert_eq!(primed.first.as_ref().map(|e| &e.raw[..]), Some(HI));
    let (out, rec) = relayed(primed).await;
    assert_eq!(out, [comment, ROLE, HI, b"data: [DONE]\n\n"].concat());
    assert!(!rec.upstream_failed);
}

/// A role chunk followed by an EOF or by silence: nothing with content came, so the attempt
/// failed (502 / 504), it is not a committed stream.
#[tokio::test]
async fn eof_or_silence_after_content_free_events_fails_the_attempt() {
    let (e, class) = peek(upstream(vec![Ok(ROLE)]), &HeaderMap::new(), PEEK)
        .await
        .unwrap_err();
    assert_eq!((e.envelope.status, class), (502, FailureClass::Connection));
    let silent: UpstreamBytes = Box::pin(
        futures_util::stream::iter(vec![Ok(Bytes::from_static(ROLE))])
            .chain(futures_util::stream::pending()),
    );
    let p = Peek {
        idle: Duration::from_millis(40),
        ..PEEK
    };
    let (e, class) = peek(silent, &HeaderMap::new(), p).await.unwrap_err();
    assert_eq!((e.envelope.status, class), (504, FailureClass::Timeout));
}

/// At most [`MAX_PREAMBLE_EVENTS`] events are held: the next one commits the stream.
#[tokio::test]
async fn the_hold_is_bounded_by_a_count() {
    let ping: &'static [u8] = b"event: ping\ndata: {\"type\":\"ping\"}\n\n";
    let chunks = (0..MAX_PREAMBLE_EVENTS + 3).map(|_| Ok(ping)).collect();
    let primed = peek(upstream(chunks), &HeaderMap::new(), PEEK)
        .await
        .unwrap();
    assert_eq!(primed.preamble.len(), MAX_PREAMBLE_EVENTS);
    assert_eq!(primed.first.as_ref().map(|e| &e.raw[..]), Some(ping));
}

/// No event that arrives after one idle limit (the stream timeout) from the head is held: it
/// commits the stream, even when each gap was within the limit. (Held to the end, the pings
/// would stop at the count bound, past the 510 ms the count takes at this pace.)
#[tokio::test]
async fn the_hold_is_bounded_by_the_stream_timeout() {
    let ping = Bytes::from_static(b"event: ping\ndata: {\"type\":\"ping\"}\n\n");
    let paced: UpstreamBytes = Box::pin(
        futures_util::stream::iter(0..40)
            .then(move |_| {
                let ping = ping.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    Ok(ping)
                }
            })
            .chain(futures_util::stream::pending()),
    );
    let p = Peek {
        idle: Duration::from_millis(300),
        ..PEEK
    };
    let started = std::time::Instant::now();
    let primed = peek(paced, &HeaderMap::new(), p).await.unwrap();
    let waited = started.elapsed();
    assert!(primed.first.is_some());
    assert!(
        primed.preamble.len() < MAX_PREAMBLE_EVENTS,
        "committed by the count, not the time: {}",
        primed.preamble.len()
    );
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
}
