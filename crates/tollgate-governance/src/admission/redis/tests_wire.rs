//! What goes on the wire, seen by the server: a private `redis-server` started by the test on a
//! free loopback port (run when `TOLLGATE_TEST_REDIS_URL` is set, as the other Redis tests;
//! skipped, saying so, without a `redis-server` binary). `MONITOR` lists every command a client
//! sent (commands run inside a function are marked `lua` and not counted) and
//! `INFO commandstats` counts the `FCALL`s. Private, because `FUNCTION FLUSH` would pull the
//! library from under the other tests running on the shared server, and their commands would
//! show in `MONITOR`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::tests::{open, redis_url, req, test_options};
use crate::admission::{Actual, AsyncCounterStore, Limits, ScopeKey, ScopeKind, ScopeRequest};

/// A `redis-server` child on a loopback port, killed when dropped.
pub(crate) struct PrivateRedis {
    child: Child,
    /// `redis://127.0.0.1:<port>`
    pub(crate) url: String,
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reports a test skipped for want of a `redis-server` binary.
pub(crate) fn skip_without_binary(what: &str, e: &std::io::Error) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {}: no redis-server to start ({e})",
        crate::test_support::test_name(what)
    );
}

/// A `redis-server` on `port` with `extra` arguments, once it answers `PING`; `Err` when there
/// is no binary to start.
pub(crate) async fn start_redis(port: u16, extra: &[&str]) -> Result<PrivateRedis, std::io::Error> {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(extra);
    spawn_redis(&mut cmd, port).await
}

/// Spawns `cmd` (a `redis-server` that will listen on `port`) and waits for its `PING`.
pub(crate) async fn spawn_redis(
    cmd: &mut Command,
    port: u16,
) -> Result<PrivateRedis, std::io::Error> {
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let server = PrivateRedis {
        child,
        url: format!("redis://127.0.0.1:{port}"),
    };
    for _ in 0..100 {
        if let Ok(c) = redis::Client::open(server.url.as_str())
            && let Ok(mut con) = c.get_connection()
            && redis::cmd("PING").query::<String>(&mut con).is_ok()
        {
            return Ok(server);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server on port {port} did not answer PING");
}

/// A free loopback port.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

pub(crate) async fn private_redis() -> Option<PrivateRedis> {
    match start_redis(free_port(), &[]).await {
        Ok(s) => Some(s),
        Err(e) => {
            skip_without_binary("private redis", &e);
            None
        }
    }
}

/// `calls` of every command in `INFO commandstats` (`fcall`, `function|load`, `hmget`...).
pub(crate) fn commandstats(con: &mut redis::Connection) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split(',').find_map(|kv| kv.strip_prefix("calls="))?;
            Some((name.to_string(), calls.parse().ok()?))
        })
        .collect()
}

/// `FCALL`s counted by the server between two snapshots (those a function makes itself are
/// counted under their own names).
pub(crate) fn fcalls(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> u64 {
    after.get("fcall").copied().unwrap_or(0) - before.get("fcall").copied().unwrap_or(0)
}

/// A `MONITOR` connection: what clients sent, in order.
pub(crate) struct Monitor {
    lines: BufReader<TcpStream>,
}

impl Monitor {
    pub(crate) fn start(port: u16) -> Self {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"MONITOR\r\n").unwrap();
        let mut lines = BufReader::new(s);
        let mut ok = String::new();
        lines.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim(), "+OK");
        Self { lines }
    }

    /// The names of the commands clients sent since the last call (not those run by a
    /// function, and not the admin connection's `INFO`), up to a marker `admin` echoes.
    pub(crate) fn client_commands(&mut self, admin: &mut redis::Connection) -> Vec<String> {
        let marker = format!("marker-{:016x}", rand::random::<u64>());
        let _: String = redis::cmd("ECHO").arg(&marker).query(admin).unwrap();
        let mut out = Vec::new();
        loop {
            let mut line = String::new();
            self.lines.read_line(&mut line).unwrap();
            if line.contains(&marker) {
                return out;
            }
            // +1733100000.123456 [0 127.0.0.1:41234] "FCALL" "tollgate_v2_reserve" ...
            let Some((source, command)) = line.split_once("] ") else {
                continue;
            };
            let name = command.split('"').nth(1).unwrap_or_default().to_uppercase();
            if !source.ends_with(" lua") && name != "INFO" {
                out.push(name);
            }
        }
    }
}

