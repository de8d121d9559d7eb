//! Shared harness for the end-to-end tests: the real `tollgate` binary against an in-process
//! `tollgate-mock` upstream.
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use tollgate_mock::{MockConfig, MockHandle};

/// A running gateway process. Killed on drop.
pub struct Gateway {
    pub child: Child,
    pub base: String,
    pub log: Arc<Mutex<String>>,
    _dir: tempdir::TempDir,
}

pub mod tempdir;

pub const MASTER: &str = "sk-e2e-master-CANARY1";
pub const UPSTREAM_KEY: &str = "sk-upstream-CANARY2";

/// A config with wildcard groups onto the mock plus a few named groups.
pub fn standard_config(mock_base: &str) -> String {
    format!(
        r#"
model_list:
  - model_name: gpt-test
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock_base}/v1
      api_key: {UPSTREAM_KEY}
      seed: 7
  - model_name: "fixture/*"
    litellm_params:
      model: openai/fixture/*
      api_base: {mock_base}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: "any/*"
    litellm_params:
      model: openai/*
      api_base: {mock_base}/v1
      api_key: {UPSTREAM_KEY}
  - model_name: slow-gpt
    litellm_params:
      model: openai/mock-gpt-slow
      api_base: {mock_base}/v1
      timeout: 0.3
  - model_name: dead-gpt
    litellm_params:
      model: openai/x
      api_base: http://127.0.0.1:9/v1
  - model_name: mock-echo
    litellm_params:
      model: mock/echo
      mock_chunks: 3
  - model_name: mock-embedding
    litellm_params:
      model: mock/embed
router_settings:
  num_retries: 0          # these tests check pass-through semantics; e2e_router.rs tests routing
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
"#
    )
}

impl Gateway {
    /// Starts the binary with `config`; waits for its "listening on" line.
    pub fn start(config: &str) -> Gateway {
        Self::start_with_args(config, &[])
    }

    pub fn start_with_args(config: &str, extra: &[&str]) -> Gateway {
        let dir = tempdir::TempDir::new("gw");
        let path = dir.0.join("config.yaml");
        std::fs::write(&path, config).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .arg("--config")
            .arg(&path)
            .args(["--port", "0", "--host", "127.0.0.1"])
            .args(extra)
            .env("RUST_LOG", "info")
            .env_remove("LITELLM_MASTER_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tollgate");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let log2 = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // Logged before the start is reported, so a test reading the log right after
                // `start` sees the "listening on" line.
                {
                    let mut l = log2.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
                if let Some(i) = line.find("listening on http://")
                    && let Some(t) = tx.take()
                {
                    let addr = line[i + "listening on ".len()..]
                        .split_whitespace()
                        .next()
                        .unwrap()
                        .to_owned();
                    let _ = t.send(addr);
                }
            }
        });
        let base = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(b) => b,
            Err(_) => {
                let _ = child.kill();
                panic!("gateway did not start; log:\n{}", log.lock().unwrap());
            }
        };
        Gateway {
            child,
            base,
            log,
            _dir: dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

pub async fn mock() -> MockHandle {
    tollgate_mock::start(MockConfig::with_shared_fixtures())
        .await
        .expect("mock starts")
}

pub fn fixtures_available() -> bool {
    tollgate_mock::shared_fixtures_dir().is_some()
}

pub fn fixture(rel: &str) -> Vec<u8> {
    let dir = tollgate_mock::shared_fixtures_dir().expect("shared fixtures");
    std::fs::read(dir.join(rel)).unwrap()
}

/// Replaces the mock's per-request sequence numbers so two runs compare equal.
pub fn normalize_ids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = [rest.find("mock-"), rest.find("mock_")]
        .into_iter()
        .flatten()
        .min()
    {
        out.push_str(&rest[..i + 5]);
        rest = &rest[i + 5..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push('N');
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// When the mock saw its client (the gateway) go away, unix ms; waits up to 1 s.
pub async fn disconnect_seen_at(m: &MockHandle) -> f64 {
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if let Some(at) = m
            .observations()
            .into_iter()
            .find(|o| o.client_disconnected)
            .and_then(|o| o.client_disconnected_at)
        {
            return at;
        }
    }
    panic!("the upstream did not see the disconnect within 1 s");
}
