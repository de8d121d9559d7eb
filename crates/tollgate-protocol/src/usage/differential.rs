//! Differential property test: every usage reader gives serde_json's answer on generated
//! documents written compactly, pretty-printed and in Python's `json.dumps` style (`", "`,
//! `": "`, non-ASCII as `\uXXXX`), with shuffled members, escaped keys, counts written as
//! `1000`, `1000.0`, `1e3`, `10000e-1`, nested `*_details`, unknown siblings, strings that
//! mention `usage`, and now and then an invalid count or a duplicate member.
//!
//! The reference is serde's derive over structs declared here, with [`Count`] for counts.
//! Where the generated document is clean (no invalid count, no duplicate), the answer must
//! also be the counts the generator wrote, and where its counts are plain integers the fast
//! scanner must have decided it without serde.

mod generate;
mod reference;

use generate::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use reference::*;

use super::count::Count;
use super::openai::{CHAT, scan_usage};
use super::{
    AnthropicStreamUsage, anthropic_response_usage, openai_response_usage, responses_usage,
    scan_openai_chunk,
};
use crate::json_scan::document;

/// Cases per property (four properties): bounded so the test runs in seconds in CI.
const CASES: u32 = 768;

// ---- the properties -------------------------------------------------------------------

const CHAT_NAMES: [&str; 4] = [
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
];

