//! [`Extra`]: the map of keys a typed struct does not name, kept so nothing in the file is lost.

use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::redact::redact_value;

/// Every key of a YAML mapping that the typed struct around it does not name, in file order,
/// with its value converted to JSON (`os.environ/` references already substituted).
///
/// Derefs to `serde_json::Map<String, Value>`. `Debug` and `Serialize` mask values under
/// credential-like keys (see [`crate::redact::is_sensitive_key`]) and passwords in URLs; read
/// the map itself for the real values.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Extra(pub Map<String, Value>);

impl Serialize for Extra {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, &redact_value(k, v))?;
        }
        m.end()
    }
}

impl Extra {
    /// The inner map.
    pub fn into_inner(self) -> Map<String, Value> {
        self.0
    }
}

impl Deref for Extra {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, redact_value(k, v))))
            .finish()
    }
}
