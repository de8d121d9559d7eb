//! The `tollgate` command line: check-config, invalid configs, --version, start-up failures.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

use std::process::Command;

#[path = "common/skip.rs"]
mod skip;

fn tollgate() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    c.env_remove("LITELLM_MASTER_KEY")
        .env_remove("CONFIG_FILE_PATH");
    c
}

fn write(name: &str, text: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("tollgate-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn check_config_prints_groups_with_secrets_masked() {
    let p = write(
        "ok.yaml",
        "model_list:\n  - model_name: gpt-4o\n    litellm_params:\n      model: openai/gpt-4o\n      api_key: sk-live-SECRETVALUE1234\n  - model_name: local\n    litellm_params:\n      model: hosted_vllm/qwen\n      api_base: http://127.0.0.1:8000/v1\nlitellm_settings:\n  callbacks: [\"langfuse\"]\n",
    );
    let out = tollgate().arg("check-config").arg(&p).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("gpt-4o") && stdout.contains("local"),
        "{stdout}"
    );
    assert!(stdout.contains("hosted_vllm"), "{stdout}");
    assert!(!stdout.contains("SECRETVALUE"), "secret printed: {stdout}");
    assert!(
        stdout.contains("litellm_settings.callbacks"),
        "unimplemented key named: {stdout}"
    );
}

#[test]
fn invalid_config_exits_nonzero_naming_key_and_line() {
    let p = write(
        "bad.yaml",
        "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n  - model_name: b\n    litellm_params:\n      api_base: http://x\n",
    );
    let out = tollgate().arg("check-config").arg(&p).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("model_list[1].litellm_params"), "{err}");
    assert!(err.contains(":6:") || err.contains("line 6"), "{err}");
    let p = write(
        "yaml.yaml",
        "model_list:\n  - model_name: a\n   litellm_params: {\n",
    );
    let out = tollgate().arg("--config").arg(&p).output().unwrap();
    assert!(!out.status.success());
}

#[test]
fn check_config_takes_the_file_from_config_or_the_environment() {
    let p = write(
        "flag.yaml",
        "model_list:\n  - model_name: via-flag\n    litellm_params:\n      model: openai/gpt-4o\n      api_key: sk-x\n",
    );
    for cmd in [
        tollgate()
            .args(["check-config", "--config"])
            .arg(&p)
            .output(),
        tollgate()
            .args(["--config"])
            .arg(&p)
            .arg("check-config")
            .output(),
        tollgate()
            .arg("check-config")
            .env("CONFIG_FILE_PATH", &p)
            .output(),
    ] {
        let out = cmd.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("via-flag"), "{stdout}");
    }
    let out = tollgate().arg("check-config").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no config file to check"), "{err}");
}

#[test]
fn host_takes_a_name_that_resolves_and_refuses_one_that_does_not() {
    use std::io::{BufRead, BufReader};
    let p = write(
        "host.yaml",
        "model_list:\n  - model_name: m\n    litellm_params:\n      model: mock/echo\n",
    );
    let mut child = tollgate()
        .args(["--config"])
        .arg(&p)
        .args(["--host", "localhost", "--port", "0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let listening = lines
        .by_ref()
        .take(50)
        .map_while(Result::ok)
        .find(|l| l.contains("listening on"));
    let _ = child.kill();
    let _ = child.wait();
    let line = listening.expect("no 'listening on' line");
    assert!(
        line.contains("http://127.0.0.1:") || line.contains("http://[::1]:"),
        "{line}"
    );
    let out = tollgate()
        .args(["--config"])
        .arg(&p)
        .args(["--host", "no such host!", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid --host/--port"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn version_flag() {
    let out = tollgate().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

/// A Redis for the shared counters that cannot be used stops the start within about one
/// connection timeout (2 s), not after the client's retries, and the error names Redis and
/// where its URL came from, not the database: a port nothing listens on, a wrong password, and
/// `rediss://` pointed at a plain Redis (with a hint about TLS). The last two need the test
/// Redis (`TOLLGATE_TEST_REDIS_URL`).
#[test]
fn an_unusable_redis_stops_the_start_at_once_naming_it() {
    let dir = std::env::temp_dir().join(format!("tollgate-cli-{}-redis", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = write(
        "redis.yaml",
        &format!(
            "model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/m\n      api_base: http://127.0.0.1:9/v1\ngeneral_settings:\n  master_key: sk-cli-master\n  database_url: \"sqlite://{}\"\n",
            dir.join("t.db").display()
        ),
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cases = vec![(
        format!("redis://127.0.0.1:{closed}"),
        "Connection refused",
        false,
    )];
    match std::env::var("TOLLGATE_TEST_REDIS_URL") {
        Ok(u) if u.starts_with("redis://") => {
            let hostport = u.trim_start_matches("redis://").trim_end_matches('/');
            cases.push((
                format!("redis://:CANARY-wrong@{hostport}"),
                "uthentication",
                false,
            ));
            cases.push((format!("rediss://{hostport}"), "timed out", true));
        }
        _ => skip::skipped(
            "cli::an_unusable_redis_stops_the_start_at_once_naming_it",
            "TOLLGATE_TEST_REDIS_URL",
            "redis://127.0.0.1:6379",
        ),
    }
    for (url, cause, tls_hint) in cases {
        let started = std::time::Instant::now();
        let out = tollgate()
            .args(["--config"])
            .arg(&p)
            .args(["--port", "0", "--host", "127.0.0.1"])
            .env("REDIS_URL", &url)
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{url}: {err}");
        assert!(took < std::time::Duration::from_secs(6), "{url}: {took:?}");
        let line = err
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("{url}: no error line: {err}"));
        assert!(line.starts_with("error: Redis "), "{line}");
        assert!(line.contains("(from REDIS_URL)"), "{line}");
        assert!(
            !line.contains("governance store") && !line.contains("sqlite"),
            "{line}"
        );
        assert!(line.contains(cause), "{url}: {line}");
        assert!(!err.contains("CANARY"), "password printed: {err}");
        assert_eq!(line.contains("TLS is on"), tls_hint, "{line}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("connecting to Redis") || err.contains("connecting to Redis"),
            "{url}: the attempt is not announced: {stdout}{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