/// Runs `test` on `CASES` generated values and returns how many it ran. On its own thread:
/// generating these nested values takes more than a test thread's stack in debug builds.
fn run<S>(
    strategy: fn() -> S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError> + Send + 'static,
) -> u32
where
    S: Strategy + 'static,
    S::Value: std::fmt::Debug,
{
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || run_here(strategy(), test))
        .expect("spawn the property-test thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

fn run_here<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) -> u32
where
    S::Value: std::fmt::Debug,
{
    let ran = std::cell::Cell::new(0u32);
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |v| {
        ran.set(ran.get() + 1);
        test(v)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    ran.get()
}

/// A chat body: its usage (or none, or `null`), choices with text, unknown members.
#[test]
fn openai_bodies_read_as_serde_reads_them() {
    let strategy = || (counts(), 0u8..6, text(), extras(), writer());
    let ran = run(strategy, |(c, shape, content, extra, w)| {
        let usage = match shape {
            0 => None,
            1 => Some(J::Raw("null".into())),
            _ => Some(c.two_level(CHAT_NAMES)),
        };
        let mut m = vec![
            ("id", s("chatcmpl-1")),
            ("object", s("chat.completion")),
            (
                "choices",
                J::Arr(vec![obj(vec![
                    ("index", J::Raw("0".into())),
                    (
                        "message",
                        obj(vec![("role", s("assistant")), ("content", J::Str(content))]),
                    ),
                ])]),
            ),
        ];
        if let Some(u) = usage {
            m.push(("usage", u));
        }
        let mut doc = obj(m);
        if let J::Obj(members) = &mut doc {
            members.extend(extra);
        }
        let text = serialise(&doc, w);
        let json = text.as_bytes();
        let expected = serde_json::from_slice::<RBody>(json)
            .ok()
            .and_then(|b| b.usage)
            .map(chat);
        prop_assert_eq!(openai_response_usage(json), expected, "{}", text);
        if shape >= 2 && c.clean() {
            prop_assert_eq!(expected, Some(c.two_level_usage()), "{}", text);
            if c.plain() {
                let fast = document(json, |cur| {
                    cur.member(b"usage", |cur| scan_usage(cur, &CHAT))
                });
                prop_assert!(fast.is_some(), "the scanner left it to serde: {}", text);
            }
        }
        Ok(())
    });
    println!("openai bodies: {ran} generated cases");
    assert_eq!(ran, CASES);
}

/// A chat stream chunk: content chunks with `"usage": null`, the usage-only chunk, a usage
/// on a content chunk; `choices` empty, absent, `null` or not; cutting the `usage` member
/// (null or not) leaves the chunk serde reads without it.
#[test]
fn openai_chunks_read_as_serde_reads_them() {
    let strategy = || (counts(), 0u8..4, 0u8..4, text(), writer());
    let ran = run(strategy, |(c, usage_shape, choices_shape, content, w)| {
        let mut m = vec![
            ("id", s("chatcmpl-1")),
            ("object", s("chat.completion.chunk")),
            ("created", J::Raw("1767225600".into())),
        ];
        match choices_shape {
            0 => m.push(("choices", J::Arr(vec![]))),
            1 => m.push((
                "choices",
                J::Arr(vec![obj(vec![
                    ("index", J::Raw("0".into())),
                    ("delta", obj(vec![("content", J::Str(content))])),
                    ("finish_reason", J::Raw("null".into())),
                ])]),
            )),
            2 => m.push(("choices", J::Raw("null".into()))),
            _ => {}
        }
        match usage_shape {
            0 => {}
            1 => m.push(("usage", J::Raw("null".into()))),
            _ => m.push(("usage", c.two_level(CHAT_NAMES))),
        }
        let doc = obj(m);
        let text = serialise(&doc, w);
        let json = text.as_bytes();
        let expected = serde_json::from_slice::<RChunk>(json)
            .ok()
            .and_then(|ch| Some((chat(ch.usage?), ch.choices.is_none_or(|c| c.is_empty()))));
        let got = scan_openai_chunk(json);
        prop_assert_eq!(
            got.usage.map(|u| (u.usage, u.usage_only)),
            expected,
            "{}",
            text
        );
        if usage_shape >= 2 && c.clean() {
            prop_assert_eq!(expected.map(|e| e.0), Some(c.two_level_usage()), "{}", text);
        }
        // Cutting the usage member, null or not, leaves the chunk serde reads without it.
        let cut = got.usage_member.clone();
        if usage_shape == 0 {
            prop_assert_eq!(cut, None, "{}", text);
        } else {
            if usage_shape == 1 || (c.clean() && c.plain()) {
                prop_assert!(cut.is_some(), "no usage member found: {}", text);
            }
            if let Some(cut) = cut {
                let rest = [&json[..cut.start], &json[cut.end..]].concat();
                let after: serde_json::Value = serde_json::from_slice(&rest).map_err(|e| {
                    TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&rest)))
                })?;
                let mut before: serde_json::Value =
                    serde_json::from_slice(json).map_err(|e| TestCaseError::fail(e.to_string()))?;
                if let Some(o) = before.as_object_mut() {
                    o.remove("usage");
                }
                prop_assert_eq!(after, before, "{}", text);
            }
        }
        Ok(())
    });
    println!("openai chunks: {ran} generated cases");
    assert_eq!(ran, CASES);
}

