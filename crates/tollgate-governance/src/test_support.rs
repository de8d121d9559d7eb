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
