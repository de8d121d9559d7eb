//! Parse-once JSON request bodies.
//!
//! The gateway interprets a handful of top-level fields (`model`, `stream`, `user`, ...) and
//! must forward everything else untouched, so a provider's new parameter works without a
//! Tollgate release. [`RequestBody`] parses only the top level: each field is kept as a borrowed
//! slice of the original bytes ([`RawValue`]); nested values (`messages`, `tools`, ...) are
//! validated as JSON by the parser but never materialised. [`RequestBody::write_forward`]
//! re-serialises the object with `model` rewritten, gateway-only fields removed and defaults
//! added, copying every other field's bytes verbatim and in order.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Why a request body was refused. Messages are safe to show to the client.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BodyError {
    /// The body is not valid JSON; the message carries serde_json's line/column description.
    #[error("We could not parse the JSON body of your request: {0}")]
    InvalidJson(String),
    /// The body is JSON but not an object.
    #[error("The request body must be a JSON object.")]
    NotAnObject,
    /// A field the gateway interprets has the wrong type.
    #[error("Invalid type for '{field}': expected {expected}.")]
    WrongType {
        /// Top-level field name.
        field: &'static str,
        /// What was expected, e.g. "a string".
        expected: &'static str,
    },
    /// A required field is missing.
    #[error("Missing required parameter: '{0}'.")]
    Missing(&'static str),
    /// A required array is empty (OpenAI and Anthropic both answer 400 for `messages: []`).
    #[error(
        "Invalid '{0}': empty array. Expected an array with minimum length 1, but got an empty array instead."
    )]
    EmptyArray(&'static str),
}

/// A JSON object parsed at the top level only, borrowing from the request bytes.
#[derive(Debug)]
pub struct RequestBody<'a> {
    fields: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> RequestBody<'a> {
    /// Parses `bytes` as a JSON object. Errors are [`BodyError::InvalidJson`] (with position)
    /// or [`BodyError::NotAnObject`].
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BodyError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let fields = match de.deserialize_any(FieldsVisitor) {
            Ok(f) => f,
            Err(e) if e.is_data() => return Err(BodyError::NotAnObject),
            Err(e) => return Err(BodyError::InvalidJson(e.to_string())),
        };
        de.end()
            .map_err(|e| BodyError::InvalidJson(e.to_string()))?;
        Ok(Self { fields })
    }

    /// The raw JSON of a top-level field (the last one, if a key repeats).
    pub fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    }

    /// Whether a top-level field is present (a JSON `null` counts as present).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Top-level field names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|(k, _)| k.as_ref())
    }

    /// A string field; `null` reads as absent.
    pub fn str_field(&self, name: &'static str) -> Result<Option<Cow<'a, str>>, BodyError> {
        match self.get(name) {
            None => Ok(None),
            Some(raw) if raw.get() == "null" => Ok(None),
            Some(raw) => {
                let s: BorrowedStr<'a> =
                    serde_json::from_str(raw.get()).map_err(|_| BodyError::WrongType {
                        field: name,
                        expected: "a string",
                    })?;
                Ok(Some(s.0))
            }
        }
    }

    /// A boolean field; `null` reads as absent.
    pub fn bool_field(&self, name: &'static str) -> Result<Option<bool>, BodyError> {
        self.typed_field(name, "a boolean")
    }

    /// A non-negative integer field; `null` reads as absent.
    pub fn u64_field(&self, name: &'static str) -> Result<Option<u64>, BodyError> {
        self.typed_field(name, "a non-negative integer")
    }

    /// A number field; `null` reads as absent.
    pub fn f64_field(&self, name: &'static str) -> Result<Option<f64>, BodyError> {
        self.typed_field(name, "a number")
    }

    /// Any field deserialised into `T`; `null` reads as absent.
    pub fn typed_field<T: serde::de::DeserializeOwned>(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<Option<T>, BodyError> {
        match self.get(name) {
            None => Ok(None),
            Some(raw) if raw.get() == "null" => Ok(None),
            Some(raw) => {
                serde_json::from_str(raw.get())
                    .map(Some)
                    .map_err(|_| BodyError::WrongType {
                        field: name,
                        expected,
                    })
            }
        }
    }

    /// Writes the object to `out`, changed as `edit` says and otherwise byte-for-byte.
    ///
    /// Field order is kept. A field named in `edit.remove` is dropped; a field named in
    /// `edit.replace` gets the replacement JSON in place; `edit.append` fields are added at the
    /// end unless the body already has them (request defaults never override the client).
    pub fn write_forward(&self, edit: &ForwardEdit<'_>, out: &mut Vec<u8>) {
        out.reserve(
            self.fields
                .iter()
                .map(|(k, v)| k.len() + v.get().len() + 4)
                .sum::<usize>()
                + 64,
        );
        out.push(b'{');
        let mut first = true;
        let mut sep = |out: &mut Vec<u8>| {
            if !first {
                out.push(b',');
            }
            first = false;
        };
        for (i, (key, raw)) in self.fields.iter().enumerate() {
            // With a repeated key, keep the last occurrence only (serde_json semantics).
            if self.fields[i + 1..].iter().any(|(k, _)| k == key) {
                continue;
            }
            if edit.remove.iter().any(|r| *r == key.as_ref()) {
                continue;
            }
            sep(out);
            write_key(out, key);
            match edit.replace.iter().find(|(k, _)| *k == key.as_ref()) {
                Some((_, v)) => out.extend_from_slice(v.as_bytes()),
                None => out.extend_from_slice(raw.get().as_bytes()),
            }
        }
        for (key, value) in edit.append {
            if self.contains(key) || edit.remove.contains(key) {
                continue;
            }
            sep(out);
            write_key(out, key);
            out.extend_from_slice(value.as_bytes());
        }
        out.push(b'}');
    }
}

/// How [`RequestBody::write_forward`] changes a body. JSON values are given already serialised.
#[derive(Debug, Default, Clone, Copy)]
pub struct ForwardEdit<'e> {
    /// Top-level fields to drop.
    pub remove: &'e [&'e str],
    /// Fields whose value is replaced in place: (name, JSON text).
    pub replace: &'e [(&'e str, &'e str)],
    /// Fields added at the end when the body lacks them: (name, JSON text).
    pub append: &'e [(&'e str, &'e str)],
}

