//! Micro-benchmarks: one chat → Anthropic request translation, and one Anthropic → OpenAI stream
//! translation of the tools fixture (framing included, as the gateway does it).
//!
//! Run: `CARGO_TARGET_DIR=/work/targets/translate cargo bench -p tollgate-translate`.

use std::path::PathBuf;

use bytes::BytesMut;
use serde_json::Value;
use tollgate_protocol::SseFramer;
use tollgate_translate::RequestOptions;
use tollgate_translate::chat_to_anthropic::{StreamOptions, StreamTranslator, request};

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
