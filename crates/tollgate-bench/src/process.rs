//! Starting and stopping the processes under test (mock upstream, gateways).
//!
//! Each process is started in its own process group so it can be stopped
//! with all its children: SIGTERM to the group, then SIGKILL after a grace
//! period. Only processes started here are ever signalled.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::BenchError;

/// A started process; stopped (group-wide) on [`Managed::stop`] or drop.
#[derive(Debug)]
pub struct Managed {
    /// Display name (gateway name or `mock`).
    pub name: String,
    child: Option<Child>,
    /// File receiving the process's stdout and stderr (when not piped).
    pub log: Option<PathBuf>,
}

/// What to start.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Display name.
    pub name: String,
    /// Program path or name looked up in `PATH`.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Where stdout and stderr go; `None` pipes stdout to the caller (for the
    /// mock's "listening on" line) and discards stderr.
    pub log: Option<PathBuf>,
}

impl Managed {
    /// Spawns `l` in a new process group.
    ///
    /// Errors: [`BenchError::Process`] when the program cannot be started.
    pub fn spawn(l: &Launch) -> Result<Self, BenchError> {
        let err = |reason: String| BenchError::Process {
            name: l.name.clone(),
            reason,
        };
        let mut cmd = Command::new(&l.program);
        cmd.args(&l.args).stdin(Stdio::null()).process_group(0);
        for (k, v) in &l.env {
            cmd.env(k, v);
        }
        if let Some(cwd) = &l.cwd {
            cmd.current_dir(cwd);
        }
        match &l.log {
            Some(path) => {
                let f =
                    File::create(path).map_err(|e| err(format!("log {}: {e}", path.display())))?;
                let f2 = f.try_clone().map_err(|e| err(format!("log: {e}")))?;
                cmd.stdout(f).stderr(f2);
            }
            None => {
                cmd.stdout(Stdio::piped()).stderr(Stdio::null());
            }
        }
        let child = cmd
            .spawn()
            .map_err(|e| err(format!("cannot start {}: {e}", l.program)))?;
        Ok(Managed {
            name: l.name.clone(),
            child: Some(child),
            log: l.log.clone(),
        })
    }

    /// Process id (also the process-group id).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// Takes the piped stdout (only for launches without a log file).
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.as_mut().and_then(|c| c.stdout.take())
    }

    /// `Some(status text)` when the process has already exited.
    pub fn exited(&mut self) -> Option<String> {
        let c = self.child.as_mut()?;
        match c.try_wait() {
            Ok(Some(st)) => Some(st.to_string()),
            _ => None,
        }
    }

    /// Last `n` lines of the log file, for error messages.
    pub fn log_tail(&self, n: usize) -> String {
        let Some(p) = &self.log else {
            return String::new();
        };
        let text = std::fs::read_to_string(p).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Sends SIGTERM to the process group, waits up to 5 s, then SIGKILLs it.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals the group we created for this child.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                // Children of the group may outlive the leader; make sure they go too.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = child.wait();
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback TCP port that was free a moment ago (bind to port 0, read, close).
pub fn free_port() -> Result<u16, BenchError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| BenchError::io("bind 127.0.0.1:0", e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| BenchError::io("local_addr", e))
}

/// Resolves a program: a path containing `/` must exist; a bare name is
/// searched in `PATH`. Returns the first candidate found.
pub fn find_program(candidates: &[String]) -> Option<PathBuf> {
    for c in candidates {
        if c.contains('/') {
            let p = Path::new(c);
            if p.is_file() {
                return Some(p.to_path_buf());
            }
        } else if let Some(paths) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&paths) {
                let p = dir.join(c);
                if p.is_file() {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// Polls `url` with GET until it answers with a status below 500, the process
/// exits, or `timeout` passes.
///
/// Errors: [`BenchError::Process`] with the reason and the log tail.
pub async fn wait_healthy(
    proc_: &mut Managed,
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<(), BenchError> {
    let until = Instant::now() + timeout;
    let mut last = String::from("no answer");
    while Instant::now() < until {
        if let Some(status) = proc_.exited() {
            return Err(BenchError::Process {
                name: proc_.name.clone(),
                reason: format!(
                    "exited during start-up ({status}); log:\n{}",
                    proc_.log_tail(20)
                ),
            });
        }
        match crate::client::get(url, headers).await {
            Ok((status, _)) if status < 500 => return Ok(()),
            Ok((status, _)) => last = format!("HTTP {status}"),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(BenchError::Process {
        name: proc_.name.clone(),
        reason: format!(
            "not healthy at {url} after {timeout:?} ({last}); log:\n{}",
            proc_.log_tail(20)
        ),
    })
}

/// Runs `program args` and returns the first line of its stdout or stderr
/// (many tools print versions to stderr) that mentions "version", else the
/// first non-empty line, waiting at most `timeout`.
pub fn version_of(program: &Path, args: &[String], timeout: Duration) -> Option<String> {
    if args.is_empty() {
        return None;
    }
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .ok()?;
    let until = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.to_ascii_lowercase().contains("version"))
        .or(lines.first())
        .map(|l| l.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_kills_the_whole_group() {
        let dir = std::env::temp_dir().join(format!("tgb-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let l = Launch {
            name: "sh".into(),
            program: "sh".into(),
            // The child sleep would survive a plain kill of the shell.
            args: vec!["-c".into(), "sleep 30 & echo started; wait".into()],
            env: vec![],
            cwd: None,
            log: Some(dir.join("sh.log")),
        };
        let mut m = Managed::spawn(&l).unwrap();
        let pid = m.pid();
        std::thread::sleep(Duration::from_millis(200));
        let tree = crate::procstat::process_tree(pid);
        assert!(tree.len() >= 2, "{tree:?}");
        m.stop();
        std::thread::sleep(Duration::from_millis(100));
        for p in tree {
            let alive = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false);
            assert!(!alive, "pid {p} survived");
        }
        assert!(m.log_tail(5).contains("started"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn finds_programs_in_path_and_by_path() {
        assert!(find_program(&["sh".into()]).is_some());
        assert!(find_program(&["/nonexistent/x".into(), "sh".into()]).is_some());
        assert!(find_program(&["/nonexistent/x".into()]).is_none());
    }
}