fn write_key(out: &mut Vec<u8>, key: &str) {
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
    } else {
        // serde_json escapes correctly; writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
    }
}

/// Serialises a string as a JSON string literal.
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Vec<(Cow<'de, str>, &'de RawValue)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(12));
        while let Some(key) = map.next_key::<BorrowedStr<'de>>()? {
            let value: &'de RawValue = map.next_value()?;
            fields.push((key.0, value));
        }
        Ok(fields)
    }
}

/// A string that borrows from the input when it has no escapes.
struct BorrowedStr<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for BorrowedStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BorrowedStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BorrowedStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BorrowedStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(BorrowedStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interprets_fields_and_keeps_the_rest_verbatim() {
        let body = br#"{"model":"gpt-4o","messages":[{"role":"user","content":"h\u00e9"}],"stream":true,"new_param":{"x":[1, 2]},"metadata":{"tags":["a"]},"user":"u1"}"#;
        let b = RequestBody::parse(body).unwrap();
        assert_eq!(b.str_field("model").unwrap().as_deref(), Some("gpt-4o"));
        assert_eq!(b.bool_field("stream").unwrap(), Some(true));
        assert_eq!(b.str_field("user").unwrap().as_deref(), Some("u1"));
        let mut out = Vec::new();
        b.write_forward(
            &ForwardEdit {
                remove: &["metadata"],
                replace: &[("model", "\"upstream-id\"")],
                append: &[
                    ("stream_options", r#"{"include_usage":true}"#),
                    ("user", "\"x\""),
                ],
            },
            &mut out,
        );
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"model":"upstream-id","messages":[{"role":"user","content":"h\u00e9"}],"stream":true,"new_param":{"x":[1, 2]},"user":"u1","stream_options":{"include_usage":true}}"#
        );
        // The output is valid JSON with the same meaning.
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["new_param"]["x"][1], 2);
    }

    #[test]
    fn malformed_json_names_the_position() {
        let err = RequestBody::parse(b"{\"model\": \"a\",}").unwrap_err();
        match err {
            BodyError::InvalidJson(m) => assert!(m.contains("line 1 column"), "{m}"),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            RequestBody::parse(b"[1,2]").unwrap_err(),
            BodyError::NotAnObject
        );
        assert!(matches!(
            RequestBody::parse(b"{} trailing").unwrap_err(),
            BodyError::InvalidJson(_)
        ));
    }

    #[test]
    fn wrong_types_are_reported_by_field() {
        let b = RequestBody::parse(br#"{"model":5,"stream":"yes","max_tokens":-1}"#).unwrap();
        assert_eq!(
            b.str_field("model").unwrap_err(),
            BodyError::WrongType {
                field: "model",
                expected: "a string"
            }
        );
        assert!(b.bool_field("stream").is_err());
        assert!(b.u64_field("max_tokens").is_err());
    }

    #[test]
    fn escaped_keys_and_duplicate_keys() {
        let b = RequestBody::parse(br#"{"a\"b":1,"model":"x","model":"y"}"#).unwrap();
        assert_eq!(b.str_field("model").unwrap().as_deref(), Some("y"));
        let mut out = Vec::new();
        b.write_forward(&ForwardEdit::default(), &mut out);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"a\"b":1,"model":"y"}"#
        );
    }

    #[test]
    fn null_reads_as_absent() {
        let b = RequestBody::parse(br#"{"user":null,"stream":null}"#).unwrap();
        assert_eq!(b.str_field("user").unwrap(), None);
        assert_eq!(b.bool_field("stream").unwrap(), None);
        assert!(b.contains("user"));
    }
}
