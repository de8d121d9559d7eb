//! Redis for the fleet end-to-end tests: the shared server of `TOLLGATE_TEST_REDIS_URL`
//! (each test under its own key prefix, deleted at the end), a private `redis-server` started
//! on a free loopback port and stopped by PID, and a `MONITOR` recorder of every command a
//! server receives, with the server's timestamps.
//!
//! Declared with `#[path = "common/redis.rs"] mod redis_support;` beside
//! `#[path = "common/governance.rs"] mod gov;` (whose skip report it uses).
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::gov::skip;

/// `TOLLGATE_TEST_REDIS_URL`, or `None` after reporting the skip ([`skip::skipped`]).
pub fn redis_url(what: &str) -> Option<String> {
    let url = std::env::var("TOLLGATE_TEST_REDIS_URL").ok();
    if url.is_none() {
        skip::skipped(what, "TOLLGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379");
    }
    url
}

/// A key prefix no other test uses: `tgtest-<what>-<uuid>`.
pub fn unique_prefix(what: &str) -> String {
    format!("tgtest-{what}-{}", uuid::Uuid::new_v4().simple())
}

/// Deletes every key under `{prefix}:` (what a gateway with that prefix wrote).
pub async fn delete_prefix(url: &str, prefix: &str) {
    let Ok(client) = redis::Client::open(url) else {
        return;
    };
    let Ok(mut con) = client.get_multiplexed_async_connection().await else {
        return;
    };
    let pattern = format!("{{{prefix}}}:*");
    let mut cursor: u64 = 0;
    loop {
        let Ok((next, keys)): Result<(u64, Vec<String>), _> = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
        else {
            return;
        };
        if !keys.is_empty() {
            let _: Result<u64, _> = redis::cmd("DEL").arg(&keys).query_async(&mut con).await;
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}

/// Keys currently under `{prefix}:`.
pub async fn count_prefix(url: &str, prefix: &str) -> usize {
    let client = redis::Client::open(url).expect("redis url");
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect to redis");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{{{prefix}}}:*"))
        .query_async(&mut con)
        .await
        .expect("KEYS");
    keys.len()
}

/// A `redis-server` this test started; killed (by its PID) on drop.
pub struct PrivateRedis {
    child: Child,
    /// `redis://127.0.0.1:<port>`.
    pub url: String,
    /// The port.
    pub port: u16,
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PrivateRedis {
    /// SIGKILL: the server is gone at once, with everything it held.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills it (if running) and starts it again on the same port, empty (a restart without
    /// persistence), once it answers `PING`.
    pub async fn restart(&mut self) {
        self.kill();
        self.child = spawn(self.port).expect("redis-server starts again");
        wait_ping(&self.url).await;
    }
}

fn spawn(port: u16) -> std::io::Result<Child> {
    Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// Starts `redis-server` on a free loopback port (no persistence) and waits for its `PING`;
/// `None` after reporting the skip when there is no binary.
pub async fn private_redis(what: &str) -> Option<PrivateRedis> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let child = match spawn(port) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED {}: no redis-server to start ({e})",
                skip::test_name(what)
            );
            return None;
        }
    };
    let server = PrivateRedis {
        child,
        url: format!("redis://127.0.0.1:{port}"),
        port,
    };
    wait_ping(&server.url).await;
    Some(server)
}

/// A primary `redis-server` and one Sentinel watching it as service `tgtest`, each on a free
/// loopback port and killed (by its PID) on drop; the Sentinel's config lives in a directory
/// of its own (it rewrites the file), removed on drop.
pub struct PrivateSentinel {
    /// The primary.
    pub primary: PrivateRedis,
    sentinel: Child,
    /// The Sentinel's port.
    pub port: u16,
    dir: std::path::PathBuf,
}