#[tokio::test]
async fn one_reservation_is_one_command_on_the_wire_and_a_flushed_library_comes_back() {
    if redis_url("round_trips").is_none() {
        return;
    }
    let Some(server) = private_redis().await else {
        return;
    };
    let (store, _c) = open(&server.url, test_options()).await;
    let mut admin = redis::Client::open(server.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    // a request with key, team and end-user budgets, key and team RPM/TPM, a global limit
    let limits = Limits {
        max_budget: Some(10.0),
        rpm_limit: Some(100),
        tpm_limit: Some(100_000),
        ..Limits::default()
    };
    let scopes = [
        ScopeRequest::new(ScopeKey::key("h"), limits.clone()),
        ScopeRequest::new(ScopeKey::new(ScopeKind::Team, "t"), limits),
        ScopeRequest::new(
            ScopeKey::new(ScopeKind::EndUser, "e"),
            Limits {
                max_budget: Some(1.0),
                ..Limits::default()
            },
        ),
        ScopeRequest::new(
            ScopeKey::global(),
            Limits {
                max_parallel_requests: Some(100),
                ..Limits::default()
            },
        ),
    ];
    let port: u16 = server.url.rsplit(':').next().unwrap().parse().unwrap();
    let mut monitor = Monitor::start(port);
    monitor.client_commands(&mut admin);
    let before = commandstats(&mut admin);
    let (ticket, status) = store
        .reserve(&req("a", &scopes, 0.01))
        .await
        .unwrap()
        .unwrap();
    let after = commandstats(&mut admin);
    assert_eq!(status.len(), 2);
    assert_eq!(
        monitor.client_commands(&mut admin),
        ["FCALL"],
        "reserve: one command"
    );
    assert_eq!(fcalls(&before, &after), 1);

    let actual = Actual {
        cost_units: 1,
        tokens: 1,
    };
    store.settle(&ticket, actual).await.unwrap().unwrap();
    assert_eq!(
        monitor.client_commands(&mut admin),
        ["FCALL"],
        "settle: one command"
    );
    store.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!(
        monitor.client_commands(&mut admin),
        ["HMGET"],
        "spend: one command"
    );

    // the library is gone: the next call loads it again and succeeds
    let _: String = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query(&mut admin)
        .unwrap();
    monitor.client_commands(&mut admin);
    let (ticket, _) = store
        .reserve(&req("b", &scopes, 0.01))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        monitor.client_commands(&mut admin),
        ["FCALL", "FUNCTION", "FCALL"],
        "the refused call, the load and the retry"
    );
    assert!(store.release(&ticket).await.unwrap());
    let libs: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg(super::LIBRARY_NAME)
        .query(&mut admin)
        .unwrap();
    assert!(
        format!("{libs:?}").contains(super::LIBRARY_NAME),
        "{libs:?}"
    );
}

/// A Redis that stops answering costs a caller the response timeout, not its patience; the
/// call that timed out may still take effect once Redis resumes (so a reservation is never
/// assumed absent: its lease releases it).
#[tokio::test]
async fn a_stalled_redis_fails_the_call_within_the_response_timeout() {
    if redis_url("stalled_redis").is_none() {
        return;
    }
    let Some(server) = private_redis().await else {
        return;
    };
    let opts = super::RedisStoreOptions {
        response_timeout: Duration::from_millis(200),
        ..test_options()
    };
    let (store, _c) = open(&server.url, opts).await;
    let scopes = [ScopeRequest::new(ScopeKey::key("h"), Limits::default())];
    let mut admin = redis::Client::open(server.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: String = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1000)
        .arg("ALL")
        .query(&mut admin)
        .unwrap();
    let started = std::time::Instant::now();
    let err = store.reserve(&req("a", &scopes, 0.1)).await.unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(err, crate::admission::CounterStoreError::Unavailable(_)),
        "{err:?}"
    );
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_millis(900),
        "failed after {waited:?}"
    );
    // once Redis resumes, the store works again, and the timed-out reservation did happen
    tokio::time::sleep(Duration::from_millis(1100).saturating_sub(started.elapsed())).await;
    let spend = store.spend(&scopes[0].key).await.unwrap().unwrap();
    assert_eq!(spend.in_flight, 1);
    let (ticket, _) = store
        .reserve(&req("b", &scopes, 0.1))
        .await
        .unwrap()
        .unwrap();
    assert!(store.release(&ticket).await.unwrap());
}
