//! The `tollgate-mock` binary: prints its address line, serves, exits 0 on SIGTERM.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

#[tokio::test]
async fn prints_address_serves_and_exits_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate-mock"))
        .args(["--port", "0", "--host", "127.0.0.1", "--delay-ms", "0"])
        .arg("--fixtures")
        .arg(fixtures_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    });
    let line = tokio::time::timeout(Duration::from_secs(10), line)
        .await
        .expect("address line within 10 s")
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("tollgate-mock listening on ")
        .unwrap_or_else(|| panic!("bad line {line:?}"))
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"));

    let r = post(
        &base,
        "/v1/chat/completions",
        &[("x-mock-fixture", "openai/chat/text.stream.sse")],
        &json!({}),
    )
    .await;
    assert_eq!(
        r.body(),
        std::fs::read(fixtures_dir().join("openai/chat/text.stream.sse")).unwrap()
    );
    let obs = get(&base, "/__observations").await.json();
    assert_eq!(
        obs["requests"][0]["headers"]["x-mock-fixture"],
        "openai/chat/text.stream.sse"
    );

    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let t = Instant::now();
    loop {
        if let Some(code) = child.try_wait().unwrap() {
            assert!(code.success(), "exit status {code:?}");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "mock did not exit on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
