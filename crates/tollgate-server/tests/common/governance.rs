//! Harness for the governance end-to-end tests (`e2e_governance.rs`): a gateway process whose
//! temp directory (and so its SQLite file `<config dir>/tollgate.db`) the test can read, a
//! configurable log level, graceful stop, priced configs onto the mock upstream, management-API
//! calls with the master key, bounded polling for write-behind spend, and a fresh Postgres
//! database per test when `TOLLGATE_TEST_DATABASE_URL` is set.
//!
//! Declared from the test file with `#[path = "common/governance.rs"] mod gov;` so it does not
//! touch `common/mod.rs`, which other test files share.
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The master key every governance test runs with (a canary: it must never appear in a row, a header or a log line).
pub const MASTER: &str = "sk-master-CANARY1";
/// The key the gateway presents to the mock; deliberately free of any canary string.
pub const UPSTREAM_KEY: &str = "sk-upstream-mock";
/// Dollar tolerance for cost comparisons.
pub const EPS: f64 = 1e-9;

#[path = "tempdir.rs"]
mod tempdir;
pub use tempdir::TempDir;
#[path = "skip.rs"]
pub mod skip;

/// A running gateway whose config directory (and so its default SQLite file) is visible.
/// Killed on drop.
pub struct GovGateway {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    log: Arc<Mutex<String>>,
    dir: TempDir,
}

impl GovGateway {
    /// Starts the binary with `config` and `RUST_LOG=info`.
    pub fn start(config: &str) -> GovGateway {
        Self::start_with_log(config, "info")
    }

    /// Starts the binary with `config` and `RUST_LOG=<rust_log>`; waits for its
    /// "listening on" line (at most 20 s). `DATABASE_URL` and `LITELLM_MASTER_KEY` are removed
    /// from its environment so the config alone decides the store.
    pub fn start_with_log(config: &str, rust_log: &str) -> GovGateway {
        let dir = TempDir::new("gov");
        let path = dir.0.join("config.yaml");
        std::fs::write(&path, config).expect("write config");
        let mut child = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .arg("--config")
            .arg(&path)
            .args(["--port", "0", "--host", "127.0.0.1"])
            .env("RUST_LOG", rust_log)
            .env_remove("LITELLM_MASTER_KEY")
            .env_remove("DATABASE_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tollgate");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        // Both streams are captured: the secrets test greps everything the process printed.
        if let Some(stdout) = child.stdout.take() {
            let log2 = Arc::clone(&log);
            std::thread::spawn(move || collect_lines(stdout, &log2, None));
        }
        if let Some(stderr) = child.stderr.take() {
            let log2 = Arc::clone(&log);
            std::thread::spawn(move || collect_lines(stderr, &log2, Some(tx)));
        }
        let base = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(b) => b,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "gateway did not start; log:\n{}",
                    log.lock().map(|l| l.clone()).unwrap_or_default()
                );
            }
        };
        GovGateway {
            child,
            base,
            log,
            dir,
        }
    }

    /// `base + path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Everything the process wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The directory holding `config.yaml` (and the default SQLite store).
    pub fn dir(&self) -> &Path {
        &self.dir.0
    }

    /// The default SQLite store: `<config dir>/tollgate.db`.
    pub fn db_path(&self) -> PathBuf {
        self.dir.0.join("tollgate.db")
    }

    /// SIGTERM, then waits (at most 10 s, then SIGKILL) for the process to exit so write-behind
    /// spend is flushed; gives the output readers a moment to drain. Returns whether it exited
    /// by itself.
    pub async fn stop(&mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }
}

impl Drop for GovGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect_lines(
    r: impl std::io::Read,
    log: &Mutex<String>,
    mut tx: Option<std::sync::mpsc::Sender<String>>,
) {
    for line in BufReader::new(r).lines().map_while(Result::ok) {
        // Logged before the start is reported (a test may read the log right after start).
        if let Ok(mut l) = log.lock() {
            l.push_str(&line);
            l.push('\n');
        }
        if let Some(i) = line.find("listening on http://")
            && let Some(t) = tx.take()
        {
            let addr = line[i + "listening on ".len()..]
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            let _ = t.send(addr);
        }
    }
}

/// One `model_list` entry onto the mock: group `group`, upstream `openai/<upstream>`, reached at
/// `<mock>/d/<deployment>/v1` (so the mock records and scripts it as `deployment`), priced per
/// token in USD, with `model_info.id = id`.
pub struct Dep<'a> {
    pub group: &'a str,
    pub deployment: &'a str,
    pub upstream: &'a str,
    pub id: &'a str,
    pub input_cost: f64,
    pub output_cost: f64,
}

