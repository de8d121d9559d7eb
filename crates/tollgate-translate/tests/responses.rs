//! Golden tests: OpenAI Responses client ⇄ Chat upstream, and ⇄ Anthropic upstream (chained).

mod common;

use common::*;
use serde_json::{Value, json};
use tollgate_translate::responses_to_chat::{self, ResponseContext, history_after};
use tollgate_translate::{RequestOptions, StreamOutcome, responses_to_anthropic};

const CREATED: u64 = 1_767_225_600;

fn ctx<'a>(id: &'a str, request: &'a Value) -> ResponseContext<'a> {
    ResponseContext {
        response_id: id,
        created_at: CREATED,
        completed_at: CREATED + 1,
        request,
    }
}

/// The shared Responses fixtures were recorded with `max_output_tokens: null` echoed although
/// the text request set 64; the Responses API echoes the request's value, as we do.
fn echo_max_output_tokens(mut fixture: Value, req: &Value) -> Value {
    fixture["max_output_tokens"] = req.get("max_output_tokens").cloned().unwrap_or(Value::Null);
    fixture
}

#[test]
fn golden_chat_requests() {
    let opts = RequestOptions::default();
    for name in ["text", "tools"] {
        let req = fixture(&format!("openai/responses/{name}.request.json"));
        check_json(
            &format!("responses_to_chat/{name}.request.json"),
            &responses_to_chat::request(&req, &opts, &[]).unwrap(),
        );
    }
    let out = responses_to_chat::request(&case("responses/rich.request.json"), &opts, &[]).unwrap();
    check_json("responses_to_chat/rich.request.json", &out);
    assert_eq!(out["tool_choice"], "none", "none stays none");

    // previous_response_id: the follow-up continues the stored conversation.
    let first = fixture("openai/responses/tools.request.json");
    let first_resp = fixture("openai/responses/tools.response.json");
    let history = history_after(&[], &first, &first_resp).unwrap();
    let follow = fixture("openai/responses/followup.request.json");
    let out = responses_to_chat::request(&follow, &opts, &history).unwrap();
    check_json("responses_to_chat/followup.request.json", &out);
    let roles: Vec<&str> = out["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"]);
    assert_eq!(
        out["messages"][1]["tool_calls"][1]["id"],
        "call_mock_time_02"
    );
}

#[test]
fn chat_responses_match_the_native_responses_fixtures() {
    for (name, id) in [("text", "resp_mockText001"), ("tools", "resp_mockTools001")] {
        let req = fixture(&format!("openai/responses/{name}.request.json"));
        let chat = fixture(&format!("openai/chat/{name}.response.json"));
        let out = responses_to_chat::response(&chat, &ctx(id, &req)).unwrap();
        let want = echo_max_output_tokens(
            fixture(&format!("openai/responses/{name}.response.json")),
            &req,
        );
        assert_eq!(out, want, "{name}");
        check_json(&format!("responses_to_chat/{name}.response.json"), &out);
    }
}

#[test]
fn chat_streams_match_the_native_responses_streams() {
    for (chat_stream, name, id) in [
        ("text.stream_usage.sse", "text", "resp_mockText001"),
        ("tools.stream.sse", "tools", "resp_mockTools001"),
    ] {
        let req = fixture(&format!("openai/responses/{name}.request.json"));
        let input = fixture_bytes(&format!("openai/chat/{chat_stream}"));
        let out = run_all_splits(
            || responses_to_chat::StreamTranslator::new(&ctx(id, &req)),
            &input,
        );
        check_bytes(&format!("responses_to_chat/{name}.stream.sse"), &out);
        let got = events(&out);
        let want = events(&fixture_bytes(&format!(
            "openai/responses/{name}.stream.sse"
        )));
        assert_eq!(got.len(), want.len(), "{name}: event count");
        for ((gn, gd), (wn, wd)) in got.iter().zip(&want) {
            assert_eq!(gn, wn);
            let g: Value = serde_json::from_str(gd).unwrap();
            let mut w: Value = serde_json::from_str(wd).unwrap();
            if let Some(r) = w.get_mut("response") {
                *r = echo_max_output_tokens(r.take(), &req);
            }
            assert_eq!(g, w, "{name}: event {gn:?}");
        }
    }
}

