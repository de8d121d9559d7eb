//! A temporary directory per call, removed on drop. Shared by `common/mod.rs` and
//! `common/governance.rs`.
#![expect(clippy::panic, reason = "test support: a failed setup fails the test")]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Directories made by this process so far: part of each name, so two tests that ask in the
/// same clock tick still get two directories. A name from the clock alone once gave two
/// concurrent gateways one config file, and one of them the other test's upstream.
static MADE: AtomicU64 = AtomicU64::new(0);

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new, empty directory `tollgate-test-{tag}-{pid}-{n}-{nanos}` under the system's temp
    /// directory. Panics if none can be made.
    pub fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        loop {
            let n = MADE.fetch_add(1, Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!(
                "tollgate-test-{tag}-{}-{n}-{nanos}",
                std::process::id()
            ));
            // `create_dir`, not `create_dir_all`: an existing directory is someone else's.
            match std::fs::create_dir(&p) {
                Ok(()) => return TempDir(p),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => panic!("cannot create {}: {e}", p.display()),
            }
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn two_directories_asked_for_at_once_are_two() {
    let a = TempDir::new("same");
    let b = TempDir::new("same");
    assert_ne!(a.0, b.0);
    assert!(a.0.is_dir() && b.0.is_dir());
}
