//! Golden tests: OpenAI Chat client ⇄ Anthropic upstream.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};
use tollgate_translate::chat_to_anthropic::{StreamOptions, StreamTranslator, request, response};
use tollgate_translate::{RequestOptions, StreamOutcome};

const CREATED: u64 = 1_767_225_600;

#[test]
fn canonical_request_fixture() {
    // shared/fixtures/translation/chat_to_messages.request.json is the spec.
    let f = fixture("translation/chat_to_messages.request.json");
    let out = request(&f["openai_chat"], &RequestOptions::default()).unwrap();
    assert_eq!(out, f["anthropic_messages"]);
}

#[test]
fn canonical_response_fixture() {
    let f = fixture("translation/messages_to_chat.response.json");
    let out = response(&f["anthropic_message"], CREATED).unwrap();
    assert_eq!(out, f["openai_chat_completion"]);
}

#[test]
fn golden_requests() {
    let opts = RequestOptions::default();
    for name in ["text", "tools"] {
        let out = request(&fixture(&format!("openai/chat/{name}.request.json")), &opts).unwrap();
        check_json(&format!("chat_to_anthropic/{name}.request.json"), &out);
    }
    // full_request.json asks for n=2: a 400 naming `n`; without it, everything else translates.
    let mut full = fixture("openai/chat/full_request.json");
    let err = request(&full, &opts).unwrap_err();
    assert_eq!((err.status(), err.param()), (400, Some("n")));
    full.as_object_mut().unwrap().remove("n");
    check_json(
        "chat_to_anthropic/full_request_n1.request.json",
        &request(&full, &opts).unwrap(),
    );

    let out = request(&case("chat/thinking_history.request.json"), &opts).unwrap();
    check_json("chat_to_anthropic/thinking_history.request.json", &out);
}

#[test]
fn thinking_history_reaches_anthropic_intact_and_tool_image_is_kept() {
    let input = case("chat/thinking_history.request.json");
    let out = request(&input, &RequestOptions::default()).unwrap();
    let assistant = &out["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        input["messages"][2]["thinking_blocks"][0]
    );
    assert_eq!(
        assistant["content"][1],
        input["messages"][2]["thinking_blocks"][1]
    );
    let result = &out["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(
        result["content"][1],
        json!({"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQSkZJRg=="}})
    );
    // The user text after the tool result joins the same user turn, after the result.
    assert_eq!(
        out["messages"][2]["content"][1],
        json!({"type":"text","text":"Use celsius."})
    );
    assert_eq!(
        out["system"][0]["cache_control"],
        json!({"type":"ephemeral"})
    );
}

#[test]
fn golden_responses() {
    for name in ["text", "tools", "thinking_tools", "unicode"] {
        let msg = fixture(&format!("anthropic/messages/{name}.response.json"));
        let out = response(&msg, CREATED).unwrap();
        check_json(&format!("chat_to_anthropic/{name}.response.json"), &out);
    }
}

fn translator(include_usage: bool) -> impl Fn() -> StreamTranslator {
    move || {
        StreamTranslator::new(StreamOptions {
            include_usage,
            created: CREATED,
            drop_reasoning: false,
        })
    }
}

#[test]
fn golden_streams_and_every_split() {
    for (name, include_usage) in [
        ("text", false),
        ("text", true),
        ("tools", true),
        ("thinking_tools", true),
        ("unicode", false),
        ("midstream_error", true),
    ] {
        let input = fixture_bytes(&format!("anthropic/messages/{name}.stream.sse"));
        let out = run_all_splits(translator(include_usage), &input);
        let suffix = if include_usage { ".usage" } else { "" };
        check_bytes(
            &format!("chat_to_anthropic/{name}{suffix}.stream.sse"),
            &out,
        );
    }
}

/// Reassembles what an OpenAI SDK would see: content, tool calls by index, finish, usage.
/// (id, name, concatenated arguments) of one streamed tool call.
type Call = (String, String, String);

fn assemble(chunks: &[Value]) -> (String, Vec<Call>, Option<String>, Option<Value>) {
    let mut text = String::new();
    let mut calls: Vec<Call> = Vec::new();
    let mut finish = None;
    let mut usage = None;
    for c in chunks {
        if let Some(u) = c.get("usage").filter(|u| !u.is_null()) {
            usage = Some(u.clone());
        }
        for ch in c["choices"].as_array().unwrap() {
            let d = &ch["delta"];
            if let Some(t) = d["content"].as_str() {
                text.push_str(t);
            }
            for tc in d["tool_calls"].as_array().into_iter().flatten() {
                let i = tc["index"].as_u64().unwrap() as usize;
                if i == calls.len() {
                    calls.push((
                        tc["id"].as_str().unwrap().into(),
                        tc["function"]["name"].as_str().unwrap().into(),
                        String::new(),
                    ));
                }
                calls[i]
                    .2
                    .push_str(tc["function"]["arguments"].as_str().unwrap());
            }
            if let Some(f) = ch["finish_reason"].as_str() {
                finish = Some(f.to_owned());
            }
        }
    }
    (text, calls, finish, usage)
}

