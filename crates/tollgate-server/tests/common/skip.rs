//! Skipped tests, made visible: a test that needs a service this machine was not given
//! (PostgreSQL through `TOLLGATE_TEST_DATABASE_URL`, ...) reports it here instead of passing
//! silently. Declared with `#[path]` by `common/governance.rs` and by test files that need it.
//!
//! Protocol (shared with tollgate-governance's `test_support::skipped`): a `SKIPPED` line
//! written straight to stderr (libtest captures a passing test's `print!`, not direct writes,
//! so a plain `cargo test` shows it), and a `var<TAB>example<TAB>test` line appended to the
//! file named by `TOLLGATE_TEST_SKIP_LOG`, which `scripts/test.sh` sets, sums up at the end of
//! the run and clears.
#![allow(dead_code)]

use std::io::Write;

/// The variable naming the Postgres server tests may use, and its format.
pub const DATABASE_URL_VAR: (&str, &str) =
    ("TOLLGATE_TEST_DATABASE_URL", "postgres://user@host:port/db");

/// `TOLLGATE_TEST_DATABASE_URL`; `None` after reporting the skip of `test`.
pub fn postgres_url(test: &str) -> Option<String> {
    let (var, example) = DATABASE_URL_VAR;
    let url = std::env::var(var).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        skipped(test, var, example);
    }
    url
}

/// Reports that `test` did not run because env `var` (a value like `example`) is not set.
pub fn skipped(test: &str, var: &str, example: &str) {
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
