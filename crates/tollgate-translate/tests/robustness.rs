//! Odd and hostile upstream input: never a panic, never a silent clean end.

mod common;

use bytes::BytesMut;
use common::*;
use serde_json::{Value, json};
use tollgate_translate::responses_to_chat::ResponseContext;
use tollgate_translate::{
    StreamOutcome, anthropic_to_chat, chat_to_anthropic, completions_to_chat, responses_to_chat,
};

const CALL_ID: &str = "5f0e8a52-3c1b-4d2e-9a7f-6b8c9d0e1f2a";

const ODD: [&str; 12] = [
    "",
    "[DONE",
    "null",
    "42",
    "{}",
    "{\"choices\":null}",
    "{\"choices\":[{\"index\":0,\"delta\":null,\"finish_reason\":\"\"}]}",
    "{\"choices\":[{\"index\":3,\"delta\":{\"content\":\"other choice\"}}]}",
    "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"x\"}}]}}]}",
    "{\"created\":1767225600.5,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}",
    "{\"type\":\"content_block_delta\",\"index\":99999999999,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
    "{\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"text_delta\",\"text\":\"unknown block\"}}",
];

#[test]
fn odd_events_never_panic_and_streams_end_visibly() {
    let req = json!({"model":"m"});
    let ctx = ResponseContext {
        response_id: "resp_r",
        created_at: 1,
        completed_at: 2,
        request: &req,
    };
    for data in ODD {
        let mut out = BytesMut::new();
        let mut a = chat_to_anthropic::StreamTranslator::new(Default::default());
        let _ = a.feed_str(None, data, &mut out);
        a.finish(&mut out);
        assert_ne!(a.outcome(), StreamOutcome::Completed, "{data}");
        assert!(
            std::str::from_utf8(&out).unwrap().contains("\"error\""),
            "{data}"
        );

        let mut out = BytesMut::new();
        let mut b = anthropic_to_chat::StreamTranslator::new(CALL_ID);
        let _ = b.feed_str(None, data, &mut out);
        b.finish(&mut out);
        assert_ne!(b.outcome(), StreamOutcome::Completed, "{data}");
        assert!(
            std::str::from_utf8(&out).unwrap().contains("event: error"),
            "{data}"
        );

        let mut out = BytesMut::new();
        let mut c = responses_to_chat::StreamTranslator::new(&ctx);
        let _ = c.feed_str(None, data, &mut out);
        c.finish(&mut out);
        assert_ne!(c.outcome(), StreamOutcome::Completed, "{data}");
        assert!(
            std::str::from_utf8(&out)
                .unwrap()
                .contains("response.failed"),
            "{data}"
        );

        let mut out = BytesMut::new();
        let mut d = completions_to_chat::StreamTranslator::new(true);
        let _ = d.feed_str(None, data, &mut out);
        d.finish(&mut out);
        assert_ne!(d.outcome(), StreamOutcome::Completed, "{data}");
    }
}

#[test]
fn hostile_block_index_is_an_error_not_an_allocation() {
    let mut t = chat_to_anthropic::StreamTranslator::new(Default::default());
    let mut out = BytesMut::new();
    let err = t
        .feed_str(None, ODD[10], &mut out)
        .expect_err("index out of range is rejected");
    assert_eq!(err.status(), 502);
    assert_eq!(t.outcome(), StreamOutcome::InvalidEvent);
}

#[test]
fn empty_finish_reason_does_not_end_the_message() {
    // Some servers send finish_reason "" on every chunk.
    let input = concat!(
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"\"}]}\n\n",
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"\"}]}\n\n",
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let mut t = anthropic_to_chat::StreamTranslator::new(CALL_ID);
    let out = run_pieces(&mut t, &[input.as_bytes()]);
    let evs: Vec<Value> = json_events(&out);
    let starts = evs
        .iter()
        .filter(|e| e["type"] == "content_block_start")
        .count();
    assert_eq!(starts, 1, "one text block for both deltas");
    assert_eq!(t.stop_reason(), Some("max_tokens"));
}

#[test]
fn content_as_an_array_of_parts_is_text() {
    // Mistral-style delta.content arrays: text parts are visible text, thinking parts are not.
    let input = concat!(
        "data: {\"id\":\"c\",\"model\":\"mistral\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"hmm\"}]}]}}]}\n\n",
        "data: {\"id\":\"c\",\"model\":\"mistral\",\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"Bon\"},{\"type\":\"text\",\"text\":\"jour\"}]}}]}\n\n",
        "data: {\"id\":\"c\",\"model\":\"mistral\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" \\u00e0 tous\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let mut t = anthropic_to_chat::StreamTranslator::new(CALL_ID);
    let out = run_pieces(&mut t, &[input.as_bytes()]);
    let text: String = json_events(&out)
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "Bonjour à tous");
    assert_eq!(t.outcome(), StreamOutcome::Completed);
    let mut c = completions_to_chat::StreamTranslator::new(false);
    let out = run_pieces(&mut c, &[input.as_bytes()]);
    let text: String = json_events(&out)
        .iter()
        .filter_map(|e| e["choices"][0]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "Bonjour à tous");
}