#[test]
fn stream_equals_non_stream_translation() {
    for name in ["text", "tools", "thinking_tools", "unicode"] {
        let out = run_pieces(
            &mut translator(true)(),
            &[&fixture_bytes(&format!(
                "anthropic/messages/{name}.stream.sse"
            ))],
        );
        let (text, calls, finish, usage) = assemble(&json_events(&out));
        let full = response(
            &fixture(&format!("anthropic/messages/{name}.response.json")),
            CREATED,
        )
        .unwrap();
        let msg = &full["choices"][0]["message"];
        assert_eq!(text, msg["content"].as_str().unwrap_or(""), "{name}");
        let want: Vec<(String, String, Value)> = msg["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().into(),
                    c["function"]["name"].as_str().unwrap().into(),
                    serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap(),
                )
            })
            .collect();
        let got: Vec<(String, String, Value)> = calls
            .into_iter()
            .map(|(i, n, a)| (i, n, serde_json::from_str(&a).unwrap()))
            .collect();
        assert_eq!(got, want, "{name}");
        assert_eq!(
            finish.as_deref(),
            full["choices"][0]["finish_reason"].as_str(),
            "{name}"
        );
        assert_eq!(usage.as_ref(), Some(&full["usage"]), "{name}");
    }
}

#[test]
fn tool_fragments_are_forwarded_as_they_arrive_with_indices_from_zero() {
    let out = run_pieces(
        &mut translator(true)(),
        &[&fixture_bytes("anthropic/messages/tools.stream.sse")],
    );
    let chunks = json_events(&out);
    let frags: Vec<(u64, String)> = chunks
        .iter()
        .flat_map(|c| {
            c["choices"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|ch| {
                    ch["delta"]["tool_calls"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .map(|tc| {
                    (
                        tc["index"].as_u64().unwrap(),
                        tc["function"]["arguments"].as_str().unwrap().to_owned(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    // Block indices are 1 and 2; tool-call indices are 0 and 1. Five fragments each, the empty
    // first partial_json skipped, each fragment in its own chunk.
    assert_eq!(frags.iter().filter(|(i, _)| *i == 0).count(), 6);
    assert_eq!(frags.iter().filter(|(i, _)| *i == 1).count(), 5);
    assert_eq!(frags[1], (0, "{\"ci".to_owned()));
    let t = translator(true)();
    assert_eq!(t.outcome(), StreamOutcome::InProgress);
}

#[test]
fn billing_accessors_and_truncation() {
    let mut t = translator(false)();
    run_pieces(
        &mut t,
        &[&fixture_bytes("anthropic/messages/text.stream.sse")],
    );
    assert_eq!(t.outcome(), StreamOutcome::Completed);
    assert_eq!(t.finish_reason(), Some("stop"));
    assert_eq!(t.stop_reason(), Some("end_turn"));
    let u = t.usage();
    assert_eq!(
        (
            u.input_tokens,
            u.cache_write_tokens,
            u.cache_read_tokens,
            u.output_tokens
        ),
        (23, 150, 1024, 13)
    );

    // EOF before message_stop: an error chunk, no [DONE].
    let full = fixture_bytes("anthropic/messages/text.stream.sse");
    let cut = String::from_utf8(full.clone())
        .unwrap()
        .find("event: message_delta")
        .unwrap();
    let mut t = translator(true)();
    let out = run_all_splits(translator(true), &full[..cut]);
    run_pieces(&mut t, &[&full[..cut]]);
    assert_eq!(t.outcome(), StreamOutcome::Truncated);
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(!text.contains("[DONE]"));
    let last = json_events(&out).pop().unwrap();
    assert_eq!(last["error"]["type"], "server_error");
    check_bytes("chat_to_anthropic/truncated.stream.sse", &out);

    // Mid-stream upstream error: OpenAI error object, no [DONE].
    let mut t = translator(true)();
    let out = run_pieces(
        &mut t,
        &[&fixture_bytes(
            "anthropic/messages/midstream_error.stream.sse",
        )],
    );
    assert_eq!(t.outcome(), StreamOutcome::UpstreamError);
    let last = json_events(&out).pop().unwrap();
    assert_eq!(
        last,
        json!({"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded"}})
    );
    assert!(!String::from_utf8(out).unwrap().contains("[DONE]"));
}

#[test]
fn unreadable_event_becomes_error_chunk() {
    let mut t = translator(false)();
    let input = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":1}}}\n\nevent: content_block_delta\ndata: {not json\n\n";
    let out = run_pieces(&mut t, &[input]);
    assert_eq!(t.outcome(), StreamOutcome::InvalidEvent);
    let evs = json_events(&out);
    assert_eq!(
        evs[0]["choices"][0]["delta"],
        json!({"role":"assistant","content":""})
    );
    assert_eq!(evs[1]["error"]["type"], "server_error");
}

#[test]
fn b10_cumulative_usage_counted_once() {
    let input = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_b10\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":64,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":13}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let mut t = translator(true)();
    let out = run_pieces(&mut t, &[input.as_bytes()]);
    let chunks = json_events(&out);
    let usages: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c.get("usage"))
        .filter(|u| !u.is_null())
        .collect();
    assert_eq!(usages.len(), 1, "one usage chunk");
    assert_eq!(
        (
            usages[0]["prompt_tokens"].as_u64(),
            usages[0]["completion_tokens"].as_u64()
        ),
        (Some(64), Some(20))
    );
    let finishes: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finishes, ["length"]);
    assert_eq!((t.usage().input_tokens, t.usage().output_tokens), (64, 20));
}

#[test]
fn signed_thinking_streams_as_a_complete_block_the_request_accepts_back() {
    let mut t = translator(false)();
    let out = run_pieces(
        &mut t,
        &[&fixture_bytes(
            "anthropic/messages/thinking_tools.stream.sse",
        )],
    );
    let chunks = json_events(&out);
    let blocks: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"].get("thinking_blocks"))
        .collect();
    assert_eq!(blocks.len(), 1);
    let full = fixture("anthropic/messages/thinking_tools.response.json");
    assert_eq!(
        blocks[0][0], full["content"][0],
        "thinking text and signature intact"
    );
    assert!(chunks.iter().all(|c| {
        c["choices"][0]["delta"]
            .get("content")
            .is_none_or(|v| v == "")
    }));

    // Next turn: the client sends the assistant message back with thinking_blocks.
    let next = json!({"model":"claude-sonnet-4-5","messages":[
        {"role":"user","content":"Weather in Paris?"},
        {"role":"assistant","content":null,"thinking_blocks":blocks[0],
         "tool_calls":[{"id":"toolu_mock_weather_01","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]},
        {"role":"tool","tool_call_id":"toolu_mock_weather_01","content":"{\"temp_c\":18}"}]});
    let req = request(&next, &RequestOptions::default()).unwrap();
    assert_eq!(req["messages"][1]["content"][0], full["content"][0]);
}

#[test]
fn unicode_stream_at_the_fixture_flush_offsets() {
    // The mock flushes at these offsets, inside multi-byte characters and `data:` prefixes.
    for (input, splits, make) in [
        (
            "anthropic/messages/unicode.stream.sse",
            "anthropic/messages/unicode.stream.splits.json",
            0,
        ),
        (
            "openai/chat/unicode.stream.sse",
            "openai/chat/unicode.stream.splits.json",
            1,
        ),
    ] {
        let bytes = fixture_bytes(input);
        let offsets: Vec<usize> = serde_json::from_value(fixture(splits)).unwrap();
        let mut pieces = Vec::new();
        let mut start = 0;
        for &o in &offsets {
            pieces.push(&bytes[start..o]);
            start = o;
        }
        pieces.push(&bytes[start..]);
        let (whole, split) = if make == 0 {
            (
                run_pieces(&mut translator(false)(), &[&bytes]),
                run_pieces(&mut translator(false)(), &pieces),
            )
        } else {
            use tollgate_translate::anthropic_to_chat::StreamTranslator as A;
            (
                run_pieces(&mut A::new("call-1"), &[&bytes]),
                run_pieces(&mut A::new("call-1"), &pieces),
            )
        };
        assert_eq!(whole, split, "{input}");
        let text: String = json_events(&whole)
            .iter()
            .filter_map(|e| {
                e["choices"][0]["delta"]["content"]
                    .as_str()
                    .or(e["delta"]["text"].as_str())
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(
            text, "Unicode check: 你好世界 🚀✨ café — naïve 日本語 👩\u{200d}💻 done.",
            "{input}"
        );
    }
}

#[test]
fn legacy_completions_over_anthropic() {
    use tollgate_translate::completions_to_anthropic as c;
    let req = c::request(&json!({"model":"claude-3-haiku","prompt":"Say hello.","max_tokens":64,"stop":["\n\nEND"],"user":"u1","stream":true}), &RequestOptions::default()).unwrap();
    assert_eq!(
        req,
        json!({"model":"claude-3-haiku","max_tokens":64,"stop_sequences":["\n\nEND"],"messages":[{"role":"user","content":"Say hello."}],"metadata":{"user_id":"u1"},"stream":true})
    );
    let resp = c::response(&fixture("anthropic/messages/text.response.json"), CREATED).unwrap();
    assert_eq!(resp["object"], "text_completion");
    assert_eq!(
        resp["choices"][0]["text"],
        "Hello from the Anthropic mock. Blocks arrived in order."
    );
    assert_eq!(resp["usage"]["prompt_tokens"], 1197);
    let input = fixture_bytes("anthropic/messages/text.stream.sse");
    let out = run_all_splits(|| c::StreamTranslator::new(true, CREATED), &input);
    check_bytes("chat_to_anthropic/completions_text.usage.stream.sse", &out);
    let chunks = json_events(&out);
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert_eq!(text, resp["choices"][0]["text"]);
    assert_eq!(chunks.last().unwrap()["usage"], resp["usage"]);
}
