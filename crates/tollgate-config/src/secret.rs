//! [`Secret`]: a string whose `Debug`, `Display` and `Serialize` forms are masked.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Values shorter than this many characters are masked completely (`****`);
/// longer ones show their last 4 characters.
const MIN_LEN_TO_SHOW_TAIL: usize = 12;

/// A credential read from the config (API key, master key, database URL, AWS secret...).
///
/// `Debug`, `Display` and `Serialize` print a mask, never the value:
/// - values of 12 characters or more show their last 4 characters: `sk-...abcd` when the value
///   starts with `sk-`, else `****abcd`;
/// - shorter values print `****`.
///
/// [`Secret::expose`] returns the real value; call it only where the value is sent upstream or
/// compared (in constant time, by the caller).
///
/// Deserializes from a YAML string or number (numbers are kept as their decimal text); a mapping
/// (e.g. inline `vertex_credentials`) is kept as its compact JSON text. Type errors never echo
/// the value.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The real value. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the value is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The masked form printed by `Debug`/`Display` (see the type docs).
    pub fn masked(&self) -> String {
        mask(&self.0)
    }
}

/// Masks any string the way [`Secret`] does.
pub fn mask(value: &str) -> String {
    let n = value.chars().count();
    if n < MIN_LEN_TO_SHOW_TAIL {
        return "****".to_string();
    }
    let tail: String = value.chars().skip(n - 4).collect();
    if value.starts_with("sk-") {
        format!("sk-...{tail}")
    } else {
        format!("****{tail}")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.masked())
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl From<&str> for Secret {
    fn from(v: &str) -> Self {
        Secret(v.to_string())
    }
}

impl From<String> for Secret {
    fn from(v: String) -> Self {
        Secret(v)
    }
}

impl Serialize for Secret {
    /// Serializes the mask, so that serializing a config never leaks credentials.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.masked())
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Secret(s)),
            serde_json::Value::Number(n) => Ok(Secret(n.to_string())),
            v @ serde_json::Value::Object(_) => Ok(Secret(v.to_string())),
            serde_json::Value::Array(_) => Err(D::Error::custom(
                "invalid type: sequence, expected a string (secret value)",
            )),
            serde_json::Value::Bool(_) => Err(D::Error::custom(
                "invalid type: boolean, expected a string (secret value)",
            )),
            serde_json::Value::Null => Err(D::Error::custom(
                "invalid type: null, expected a string (secret value)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_long_keys_showing_last_four() {
        let s = Secret::new("sk-live-CANARY-abcd");
        assert_eq!(format!("{s}"), "sk-...abcd");
        assert_eq!(format!("{s:?}"), "Secret(sk-...abcd)");
        assert_eq!(mask("AKIAIOSFODNN7EXAMPLE"), "****MPLE");
    }

    #[test]
    fn masks_short_values_completely() {
        assert_eq!(Secret::new("sk-1234").to_string(), "****");
        assert_eq!(Secret::new("").to_string(), "****");
        assert_eq!(Secret::new("sk-1234").expose(), "sk-1234");
    }

    #[test]
    fn serialize_is_masked() {
        let s = Secret::new("sk-live-CANARY-abcd");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"sk-...abcd\"");
    }

    #[test]
    fn deserializes_numbers_and_maps_without_echo() {
        let s: Secret = serde_json::from_str("1234").unwrap();
        assert_eq!(s.expose(), "1234");
        let s: Secret = serde_json::from_str(r#"{"type":"service_account"}"#).unwrap();
        assert_eq!(s.expose(), r#"{"type":"service_account"}"#);
        let e = serde_json::from_str::<Secret>("true")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a string"), "{e}");
        let e = serde_json::from_str::<Secret>(r#"["sk-CANARY-in-a-list"]"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected a string") && !e.contains("CANARY"),
            "{e}"
        );
    }
}
