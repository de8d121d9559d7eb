//! Helpers shared by unit tests.

use std::path::PathBuf;

/// `$TOLLGATE_SHARED_DIR`, else `<workspace root>/../shared`, when it exists.
pub(crate) fn shared_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOLLGATE_SHARED_DIR") {
        return Some(PathBuf::from(dir));
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = manifest.parent()?.parent()?.parent()?.join("shared");
    dir.is_dir().then_some(dir)
}

/// The Postgres server tests run against: `TOLLGATE_TEST_DATABASE_URL`
/// (`postgres://user@host:port/db`). `None` after reporting the skip of the running test (see
/// [`skipped`]; `what` names it where [`test_name`] cannot).
pub(crate) fn postgres_url(what: &str) -> Option<String> {
    let url = std::env::var("TOLLGATE_TEST_DATABASE_URL").ok();
    if url.is_none() {
        skipped(
            what,
            "TOLLGATE_TEST_DATABASE_URL",
            "postgres://user@host:port/db",
        );
    }
    url
}

/// The running test as `tollgate_governance::<module path>::<test fn>`: libtest runs each test
/// on a thread named after it. Off such a thread (the main thread, a runtime worker) it is
/// `fallback`.
pub(crate) fn test_name(fallback: &str) -> String {
    match std::thread::current().name() {
        Some(n) if n != "main" && !n.starts_with("tokio-") => {
            format!("{}::{n}", env!("CARGO_CRATE_NAME"))
        }
        _ => format!("{}: {fallback}", env!("CARGO_CRATE_NAME")),
    }
}

/// Reports that the running test ([`test_name`]) did not run because env `var` (a value like
/// `example`) is not set: a `SKIPPED` line written straight to stderr (libtest captures a
/// passing test's `print!`, not direct writes, so a plain `cargo test` shows it), and a
/// `var<TAB>example<TAB>test` line appended to the file named by `TOLLGATE_TEST_SKIP_LOG`,
/// which `scripts/test.sh` sets, sums up at the end (one line per test) and clears. Same
/// protocol as `tollgate-server/tests/common/skip.rs`.
pub(crate) fn skipped(what: &str, var: &str, example: &str) {
    use std::io::Write;
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

/// Runs a future that must be ready at its first poll: the in-process admission path never
/// awaits (its `async` operations complete inline), so tests drive it from plain threads.
pub(crate) trait Ready: std::future::Future + Sized {
    /// The output of the first poll; panics when the future is pending (it awaited).
    fn ready(self) -> Self::Output {
        let mut f = std::pin::pin!(self);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("an in-process admission operation awaited"),
        }
    }
}

impl<F: std::future::Future> Ready for F {}

#[cfg(test)]
mod tests {
    /// The name is the one `cargo test` prints, after the crate: what the skip summary lists.
    #[test]
    fn a_skip_names_the_running_test() {
        assert_eq!(
            super::test_name("fallback"),
            "tollgate_governance::test_support::tests::a_skip_names_the_running_test"
        );
        let off_thread = std::thread::spawn(|| super::test_name("a label"))
            .join()
            .unwrap();
        assert_eq!(off_thread, "tollgate_governance: a label");
    }
}
