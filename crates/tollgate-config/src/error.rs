//! [`ConfigError`]: a load failure located by file, line, column and key path.

use std::fmt;

use crate::path::KeyPath;

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be read.
    Io,
    /// The text is not valid YAML (indentation, unclosed quote, duplicate key...).
    Syntax,
    /// A value has the wrong type or a required key is missing.
    Type,
    /// An `os.environ/NAME` reference in a required key names an unset variable.
    UnsetEnv,
    /// The value is well-typed but not acceptable (unknown provider, negative timeout...).
    Invalid,
}

/// A config load error. `Display` gives
/// `config.yaml:14:7: model_list[2].litellm_params: missing field `model``
/// (file, 1-based line and column when known, key path when known, message).
///
/// Messages never contain credential values: values read from `os.environ/` and values of
/// credential keys are replaced by their mask before the error is built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ConfigError {
    /// Category.
    pub kind: ErrorKind,
    /// The file name as given to the loader (`config.yaml`, a path, `<string>`).
    pub source_name: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// Key path, when known.
    pub path: Option<KeyPath>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(kind: ErrorKind, source_name: &str, message: impl Into<String>) -> Self {
        ConfigError {
            kind,
            source_name: source_name.to_string(),
            line: None,
            column: None,
            path: None,
            message: message.into(),
        }
    }

    pub(crate) fn at(mut self, loc: Option<(usize, usize)>) -> Self {
        if let Some((l, c)) = loc {
            self.line = Some(l);
            self.column = Some(c);
        }
        self
    }

    pub(crate) fn with_path(mut self, path: KeyPath) -> Self {
        self.path = Some(path);
        self
    }

    fn render(&self) -> String {
        let mut s = String::new();
        use fmt::Write;
        let _ = write!(s, "{}", self.source_name);
        if let Some(l) = self.line {
            let _ = write!(s, ":{l}");
            if let Some(c) = self.column {
                let _ = write!(s, ":{c}");
            }
        }
        s.push_str(": ");
        if let Some(p) = &self.path {
            let _ = write!(s, "{p}: ");
        }
        s.push_str(&self.message);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_and_path() {
        let e = ConfigError::new(ErrorKind::Type, "config.yaml", "missing field `model`")
            .at(Some((14, 7)))
            .with_path(
                KeyPath::root()
                    .key("model_list")
                    .index(2)
                    .key("litellm_params"),
            );
        assert_eq!(
            e.to_string(),
            "config.yaml:14:7: model_list[2].litellm_params: missing field `model`"
        );
        let e = ConfigError::new(ErrorKind::Io, "x.yaml", "not found");
        assert_eq!(e.to_string(), "x.yaml: not found");
    }
}