/// A deployment named `group` (its deployment, upstream model and id too) on the mock, with a
/// free input and `output_cost` USD per output token: so an admission estimate
/// (`max_tokens` × output price) equals the call's cost.
pub fn flat_dep(group: &'static str, output_cost: f64) -> Dep<'static> {
    Dep {
        group,
        deployment: group,
        upstream: group,
        id: group,
        input_cost: 0.0,
        output_cost,
    }
}

/// A governed config: the deployments, `router_settings: {num_retries: 0, disable_cooldowns:
/// true}` plus `router_extra` (YAML lines indented two spaces), `general_settings.master_key`
/// = [`MASTER`] and, when given, `database_url`.
pub fn config(mock_base: &str, deps: &[Dep], router_extra: &str, db_url: Option<&str>) -> String {
    let mut s = String::from("model_list:\n");
    for d in deps {
        s.push_str(&format!(
            "  - model_name: \"{}\"\n    litellm_params:\n      model: \"openai/{}\"\n      api_base: {mock_base}/d/{}/v1\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: {}\n      input_cost_per_token: {}\n      output_cost_per_token: {}\n",
            d.group, d.upstream, d.deployment, d.id, d.input_cost, d.output_cost
        ));
    }
    s.push_str("router_settings:\n  num_retries: 0\n  disable_cooldowns: true\n");
    s.push_str(router_extra);
    s.push_str(&format!("general_settings:\n  master_key: {MASTER}\n"));
    if let Some(u) = db_url {
        s.push_str(&format!("  database_url: \"{u}\"\n"));
    }
    s
}

/// Hex SHA-256 of a key: what LiteLLM stores in `LiteLLM_VerificationToken.token` and
/// `LiteLLM_SpendLogs.api_key`.
pub fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `|a - b| < EPS`.
pub fn same_dollars(a: f64, b: f64) -> bool {
    (a - b).abs() < EPS
}

/// A response read in full.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    /// JSON body, or `Value::Null` when it is not JSON.
    pub body: Value,
    pub text: String,
}

impl Resp {
    /// Header value as a string (panics with the response when absent).
    pub fn header(&self, name: &str) -> String {
        match self.headers.get(name).and_then(|v| v.to_str().ok()) {
            Some(v) => v.to_owned(),
            None => panic!(
                "header {name} missing; status {} {}",
                self.status, self.text
            ),
        }
    }

    /// Header value parsed as a float (USD or counts).
    pub fn header_f64(&self, name: &str) -> f64 {
        let v = self.header(name);
        v.parse()
            .unwrap_or_else(|_| panic!("header {name}={v:?} is not a number"))
    }

    /// `error.type` of an OpenAI-shaped error body.
    pub fn error_type(&self) -> String {
        self.body["error"]["type"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// The HTTP client (no proxy, 30 s timeout).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Reads a response in full.
pub async fn read(r: reqwest::Response) -> Resp {
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Resp {
        status,
        headers,
        body,
        text,
    }
}

/// The mock upstream (no fixtures needed).
pub async fn mock() -> tollgate_mock::MockHandle {
    tollgate_mock::start(tollgate_mock::MockConfig::default())
        .await
        .expect("mock starts")
}

/// Upstream calls the mock saw for `deployment` (does not drain).
pub fn upstream_calls(
    m: &tollgate_mock::MockHandle,
    deployment: &str,
) -> Vec<tollgate_mock::Observation> {
    m.observations()
        .into_iter()
        .filter(|o| o.deployment.as_deref() == Some(deployment))
        .collect()
}

/// Scripts a sticky default behaviour for a deployment.
pub fn script_default(m: &tollgate_mock::MockHandle, deployment: &str, behavior: Value) {
    m.script(
        serde_json::from_value(json!({"key": deployment, "default": behavior}))
            .expect("valid mock script"),
    );
}

/// `POST path` with `Authorization: Bearer <key>` and a JSON body.
pub async fn post_as(gw: &GovGateway, key: &str, path: &str, body: &Value) -> Resp {
    let r = client()
        .post(gw.url(path))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("POST reaches the gateway");
    read(r).await
}

/// `GET path` with `Authorization: Bearer <key>`.
pub async fn get_as(gw: &GovGateway, key: &str, path: &str) -> Resp {
    let r = client()
        .get(gw.url(path))
        .bearer_auth(key)
        .send()
        .await
        .expect("GET reaches the gateway");
    read(r).await
}

/// `POST /v1/chat/completions` as `key`.
pub async fn chat(gw: &GovGateway, key: &str, body: &Value) -> Resp {
    post_as(gw, key, "/v1/chat/completions", body).await
}

/// A one-message chat body: `{"model", "messages": [{"role":"user","content"}], "max_tokens"}`.
pub fn chat_body(model: &str, content: &str, max_tokens: u64) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens})
}

