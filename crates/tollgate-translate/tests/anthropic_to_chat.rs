//! Golden tests: Anthropic Messages client ⇄ OpenAI Chat upstream.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};
use tollgate_translate::anthropic_to_chat::{StreamTranslator, request, response};
use tollgate_translate::options::MaxTokensField;
use tollgate_translate::{RequestOptions, StreamOutcome};

/// The gateway call id the translators are given (message ids derive from the upstream id).
const CALL_ID: &str = "5f0e8a52-3c1b-4d2e-9a7f-6b8c9d0e1f2a";

#[test]
fn golden_requests() {
    let opts = RequestOptions::default();
    for name in [
        "text",
        "tools",
        "rich",
        "thinking_tools",
        "thinking_tool_result",
    ] {
        let out = request(
            &fixture(&format!("anthropic/messages/{name}.request.json")),
            &opts,
        )
        .unwrap();
        check_json(&format!("anthropic_to_chat/{name}.request.json"), &out);
    }
    let reasoning = RequestOptions {
        thinking_to_reasoning_effort: true,
        max_tokens_field: MaxTokensField::MaxTokens,
        ..RequestOptions::default()
    };
    let out = request(
        &case("anthropic/tool_result_image.request.json"),
        &reasoning,
    )
    .unwrap();
    check_json("anthropic_to_chat/tool_result_image.request.json", &out);
}

#[test]
fn image_in_tool_result_reaches_openai_upstream() {
    // The image is not dropped; it follows the tool message as a user part.
    let out = request(
        &case("anthropic/tool_result_image.request.json"),
        &RequestOptions::default(),
    )
    .unwrap();
    let msgs = out["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(
        msgs[3],
        json!({"role":"tool","tool_call_id":"toolu_1","content":"file read"})
    );
    let parts = msgs[4]["content"].as_array().unwrap();
    assert!(parts.contains(&json!({"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ=="}})));
    assert_eq!(
        parts.last().unwrap(),
        &json!({"type":"text","text":"Describe it briefly."})
    );
    // Thinking of the earlier turn: reasoning_content, never visible content.
    assert_eq!(msgs[2]["reasoning_content"], "I need to read the file.");
    assert_eq!(msgs[2]["content"], Value::Null);
    assert_eq!(out["stream_options"], json!({"include_usage": true}));
}

#[test]
fn golden_responses() {
    for name in ["text", "tools", "unicode", "n2_logprobs"] {
        let out = response(
            &fixture(&format!("openai/chat/{name}.response.json")),
            CALL_ID,
        )
        .unwrap();
        check_json(&format!("anthropic_to_chat/{name}.response.json"), &out);
    }
}

fn stream_inputs() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = [
        "text",
        "text.stream_usage",
        "tools",
        "unicode",
        "midstream_error",
    ]
    .iter()
    .map(|n| {
        let file = if n.contains('.') {
            format!("{n}.sse")
        } else {
            format!("{n}.stream.sse")
        };
        (
            n.replace(".stream_usage", "_usage"),
            fixture_bytes(&format!("openai/chat/{file}")),
        )
    })
    .collect();
    for n in [
        "b14_empty_tool_calls",
        "b17_text_then_tool",
        "b15_whole_args_reasoning",
    ] {
        v.push((n.to_owned(), case_bytes(&format!("openai/{n}.stream.sse"))));
    }
    v
}

#[test]
fn golden_streams_and_every_split() {
    for (name, input) in stream_inputs() {
        let out = run_all_splits(|| StreamTranslator::new(CALL_ID), &input);
        check_bytes(&format!("anthropic_to_chat/{name}.stream.sse"), &out);
    }
}

/// What the Anthropic SDK would accumulate: blocks (type, text or parsed input), stop reason, usage.
fn assemble(sse: &[u8]) -> (Vec<(String, Value)>, Option<String>, Option<Value>) {
    let mut blocks: Vec<(String, String)> = Vec::new();
    let mut stop = None;
    let mut usage = None;
    for (name, data) in events(sse) {
        let ev: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(
            name.as_deref(),
            ev["type"].as_str(),
            "event name equals data.type"
        );
        match ev["type"].as_str().unwrap() {
            "content_block_start" => {
                assert_eq!(
                    ev["index"].as_u64().unwrap() as usize,
                    blocks.len(),
                    "block indices count up from 0"
                );
                blocks.push((
                    ev["content_block"]["type"].as_str().unwrap().to_owned(),
                    String::new(),
                ));
            }
            "content_block_delta" => {
                let d = &ev["delta"];
                let piece = d["text"]
                    .as_str()
                    .or(d["partial_json"].as_str())
                    .or(d["thinking"].as_str())
                    .unwrap();
                assert!(!piece.is_empty(), "no empty deltas");
                blocks[ev["index"].as_u64().unwrap() as usize]
                    .1
                    .push_str(piece);
            }
            "message_delta" => {
                stop = ev["delta"]["stop_reason"].as_str().map(str::to_owned);
                usage = Some(ev["usage"].clone());
            }
            _ => {}
        }
    }
    let blocks = blocks
        .into_iter()
        .map(|(t, s)| {
            let v = if t == "tool_use" {
                serde_json::from_str(&s).unwrap()
            } else {
                Value::String(s)
            };
            (t, v)
        })
        .collect();
    (blocks, stop, usage)
}

