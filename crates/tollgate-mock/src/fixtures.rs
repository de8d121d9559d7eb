//! Fixture files loaded once at start for byte-exact replay.
//!
//! Every regular file under the fixtures directory is read into memory, keyed by its path
//! relative to that directory with `/` separators (e.g. `openai/chat/tools.stream.sse`). For a
//! `X.sse` file a sibling `X.splits.json` (a JSON array of byte offsets) gives the flush points.
//! The HTTP status of a replayed fixture is the file name's numeric prefix (`429_rate_limit.json`
//! → 429) or an `error_NNN` stem (`error_400.json` → 400), else 200.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::MockError;

/// One loaded fixture.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// File contents, byte-exact.
    pub bytes: Bytes,
    /// Byte offsets at which to flush, from a sibling `*.splits.json` (only for `.sse` files).
    pub splits: Option<Vec<usize>>,
    /// Response status derived from the file name.
    pub status: u16,
    /// Response content type derived from the extension.
    pub content_type: &'static str,
}

/// All fixtures of one directory.
#[derive(Debug, Default, Clone)]
pub struct Fixtures {
    files: HashMap<String, Fixture>,
}

impl Fixtures {
    /// No fixtures.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Load every file under `dir` (recursively).
    ///
    /// Errors: [`MockError::Fixtures`] when the directory or a file cannot be read, or a
    /// `*.splits.json` file is not a JSON array of non-negative integers.
    pub fn load(dir: &Path) -> Result<Self, MockError> {
        let mut raw: HashMap<String, Bytes> = HashMap::new();
        walk(dir, dir, &mut raw)?;
        let mut files = HashMap::with_capacity(raw.len());
        for (name, bytes) in &raw {
            let splits = match name.strip_suffix(".sse") {
                Some(stem) => match raw.get(&format!("{stem}.splits.json")) {
                    Some(s) => Some(
                        serde_json::from_slice::<Vec<usize>>(s)
                            .map_err(|e| MockError::Fixtures(format!("{stem}.splits.json: {e}")))?,
                    ),
                    None => None,
                },
                None => None,
            };
            files.insert(
                name.clone(),
                Fixture {
                    bytes: bytes.clone(),
                    splits,
                    status: status_from_name(name),
                    content_type: content_type_for(name),
                },
            );
        }
        Ok(Self { files })
    }

    /// The fixture at relative path `name` (leading `/` ignored).
    pub fn get(&self, name: &str) -> Option<&Fixture> {
        self.files.get(name.trim_start_matches('/'))
    }

    /// Number of files loaded.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when nothing was loaded.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

fn walk(root: &Path, dir: &Path, out: &mut HashMap<String, Bytes>) -> Result<(), MockError> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| MockError::Fixtures(format!("{}: {e}", dir.display())))?;
    for entry in rd {
        let entry = entry.map_err(|e| MockError::Fixtures(format!("{}: {e}", dir.display())))?;
        let path: PathBuf = entry.path();
        let ft = entry
            .file_type()
            .map_err(|e| MockError::Fixtures(format!("{}: {e}", path.display())))?;
        if ft.is_dir() {
            walk(root, &path, out)?;
        } else if ft.is_file() {
            let rel = path
                .strip_prefix(root)
                .map_err(|e| MockError::Fixtures(format!("{}: {e}", path.display())))?;
            let key = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let bytes = std::fs::read(&path)
                .map_err(|e| MockError::Fixtures(format!("{}: {e}", path.display())))?;
            out.insert(key, Bytes::from(bytes));
        }
    }
    Ok(())
}

/// Status from a fixture file name: `NNN_...` prefix or `error_NNN` stem, else 200.
pub fn status_from_name(path: &str) -> u16 {
    let file = path.rsplit('/').next().unwrap_or(path);
    let leading = |s: &str| -> Option<u16> {
        let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
        let code = digits.parse::<u16>().ok()?;
        (digits.len() == 3 && (100..=599).contains(&code)).then_some(code)
    };
    if let Some(code) = leading(file).filter(|_| file[3..].starts_with(['_', '.', '-'])) {
        return code;
    }
    file.strip_prefix("error_").and_then(leading).unwrap_or(200)
}

/// Content type from the extension: `.sse` → `text/event-stream`, `.json` → `application/json`,
/// `.jsonl` → `application/x-ndjson`, `.bin` → `application/vnd.amazon.eventstream`, else octet-stream.
pub fn content_type_for(path: &str) -> &'static str {
    if path.ends_with(".sse") {
        "text/event-stream"
    } else if path.ends_with(".json") {
        "application/json"
    } else if path.ends_with(".jsonl") {
        "application/x-ndjson"
    } else if path.ends_with(".bin") {
        "application/vnd.amazon.eventstream"
    } else {
        "application/octet-stream"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(status_from_name("openai/errors/429_rate_limit.json"), 429);
        assert_eq!(
            status_from_name("anthropic/errors/529_overloaded.json"),
            529
        );
        assert_eq!(status_from_name("gemini/error_400.json"), 400);
        assert_eq!(status_from_name("openai/chat/text.stream.sse"), 200);
        assert_eq!(status_from_name("x/1234_foo.json"), 200);
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type_for("a/b.stream.sse"), "text/event-stream");
        assert_eq!(content_type_for("a/b.json"), "application/json");
    }

    #[test]
    fn loads_dir_with_splits() {
        let dir = std::env::temp_dir().join(format!("tollgate-mock-fx-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("p")).unwrap();
        std::fs::write(dir.join("p/u.stream.sse"), b"data: x\n\n").unwrap();
        std::fs::write(dir.join("p/u.stream.splits.json"), b"[2, 5]").unwrap();
        std::fs::write(dir.join("p/404_nf.json"), b"{}").unwrap();
        let fx = Fixtures::load(&dir).unwrap();
        let u = fx.get("p/u.stream.sse").unwrap();
        assert_eq!(&u.bytes[..], b"data: x\n\n");
        assert_eq!(u.splits.as_deref(), Some(&[2usize, 5][..]));
        assert_eq!(fx.get("/p/404_nf.json").unwrap().status, 404);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