/// `POST /key/generate` as the master key; asserts 200 and that `token_id` is the key's hash.
/// Returns `(key, token_id)`.
pub async fn generate_key(gw: &GovGateway, body: Value) -> (String, String) {
    let r = post_as(gw, MASTER, "/key/generate", &body).await;
    assert_eq!(r.status, 200, "/key/generate {body}: {}", r.text);
    let key = r.body["key"]
        .as_str()
        .unwrap_or_else(|| panic!("/key/generate returned no key: {}", r.text))
        .to_owned();
    assert!(key.starts_with("sk-"), "virtual keys start with sk-");
    let token_id = r.body["token_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(
        token_id,
        sha256_hex(&key),
        "token_id is the hex SHA-256 of the key"
    );
    (key, token_id)
}

/// `POST /team/new` as the master key; asserts 200 and returns `team_id`.
pub async fn new_team(gw: &GovGateway, body: Value) -> String {
    let r = post_as(gw, MASTER, "/team/new", &body).await;
    assert_eq!(r.status, 200, "/team/new {body}: {}", r.text);
    r.body["team_id"]
        .as_str()
        .unwrap_or_else(|| panic!("/team/new returned no team_id: {}", r.text))
        .to_owned()
}

/// `GET /key/info?key=<key>` as the master key; asserts 200 and returns `info`.
pub async fn key_info(gw: &GovGateway, key: &str) -> Value {
    let r = get_as(gw, MASTER, &format!("/key/info?key={key}")).await;
    assert_eq!(r.status, 200, "/key/info: {}", r.text);
    r.body["info"].clone()
}

/// `info.spend` of a key (0 when null).
pub async fn key_spend(gw: &GovGateway, key: &str) -> f64 {
    key_info(gw, key).await["spend"].as_f64().unwrap_or(0.0)
}

/// `GET /spend/logs?api_key=<hash>` as the master key: the rows (a JSON array).
pub async fn spend_logs(gw: &GovGateway, hash: &str) -> Vec<Value> {
    let r = get_as(gw, MASTER, &format!("/spend/logs?api_key={hash}")).await;
    assert_eq!(r.status, 200, "/spend/logs: {}", r.text);
    match r.body {
        Value::Array(rows) => rows,
        _ => panic!("/spend/logs is not a JSON array: {}", r.text),
    }
}

/// Sum of the rows' `spend`.
pub fn rows_spend(rows: &[Value]) -> f64 {
    rows.iter()
        .map(|r| r["spend"].as_f64().unwrap_or(0.0))
        .sum()
}

/// Spend-log rows of a key, polled (≤ ~5 s) until there are `n` of them.
pub async fn spend_logs_n(gw: &GovGateway, hash: &str, n: usize) -> Vec<Value> {
    poll(|| spend_logs(gw, hash), |rows| rows.len() >= n).await
}

/// A key's spend, polled (≤ ~5 s) until it equals `want` (write-behind); returns the last value.
pub async fn key_spend_eventually(gw: &GovGateway, key: &str, want: f64) -> f64 {
    poll(|| key_spend(gw, key), |s| same_dollars(*s, want)).await
}

/// Calls `f` until `done` holds, at most 50 times 100 ms apart (~5 s); returns the last value.
/// Callers assert on the value, never on the time taken.
pub async fn poll<T, F, Fut>(mut f: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut v = f().await;
    for _ in 0..50 {
        if done(&v) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        v = f().await;
    }
    v
}

/// Occurrences of `needle` in every file of `dir` except `config.yaml` (which holds the master
/// key by design): the SQLite store and its `-wal` / `-shm` / journal files. Returns
/// `(file name, hits)` for each file with a hit.
pub fn grep_dir(dir: &Path, needle: &[u8]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "config.yaml" {
            continue;
        }
        let Ok(bytes) = std::fs::read(e.path()) else {
            continue;
        };
        let hits = count(&bytes, needle);
        if hits > 0 {
            out.push((name, hits));
        }
    }
    out
}