#[test]
fn b14_empty_tool_calls_array_is_text() {
    let out = run_pieces(
        &mut StreamTranslator::new(CALL_ID),
        &[&case_bytes("openai/b14_empty_tool_calls.stream.sse")],
    );
    let (blocks, stop, _) = assemble(&out);
    assert_eq!(blocks, vec![("text".to_owned(), json!("Hello"))]);
    assert_eq!(stop.as_deref(), Some("end_turn"));
    assert!(!String::from_utf8(out).unwrap().contains("input_json_delta"));
}

#[test]
fn b15_fragments_concatenate_to_full_input() {
    let mut t = StreamTranslator::new(CALL_ID);
    let out = run_pieces(
        &mut t,
        &[&case_bytes("openai/b15_whole_args_reasoning.stream.sse")],
    );
    let (blocks, stop, usage) = assemble(&out);
    assert_eq!(
        blocks,
        vec![
            ("thinking".to_owned(), json!("Add them.")),
            ("tool_use".to_owned(), json!({"a":17,"b":25})),
            ("tool_use".to_owned(), json!({"a":17,"b":25})),
        ]
    );
    // finish_reason "stop" after tool calls still means tool_use.
    assert_eq!(stop.as_deref(), Some("tool_use"));
    assert_eq!(usage.unwrap()["output_tokens"], 12);
    assert_eq!(t.usage().input_tokens, 30);

    // The fixture's fragments split mid-key and mid-value.
    let out = run_pieces(
        &mut StreamTranslator::new(CALL_ID),
        &[&fixture_bytes("openai/chat/tools.stream.sse")],
    );
    let (blocks, stop, _) = assemble(&out);
    assert_eq!(
        blocks[0],
        (
            "tool_use".to_owned(),
            json!({"city":"Paris","unit":"celsius"})
        )
    );
    assert_eq!(
        blocks[1],
        ("tool_use".to_owned(), json!({"timezone":"Europe/Paris"}))
    );
    assert_eq!(stop.as_deref(), Some("tool_use"));
    // Streaming and non-streaming give the same tool input.
    let full = response(&fixture("openai/chat/tools.response.json"), CALL_ID).unwrap();
    assert_eq!(full["content"][0]["input"], blocks[0].1);
}

#[test]
fn b17_mixed_text_and_tool_ends_with_tool_use() {
    let mut t = StreamTranslator::new(CALL_ID);
    let out = run_pieces(
        &mut t,
        &[&case_bytes("openai/b17_text_then_tool.stream.sse")],
    );
    let (blocks, stop, usage) = assemble(&out);
    assert_eq!(blocks[0], ("text".to_owned(), json!("Let me check.")));
    assert_eq!(blocks[1], ("tool_use".to_owned(), json!({"city":"Parisé"})));
    assert_eq!(stop.as_deref(), Some("tool_use"));
    assert_eq!(
        usage.unwrap(),
        json!({"input_tokens":18,"cache_creation_input_tokens":0,"cache_read_input_tokens":32,"output_tokens":20})
    );
    assert_eq!(
        (t.outcome(), t.stop_reason()),
        (StreamOutcome::Completed, Some("tool_use"))
    );
}

#[test]
fn midstream_error_and_truncation() {
    let mut t = StreamTranslator::new(CALL_ID);
    let out = run_pieces(
        &mut t,
        &[&fixture_bytes("openai/chat/midstream_error.stream.sse")],
    );
    assert_eq!(t.outcome(), StreamOutcome::UpstreamError);
    let (name, data) = events(&out).pop().unwrap();
    assert_eq!(name.as_deref(), Some("error"));
    assert_eq!(
        serde_json::from_str::<Value>(&data).unwrap(),
        json!({"type":"error","error":{"type":"api_error","message":"The server had an error while processing your request. Sorry about that!"}})
    );
    assert!(!String::from_utf8(out).unwrap().contains("message_stop"));

    // EOF before finish_reason: error event, not a clean end.
    let input = fixture_bytes("openai/chat/text.stream.sse");
    let cut = String::from_utf8(input.clone())
        .unwrap()
        .find("\"finish_reason\":\"stop\"")
        .unwrap();
    let cut = input[..cut].iter().rposition(|b| *b == b'\n').unwrap() + 1;
    let mut t = StreamTranslator::new(CALL_ID);
    let out = run_all_splits(|| StreamTranslator::new(CALL_ID), &input[..cut]);
    run_pieces(&mut t, &[&input[..cut]]);
    assert_eq!(t.outcome(), StreamOutcome::Truncated);
    assert_eq!(events(&out).pop().unwrap().0.as_deref(), Some("error"));
    check_bytes("anthropic_to_chat/truncated.stream.sse", &out);
}
