//! The mock upstream every gateway forwards to.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Duration;

use crate::error::BenchError;
use crate::process::{Launch, Managed};

/// Prefix of the line `tollgate-mock` prints once it listens.
pub const LISTENING_PREFIX: &str = "tollgate-mock listening on ";

/// Where the upstream comes from.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// Already running at this base URL (e.g. an in-process test server).
    Existing(String),
    /// Start this program with these arguments; it must print
    /// `tollgate-mock listening on http://ADDR` on stdout.
    Spawn {
        /// Program path.
        program: PathBuf,
        /// Arguments, e.g. `--host 127.0.0.1 --port 0 --delay-ms 20 --no-record`.
        args: Vec<String>,
    },
}

/// A running upstream: its base URL and, when started here, its process.
#[derive(Debug)]
pub struct RunningUpstream {
    /// Base URL such as `http://127.0.0.1:41234`.
    pub url: String,
    /// The process when spawned by the harness.
    pub process: Option<Managed>,
}

/// Default mock arguments: loopback, OS-chosen port, fixed 20 ms delay, no recording.
pub fn default_mock_args(delay_ms: u64) -> Vec<String> {
    [
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--delay-ms",
        &delay_ms.to_string(),
        "--no-record",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Extracts the base URL from the mock's "listening on" line.
pub fn parse_listening(line: &str) -> Option<String> {
    let url = line.trim().strip_prefix(LISTENING_PREFIX)?.trim();
    url.starts_with("http://")
        .then(|| url.trim_end_matches('/').to_string())
}

impl Upstream {
    /// Starts (or just names) the upstream. Waits up to 30 s for the listening line.
    ///
    /// Errors: [`BenchError::Process`] when the mock cannot start or never says where it listens.
    pub fn start(&self) -> Result<RunningUpstream, BenchError> {
        match self {
            Upstream::Existing(url) => Ok(RunningUpstream {
                url: url.trim_end_matches('/').to_string(),
                process: None,
            }),
            Upstream::Spawn { program, args } => {
                let mut m = Managed::spawn(&Launch {
                    name: "mock".into(),
                    program: program.display().to_string(),
                    args: args.clone(),
                    env: vec![],
                    cwd: None,
                    log: None,
                })?;
                let err = |reason: String| BenchError::Process {
                    name: "mock".into(),
                    reason,
                };
                let stdout = m.take_stdout().ok_or_else(|| err("no stdout".into()))?;
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stdout);
                    let mut line = String::new();
                    let mut sent = false;
                    // Keep draining stdout so the mock never blocks on a full pipe.
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                        if !sent && let Some(url) = parse_listening(&line) {
                            let _ = tx.send(url);
                            sent = true;
                        }
                        line.clear();
                    }
                });
                let url = rx
                    .recv_timeout(Duration::from_secs(30))
                    .map_err(|_| err("did not print its listening address within 30 s".into()))?;
                Ok(RunningUpstream {
                    url,
                    process: Some(m),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_listening_line() {
        assert_eq!(
            parse_listening("tollgate-mock listening on http://127.0.0.1:4321\n").as_deref(),
            Some("http://127.0.0.1:4321")
        );
        assert_eq!(parse_listening("starting"), None);
        assert_eq!(
            parse_listening("tollgate-mock listening on 127.0.0.1:1"),
            None
        );
    }
}
