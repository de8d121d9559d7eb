//! Line/column of a key path in the original YAML text.
//!
//! serde_yaml_ng does not expose node positions, but it stamps the position of the current
//! node on any error raised by a visitor (`Error::location`). [`locate`] re-reads the text with a
//! seed that walks down the path, skipping other entries, and raises a marker error at the
//! target; the error's location is the target's position. Each call re-parses the text, so it
//! is used only to build error and warning messages.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::path::{KeyPath, Segment};

/// Which position of the target to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The key of the last segment (`rpm:`), or the item for an index.
    Key,
    /// The value of the last segment.
    Value,
}

const HIT: &str = "\u{0}tollgate-locate-hit";
const MISS: &str = "\u{0}tollgate-locate-miss";

/// 1-based `(line, column)` of `path` in `text`. When the full path is not in the text (the
/// value came from a `<<` merge, or a key is missing), the position of the deepest ancestor
/// that is, as a key.
pub(crate) fn locate(text: &str, path: &KeyPath, mode: Mode) -> Option<(usize, usize)> {
    let segs = path.segments();
    for len in (1..=segs.len()).rev() {
        let m = if len == segs.len() { mode } else { Mode::Key };
        match locate_exact(text, &segs[..len], m) {
            Found::At(l, c) => return Some((l, c)),
            Found::Missing => continue,
            Found::Unknown => return None,
        }
    }
    None
}

enum Found {
    At(usize, usize),
    Missing,
    Unknown,
}

fn locate_exact(text: &str, segs: &[Segment], mode: Mode) -> Found {
    let de = serde_yaml_ng::Deserializer::from_str(text);
    match (Walk { segs, mode }).deserialize(de) {
        Ok(()) => Found::Unknown,
        Err(e) => {
            let msg = e.to_string();
            if msg.contains(HIT) {
                match e.location() {
                    Some(l) => Found::At(l.line(), l.column()),
                    None => Found::Unknown,
                }
            } else if msg.contains(MISS) {
                Found::Missing
            } else {
                Found::Unknown
            }
        }
    }
}

struct Walk<'p> {
    segs: &'p [Segment],
    mode: Mode,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.segs.is_empty() {
            d.deserialize_any(HitVisitor)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping or sequence")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Segment::Key(want) = &self.segs[0] else {
            return Err(de::Error::custom(MISS));
        };
        let last = self.segs.len() == 1;
        let hit_on_key = last && self.mode == Mode::Key;
        while let Some(matched) = map.next_key_seed(KeySeed { want, hit_on_key })? {
            if matched {
                return map.next_value_seed(Walk {
                    segs: &self.segs[1..],
                    mode: self.mode,
                });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Err(de::Error::custom(MISS))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Segment::Index(want) = self.segs[0] else {
            return Err(de::Error::custom(MISS));
        };
        for _ in 0..want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Err(de::Error::custom(MISS));
            }
        }
        match seq.next_element_seed(Walk {
            segs: &self.segs[1..],
            mode: self.mode,
        })? {
            Some(()) => Ok(()),
            None => Err(de::Error::custom(MISS)),
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(MISS))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(MISS))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(MISS))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(MISS))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(MISS))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(MISS))
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(MISS))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(MISS))
    }
}

/// Deserializes a key; `Ok(true)` when it equals `want` (raises [`HIT`] instead when
/// `hit_on_key`, so the error carries the key's position).
struct KeySeed<'a> {
    want: &'a str,
    hit_on_key: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.check(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

impl KeySeed<'_> {
    fn check<E: de::Error>(&self, k: &str) -> Result<bool, E> {
        if k == self.want {
            if self.hit_on_key {
                return Err(E::custom(HIT));
            }
            return Ok(true);
        }
        Ok(false)
    }
}

/// Raises [`HIT`] on whatever node it is given.
struct HitVisitor;

impl<'de> Visitor<'de> for HitVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(HIT))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(HIT))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(HIT))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(HIT))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(HIT))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(HIT))
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(HIT))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HIT))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HIT))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(de::Error::custom(HIT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Y: &str = "\
model_list:
  - model_name: a
    litellm_params:
      model: openai/a
  - model_name: b
    litellm_params:
      model: openai/b
      rpm: \"abc\"
general_settings:
  master_key: x
";

    fn p(s: &[&str]) -> KeyPath {
        let mut k = KeyPath::root();
        for x in s {
            k = match x.parse::<usize>() {
                Ok(i) => k.index(i),
                Err(_) => k.key(*x),
            };
        }
        k
    }

    #[test]
    fn finds_values_and_keys() {
        let rpm = p(&["model_list", "1", "litellm_params", "rpm"]);
        assert_eq!(locate(Y, &rpm, Mode::Value), Some((8, 12)));
        assert_eq!(locate(Y, &rpm, Mode::Key), Some((8, 7)));
        let lp = p(&["model_list", "1", "litellm_params"]);
        assert_eq!(locate(Y, &lp, Mode::Key), Some((6, 5)));
        assert_eq!(
            locate(Y, &p(&["model_list", "1"]), Mode::Value),
            Some((5, 5))
        );
        assert_eq!(
            locate(Y, &p(&["general_settings", "master_key"]), Mode::Value),
            Some((10, 15))
        );
    }

    #[test]
    fn missing_tail_falls_back_to_ancestor_key() {
        let q = p(&["model_list", "0", "litellm_params", "api_key"]);
        assert_eq!(locate(Y, &q, Mode::Value), Some((3, 5)));
        assert_eq!(locate(Y, &p(&["nope"]), Mode::Key), None);
    }
}
