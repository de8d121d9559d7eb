//! Source files: the root config plus the files its `include:` list pulls in, and where each
//! merged top-level value came from (so errors name the right file and line).
//!
//! Semantics follow LiteLLM (`litellm/proxy/common_utils/config_includes.py`):
//! - `include:` is a top-level list of file paths, resolved next to the file that declares it;
//!   when that file does not exist but one next to the root config does, that one is read.
//! - Each included file is merged into the config in order: when both values of a top-level key
//!   are lists they are concatenated (`model_list` entries add up), otherwise the included value
//!   replaces the existing one.
//! - Included files may include further files (resolved after the current list); a file already
//!   read is skipped, so cycles end. The `include` key itself is removed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

use crate::error::{ConfigError, ErrorKind};
use crate::locate::{Mode, locate};
use crate::path::{KeyPath, Segment};

/// The top-level key that lists included files.
pub const INCLUDE_KEY: &str = "include";

/// Upper bound on included files, so a pathological include graph cannot run away.
const MAX_INCLUDED_FILES: usize = 256;

/// One file's name (as printed in messages) and text.
pub(crate) struct Source {
    pub name: String,
    pub text: String,
}

/// Where a merged top-level value came from.
#[derive(Clone, Debug)]
enum Origin {
    /// The whole value comes from one source.
    Whole(usize),
    /// A list concatenated from several sources: `(source, first merged index, length)`.
    List(Vec<(usize, usize, usize)>),
}

/// All sources of one load and the origin of each top-level key.
pub(crate) struct Sources {
    pub files: Vec<Source>,
    origins: HashMap<String, Origin>,
    /// Keys repeated in their mapping: `(file index, path inside that file)`.
    pub duplicates: Vec<(usize, KeyPath)>,
}

/// Reads an included file.
pub(crate) type Reader<'a> = &'a dyn Fn(&Path) -> std::io::Result<String>;

impl Sources {
    /// A single source (no includes).
    pub(crate) fn single(name: &str, text: &str) -> Self {
        Sources {
            files: vec![Source {
                name: name.to_string(),
                text: text.to_string(),
            }],
            origins: HashMap::new(),
            duplicates: Vec::new(),
        }
    }

    /// The file a merged path comes from, and the path inside that file.
    fn origin(&self, path: &KeyPath) -> (usize, KeyPath) {
        let segs = path.segments();
        let Some(Segment::Key(top)) = segs.first() else {
            return (0, path.clone());
        };
        match self.origins.get(top) {
            None => (0, path.clone()),
            Some(Origin::Whole(s)) => (*s, path.clone()),
            Some(Origin::List(parts)) => {
                let first = parts.first().map_or(0, |p| p.0);
                match segs.get(1) {
                    Some(Segment::Index(i)) => {
                        match parts
                            .iter()
                            .find(|(_, start, len)| *i >= *start && *i < start + len)
                        {
                            Some((s, start, _)) => {
                                let mut local = segs.to_vec();
                                local[1] = Segment::Index(i - start);
                                (*s, KeyPath(local))
                            }
                            None => (first, KeyPath(segs[..1].to_vec())),
                        }
                    }
                    _ => (first, path.clone()),
                }
            }
        }
    }

    /// The name of the file a merged path comes from.
    pub(crate) fn file_of(&self, path: &KeyPath) -> &str {
        &self.files[self.origin(path).0].name
    }

    /// The name and 1-based `(line, column)` of `path` inside file `file` (not a merged path).
    pub(crate) fn locate_in(
        &self,
        file: usize,
        path: &KeyPath,
        mode: Mode,
    ) -> (&str, Option<(usize, usize)>) {
        let f = &self.files[file];
        (&f.name, locate(&f.text, path, mode))
    }

    /// The file and 1-based `(line, column)` of a merged path.
    pub(crate) fn locate(&self, path: &KeyPath, mode: Mode) -> (&str, Option<(usize, usize)>) {
        let (src, local) = self.origin(path);
        let f = &self.files[src];
        (&f.name, locate(&f.text, &local, mode))
    }
}

/// Parses one YAML document (with `<<` merge keys applied); returns it and the paths of keys
/// repeated in their mapping (the last value is kept, as PyYAML does).
pub(crate) fn parse(text: &str, name: &str) -> Result<(Value, Vec<KeyPath>), ConfigError> {
    let (mut v, dups) = crate::yaml_value::parse_value(text).map_err(|e| {
        let loc = e.location().map(|l| (l.line(), l.column()));
        ConfigError::new(ErrorKind::Syntax, name, strip_location(&e.to_string())).at(loc)
    })?;
    v.apply_merge()
        .map_err(|e| ConfigError::new(ErrorKind::Syntax, name, strip_location(&e.to_string())))?;
    Ok((v, dups))
}

