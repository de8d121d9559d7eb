//! Anthropic Messages and OpenAI Responses: shapes, streams compared to the fixtures' event
//! sequences and key sets, tool replies, errors, mid-stream errors.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};

fn fixture_events(rel: &str) -> Vec<(String, Value)> {
    let text = String::from_utf8(std::fs::read(fixtures_dir().join(rel)).unwrap()).unwrap();
    Resp {
        status: 200,
        headers: Default::default(),
        frames: vec![text.into()],
    }
    .sse_events()
}

fn fixture_data(rel: &str) -> Vec<Value> {
    let text = String::from_utf8(std::fs::read(fixtures_dir().join(rel)).unwrap()).unwrap();
    Resp {
        status: 200,
        headers: Default::default(),
        frames: vec![text.into()],
    }
    .sse_data()
}

/// Object keys, recursively for nested objects (array elements: first element), as paths.
fn key_paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{prefix}/{k}");
                out.push(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            if let Some(x) = a.first() {
                key_paths(x, &format!("{prefix}/0"), out);
            }
        }
        _ => {}
    }
}

fn keys(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    key_paths(v, "", &mut out);
    out
}

fn msg_req(stream: bool) -> Value {
    json!({"model": "mock-claude-text", "max_tokens": 256, "stream": stream, "system": "Be brief.",
           "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello Claude, how are you?"}]}]})
}

