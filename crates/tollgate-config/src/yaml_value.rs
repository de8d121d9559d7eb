//! Parsing YAML into a `serde_yaml_ng::Value` the way PyYAML (LiteLLM's loader) does: a key
//! repeated in one mapping is not an error, the last value wins (at the first key's position).
//! serde_yaml_ng's own `Value` rejects repeated keys, which would refuse configs LiteLLM runs.

use std::cell::RefCell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_yaml_ng::value::{Tag, TaggedValue};
use serde_yaml_ng::{Mapping, Value};

use crate::env::key_string;
use crate::path::KeyPath;

/// Parses one YAML document. Returns the value and the paths of keys that appeared more than
/// once in their mapping (in document order).
pub(crate) fn parse_value(text: &str) -> Result<(Value, Vec<KeyPath>), serde_yaml_ng::Error> {
    let dups = RefCell::new(Vec::new());
    let de = serde_yaml_ng::Deserializer::from_str(text);
    let v = ValueSeed {
        path: KeyPath::root(),
        dups: &dups,
    }
    .deserialize(de)?;
    Ok((v, dups.into_inner()))
}

struct ValueSeed<'a> {
    path: KeyPath,
    dups: &'a RefCell<Vec<KeyPath>>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Number(i.into()))
    }
    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        Ok(Value::Number(u.into()))
    }
    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Number(f.into()))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueSeed {
            path: self.path.index(out.len()),
            dups: self.dups,
        })? {
            out.push(v);
        }
        Ok(Value::Sequence(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Mapping::new();
        while let Some(k) = map.next_key_seed(ValueSeed {
            path: self.path.key("?"),
            dups: self.dups,
        })? {
            let path = self.path.key(key_string(&k));
            let v = map.next_value_seed(ValueSeed {
                path: path.clone(),
                dups: self.dups,
            })?;
            if out.insert(k, v).is_some() {
                self.dups.borrow_mut().push(path);
            }
        }
        Ok(Value::Mapping(out))
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (tag, contents) = data.variant::<String>()?;
        let value = contents.newtype_variant_seed(ValueSeed {
            path: self.path,
            dups: self.dups,
        })?;
        Ok(Value::Tagged(Box::new(TaggedValue {
            tag: Tag::new(tag),
            value,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_values_as_serde_yaml_ng() {
        let text = "a: 1\nb: [x, 2.5, true, null, {c: d}]\ne: !custom v\nf: ''\n";
        let (v, dups) = parse_value(text).unwrap();
        assert_eq!(v, serde_yaml_ng::from_str::<Value>(text).unwrap());
        assert!(dups.is_empty());
    }

    #[test]
    fn repeated_keys_last_wins() {
        let (v, dups) = parse_value("a: 1\nm:\n  k: first\n  k: second\na: 2\n").unwrap();
        assert_eq!(v["a"], Value::from(2));
        assert_eq!(v["m"]["k"], Value::from("second"));
        let d: Vec<String> = dups.iter().map(|p| p.to_string()).collect();
        assert_eq!(d, vec!["m.k", "a"]);
    }

    #[test]
    fn empty_document_is_null() {
        assert_eq!(parse_value("").unwrap().0, Value::Null);
        assert_eq!(parse_value("# just a comment\n").unwrap().0, Value::Null);
    }
}