impl Drop for PrivateSentinel {
    fn drop(&mut self) {
        let _ = self.sentinel.kill();
        let _ = self.sentinel.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl PrivateSentinel {
    /// LiteLLM's `REDIS_SENTINEL_NODES` for it: `[["127.0.0.1", <port>]]`.
    pub fn nodes_json(&self) -> String {
        format!("[[\"127.0.0.1\", {}]]", self.port)
    }
}

/// Starts a primary and a Sentinel monitoring it (see [`PrivateSentinel`]), once the Sentinel
/// names the primary; `None` after reporting the skip when there is no `redis-server`.
pub async fn private_sentinel(what: &str) -> Option<PrivateSentinel> {
    let primary = private_redis(what).await?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let dir = std::env::temp_dir().join(format!(
        "tollgate-e2e-sentinel-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("sentinel dir");
    let conf = dir.join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor tgtest 127.0.0.1 {} 1\n",
            dir.display(),
            primary.port
        ),
    )
    .expect("sentinel.conf");
    let sentinel = Command::new("redis-server")
        .arg(&conf)
        .arg("--sentinel")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server --sentinel starts");
    let s = PrivateSentinel {
        primary,
        sentinel,
        port,
        dir,
    };
    let url = format!("redis://127.0.0.1:{port}");
    for _ in 0..100 {
        if let Ok(c) = redis::Client::open(url.as_str())
            && let Ok(mut con) = c.get_multiplexed_async_connection().await
            && redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg("tgtest")
                .query_async::<Vec<String>>(&mut con)
                .await
                .is_ok_and(|a| a.len() == 2)
        {
            return Some(s);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the Sentinel on port {port} does not name its primary");
}

/// One command as `MONITOR` printed it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The server's time of the command, ms since the Unix epoch.
    pub at_ms: f64,
    /// Who sent it: the client's `ip:port`, or `lua` for a command a function runs inside
    /// Redis (part of its caller's one round trip, not a round trip of its own).
    pub client: String,
    /// The command name, upper case (`FCALL`, `HMGET`...).
    pub command: String,
    /// Its arguments, unquoted.
    pub args: Vec<String>,
}

impl Seen {
    /// True for a command a client sent (one round trip), false for one a function ran.
    pub fn is_from_client(&self) -> bool {
        self.client != "lua"
    }
}

/// Everything a server received since [`Monitor::start`], recorded by a thread reading a
/// `MONITOR` connection (ends when the server goes away).
pub struct Monitor {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Monitor {
    /// Opens a `MONITOR` connection to `127.0.0.1:<port>` and records from now on.
    pub fn start(port: u16) -> Monitor {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect MONITOR");
        s.write_all(b"MONITOR\r\n").expect("send MONITOR");
        let mut r = BufReader::new(s);
        let mut ok = String::new();
        r.read_line(&mut ok).expect("MONITOR reply");
        assert!(ok.starts_with("+OK"), "MONITOR answered {ok:?}");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let out = Arc::clone(&seen);
        std::thread::spawn(move || {
            for line in r.lines().map_while(Result::ok) {
                if let Some(s) = parse(&line)
                    && let Ok(mut v) = out.lock()
                {
                    v.push(s);
                }
            }
        });
        Monitor { seen }
    }

    /// What was recorded so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// `+1701234567.123456 [0 127.0.0.1:5555] "FCALL" "f" "3" ...` → [`Seen`].
fn parse(line: &str) -> Option<Seen> {
    let line = line.strip_prefix('+')?;
    let (ts, rest) = line.split_once(' ')?;
    let at_ms = ts.parse::<f64>().ok()? * 1000.0;
    let close = rest.find(']')?;
    let client = rest
        .get(1..close)?
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let rest = &rest[close + 1..];
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut inside = false;
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match (inside, c) {
            (false, '"') => inside = true,
            (true, '"') => {
                words.push(std::mem::take(&mut cur));
                inside = false;
            }
            (true, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (true, c) => cur.push(c),
            _ => {}
        }
    }
    let mut it = words.into_iter();
    Some(Seen {
        at_ms,
        client,
        command: it.next()?.to_ascii_uppercase(),
        args: it.collect(),
    })
}

/// A three-primary Redis Cluster this test started (no replicas), each node stopped by PID on
/// drop, its files in a temporary directory.
pub struct PrivateCluster {
    /// The primaries.
    pub nodes: Vec<PrivateRedis>,
    _dir: crate::gov::TempDir,
}

impl PrivateCluster {
    /// `[{"host": "127.0.0.1", "port": p}, ...]`: LiteLLM's `REDIS_CLUSTER_NODES`.
    pub fn nodes_json(&self) -> String {
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .map(|n| serde_json::json!({"host": "127.0.0.1", "port": n.port}))
            .collect();
        serde_json::Value::from(nodes).to_string()
    }
}

/// A loopback port free for a cluster node: the port and its bus port (+10 000).
fn free_cluster_port(taken: &[u16]) -> u16 {
    loop {
        let p = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let bus_free = p
            .checked_add(10_000)
            .is_some_and(|b| std::net::TcpListener::bind(("127.0.0.1", b)).is_ok());
        if bus_free && !taken.contains(&p) {
            return p;
        }
    }
}

/// Starts three `redis-server --cluster-enabled yes` on free loopback ports, joins them with
/// `redis-cli --cluster create` (all 16 384 slots over the three primaries) and waits (at
/// most 10 s) for `cluster_state:ok` on each. `None` after reporting the skip when there is no
/// `redis-server`.
pub async fn private_cluster(what: &str) -> Option<PrivateCluster> {
    let dir = crate::gov::TempDir::new("redis-cluster");
    let mut nodes = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..3 {
        let port = free_cluster_port(&ports);
        ports.push(port);
        let conf = dir.0.join(format!("nodes-{port}.conf"));
        let child = match Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--cluster-enabled",
                "yes",
            ])
            .arg("--cluster-config-file")
            .arg(&conf)
            .arg("--dir")
            .arg(&dir.0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "SKIPPED {}: no redis-server to start ({e})",
                    skip::test_name(what)
                );
                return None;
            }
        };
        nodes.push(PrivateRedis {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            port,
        });
    }
    for n in &nodes {
        wait_ping(&n.url).await;
    }
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let created = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run redis-cli --cluster create");
    assert!(created.success(), "redis-cli --cluster create failed");
    for _ in 0..200 {
        let mut ok = true;
        for n in &nodes {
            ok &= cluster_ok(&n.url).await;
        }
        if ok {
            return Some(PrivateCluster { nodes, _dir: dir });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the cluster on {addrs:?} did not reach cluster_state:ok");
}

async fn wait_ping(url: &str) {
    for _ in 0..100 {
        if let Ok(c) = redis::Client::open(url)
            && let Ok(mut con) = c.get_multiplexed_async_connection().await
            && redis::cmd("PING")
                .query_async::<String>(&mut con)
                .await
                .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("redis-server at {url} did not answer PING");
}

async fn cluster_ok(url: &str) -> bool {
    let Ok(c) = redis::Client::open(url) else {
        return false;
    };
    let Ok(mut con) = c.get_multiplexed_async_connection().await else {
        return false;
    };
    redis::cmd("CLUSTER")
        .arg("INFO")
        .query_async::<String>(&mut con)
        .await
        .is_ok_and(|info| info.contains("cluster_state:ok"))
}
