//! Golden-file helpers shared by the integration tests.
//!
//! Expected outputs live in `tests/golden/` (JSON compared semantically, SSE compared byte for
//! byte). `UPDATE_GOLDEN=1 cargo test -p tollgate-translate` rewrites them; review every diff by
//! hand, they are the spec.
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use std::path::PathBuf;

use bytes::BytesMut;
use serde_json::Value;
use tollgate_protocol::SseFramer;

/// The shared fixtures directory: `$TOLLGATE_SHARED_DIR`, else `<workspace>/../shared`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("TOLLGATE_SHARED_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

pub fn fixture_bytes(rel: &str) -> Vec<u8> {
    let p = shared_dir().join("fixtures").join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

pub fn fixture(rel: &str) -> Value {
    serde_json::from_slice(&fixture_bytes(rel)).unwrap()
}

/// A file under `tests/cases/` (inputs written for these tests).
pub fn case(rel: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases")
        .join(rel);
    serde_json::from_slice(
        &std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display())),
    )
    .unwrap()
}

pub fn case_bytes(rel: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases")
        .join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `actual` with `tests/golden/<name>` as JSON values (key order ignored).
pub fn check_json(name: &str, actual: &Value) {
    let path = golden_path(name);
    if updating() {
        let mut text = serde_json::to_string_pretty(actual).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        return;
    }
    let expected: Value = serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "missing golden {}: {e} (UPDATE_GOLDEN=1 writes it)",
            path.display()
        )
    }))
    .unwrap();
    assert_eq!(
        &expected,
        actual,
        "golden {name} differs\nexpected:\n{}\nactual:\n{}",
        serde_json::to_string_pretty(&expected).unwrap(),
        serde_json::to_string_pretty(actual).unwrap()
    );
}

/// Compares `actual` with `tests/golden/<name>` byte for byte.
pub fn check_bytes(name: &str, actual: &[u8]) {
    let path = golden_path(name);
    if updating() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "missing golden {}: {e} (UPDATE_GOLDEN=1 writes it)",
            path.display()
        )
    });
    assert_eq!(
        String::from_utf8_lossy(&expected),
        String::from_utf8_lossy(actual),
        "golden {name} differs"
    );
}

/// The part of a stream translator the harness drives (every pair's translator).
pub use tollgate_translate::StreamTranslate as Feed;

/// Feeds `input` cut into the given pieces through a framer and `t`; returns the client bytes.
/// Upstream read errors stop the stream like the gateway would.
pub fn run_pieces<T: Feed>(t: &mut T, pieces: &[&[u8]]) -> Vec<u8> {
    let mut framer = SseFramer::new(1 << 20);
    let mut out = BytesMut::new();
    for piece in pieces {
        framer.push(piece);
        while let Some(raw) = framer.next_event().unwrap() {
            let ev = raw.parse().unwrap();
            if t.feed(&ev, &mut out).is_err() {
                return out.to_vec();
            }
        }
    }
    if let Some(raw) = framer.finish().unwrap() {
        let ev = raw.parse().unwrap();
        if t.feed(&ev, &mut out).is_err() {
            return out.to_vec();
        }
    }
    t.finish(&mut out);
    out.to_vec()
}

/// Translates `input` whole, then checks that every 2-piece split and the 1-byte-at-a-time feed
/// give byte-identical output. Returns the output.
pub fn run_all_splits<T: Feed>(make: impl Fn() -> T, input: &[u8]) -> Vec<u8> {
    let whole = run_pieces(&mut make(), &[input]);
    for cut in 1..input.len() {
        let got = run_pieces(&mut make(), &[&input[..cut], &input[cut..]]);
        assert!(
            got == whole,
            "output differs when the input is split at byte {cut}"
        );
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert!(
        run_pieces(&mut make(), &bytes) == whole,
        "output differs when fed one byte at a time"
    );
    whole
}

/// The `data:` payloads of an SSE byte string, with their `event:` names.
pub fn events(sse: &[u8]) -> Vec<(Option<String>, String)> {
    let mut framer = SseFramer::new(1 << 20);
    framer.push(sse);
    let mut out = Vec::new();
    while let Some(raw) = framer.next_event().unwrap() {
        let ev = raw.parse().unwrap();
        out.push((ev.event.map(str::to_owned), ev.data.into_owned()));
    }
    out
}

/// The JSON `data:` payloads (skipping `[DONE]`).
pub fn json_events(sse: &[u8]) -> Vec<Value> {
    events(sse)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect()
}