/// Non-overlapping occurrences of `needle` in `hay`.
pub fn count(hay: &[u8], needle: &[u8]) -> usize {
    if needle.is_empty() || hay.len() < needle.len() {
        return 0;
    }
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// A fresh Postgres database for one test, created on the server of
/// `TOLLGATE_TEST_DATABASE_URL` (through its `postgres` database) and dropped when the value is dropped.
pub struct PgDb {
    /// URL of the new database, for `general_settings.database_url`.
    pub url: String,
    name: String,
    admin: sqlx::postgres::PgConnectOptions,
}

impl PgDb {
    /// `None` (after reporting the skip: [`skip::skipped`]) when `TOLLGATE_TEST_DATABASE_URL`
    /// is not set.
    pub async fn create(test: &str) -> Option<PgDb> {
        let base = skip::postgres_url(test)?;
        let opts: sqlx::postgres::PgConnectOptions =
            base.parse().expect("TOLLGATE_TEST_DATABASE_URL parses");
        let admin = opts.database("postgres");
        let name = format!("tg_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::ConnectOptions::connect(&admin)
            .await
            .expect("connect to the postgres database");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut conn)
            .await
            .expect("CREATE DATABASE");
        let _ = sqlx::Connection::close(conn).await;
        Some(PgDb {
            url: with_database(&base, &name),
            name,
            admin,
        })
    }

    /// A connection to the test database.
    pub async fn connect(&self) -> sqlx::PgConnection {
        let opts = self.admin.clone().database(&self.name);
        sqlx::ConnectOptions::connect(&opts)
            .await
            .expect("connect to the test database")
    }

    /// Names of the tables in `public`.
    pub async fn tables(&self) -> Vec<String> {
        let mut c = self.connect().await;
        let t: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
        )
        .fetch_all(&mut c)
        .await
        .expect("list tables");
        let _ = sqlx::Connection::close(c).await;
        t
    }

    /// `(token, spend)` of every `"LiteLLM_VerificationToken"` row.
    pub async fn token_rows(&self) -> Vec<(String, f64)> {
        let mut c = self.connect().await;
        let rows: Vec<(String, Option<f64>)> = sqlx::query_as(
            "SELECT token::text, spend::float8 FROM \"LiteLLM_VerificationToken\" ORDER BY 1",
        )
        .fetch_all(&mut c)
        .await
        .expect("read LiteLLM_VerificationToken");
        let _ = sqlx::Connection::close(c).await;
        rows.into_iter()
            .map(|(t, s)| (t, s.unwrap_or(0.0)))
            .collect()
    }

    /// `(api_key, spend)` of every `"LiteLLM_SpendLogs"` row.
    pub async fn spend_rows(&self) -> Vec<(String, f64)> {
        let mut c = self.connect().await;
        let rows: Vec<(Option<String>, Option<f64>)> = sqlx::query_as(
            "SELECT api_key::text, spend::float8 FROM \"LiteLLM_SpendLogs\" ORDER BY 1",
        )
        .fetch_all(&mut c)
        .await
        .expect("read LiteLLM_SpendLogs");
        let _ = sqlx::Connection::close(c).await;
        rows.into_iter()
            .map(|(k, s)| (k.unwrap_or_default(), s.unwrap_or(0.0)))
            .collect()
    }

    /// Rows of every `public` table whose text form contains `needle`: `(table, count)` for
    /// each table with a hit.
    pub async fn grep_tables(&self, needle: &str) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        let tables = self.tables().await;
        let mut c = self.connect().await;
        for t in tables {
            let q = format!(
                "SELECT count(*) FROM \"{}\" AS t WHERE t::text LIKE $1",
                t.replace('"', "\"\"")
            );
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(q))
                .bind(format!("%{needle}%"))
                .fetch_one(&mut c)
                .await
                .unwrap_or_else(|e| panic!("scan {t}: {e}"));
            if n > 0 {
                out.push((t, n));
            }
        }
        let _ = sqlx::Connection::close(c).await;
        out
    }

    /// `spend` of a `"LiteLLM_TeamTable"` row.
    pub async fn team_spend(&self, team_id: &str) -> Option<f64> {
        let mut c = self.connect().await;
        let s: Option<Option<f64>> = sqlx::query_scalar(
            "SELECT spend::float8 FROM \"LiteLLM_TeamTable\" WHERE team_id::text = $1",
        )
        .bind(team_id)
        .fetch_optional(&mut c)
        .await
        .expect("read LiteLLM_TeamTable");
        let _ = sqlx::Connection::close(c).await;
        s.flatten()
    }
}

impl Drop for PgDb {
    /// Drops the database (`WITH (FORCE)`: the gateway may still hold connections), also when
    /// the test panicked. Runs on its own thread and runtime because `Drop` cannot await.
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        let t = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok(mut conn) = sqlx::ConnectOptions::connect(&admin).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                    )))
                    .execute(&mut conn)
                    .await;
                    let _ = sqlx::Connection::close(conn).await;
                }
            });
        });
        let _ = t.join();
    }
}

/// `url` with its database (the path after the authority) replaced by `db`, query kept.
pub fn with_database(url: &str, db: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let after_scheme = head.find("://").map_or(0, |i| i + 3);
    let root = match head[after_scheme..].find('/') {
        Some(i) => &head[..after_scheme + i],
        None => head,
    };
    match query {
        Some(q) => format!("{root}/{db}?{q}"),
        None => format!("{root}/{db}"),
    }
}
