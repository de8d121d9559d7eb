//! Skipped tests, made visible: a test that needs a service this machine was not given
//! (PostgreSQL through `TOLLGATE_TEST_DATABASE_URL`, ...) reports it here instead of passing
//! silently. Declared with `#[path]` by `common/governance.rs` and by test files that need it.
//!
//! Protocol (shared with tollgate-governance's `test_support::skipped`): a `SKIPPED` line
//! written straight to stderr (libtest captures a passing test's `print!`, not direct writes,
//! so a plain `cargo test` shows it), and a `var<TAB>example<TAB>test` line appended to the
//! file named by `TOLLGATE_TEST_SKIP_LOG`, which `scripts/test.sh` sums up at the end of the
//! run (one line per skipped test) and clears. The test is named as `cargo test` names it,
//! after its test target: `e2e_governance::budget_lockout_postgres` ([`test_name`]).
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]

use std::io::Write;

/// The variable naming the Postgres server tests may use, and its format.
pub const DATABASE_URL_VAR: (&str, &str) =
    ("TOLLGATE_TEST_DATABASE_URL", "postgres://user@host:port/db");

/// The running test as `<test target>::<module path>::<test fn>`: libtest runs each test on a
/// thread named after it (`budget_windows::end_users::default_end_user_postgres`). Off such a
/// thread (the main thread, a runtime worker a test spawned onto) it is `fallback`.
pub fn test_name(fallback: &str) -> String {
    match std::thread::current().name() {
        Some(n) if n != "main" && !n.starts_with("tokio-") => {
            format!("{}::{n}", env!("CARGO_CRATE_NAME"))
        }
        _ => format!("{}: {fallback}", env!("CARGO_CRATE_NAME")),
    }
}

/// `TOLLGATE_TEST_DATABASE_URL`; `None` after reporting the skip of the running test (`what`
/// names it where [`test_name`] cannot).
pub fn postgres_url(what: &str) -> Option<String> {
    let (var, example) = DATABASE_URL_VAR;
    let url = std::env::var(var).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        skipped(what, var, example);
    }
    url
}

/// Reports that the running test ([`test_name`], `what` off a test thread) did not run because
/// env `var` (a value like `example`) is not set.
pub fn skipped(what: &str, var: &str, example: &str) {
    let test = test_name(what);
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {test}: set {var} (e.g. {var}={example}) to run it"
    );
    if let Some(log) = std::env::var_os("TOLLGATE_TEST_SKIP_LOG")
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
    {
        // One write per line: appends of a few bytes do not interleave between test threads.
        let _ = f.write_all(format!("{var}\t{example}\t{test}\n").as_bytes());
    }
}
