//! What a newcomer trips on, through the real `tollgate` binary: configs
//! naming providers Tollgate does not serve (all refused at once, each with file and line),
//! `check-config` naming the store and trying it (`--connect`), startup errors without a
//! database server's source line, the routing settings in effect with their source, and a
//! deployment's own `mock_response` naming a LiteLLM error (fails the attempt as that upstream
//! error would: retries, cooldowns, fallbacks, nothing billed).
//!
//! Postgres cases run when `TOLLGATE_TEST_DATABASE_URL` is set and report their skip
//! otherwise (`common/skip.rs`).
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use gov::*;
use serde_json::{Value, json};

/// `tollgate` with nothing of this machine's environment deciding the config or the store.
fn tollgate() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    for var in [
        "LITELLM_MASTER_KEY",
        "CONFIG_FILE_PATH",
        "DATABASE_URL",
        "TOLLGATE_DB_PATH",
    ] {
        c.env_remove(var);
    }
    c
}

/// `config` written to `<dir>/config.yaml`.
fn write_config(dir: &TempDir, config: &str) -> PathBuf {
    let p = dir.0.join("config.yaml");
    std::fs::write(&p, config).expect("write config");
    p
}

fn check_config(path: &Path, extra: &[&str]) -> Output {
    tollgate()
        .arg("check-config")
        .args(extra)
        .arg(path)
        .output()
        .expect("run tollgate check-config")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Starts the gateway on `path` and waits (at most 30 s) for it to exit by itself: the exit
/// code and everything it wrote to stderr. Killed (and the test failed) if it starts serving.
fn serve_until_exit(path: &Path) -> (Option<i32>, String) {
    let mut child = tollgate()
        .arg("--config")
        .arg(path)
        .args(["--port", "0", "--host", "127.0.0.1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tollgate");
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let out = child.wait_with_output().expect("collect stderr");
            return (status.code(), text(&out.stderr));
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect stderr");
            panic!("the gateway kept running; stderr:\n{}", text(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

const THREE_UNSERVED: &str = "\
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: azure/gpt-4o-eu
      api_base: https://example-eu.openai.azure.com
      api_key: azure-key-CANARY5
  - model_name: claude
    litellm_params:
      model: bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0
  - model_name: served
    litellm_params:
      model: openai/gpt-4o-mini
  - model_name: gemini
    litellm_params:
      model: vertex_ai/gemini-1.5-pro
";

/// Every deployment on a provider Tollgate does not serve is named at once, with its file and
/// line, by `check-config` and by the server; the served one is not.
#[test]
fn three_unserved_deployments_are_refused_together_with_file_and_line() {
    let dir = TempDir::new("newcomer");
    let path = write_config(&dir, THREE_UNSERVED);
    let file = path.display().to_string();
    let expected = [
        format!(
            "  {file}:4:14: model_list[0].litellm_params.model: provider 'azure' (model 'azure/gpt-4o-eu', model group 'gpt-4o') is not served by Tollgate yet"
        ),
        format!(
            "  {file}:9:14: model_list[1].litellm_params.model: provider 'bedrock' (model 'bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0', model group 'claude') is not served by Tollgate yet"
        ),
        format!(
            "  {file}:15:14: model_list[3].litellm_params.model: provider 'vertex_ai' (model 'vertex_ai/gemini-1.5-pro', model group 'gemini') is not served by Tollgate yet"
        ),
    ];
    let out = check_config(&path, &[]);
    let (code, stderr) = (out.status.code(), text(&out.stderr));
    let (served_code, served_stderr) = serve_until_exit(&path);
    for (code, stderr) in [(code, stderr), (served_code, served_stderr)] {
        assert_eq!(code, Some(2), "{stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(
            lines.len(),
            4,
            "a heading and one line per deployment:\n{stderr}"
        );
        assert!(
            lines[0].starts_with(
                "error: invalid config: 3 deployments name a provider Tollgate does not serve yet (served: openai, text-completion-openai, anthropic, "
            ),
            "{stderr}"
        );
        assert_eq!(lines[1..], expected, "{stderr}");
        assert!(!stderr.contains("CANARY5"), "no secret printed: {stderr}");
    }
    assert!(out.stdout.is_empty(), "no config OK: {}", text(&out.stdout));
}

/// `check-config` names the store the gateway would use: none without a master key, the
/// embedded SQLite file beside the config, or Postgres with the password masked.
#[test]
fn check_config_names_the_store() {
    let dir = TempDir::new("newcomer");
    let deps = "model_list:\n  - model_name: m\n    litellm_params:\n      model: mock/echo\n";
    let cases = [
        (
            String::new(),
            "Store: none (no master key: governance is off, nothing is metered or stored)\n"
                .to_owned(),
        ),
        (
            "general_settings:\n  master_key: sk-1234\n".to_owned(),
            format!(
                "Store: embedded SQLite file {} (default: beside the config file)\n",
                dir.0.join("tollgate.db").display()
            ),
        ),
        (
            "general_settings:\n  master_key: sk-1234\n  database_url: postgres://tg:pw-CANARY7@db.internal:5432/gateway?sslmode=require\n".to_owned(),
            "Store: Postgres postgres://tg:****@db.internal:5432/gateway?sslmode=require (general_settings.database_url)\n".to_owned(),
        ),
    ];
    for (settings, want) in cases {
        let path = write_config(&dir, &format!("{deps}{settings}"));
        let out = check_config(&path, &[]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        assert!(stdout.contains(&want), "want {want:?} in:\n{stdout}");
        assert!(!stdout.contains("CANARY7"), "password printed: {stdout}");
        assert!(
            !dir.0.join("tollgate.db").exists(),
            "check-config creates no store"
        );
    }
}

/// A `database_url` naming a database that does not exist: `check-config` alone cannot know
/// (and says which store it would use), `--connect` finds out and exits 1 with the database's
/// message, and the server started on it exits with the same message; neither prints the
/// Postgres source line sqlx's `Display` appends (`... at line 948`).
#[test]
fn a_missing_postgres_database_is_found_by_connect_and_refused_at_start() {
    let Some(base) = skip::postgres_url("e2e_newcomer a_missing_postgres_database") else {
        return;
    };
    let missing = format!("tg_missing_{}", uuid::Uuid::new_v4().simple());
    let url = with_database(&base, &missing);
    let dir = TempDir::new("newcomer");
    let config = |url: &str| {
        format!(
            "model_list:\n  - model_name: m\n    litellm_params:\n      model: mock/echo\ngeneral_settings:\n  master_key: sk-1234\n  database_url: \"{url}\"\n"
        )
    };
    let path = write_config(&dir, &config(&url));
    let masked = tollgate_config::redact::redact_url_userinfo(&url);
    let out = check_config(&path, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "Store: Postgres {masked} (general_settings.database_url)\n"
        )),
        "{stdout}"
    );

    let out = check_config(&path, &["--connect"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: store connection failed: Postgres {masked}: database error: database \"{missing}\" does not exist (SQLSTATE 3D000); create it (CREATE DATABASE, or createdb), or point general_settings.database_url (or DATABASE_URL) at an existing one"
        )
    );
    assert!(
        !text(&out.stdout).contains("config OK"),
        "{}",
        text(&out.stdout)
    );

    let (code, stderr) = serve_until_exit(&path);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "database error: database \"{missing}\" does not exist (SQLSTATE 3D000); create it"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(" at line "), "a source line: {stderr}");

    // The server's own database exists: --connect says so.
    let path = write_config(&dir, &config(&base));
    let out = check_config(&path, &["--connect"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("Store connection: OK: PostgreSQL ")
            && stdout.contains(": the database exists and accepts the credentials\n"),
        "{stdout}"
    );
}

/// Every routing setting is printed with its effective value and where it came from.
#[test]
fn check_config_prints_the_routing_settings_in_effect_and_their_source() {
    let dir = TempDir::new("newcomer");
    let path = write_config(
        &dir,
        "model_list:\n  - model_name: a\n    litellm_params:\n      model: mock/echo\n  - model_name: b\n    litellm_params:\n      model: mock/echo\nlitellm_settings:\n  request_timeout: 30\n  num_retries: 4\n  context_window_fallbacks: [{a: [b]}]\nrouter_settings:\n  num_retries: 1\n  routing_strategy: least-busy\n  fallbacks: [{a: [b]}]\n",
    );
    let out = check_config(&path, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let section: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Routing settings in effect"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(
        section,
        [
            "  routing_strategy: least-busy (router_settings)",
            "  routing_strategy_args.ttl: 3600 s (default)",
            "  routing_strategy_args.lowest_latency_buffer: 0 (default)",
            "  num_retries: 1 (router_settings)",
            "  timeout: 30 s (litellm_settings.request_timeout)",
            "  stream_timeout: the timeout (default)",
            // Unset: the default cooldown rule that applies instead, not a count.
            "  allowed_fails: not set: LiteLLM's default rule applies: in a group of several deployments a 429, 401/403 or 404 cools the deployment at once, and timeouts, connection errors and 5xx once more than 50 % of its calls in the minute failed (from 5 calls on); a group's only deployment is never cooled down (default)",
            "  allowed_fails_policy: none (default)",
            "  cooldown_time: 5 s (default)",
            "  disable_cooldowns: false (default)",
            "  retry_after: 0 s (default)",
            "  retry_policy: none (default)",
            "  model_group_retry_policy: none (default)",
            "  fallbacks: {a: [b]} (router_settings)",
            "  context_window_fallbacks: {a: [b]} (litellm_settings)",
            "  content_policy_fallbacks: none (default)",
            "  default_fallbacks: none (default)",
            "  max_fallbacks: 5 (default)",
            "  enable_pre_call_checks: false (default)",
            "  model_group_alias: none (default)",
        ],
        "{stdout}"
    );
    assert!(!stdout.contains("unset"), "{stdout}");
}

/// A governed config onto the mock: `deployments` (YAML list items), the router settings, and
/// a `backup` group on the mock at `/d/backup`, priced 0.001 / 0.002 USD per token.
fn governed(mock: &str, deployments: &str, router: &str) -> String {
    format!(
        "model_list:\n{deployments}  - model_name: backup\n    litellm_params:\n      model: openai/mock-gpt\n      api_base: {mock}/d/backup/v1\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: dep-backup\n      input_cost_per_token: 0.001\n      output_cost_per_token: 0.002\nrouter_settings:\n{router}general_settings:\n  master_key: {MASTER}\n"
    )
}

/// A deployment answered in process with `mock_response: <reply>`, priced 1 USD per token so
/// that billing it at all would show.
fn mocked(group: &str, id: &str, reply: &str) -> String {
    format!(
        "  - model_name: {group}\n    litellm_params:\n      model: openai/gpt-4o\n      mock_response: {reply}\n    model_info:\n      id: {id}\n      input_cost_per_token: 1.0\n      output_cost_per_token: 1.0\n"
    )
}

/// Cost of `"hello"` / `max_tokens: 8` on `backup`: 5 prompt × 0.001 + 8 completion × 0.002.
const BACKUP_COST: f64 = 0.021;

/// `(model_id, status, spend in USD rounded to 1e-9)` of each spend-log row, sorted.
fn rows(rows: &[Value]) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r["model_id"].as_str().unwrap_or_default().to_owned(),
                r["status"].as_str().unwrap_or_default().to_owned(),
                format!("{:.9}", r["spend"].as_f64().unwrap_or(-1.0)),
            )
        })
        .collect();
    v.sort();
    v
}