#[tokio::test]
async fn messages_non_stream() {
    let mock = start().await;
    let r = post(&mock.base_url(), "/v1/messages", &[], &msg_req(false)).await;
    assert_eq!(r.status, 200);
    assert!(r.header("request-id").unwrap().starts_with("req_mock_"));
    let v = r.json();
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "mock-claude-text");
    let text = "This is a mock response to: Hello Claude, how are you?";
    assert_eq!(v["content"], json!([{"type": "text", "text": text}]));
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["stop_sequence"], Value::Null);
    // ceil((9 + 26) / 4) + 3 * (1 message + system)
    assert_eq!(v["usage"]["input_tokens"], 9 + 6);
    assert_eq!(v["usage"]["output_tokens"], (text.len() as u64).div_ceil(4));
    let fixture: Value = serde_json::from_slice(
        &std::fs::read(fixtures_dir().join("anthropic/messages/text.response.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(keys(&v), keys(&fixture));
    mock.shutdown().await;
}

#[tokio::test]
async fn messages_stream_matches_fixture_sequence() {
    let mock = start().await;
    let r = post(
        &mock.base_url(),
        "/v1/messages",
        &[("x-mock-chunks", "5"), ("x-mock-usage", "64,20,7,3")],
        &msg_req(true),
    )
    .await;
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let ours = r.sse_events();
    let theirs = fixture_events("anthropic/messages/text.stream.sse");
    let names = |v: &[(String, Value)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    for ((n, d), (_, f)) in ours.iter().zip(&theirs) {
        assert_eq!(d["type"], n.as_str());
        if n != "message_delta" {
            assert_eq!(keys(d), keys(f), "{n}");
        }
    }
    let start = &ours[0].1["message"]["usage"];
    assert_eq!(
        (
            start["input_tokens"].as_u64(),
            start["output_tokens"].as_u64()
        ),
        (Some(64), Some(1))
    );
    assert_eq!(start["cache_read_input_tokens"], 7);
    let delta = &ours[ours.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], 20);
    assert_eq!(delta["usage"]["input_tokens"], 64);
    let text: String = ours
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        text,
        "This is a mock response to: Hello Claude, how are you?"
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn messages_tool_use_stream_and_non_stream() {
    let mock = start().await;
    let mut body = msg_req(false);
    body["tools"] = json!([{"name": "add_numbers", "input_schema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}]);
    body["tool_choice"] = json!({"type": "any"});
    let v = post(&mock.base_url(), "/v1/messages", &[], &body)
        .await
        .json();
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["content"][0]["type"], "tool_use");
    assert_eq!(v["content"][0]["name"], "add_numbers");
    assert_eq!(v["content"][0]["input"], json!({"a": 42, "b": 42}));
    assert!(
        v["content"][0]["id"]
            .as_str()
            .unwrap()
            .starts_with("toolu_")
    );
    body["stream"] = json!(true);
    body["tool_choice"] = json!({"type": "auto"});
    let ev = post(
        &mock.base_url(),
        "/v1/messages",
        &[("x-mock-tool-call", "1"), ("x-mock-chunks", "3")],
        &body,
    )
    .await
    .sse_events();
    assert_eq!(
        ev[1].1["content_block"],
        json!({"type": "tool_use", "id": "toolu_mock_2_0", "name": "add_numbers", "input": {}})
    );
    let parts: Vec<&str> = ev
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[0], "");
    assert_eq!(parts.concat(), r#"{"a":42,"b":42}"#);
    let md = ev.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(md.1["delta"]["stop_reason"], "tool_use");
    mock.shutdown().await;
}

#[tokio::test]
async fn messages_errors_and_midstream() {
    let mock = start().await;
    let base = mock.base_url();
    let r = post(
        &base,
        "/v1/messages",
        &[("x-mock-status", "529")],
        &msg_req(false),
    )
    .await;
    assert_eq!(r.status, 529);
    let v = r.json();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");
    assert_eq!(v["request_id"].as_str(), r.header("request-id"));
    let r = post(
        &base,
        "/v1/messages",
        &[("x-mock-status", "429")],
        &msg_req(false),
    )
    .await;
    assert_eq!(r.json()["error"]["type"], "rate_limit_error");
    assert_eq!(
        r.header("anthropic-ratelimit-requests-remaining"),
        Some("0")
    );
    let r = post(
        &base,
        "/v1/messages",
        &[],
        &json!({"model": "mock-claude-overloaded", "max_tokens": 5, "messages": []}),
    )
    .await;
    assert_eq!(r.status, 529);
    let r = post(
        &base,
        "/v1/messages",
        &[],
        &json!({"model": "c", "messages": []}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["message"], "max_tokens: Field required");
    let r = post(
        &base,
        "/v1/messages",
        &[("x-mock-midstream-error-after", "2")],
        &msg_req(true),
    )
    .await;
    let ev = r.sse_events();
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "error"
        ]
    );
    assert_eq!(ev[5].1["error"]["type"], "overloaded_error");
    mock.shutdown().await;
}

#[tokio::test]
async fn messages_stop_sequence_and_max_tokens() {
    let mock = start().await;
    let mut body = msg_req(false);
    body["stop_sequences"] = json!(["mock"]);
    let v = post(&mock.base_url(), "/v1/messages", &[], &body)
        .await
        .json();
    assert_eq!(v["content"][0]["text"], "This is a ");
    assert_eq!(v["stop_reason"], "stop_sequence");
    assert_eq!(v["stop_sequence"], "mock");
    let mut body = msg_req(false);
    body["max_tokens"] = json!(2);
    let v = post(&mock.base_url(), "/v1/messages", &[], &body)
        .await
        .json();
    assert_eq!(v["content"][0]["text"], "This is ");
    assert_eq!(v["stop_reason"], "max_tokens");
    assert_eq!(v["usage"]["output_tokens"], 2);
    let c = post(
        &mock.base_url(),
        "/v1/messages/count_tokens",
        &[],
        &msg_req(false),
    )
    .await
    .json();
    assert_eq!(c, json!({"input_tokens": 15}));
    mock.shutdown().await;
}

fn resp_req(stream: bool) -> Value {
    json!({"model": "mock-gpt-text", "stream": stream, "instructions": "You are a terse assistant.", "input": "Say hello to the gateway"})
}

#[tokio::test]
async fn responses_non_stream_and_stream_match_fixture() {
    let mock = start().await;
    let v = post(&mock.base_url(), "/v1/responses", &[], &resp_req(false))
        .await
        .json();
    let fixture: Value = serde_json::from_slice(
        &std::fs::read(fixtures_dir().join("openai/responses/text.response.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(keys(&v), keys(&fixture));
    assert_eq!(v["status"], "completed");
    assert_eq!(v["instructions"], "You are a terse assistant.");
    let text = "This is a mock response to: Say hello to the gateway";
    assert_eq!(v["output"][0]["content"][0]["text"], text);
    // ceil((24 + 26) / 4) + 3 * 2
    assert_eq!(v["usage"]["input_tokens"], 13 + 6);
    assert_eq!(v["usage"]["output_tokens"], (text.len() as u64).div_ceil(4));

    let r = post(
        &mock.base_url(),
        "/v1/responses",
        &[("x-mock-chunks", "11")],
        &resp_req(true),
    )
    .await;
    let ours = r.sse_events();
    let theirs = fixture_events("openai/responses/text.stream.sse");
    let names = |v: &[(String, Value)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    for (i, ((n, d), (_, f))) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(d["sequence_number"], i, "{n}");
        assert_eq!(keys(d), keys(f), "{n}");
    }
    let deltas: String = ours
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, text);
    mock.shutdown().await;
}

#[tokio::test]
async fn responses_tool_call_and_failure() {
    let mock = start().await;
    let mut body = resp_req(true);
    body["tools"] = json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true}]);
    body["tool_choice"] = json!("required");
    let ev = post(&mock.base_url(), "/v1/responses", &[], &body)
        .await
        .sse_events();
    let theirs = fixture_events("openai/responses/tools.stream.sse");
    let added = ev
        .iter()
        .find(|(n, _)| n == "response.output_item.added")
        .unwrap();
    let fx_added = theirs
        .iter()
        .find(|(n, _)| n == "response.output_item.added")
        .unwrap();
    assert_eq!(keys(&added.1), keys(&fx_added.1));
    let args: String = ev
        .iter()
        .filter(|(n, _)| n == "response.function_call_arguments.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, r#"{"city":"mock-city"}"#);
    let done = &ev.last().unwrap().1;
    assert_eq!(done["type"], "response.completed");
    assert_eq!(done["response"]["output"][0]["type"], "function_call");
    assert_eq!(done["response"]["output"][0]["name"], "get_weather");
    assert_eq!(
        done["response"]["output"][0]["arguments"],
        r#"{"city":"mock-city"}"#
    );

    let ev = post(
        &mock.base_url(),
        "/v1/responses",
        &[("x-mock-midstream-error-after", "1")],
        &resp_req(true),
    )
    .await
    .sse_events();
    let last = &ev.last().unwrap().1;
    assert_eq!(last["type"], "response.failed");
    assert_eq!(last["response"]["status"], "failed");
    assert_eq!(last["response"]["error"]["code"], "server_error");
    let r = post(
        &mock.base_url(),
        "/v1/responses",
        &[("x-mock-status", "404")],
        &resp_req(false),
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "model_not_found");
    mock.shutdown().await;
}

#[tokio::test]
async fn chat_stream_usage_keys_match_fixture() {
    let mock = start().await;
    let body = json!({"model": "mock-gpt-text", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "hello"}]});
    let ours = post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[("x-mock-chunks", "11")],
        &body,
    )
    .await
    .sse_data();
    let theirs = fixture_data("openai/chat/text.stream_usage.sse");
    assert_eq!(ours.len(), theirs.len());
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(keys(o), keys(t));
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn messages_thinking_then_tool_use_matches_fixture() {
    let mock = start().await;
    let body = json!({"model": "c", "max_tokens": 2048, "stream": true, "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "any"}, "messages": [{"role": "user", "content": "Weather in Paris?"}]});
    let ours = post(
        &mock.base_url(),
        "/v1/messages",
        &[("x-mock-chunks", "4")],
        &body,
    )
    .await
    .sse_events();
    let theirs = fixture_events("anthropic/messages/thinking_tools.stream.sse");
    let names = |v: &[(String, Value)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    for ((n, d), (_, f)) in ours.iter().zip(&theirs) {
        if n != "message_delta" {
            assert_eq!(keys(d), keys(f), "{n}");
        }
        if n.starts_with("content_block") {
            assert_eq!(d["index"], f["index"], "{n}");
        }
    }
    let thinking: String = ours
        .iter()
        .filter_map(|(_, d)| d["delta"]["thinking"].as_str())
        .collect();
    assert_eq!(thinking, "Thinking about: Weather in Paris?");
    // non-streaming: thinking block first, with the same signature scheme
    let mut body = body;
    body["stream"] = json!(false);
    let v = post(&mock.base_url(), "/v1/messages", &[], &body)
        .await
        .json();
    assert_eq!(v["content"][0]["type"], "thinking");
    assert!(!v["content"][0]["signature"].as_str().unwrap().is_empty());
    assert_eq!(v["content"][1]["type"], "tool_use");
    let expected_out = ("Thinking about: Weather in Paris?".len() as u64).div_ceil(4)
        + (("get_weather".len() + r#"{"city":"mock-city"}"#.len()) as u64).div_ceil(4);
    assert_eq!(v["usage"]["output_tokens"], expected_out);
    mock.shutdown().await;
}

#[tokio::test]
async fn disconnect_recorded_on_every_streaming_route() {
    use http_body_util::BodyExt;
    let mock = start().await;
    let routes = [
        (
            "/v1/chat/completions",
            json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "x"}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "c", "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": "x"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "m", "stream": true, "input": "x"}),
        ),
    ];
    for (path, body) in routes {
        let req = http::Request::post(format!("{}{path}", mock.base_url()))
            .header("x-mock-chunk-delay-ms", "40")
            .header("x-mock-chunks", "50")
            .body(http_body_util::Full::new(bytes::Bytes::from(
                serde_json::to_vec(&body).unwrap(),
            )))
            .unwrap();
        let resp = client().request(req).await.unwrap();
        let mut b = resp.into_body();
        b.frame().await.unwrap().unwrap();
        b.frame().await.unwrap().unwrap();
        drop(b);
        let hung_up = tollgate_mock::observe::now_ms();
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        let obs = mock.drain_observations();
        assert_eq!(obs.len(), 1, "{path}");
        assert!(obs[0].client_disconnected, "{path}");
        let lag = obs[0].client_disconnected_at.unwrap() - hung_up;
        assert!(lag < 100.0, "{path}: noticed {lag} ms after hang-up");
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn parallel_tool_calls_in_every_dialect() {
    let mock = start().await;
    let base = mock.base_url();
    let all = [("x-mock-tool-call", "all"), ("x-mock-chunks", "3")];
    let weather = r#"{"city":"mock-city","unit":"celsius"}"#;
    let time = r#"{"timezone":"mock-timezone"}"#;
    let weather_schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}});
    let time_schema = json!({"type": "object", "properties": {"timezone": {"type": "string"}}});

    // OpenAI chat: accumulate deltas by tool-call index
    let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "x"}], "tools": [
        {"type": "function", "function": {"name": "get_weather", "parameters": weather_schema}},
        {"type": "function", "function": {"name": "get_time", "parameters": time_schema}}]});
    let chunks = post(&base, "/v1/chat/completions", &all, &body)
        .await
        .sse_data();
    let mut args = [String::new(), String::new()];
    let mut names = [String::new(), String::new()];
    for c in &chunks {
        for tc in c["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let i = tc["index"].as_u64().unwrap() as usize;
            if let Some(n) = tc["function"]["name"].as_str() {
                names[i] = n.to_owned();
            }
            args[i].push_str(tc["function"]["arguments"].as_str().unwrap());
        }
    }
    assert_eq!(names, ["get_weather", "get_time"]);
    assert_eq!(args, [weather, time]);
    let fx = fixture_data("openai/chat/tools.stream.sse");
    let second_header = chunks
        .iter()
        .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["index"] == 1)
        .unwrap();
    let fx_second = fx
        .iter()
        .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["index"] == 1)
        .unwrap();
    assert_eq!(keys(second_header), keys(fx_second));
    let mut nonstream = body.clone();
    nonstream["stream"] = json!(false);
    nonstream.as_object_mut().unwrap().remove("stream_options");
    let v = post(&base, "/v1/chat/completions", &all, &nonstream)
        .await
        .json();
    let calls = v["choices"][0]["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert_eq!(
        v["usage"]["completion_tokens"],
        (11 + weather.len() as u64).div_ceil(4) + (8 + time.len() as u64).div_ceil(4)
    );

    // Anthropic: two tool_use blocks at indices 0 and 1
    let body = json!({"model": "c", "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": "x"}], "tools": [
        {"name": "get_weather", "input_schema": weather_schema}, {"name": "get_time", "input_schema": time_schema}]});
    let ev = post(&base, "/v1/messages", &all, &body).await.sse_events();
    let starts: Vec<(u64, String)> = ev
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .map(|(_, d)| {
            (
                d["index"].as_u64().unwrap(),
                d["content_block"]["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        starts,
        vec![(0, "get_weather".to_owned()), (1, "get_time".to_owned())]
    );
    for (i, expected) in [weather, time].iter().enumerate() {
        let joined: String = ev
            .iter()
            .filter(|(n, d)| n == "content_block_delta" && d["index"] == i)
            .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
            .collect();
        assert_eq!(&joined, expected);
    }
    assert_eq!(
        ev.iter().filter(|(n, _)| n == "content_block_stop").count(),
        2
    );

    // Responses: two function_call output items
    let body = json!({"model": "m", "stream": true, "input": "x", "tools": [
        {"type": "function", "name": "get_weather", "parameters": weather_schema},
        {"type": "function", "name": "get_time", "parameters": time_schema}]});
    let ev = post(&base, "/v1/responses", &all, &body).await.sse_events();
    let theirs = fixture_events("openai/responses/tools.stream.sse");
    let names_of = |v: &[(String, Value)]| {
        let mut n: Vec<String> = v.iter().map(|(n, _)| n.clone()).collect();
        n.dedup();
        n
    };
    assert_eq!(names_of(&ev), names_of(&theirs));
    let done = &ev.last().unwrap().1["response"]["output"];
    assert_eq!(done[0]["arguments"], weather);
    assert_eq!(done[1]["arguments"], time);
    assert_eq!(
        done[1]["call_id"].as_str().unwrap().rsplit('_').next(),
        Some("1")
    );
    mock.shutdown().await;
}
