//! Prompt token counting for admission: 1K / 10K / 100K-token chat prompts.
//! Target: a 100K-token prompt counted in ≤ 2 ms in release mode.
//! Run: `cargo bench -p tollgate-governance --bench tokens`.
#![expect(
    clippy::print_stdout,
    reason = "a benchmark reports its measurements on stdout"
)]

use serde_json::{Value, json};
use tollgate_governance::tokens::{Encoding, count_chat_messages, warm_up};

fn main() {
    warm_up();
    cpu_time_report();
    divan::main();
}

/// This thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`): unlike wall time it excludes the
/// time the thread waits for a core, which matters on this shared 2-core machine.
fn thread_cpu_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; the clock id is a constant supported by Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// Median thread-CPU time of counting each 100K-token prompt (fast path and tiktoken-rs).
fn cpu_time_report() {
    let median = |f: &dyn Fn() -> u64, runs: usize| {
        let mut v: Vec<u128> = (0..runs)
            .map(|_| {
                let t = thread_cpu_ns();
                divan::black_box(f());
                thread_cpu_ns() - t
            })
            .collect();
        v.sort_unstable();
        (v[0], v[runs / 2])
    };
    let src = source_text(100_000);
    let prose_text = prose(100_000);
    let bpe = tiktoken_rs::o200k_base_singleton();
    for (name, text) in [("source code", &src), ("prose", &prose_text)] {
        let n = Encoding::O200kBase.count(text);
        let (min, med) = median(&|| Encoding::O200kBase.count(text), 31);
        let (tmin, tmed) = median(&|| bpe.encode_ordinary(text).len() as u64, 5);
        println!(
            "thread CPU time, {n} o200k tokens of {name}: fast path min {:.2} ms / median {:.2} ms; tiktoken-rs min {:.2} ms / median {:.2} ms",
            min as f64 / 1e6,
            med as f64 / 1e6,
            tmin as f64 / 1e6,
            tmed as f64 / 1e6
        );
    }
}

/// Deterministic English-like prose (a fixed word list walked by an LCG), with punctuation,
/// numbers and newlines, grown until it holds about `tokens` o200k tokens.
fn prose(tokens: u64) -> String {
    const WORDS: &[&str] = &[
        "the",
        "gateway",
        "routes",
        "each",
        "request",
        "to",
        "a",
        "deployment",
        "budget",
        "model",
        "tokens",
        "latency",
        "under",
        "load",
        "with",
        "retries",
        "and",
        "fallbacks",
        "when",
        "upstream",
        "providers",
        "fail",
        "streaming",
        "responses",
        "carry",
        "usage",
        "at",
        "end",
        "of",
        "stream",
        "while",
        "keys",
        "teams",
        "users",
        "share",
        "limits",
        "per",
        "minute",
        "concurrency",
        "is",
        "bounded",
        "by",
        "parallel",
        "slots",
        "that",
        "release",
        "on",
        "every",
        "path",
        "including",
        "errors",
        "client",
        "disconnects",
        "timeouts",
        "cooldowns",
        "observability",
        "metrics",
        "histograms",
        "percentiles",
        "throughput",
        "internationalization",
        "configuration",
        "yaml",
    ];
    let mut s = String::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut n = 0u64;
    while n < tokens {
        for _ in 0..200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let w = WORDS[(x >> 33) as usize % WORDS.len()];
            s.push_str(w);
            match (x >> 20) % 23 {
                0 => s.push_str(". "),
                1 => s.push_str(", "),
                2 => s.push_str(&format!(" {} ", (x >> 40) % 10_000)),
                3 => s.push('\n'),
                _ => s.push(' '),
            }
        }
        n = Encoding::O200kBase.count(&s);
    }
    s
}

/// Real text: this crate's own Rust sources and built-in price table (code, doc comments,
/// JSON), repeated until the prompt holds about `tokens` o200k tokens.
fn source_text(tokens: u64) -> String {
    const FILES: &[&str] = &[
        include_str!("../src/admission/memory.rs"),
        include_str!("../src/admission/engine.rs"),
        include_str!("../src/duration.rs"),
        include_str!("../src/pricing/cost.rs"),
        include_str!("../data/prices.json"),
    ];
    let mut s = String::new();
    let mut i = 0;
    while Encoding::O200kBase.count(&s) < tokens {
        s.push_str(FILES[i % FILES.len()]);
        i += 1;
    }
    let mut end = s.len();
    while Encoding::O200kBase.count(&s[..end]) > tokens {
        end = s.floor_char_boundary(end - end / 50);
    }
    s.truncate(end);
    s
}

fn chat(content: String) -> Value {
    json!([
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": content}
    ])
}

#[divan::bench(args = [1_000, 10_000, 100_000])]
fn o200k_chat_prompt(bencher: divan::Bencher, tokens: u64) {
    let msgs = chat(prose(tokens));
    bencher.bench(|| count_chat_messages(Encoding::O200kBase, divan::black_box(&msgs)));
}

#[divan::bench(args = [1_000, 10_000, 100_000])]
fn cl100k_chat_prompt(bencher: divan::Bencher, tokens: u64) {
    let msgs = chat(prose(tokens));
    bencher.bench(|| count_chat_messages(Encoding::Cl100kBase, divan::black_box(&msgs)));
}

#[divan::bench(args = [100_000])]
fn estimate_chat_prompt(bencher: divan::Bencher, tokens: u64) {
    let msgs = chat(prose(tokens));
    bencher.bench(|| count_chat_messages(Encoding::Estimate, divan::black_box(&msgs)));
}

#[divan::bench(args = [1_000, 10_000, 100_000])]
fn o200k_source_code_prompt(bencher: divan::Bencher, tokens: u64) {
    let msgs = chat(source_text(tokens));
    bencher.bench(|| count_chat_messages(Encoding::O200kBase, divan::black_box(&msgs)));
}

/// The same 100K-token source text through tiktoken-rs alone (the baseline the fast path replaces).
#[divan::bench(args = [100_000])]
fn tiktoken_rs_baseline_source_code(bencher: divan::Bencher, tokens: u64) {
    let text = source_text(tokens);
    let bpe = tiktoken_rs::o200k_base_singleton();
    bencher.bench(|| bpe.encode_ordinary(divan::black_box(&text)).len());
}
