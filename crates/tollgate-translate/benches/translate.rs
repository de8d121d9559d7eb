//! Micro-benchmarks: one chat → Anthropic request translation, and the Anthropic tools stream
//! fixture translated to OpenAI chunks and (chained through chat) to Responses events, framing
//! included, as the gateway does it.
//!
//! Run: `CARGO_TARGET_DIR=/work/targets/translate cargo bench -p tollgate-translate`.
#![expect(
    clippy::expect_used,
    reason = "benchmark setup: a failed setup aborts the run"
)]

use std::path::PathBuf;

use bytes::BytesMut;
use serde_json::Value;
use tollgate_protocol::SseFramer;
use tollgate_translate::chat_to_anthropic::{StreamOptions, StreamTranslator, request};
use tollgate_translate::{RequestOptions, StreamTranslate};

fn main() {
    divan::main();
}

fn fixture(rel: &str) -> Vec<u8> {
    let dir = std::env::var_os("TOLLGATE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    std::fs::read(dir.join("fixtures").join(rel)).expect("shared fixtures present")
}

#[divan::bench]
fn chat_to_anthropic_request(bencher: divan::Bencher) {
    let f: Value = serde_json::from_slice(&fixture("translation/chat_to_messages.request.json"))
        .expect("fixture is JSON");
    let chat = f["openai_chat"].clone();
    let opts = RequestOptions::default();
    bencher.bench(|| request(divan::black_box(&chat), &opts));
}

#[divan::bench]
fn anthropic_tools_stream_to_openai(bencher: divan::Bencher) {
    let input = fixture("anthropic/messages/tools.stream.sse");
    bencher
        .counter(divan::counter::BytesCount::new(input.len()))
        .bench(|| {
            let mut framer = SseFramer::new(1 << 20);
            let mut t = StreamTranslator::new(StreamOptions {
                include_usage: true,
                created: 1_767_225_600,
                drop_reasoning: false,
            });
            let mut out = BytesMut::with_capacity(8192);
            framer.push(divan::black_box(&input));
            while let Ok(Some(raw)) = framer.next_event() {
                if let Ok(ev) = raw.parse() {
                    let _ = t.feed(&ev, &mut out);
                }
            }
            t.finish(&mut out);
            out
        });
}

#[divan::bench]
fn anthropic_tools_stream_to_responses_chained(bencher: divan::Bencher) {
    use tollgate_translate::responses_to_anthropic::StreamTranslator as Chained;
    use tollgate_translate::responses_to_chat::ResponseContext;
    let input = fixture("anthropic/messages/tools.stream.sse");
    let req: Value = serde_json::from_slice(&fixture("openai/responses/tools.request.json"))
        .expect("fixture is JSON");
    bencher
        .counter(divan::counter::BytesCount::new(input.len()))
        .bench(|| {
            let ctx = ResponseContext {
                response_id: "resp_bench",
                created_at: 1_767_225_600,
                completed_at: 1_767_225_601,
                request: &req,
            };
            let mut framer = SseFramer::new(1 << 20);
            let mut t = Chained::new(&ctx);
            let mut out = BytesMut::with_capacity(16384);
            framer.push(divan::black_box(&input));
            while let Ok(Some(raw)) = framer.next_event() {
                if let Ok(ev) = raw.parse() {
                    let _ = t.feed(&ev, &mut out);
                }
            }
            t.finish(&mut out);
            out
        });
}