fn row(id: &str, status: &str, usd: f64) -> (String, String, String) {
    (id.to_owned(), status.to_owned(), format!("{usd:.9}"))
}

/// Two deployments whose own `mock_response` is `litellm.RateLimitError`: the first attempt
/// fails with a 429, the retry goes to the other one, then the `backup` group answers. Both
/// failed attempts are logged at 0 USD, the key is billed the backup's cost only, and both
/// deployments are then cooling down (a 429 cools at once in a group of several), so the next
/// request goes straight to `backup`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployments_rate_limit_mock_is_retried_then_falls_back_unbilled() {
    let m = mock().await;
    let deps = format!(
        "{}{}",
        mocked("primary", "dep-primary-1", "litellm.RateLimitError"),
        mocked("primary", "dep-primary-2", "litellm.RateLimitError")
    );
    let gw = GovGateway::start(&governed(
        &m.base_url(),
        &deps,
        "  num_retries: 1\n  cooldown_time: 60\n  fallbacks: [{primary: [backup]}]\n",
    ));
    let (key, hash) = generate_key(&gw, json!({})).await;

    let r = chat(&gw, &key, &chat_body("primary", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-model-group"), "backup");
    assert_eq!(r.header("x-litellm-attempted-retries"), "1");
    assert_eq!(r.header("x-litellm-attempted-fallbacks"), "1");
    assert_eq!(
        r.body["choices"][0]["message"]["content"], "This is a mock response to: hell",
        "the backup's answer, not the mock_response text"
    );
    assert!(same_dollars(
        r.header_f64("x-litellm-response-cost"),
        BACKUP_COST
    ));
    let seen = upstream_calls(&m, "backup");
    assert_eq!(seen.len(), 1, "only the fallback reached an upstream");
    assert_eq!(seen[0].body["model"], "mock-gpt");
    assert_eq!(seen[0].body["max_tokens"], 8);

    let logged = rows(&spend_logs_n(&gw, &hash, 3).await);
    assert_eq!(
        logged,
        [
            row("dep-backup", "success", BACKUP_COST),
            row("dep-primary-1", "failure", 0.0),
            row("dep-primary-2", "failure", 0.0),
        ]
    );
    assert!(same_dollars(
        key_spend_eventually(&gw, &key, BACKUP_COST).await,
        BACKUP_COST
    ));

    // Both primary deployments cool down: the next request is not tried on either.
    let r = chat(&gw, &key, &chat_body("primary", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-model-group"), "backup");
    let logged = rows(&spend_logs_n(&gw, &hash, 4).await);
    assert_eq!(
        logged,
        [
            row("dep-backup", "success", BACKUP_COST),
            row("dep-backup", "success", BACKUP_COST),
            row("dep-primary-1", "failure", 0.0),
            row("dep-primary-2", "failure", 0.0),
        ],
        "no new failed attempt on a cooled-down deployment"
    );
    assert!(same_dollars(
        key_spend_eventually(&gw, &key, 2.0 * BACKUP_COST).await,
        2.0 * BACKUP_COST
    ));
}

/// A lone deployment whose own `mock_response` is `litellm.InternalServerError` answers 500
/// with LiteLLM's message in each client's dialect, and nothing is billed; one whose
/// `mock_response` is `litellm.ContextWindowExceededError` falls back by
/// `context_window_fallbacks`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_deployments_error_mocks_fail_unbilled_in_every_dialect() {
    let m = mock().await;
    let deps = format!(
        "{}{}",
        mocked("solo", "dep-solo", "litellm.InternalServerError"),
        mocked("small", "dep-small", "litellm.ContextWindowExceededError")
    );
    let gw = GovGateway::start(&governed(
        &m.base_url(),
        &deps,
        "  num_retries: 0\n  context_window_fallbacks: [{small: [backup]}]\n",
    ));
    let (key, hash) = generate_key(&gw, json!({})).await;
    let message = "litellm.InternalServerError: this is a mock internal server error";

    let r = chat(&gw, &key, &chat_body("solo", "hello", 8)).await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(r.body["error"]["message"], message, "{}", r.text);
    assert_eq!(r.body["error"]["type"], "server_error", "{}", r.text);

    let r = post_as(
        &gw,
        &key,
        "/v1/messages",
        &json!({"model": "solo", "max_tokens": 8, "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(r.body["type"], "error", "{}", r.text);
    assert_eq!(r.body["error"]["message"], message, "{}", r.text);

    let mut streamed = chat_body("solo", "hello", 8);
    streamed["stream"] = json!(true);
    let r = chat(&gw, &key, &streamed).await;
    assert_eq!(
        r.status, 500,
        "an error before any byte is a status: {}",
        r.text
    );
    assert_eq!(r.body["error"]["message"], message, "{}", r.text);

    let r = chat(&gw, &key, &chat_body("small", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("x-litellm-model-group"), "backup");
    assert_eq!(r.header("x-litellm-attempted-fallbacks"), "1");

    let logged = rows(&spend_logs_n(&gw, &hash, 5).await);
    assert_eq!(
        logged,
        [
            row("dep-backup", "success", BACKUP_COST),
            row("dep-small", "failure", 0.0),
            row("dep-solo", "failure", 0.0),
            row("dep-solo", "failure", 0.0),
            row("dep-solo", "failure", 0.0),
        ]
    );
    assert!(same_dollars(
        key_spend_eventually(&gw, &key, BACKUP_COST).await,
        BACKUP_COST
    ));
    assert_eq!(upstream_calls(&m, "backup").len(), 1);
}