/// An Anthropic stream (`message_start`, a text delta, `message_delta`) and a body.
#[test]
fn anthropic_events_and_bodies_read_as_serde_reads_them() {
    let strategy = || (counts(), counts(), text(), writer());
    let ran = run(strategy, |(start, delta, content, w)| {
        let events = [
            obj(vec![
                ("type", s("message_start")),
                (
                    "message",
                    obj(vec![
                        ("id", s("msg_1")),
                        ("type", s("message")),
                        ("content", J::Arr(vec![])),
                        ("usage", start.anthropic()),
                    ]),
                ),
            ]),
            obj(vec![
                ("type", s("content_block_delta")),
                ("index", J::Raw("0".into())),
                (
                    "delta",
                    obj(vec![("type", s("text_delta")), ("text", J::Str(content))]),
                ),
            ]),
            obj(vec![
                ("type", s("message_delta")),
                ("delta", obj(vec![("stop_reason", s("end_turn"))])),
                ("usage", delta.anthropic()),
            ]),
        ];
        let texts: Vec<String> = events.iter().map(|e| serialise(e, w)).collect();
        let mut got = AnthropicStreamUsage::default();
        let mut expected: Option<RAnthropic> = None;
        for t in &texts {
            got.feed(t.as_bytes());
            let found = serde_json::from_slice::<RAnthropicEvent>(t.as_bytes())
                .ok()
                .and_then(|e| {
                    if e.kind.as_deref() == Some("message_start") {
                        e.message.and_then(|m| m.usage)
                    } else {
                        e.usage
                    }
                });
            if let Some(u) = found {
                let acc = expected.get_or_insert_with(RAnthropic::default);
                acc.input_tokens = u.input_tokens.or(acc.input_tokens);
                acc.output_tokens = u.output_tokens.or(acc.output_tokens);
                acc.cache_read_input_tokens =
                    u.cache_read_input_tokens.or(acc.cache_read_input_tokens);
                acc.cache_creation_input_tokens = u
                    .cache_creation_input_tokens
                    .or(acc.cache_creation_input_tokens);
            }
        }
        prop_assert_eq!(got.usage(), expected.map(anthropic), "{:?}", texts);
        if start.clean() && delta.clean() {
            let pick = |i: usize| match delta.fields[i] {
                Field::Num(_) => delta.v(i),
                _ => start.v(i),
            };
            let want = anthropic(RAnthropic {
                input_tokens: Some(Count(pick(0))),
                output_tokens: Some(Count(pick(1))),
                cache_read_input_tokens: Some(Count(pick(2))),
                cache_creation_input_tokens: Some(Count(pick(3))),
            });
            prop_assert_eq!(got.usage(), Some(want), "{:?}", texts);
        }
        let body = serialise(
            &obj(vec![
                ("id", s("msg_1")),
                ("type", s("message")),
                ("usage", start.anthropic()),
            ]),
            w,
        );
        let expected_body = serde_json::from_slice::<RAnthropicMessage>(body.as_bytes())
            .ok()
            .and_then(|m| m.usage)
            .map(anthropic);
        prop_assert_eq!(
            anthropic_response_usage(body.as_bytes()),
            expected_body,
            "{}",
            body
        );
        Ok(())
    });
    println!("anthropic streams and bodies: {ran} generated cases");
    assert_eq!(ran, CASES);
}

/// A Responses `response.completed` event, and the response object as a body.
#[test]
fn responses_completed_reads_as_serde_reads_it() {
    let names = [
        "input_tokens",
        "output_tokens",
        "input_tokens_details",
        "output_tokens_details",
    ];
    let strategy = || (counts(), text(), any::<bool>(), writer());
    let ran = run(strategy, move |(c, content, as_body, w)| {
        let response = obj(vec![
            ("id", s("resp_1")),
            ("object", s("response")),
            ("status", s("completed")),
            (
                "output",
                J::Arr(vec![obj(vec![
                    ("type", s("message")),
                    (
                        "content",
                        J::Arr(vec![obj(vec![
                            ("type", s("output_text")),
                            ("text", J::Str(content)),
                        ])]),
                    ),
                ])]),
            ),
            ("usage", c.two_level(names)),
        ]);
        let doc = if as_body {
            response
        } else {
            obj(vec![
                ("type", s("response.completed")),
                ("sequence_number", J::Raw("9".into())),
                ("response", response),
            ])
        };
        let text = serialise(&doc, w);
        let json = text.as_bytes();
        let expected = serde_json::from_slice::<RResponsesEvent>(json)
            .ok()
            .and_then(|e| match e.response {
                Some(inner) => inner.usage,
                None => e.usage,
            })
            .map(responses);
        prop_assert_eq!(responses_usage(json), expected, "{}", text);
        if c.clean() {
            prop_assert_eq!(expected, Some(c.two_level_usage()), "{}", text);
        }
        Ok(())
    });
    println!("responses events and bodies: {ran} generated cases");
    assert_eq!(ran, CASES);
}