/// The `include:` entries of a parsed file.
fn include_entries(v: &Value, src: &Source) -> Result<Vec<String>, ConfigError> {
    let Some(list) = v.get(INCLUDE_KEY) else {
        return Ok(Vec::new());
    };
    let bad = || {
        let path = KeyPath::root().key(INCLUDE_KEY);
        ConfigError::new(
            ErrorKind::Type,
            &src.name,
            "'include' must be a list of file paths",
        )
        .at(locate(&src.text, &path, Mode::Value))
        .with_path(path)
    };
    let Value::Sequence(items) = list else {
        return Err(bad());
    };
    items
        .iter()
        .map(|i| i.as_str().map(str::to_string).ok_or_else(bad))
        .collect()
}

fn dir_of(name: &str) -> PathBuf {
    Path::new(name)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Resolves `root` (already parsed from `sources.files[0]`) and its includes into one mapping.
pub(crate) fn resolve_includes(
    mut root: Value,
    sources: &mut Sources,
    read: Reader,
) -> Result<Value, ConfigError> {
    let mut pending: Vec<(String, usize)> = include_entries(&root, &sources.files[0])?
        .into_iter()
        .map(|e| (e, 0))
        .collect();
    if let Some(m) = root.as_mapping_mut() {
        m.shift_remove(INCLUDE_KEY);
    }
    if pending.is_empty() {
        return Ok(root);
    }
    let Some(root_map) = root.as_mapping_mut() else {
        return Ok(root);
    };
    let mut seen: HashSet<PathBuf> = HashSet::new();
    seen.insert(normalize(Path::new(&sources.files[0].name)));
    let root_dir = dir_of(&sources.files[0].name);
    let mut next = 0;
    while next < pending.len() {
        let (entry, declared_in) = pending[next].clone();
        next += 1;
        let declared_path = lexical(&dir_of(&sources.files[declared_in].name).join(&entry));
        let root_path = lexical(&root_dir.join(&entry));
        let file = if declared_path != root_path && !declared_path.exists() && root_path.exists() {
            root_path
        } else {
            declared_path
        };
        if !seen.insert(normalize(&file)) {
            continue;
        }
        if sources.files.len() > MAX_INCLUDED_FILES {
            return Err(ConfigError::new(
                ErrorKind::Invalid,
                &sources.files[declared_in].name,
                format!("more than {MAX_INCLUDED_FILES} included files"),
            ));
        }
        let name = file.display().to_string();
        let text = read(&file).map_err(|e| {
            let path = KeyPath::root().key(INCLUDE_KEY);
            let src = &sources.files[declared_in];
            ConfigError::new(
                ErrorKind::Io,
                &src.name,
                format!("cannot read included file {name}: {e}"),
            )
            .at(locate(&src.text, &path, Mode::Value))
            .with_path(path)
        })?;
        let idx = sources.files.len();
        sources.files.push(Source {
            name: name.clone(),
            text,
        });
        let (mut included, dups) = parse(&sources.files[idx].text, &name)?;
        sources
            .duplicates
            .extend(dups.into_iter().map(|d| (idx, d)));
        for e in include_entries(&included, &sources.files[idx])? {
            pending.push((e, idx));
        }
        let included_map = match included {
            Value::Null => continue,
            Value::Mapping(ref mut m) => {
                m.shift_remove(INCLUDE_KEY);
                std::mem::take(m)
            }
            _ => {
                return Err(ConfigError::new(
                    ErrorKind::Type,
                    &name,
                    "an included config must be a mapping",
                )
                .at(Some((1, 1))));
            }
        };
        for (k, v) in included_map {
            let key = crate::env::key_string(&k);
            match (root_map.get_mut(&k), v) {
                (Some(Value::Sequence(base)), Value::Sequence(add)) => {
                    let origin = sources
                        .origins
                        .entry(key)
                        .or_insert_with(|| Origin::List(vec![(0, 0, base.len())]));
                    if let Origin::Whole(s) = *origin {
                        *origin = Origin::List(vec![(s, 0, base.len())]);
                    }
                    if let Origin::List(parts) = origin {
                        parts.push((idx, base.len(), add.len()));
                    }
                    base.extend(add);
                }
                (_, v) => {
                    sources.origins.insert(key, Origin::Whole(idx));
                    root_map.insert(k, v);
                }
            }
        }
    }
    Ok(root)
}

/// `p` with `.` removed and `dir/..` folded, without touching the filesystem (like Python's
/// `os.path.normpath`, which LiteLLM's `abspath` applies).
fn lexical(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_normal =
                    matches!(out.components().next_back(), Some(Component::Normal(_)));
                if last_is_normal {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Best-effort identity of a file for cycle detection.
fn normalize(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Drops the first " at line L column C" of a serde_yaml_ng message (the error's own location,
/// printed up front); later ones ("while parsing a block mapping at line 3 column 5") stay.
pub(crate) fn strip_location(msg: &str) -> String {
    let Some(i) = msg.find(" at line ") else {
        return msg.to_string();
    };
    let rest = &msg[i + " at line ".len()..];
    let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n1 = digits(rest);
    let Some(after_col) = rest[n1..].strip_prefix(" column ") else {
        return msg.to_string();
    };
    let n2 = digits(after_col);
    if n1 == 0 || n2 == 0 {
        return msg.to_string();
    }
    format!("{}{}", &msg[..i], &after_col[n2..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_paths() {
        assert_eq!(
            lexical(Path::new("cfg/sub/../a.yaml")),
            Path::new("cfg/a.yaml")
        );
        assert_eq!(lexical(Path::new("./x/./y.yaml")), Path::new("x/y.yaml"));
        assert_eq!(lexical(Path::new("../up.yaml")), Path::new("../up.yaml"));
        assert_eq!(lexical(Path::new("/a/../../b")), Path::new("/b"));
    }

    #[test]
    fn strip_location_keeps_context() {
        assert_eq!(
            strip_location(
                "did not find expected key at line 5 column 6, while parsing a block mapping at line 3 column 5"
            ),
            "did not find expected key, while parsing a block mapping at line 3 column 5"
        );
        assert_eq!(strip_location("plain"), "plain");
    }

    fn reader(
        files: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&Path) -> std::io::Result<String> {
        move |p: &Path| {
            files
                .iter()
                .find(|(n, _)| Path::new(n) == p)
                .map(|(_, t)| t.to_string())
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"))
        }
    }

    #[test]
    fn lists_concatenate_and_other_values_override() {
        let root_text = "include: [a.yaml, sub/b.yaml]\nmodel_list:\n  - {model_name: r}\nlitellm_settings: {num_retries: 1}\n";
        let files: &'static [(&str, &str)] = &[
            (
                "cfg/a.yaml",
                "model_list:\n  - {model_name: a1}\n  - {model_name: a2}\nlitellm_settings: {num_retries: 7}\n",
            ),
            (
                "cfg/sub/b.yaml",
                "include: [c.yaml]\nmodel_list:\n  - {model_name: b1}\n",
            ),
            (
                "cfg/sub/c.yaml",
                "include: [../a.yaml]\nrouter_settings: {num_retries: 3}\n",
            ),
        ];
        let mut s = Sources::single("cfg/config.yaml", root_text);
        let (root, _) = parse(root_text, "cfg/config.yaml").unwrap();
        let merged = resolve_includes(root, &mut s, &reader(files)).unwrap();
        let names: Vec<&str> = merged["model_list"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|e| e["model_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["r", "a1", "a2", "b1"]);
        assert_eq!(merged["litellm_settings"]["num_retries"], Value::from(7));
        assert_eq!(merged["router_settings"]["num_retries"], Value::from(3));
        assert!(merged.get(INCLUDE_KEY).is_none());
        assert_eq!(s.files.len(), 4, "a.yaml is read once");

        let at = |i: usize| {
            let p = KeyPath::root().key("model_list").index(i).key("model_name");
            let (f, loc) = s.locate(&p, Mode::Value);
            (f.to_string(), loc.map(|l| l.0))
        };
        assert_eq!(at(0), ("cfg/config.yaml".to_string(), Some(3)));
        assert_eq!(at(2), ("cfg/a.yaml".to_string(), Some(3)));
        assert_eq!(at(3), ("cfg/sub/b.yaml".to_string(), Some(3)));
        let (f, loc) = s.locate(
            &KeyPath::root().key("litellm_settings").key("num_retries"),
            Mode::Value,
        );
        assert_eq!((f, loc.map(|l| l.0)), ("cfg/a.yaml", Some(4)));
    }

    #[test]
    fn missing_include_is_an_io_error_at_the_include_key() {
        let root_text = "model_list: []\ninclude:\n  - nope.yaml\n";
        let mut s = Sources::single("config.yaml", root_text);
        let (root, _) = parse(root_text, "config.yaml").unwrap();
        let e = resolve_includes(root, &mut s, &reader(&[])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Io);
        assert!(
            e.to_string()
                .starts_with("config.yaml:3:3: include: cannot read included file nope.yaml"),
            "{e}"
        );
    }
}
