//! Micro-benchmarks of the hot pieces `tollgate-protocol` provides:
//! parse-and-rewrite of a request body, and the per-event cost of relaying an
//! OpenAI SSE stream (framing, field parsing, usage sniffing).
//!
//! Run: `cargo bench -p tollgate-bench --bench protocol`.
//! Token counting and translation are benchmarked in their own crates
//! (`tollgate-governance/benches/tokens.rs`, `tollgate-translate/benches/translate.rs`).
#![expect(
    clippy::expect_used,
    reason = "benchmark setup: a failed setup aborts the run"
)]

use divan::counter::{BytesCount, ItemsCount};
use divan::{Bencher, black_box};
use tollgate_bench::workload::synthetic_text;
use tollgate_protocol::RequestBody;
use tollgate_protocol::body::ForwardEdit;
use tollgate_protocol::sse::SseFramer;
use tollgate_protocol::usage::openai_chunk_usage;

fn main() {
    divan::main();
}

/// A chat request whose user message has `tokens` tokens (~4 chars each), plus the
/// usual top-level fields a gateway reads or rewrites.
fn chat_body(tokens: u64) -> Vec<u8> {
    serde_json::json!({
        "model": "bench-gpt",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": synthetic_text(tokens)}
        ],
        "temperature": 0.2,
        "max_tokens": 256,
        "stream": false,
        "metadata": {"trace": "bench"},
        "user": "bench-user"
    })
    .to_string()
    .into_bytes()
}

const EDIT: ForwardEdit<'static> = ForwardEdit {
    remove: &["metadata"],
    replace: &[("model", "\"gpt-4o-mini-2024-07-18\"")],
    append: &[("stream_options", "{\"include_usage\":true}")],
};

/// Parse the top level, read the fields the gateway routes on, write the upstream body.
#[divan::bench(args = [16, 1_000, 10_000, 100_000])]
fn parse_and_rewrite(b: Bencher, prompt_tokens: u64) {
    let body = chat_body(prompt_tokens);
    let mut out = Vec::with_capacity(body.len() + 64);
    b.counter(BytesCount::new(body.len())).bench_local(|| {
        let parsed = RequestBody::parse(black_box(&body)).expect("valid body");
        let model = parsed.str_field("model").expect("string model");
        let stream = parsed.bool_field("stream").expect("bool stream");
        black_box((model, stream));
        out.clear();
        parsed.write_forward(&EDIT, &mut out);
        black_box(out.len())
    });
}

/// An OpenAI chat stream with `include_usage`: role chunk, `n` content chunks,
/// finish chunk, usage chunk, `[DONE]` (the shape of tollgate-mock's streams).
fn openai_stream(n: usize) -> Vec<Vec<u8>> {
    let chunk = |delta: &str, finish: &str, usage: &str| {
        format!(
            "data: {{\"id\":\"chatcmpl-mock-1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"bench-gpt\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}],\"usage\":{usage}}}\n\n"
        )
        .into_bytes()
    };
    let mut events = vec![chunk(
        "{\"role\":\"assistant\",\"content\":\"\"}",
        "null",
        "null",
    )];
    for i in 0..n {
        events.push(chunk(
            &format!("{{\"content\":\"token{i} \"}}"),
            "null",
            "null",
        ));
    }
    events.push(chunk("{}", "\"stop\"", "null"));
    events.push(
        "data: {\"id\":\"chatcmpl-mock-1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"bench-gpt\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":64,\"total_tokens\":76}}\n\n"
            .as_bytes()
            .to_vec(),
    );
    events.push(b"data: [DONE]\n\n".to_vec());
    events
}

/// Per event: push the network chunk, frame it, parse its fields, sniff usage.
#[divan::bench(args = [8, 64, 512])]
fn sse_relay_per_event(b: Bencher, content_chunks: usize) {
    let events = openai_stream(content_chunks);
    b.counter(ItemsCount::new(events.len())).bench_local(|| {
        let mut framer = SseFramer::new(1 << 20);
        let mut usage = None;
        let mut relayed = 0usize;
        for e in &events {
            framer.push(black_box(e));
            while let Ok(Some(ev)) = framer.next_event() {
                if let Ok(p) = ev.parse()
                    && let Some(u) = openai_chunk_usage(p.data.as_bytes())
                {
                    usage = Some(u);
                }
                relayed += ev.raw.len();
            }
        }
        black_box((usage, relayed))
    });
}
