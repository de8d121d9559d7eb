//! A PgBouncer the test starts itself: transaction pooling (`pool_mode = transaction`, as
//! LiteLLM's high-throughput deployments run it) on a free loopback port, in front of the
//! Postgres server of `TOLLGATE_TEST_DATABASE_URL` (every database name passed through), trust
//! authentication towards its clients. Stopped by its PID on drop.
//!
//! Declared with `#[path = "common/pgbouncer.rs"] mod pgb;` by the test files that use it,
//! beside `#[path = "common/governance.rs"] mod gov;` (whose temp directories it uses).
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::gov::TempDir;

/// A running `pgbouncer` process.
pub struct PgBouncer {
    child: Child,
    /// The loopback port it listens on.
    pub port: u16,
    _dir: TempDir,
}

/// True when a `pgbouncer` binary is on `PATH` (Debian: `apt-get install -y pgbouncer`).
pub fn installed() -> bool {
    Command::new("pgbouncer")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Reports the skip of `test` when PgBouncer is not installed; true when it is.
pub fn installed_or_skip(test: &str) -> bool {
    if installed() {
        return true;
    }
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {test}: pgbouncer is not installed (apt-get install -y pgbouncer; .ci/run installs it)"
    );
    false
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("local addr").port()
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl PgBouncer {
    /// Starts PgBouncer in front of `server` (host, port, user and password of the Postgres
    /// server) with at most `pool_size` server connections per database and user, and waits
    /// (at most 10 s) until it accepts connections.
    pub fn start(server: &sqlx::postgres::PgConnectOptions, pool_size: u32) -> PgBouncer {
        let dir = TempDir::new("pgbouncer");
        let port = free_port();
        let user = server.get_username();
        let ini = format!(
            "[databases]\n* = host={} port={}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\nauth_type = trust\nauth_file = {}\npool_mode = transaction\ndefault_pool_size = {pool_size}\nmax_client_conn = 200\nserver_reset_query =\n",
            server.get_host(),
            server.get_port(),
            dir.0.join("users.txt").display(),
        );
        std::fs::write(dir.0.join("pgbouncer.ini"), ini).expect("write pgbouncer.ini");
        std::fs::write(dir.0.join("users.txt"), format!("\"{user}\" \"\"\n"))
            .expect("write users.txt");
        // PgBouncer refuses to run as root: switch to `nobody` (the files above are
        // world-readable; it logs to stderr and keeps no PID file, the test holds its PID).
        let mut cmd = Command::new("pgbouncer");
        if running_as_root() {
            cmd.args(["-u", "nobody"]);
            let _ = Command::new("chmod").arg("755").arg(&dir.0).status();
        }
        let mut child = cmd
            .arg(dir.0.join("pgbouncer.ini"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pgbouncer");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("pgbouncer exited at start: {status}");
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("pgbouncer did not listen on 127.0.0.1:{port} within 10 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        PgBouncer {
            child,
            port,
            _dir: dir,
        }
    }

    /// `postgres://<user>@127.0.0.1:<port>/<database>?pgbouncer=true`: the gateway's URL
    /// through this PgBouncer.
    pub fn url(&self, user: &str, database: &str) -> String {
        format!(
            "postgres://{user}@127.0.0.1:{}/{database}?pgbouncer=true",
            self.port
        )
    }

    /// Stops PgBouncer (SIGTERM to its PID, then SIGKILL after 5 s) and waits for it.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}