#[test]
fn chat_reasoning_becomes_a_reasoning_item() {
    // b15: reasoning_content, then two tool calls (one whole, one fragmented), finish "stop".
    let req = fixture("openai/responses/tools.request.json");
    let input = case_bytes("openai/b15_whole_args_reasoning.stream.sse");
    let out = run_all_splits(
        || responses_to_chat::StreamTranslator::new(&ctx("resp_r1", &req)),
        &input,
    );
    check_bytes("responses_to_chat/b15_reasoning_tools.stream.sse", &out);
    let mut t = responses_to_chat::StreamTranslator::new(&ctx("resp_r1", &req));
    run_pieces(&mut t, &[&input]);
    let r = t.response().unwrap();
    assert_eq!(r["output"][0]["type"], "reasoning");
    assert_eq!(r["output"][0]["summary"][0]["text"], "Add them.");
    assert!(r["output"][0].get("encrypted_content").is_none());
    let args: Vec<Value> = r["output"].as_array().unwrap()[1..]
        .iter()
        .map(|i| serde_json::from_str(i["arguments"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(args, vec![json!({"a":17,"b":25}), json!({"a":17,"b":25})]);
    assert_eq!(r["status"], "completed");
    assert_eq!(r["usage"]["input_tokens"], 30);
}

#[test]
fn chat_stream_failures() {
    let req = fixture("openai/responses/text.request.json");
    let mut t = responses_to_chat::StreamTranslator::new(&ctx("resp_x", &req));
    let out = run_pieces(
        &mut t,
        &[&fixture_bytes("openai/chat/midstream_error.stream.sse")],
    );
    assert_eq!(t.outcome(), StreamOutcome::UpstreamError);
    let last: Value = serde_json::from_str(&events(&out).pop().unwrap().1).unwrap();
    assert_eq!(last["type"], "response.failed");
    assert_eq!(last["response"]["error"]["code"], "server_error");
    assert_eq!(
        last["response"]["output"][0]["content"][0]["text"],
        "Partial answer before"
    );
    check_bytes("responses_to_chat/midstream_error.stream.sse", &out);

    let input = fixture_bytes("openai/chat/text.stream.sse");
    let cut = String::from_utf8(input.clone())
        .unwrap()
        .find("\"finish_reason\":\"stop\"")
        .unwrap();
    let cut = input[..cut].iter().rposition(|b| *b == b'\n').unwrap() + 1;
    let mut t = responses_to_chat::StreamTranslator::new(&ctx("resp_x", &req));
    run_pieces(&mut t, &[&input[..cut]]);
    assert_eq!(t.outcome(), StreamOutcome::Truncated);
    assert_eq!(t.response().unwrap()["status"], "failed");

    // Sequence numbers count up from 0 without gaps.
    let out = run_pieces(
        &mut responses_to_chat::StreamTranslator::new(&ctx("resp_x", &req)),
        &[&fixture_bytes("openai/chat/unicode.stream.sse")],
    );
    for (i, e) in json_events(&out).iter().enumerate() {
        assert_eq!(e["sequence_number"], i as u64);
    }
}

#[test]
fn anthropic_chain() {
    let opts = RequestOptions::default();
    let req = case("responses/rich.request.json");
    let out = responses_to_anthropic::request(&req, &opts, &[]).unwrap();
    check_json("responses_to_anthropic/rich.request.json", &out);
    assert_eq!(out["tool_choice"], json!({"type":"none"}));
    assert_eq!(
        out["system"],
        "You are a careful assistant.\n\nPrefer metric units."
    );

    let treq = fixture("openai/responses/tools.request.json");
    for name in ["text", "tools", "thinking_tools"] {
        let msg = fixture(&format!("anthropic/messages/{name}.response.json"));
        let out = responses_to_anthropic::response(&msg, &ctx("resp_a1", &treq)).unwrap();
        check_json(
            &format!("responses_to_anthropic/{name}.response.json"),
            &out,
        );
        let input = fixture_bytes(&format!("anthropic/messages/{name}.stream.sse"));
        let mut t = responses_to_anthropic::StreamTranslator::new(&ctx("resp_a1", &treq));
        let sse = run_all_splits(
            || responses_to_anthropic::StreamTranslator::new(&ctx("resp_a1", &treq)),
            &input,
        );
        run_pieces(&mut t, &[&input]);
        check_bytes(&format!("responses_to_anthropic/{name}.stream.sse"), &sse);
        // Streamed and non-streamed translations end in the same Response.
        let mut streamed = t.response().unwrap().clone();
        assert_eq!(t.outcome(), StreamOutcome::Completed);
        streamed["completed_at"] = out["completed_at"].clone();
        assert_eq!(streamed, out, "{name}");
        // Thinking never reaches visible text.
        for e in json_events(&sse) {
            if e["type"] == "response.output_text.delta" {
                assert!(
                    !e["delta"].as_str().unwrap().contains("user wants"),
                    "{name}"
                );
            }
        }
    }

    let mut t = responses_to_anthropic::StreamTranslator::new(&ctx("resp_a2", &treq));
    let out = run_pieces(
        &mut t,
        &[&fixture_bytes(
            "anthropic/messages/midstream_error.stream.sse",
        )],
    );
    assert_eq!(t.outcome(), StreamOutcome::UpstreamError);
    let last: Value = serde_json::from_str(&events(&out).pop().unwrap().1).unwrap();
    assert_eq!(
        last["response"]["error"],
        json!({"code":"server_error","message":"Overloaded"})
    );
}

#[test]
fn anthropic_thinking_round_trips_through_a_responses_client() {
    let opts = RequestOptions::default();
    let first = json!({"model":"claude-sonnet-4-5","input":"Weather in Paris?","reasoning":{"effort":"medium"},
        "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]});
    let anth = fixture("anthropic/messages/thinking_tools.response.json");
    let resp = responses_to_anthropic::response(&anth, &ctx("resp_t1", &first)).unwrap();
    assert_eq!(resp["output"][0]["type"], "reasoning");
    assert_eq!(
        resp["output"][0]["summary"][0]["text"],
        anth["content"][0]["thinking"]
    );
    assert_eq!(resp["output"][1]["type"], "function_call");
    // Streaming gives the same reasoning item.
    let mut t = responses_to_anthropic::StreamTranslator::new(&ctx("resp_t1", &first));
    run_pieces(
        &mut t,
        &[&fixture_bytes(
            "anthropic/messages/thinking_tools.stream.sse",
        )],
    );
    assert_eq!(t.response().unwrap()["output"][0], resp["output"][0]);

    // Stateless follow-up: the client sends the output items back with the tool result.
    let mut input = vec![json!({"role":"user","content":"Weather in Paris?"})];
    input.extend(resp["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"type":"function_call_output","call_id":"toolu_mock_weather_01","output":"{\"temp_c\":18}"}));
    let mut follow = first.clone();
    follow["input"] = Value::Array(input);
    let req = responses_to_anthropic::request(&follow, &opts, &[]).unwrap();
    assert_eq!(
        req["thinking"],
        json!({"type":"enabled","budget_tokens":4096})
    );
    let assistant = &req["messages"][1];
    assert_eq!(
        assistant["content"][0], anth["content"][0],
        "thinking block with signature, intact"
    );
    assert_eq!(assistant["content"][1]["type"], "tool_use");
    assert_eq!(req["messages"][2]["content"][0]["type"], "tool_result");

    // previous_response_id: the stored history carries the same blocks.
    let history = history_after(&[], &first, &resp).unwrap();
    let by_id = json!({"model":"claude-sonnet-4-5","previous_response_id":"resp_t1","reasoning":{"effort":"medium"},
        "input":[{"type":"function_call_output","call_id":"toolu_mock_weather_01","output":"{\"temp_c\":18}"}]});
    let req2 = responses_to_anthropic::request(&by_id, &opts, &history).unwrap();
    assert_eq!(req2["messages"], req["messages"]);

    // Toward a Chat upstream: reasoning text only, no Anthropic blocks.
    let chat = responses_to_chat::request(&follow, &opts, &[]).unwrap();
    let a = &chat["messages"][1];
    assert_eq!(a["reasoning_content"], anth["content"][0]["thinking"]);
    assert!(a.get("thinking_blocks").is_none());
    assert!(a["content"].is_null());
}
