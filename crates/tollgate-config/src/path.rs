//! [`KeyPath`]: where a value sits in the YAML tree, printed as `model_list[2].litellm_params.rpm`.

use std::fmt;

/// One step of a [`KeyPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// A mapping key.
    Key(String),
    /// A sequence index (0-based).
    Index(usize),
}

/// A path from the document root to a value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Segment>);

impl KeyPath {
    /// The root.
    pub fn root() -> Self {
        KeyPath(Vec::new())
    }

    /// This path plus a key.
    pub fn key(&self, k: impl Into<String>) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Key(k.into()));
        p
    }

    /// This path plus an index.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Index(i));
        p
    }

    /// Segments.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// Builds a path from `serde_path_to_error`'s.
    pub(crate) fn from_serde(p: &serde_path_to_error::Path) -> Self {
        use serde_path_to_error::Segment as S;
        KeyPath(
            p.iter()
                .filter_map(|s| match s {
                    S::Seq { index } => Some(Segment::Index(*index)),
                    S::Map { key } => Some(Segment::Key(key.clone())),
                    S::Enum { variant } => Some(Segment::Key(variant.clone())),
                    S::Unknown => None,
                })
                .collect(),
        )
    }

    /// True when the path matches `pattern`, where `pattern` segments are keys, and `[]`
    /// matches any index (e.g. `["model_list", "[]", "litellm_params", "model"]`).
    pub fn matches(&self, pattern: &[&str]) -> bool {
        self.0.len() == pattern.len()
            && self.0.iter().zip(pattern).all(|(s, p)| match s {
                Segment::Key(k) => k == p,
                Segment::Index(_) => *p == "[]",
            })
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(root)");
        }
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if i == 0 => write!(f, "{k}")?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_match() {
        let p = KeyPath::root()
            .key("model_list")
            .index(2)
            .key("litellm_params")
            .key("model");
        assert_eq!(p.to_string(), "model_list[2].litellm_params.model");
        assert!(p.matches(&["model_list", "[]", "litellm_params", "model"]));
        assert!(!p.matches(&["model_list", "[]", "litellm_params"]));
        assert_eq!(KeyPath::root().to_string(), "(root)");
    }
}
