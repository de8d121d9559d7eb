//! Lenient field deserializers matching what PyYAML + LiteLLM accept.
//!
//! LiteLLM reads config.yaml with PyYAML (YAML 1.1) and then mostly casts values itself, so real
//! configs contain `timeout: "30"`, `drop_params: True`, `rpm: os.environ/RPM` (a string after
//! substitution), `api_version: 2024-06-01` and `callbacks: prometheus`. These helpers accept
//! those forms and reject the rest with a message that names what was expected.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};

/// A number as written in YAML (or parsed from a numeric string).
#[derive(Clone, Copy)]
enum Num {
    I(i64),
    U(u64),
    F(f64),
}

struct NumVisitor;

impl<'de> Visitor<'de> for NumVisitor {
    type Value = Option<Num>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or a numeric string")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(Num::I(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(Num::U(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(Num::F(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let t = v.trim();
        if let Ok(n) = t.parse::<u64>() {
            return Ok(Some(Num::U(n)));
        }
        if let Ok(n) = t.parse::<i64>() {
            return Ok(Some(Num::I(n)));
        }
        match t.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(Some(Num::F(n))),
            _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
        }
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

/// `Option<f64>` from a number, numeric string or null. Units are the field's (seconds, USD...).
pub(crate) fn opt_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(d.deserialize_any(NumVisitor)?.map(|n| match n {
        Num::I(v) => v as f64,
        Num::U(v) => v as f64,
        Num::F(v) => v,
    }))
}

/// `Option<u64>` from a non-negative integer (or integral float / numeric string) or null.
pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let Some(n) = d.deserialize_any(NumVisitor)? else {
        return Ok(None);
    };
    match n {
        Num::U(v) => Ok(Some(v)),
        Num::I(v) => Err(de::Error::custom(format_args!(
            "invalid value: {v}, expected a non-negative integer"
        ))),
        Num::F(v) if v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64 => Ok(Some(v as u64)),
        Num::F(v) => Err(de::Error::custom(format_args!(
            "invalid value: {v}, expected a non-negative integer"
        ))),
    }
}

/// `Option<u32>` like [`opt_u64`], with a range check.
pub(crate) fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match opt_u64(d)? {
        None => Ok(None),
        Some(v) => u32::try_from(v).map(Some).map_err(|_| {
            de::Error::custom(format_args!(
                "invalid value: {v}, expected at most {}",
                u32::MAX
            ))
        }),
    }
}

/// `Option<u16>` like [`opt_u64`] (ports, HTTP status codes).
pub(crate) fn opt_u16<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    match opt_u64(d)? {
        None => Ok(None),
        Some(v) => u16::try_from(v).map(Some).map_err(|_| {
            de::Error::custom(format_args!("invalid value: {v}, expected at most 65535"))
        }),
    }
}

struct BoolVisitor;

impl<'de> Visitor<'de> for BoolVisitor {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a boolean (true/false, yes/no, on/off)")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        match v {
            0 => Ok(Some(false)),
            1 => Ok(Some(true)),
            _ => Err(E::invalid_value(Unexpected::Unsigned(v), &self)),
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        match v {
            0 => Ok(Some(false)),
            1 => Ok(Some(true)),
            _ => Err(E::invalid_value(Unexpected::Signed(v), &self)),
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        // YAML 1.1 (PyYAML) booleans, plus what Python's str-to-bool helpers accept.
        match v.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "on" | "1" => Ok(Some(true)),
            "false" | "no" | "n" | "off" | "0" => Ok(Some(false)),
            _ => Err(E::invalid_value(Unexpected::Str(v), &self)),
        }
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(BoolVisitor)
    }
}

/// `Option<bool>` from a YAML boolean, a YAML 1.1 boolean word, 0/1, or null.
pub(crate) fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    d.deserialize_any(BoolVisitor)
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(StrVisitor)
    }
}

/// `Option<String>` from a string or a scalar (numbers/booleans keep their text, e.g.
/// `api_version: 2024` or a numeric `model_info.id`), or null.
pub(crate) fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(StrVisitor)
}

/// Required `String` from a string or scalar; null is an error.
pub(crate) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(StrVisitor)?
        .ok_or_else(|| de::Error::custom("invalid type: null, expected a string"))
}

struct StrListVisitor;

impl<'de> Visitor<'de> for StrListVisitor {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of strings or a single string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(vec![v.to_string()])
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(StrListVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element_seed(OptStringSeed)? {
            // A null item (e.g. an unset os.environ/ reference) is dropped.
            if let Some(s) = item {
                out.push(s);
            }
        }
        Ok(out)
    }
}

struct OptStringSeed;

impl<'de> de::DeserializeSeed<'de> for OptStringSeed {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        opt_string(d)
    }
}

/// `Vec<String>` from a list of scalars, a single string (one element) or null (empty).
/// LiteLLM accepts `callbacks: prometheus` as well as `callbacks: ["prometheus"]`.
pub(crate) fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    d.deserialize_any(StrListVisitor)
}

struct StrMapVisitor;

impl<'de> Visitor<'de> for StrMapVisitor {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping of strings")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(StrMapVisitor)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(k) = map.next_key_seed(OptStringSeed)? {
            let v = map.next_value_seed(OptStringSeed)?;
            if let (Some(k), Some(v)) = (k, v) {
                out.insert(k, v);
            }
        }
        Ok(out)
    }
}

/// `BTreeMap<String, String>` from a mapping of scalars (numbers keep their text; null values are
/// dropped) or null (empty). Used for headers and `environment_variables`.
pub(crate) fn string_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_any(StrMapVisitor)
}

/// A list of any values; a single value is a one-element list and null an empty one.
pub(crate) fn value_list<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<serde_json::Value>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => Vec::new(),
        serde_json::Value::Array(v) => v,
        other => vec![other],
    })
}

/// `T::default()` when the YAML value is null (`litellm_settings:` with nothing under it).
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// One fallback rule set: `[{"gpt-4o": ["claude", "gpt-4o-mini"]}, ...]`. A single string value is
/// accepted as a one-element list.
pub(crate) fn fallbacks<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<BTreeMap<String, Vec<String>>>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Rule(#[serde(deserialize_with = "rule_map")] BTreeMap<String, Vec<String>>);

    fn rule_map<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, Vec<String>>, D::Error> {
        #[derive(serde::Deserialize)]
        struct Targets(#[serde(deserialize_with = "string_list")] Vec<String>);
        let m = BTreeMap::<String, Targets>::deserialize(d)?;
        Ok(m.into_iter().map(|(k, v)| (k, v.0)).collect())
    }

    let rules: Option<Vec<Rule>> = Option::deserialize(d)?;
    Ok(rules.unwrap_or_default().into_iter().map(|r| r.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    struct T {
        #[serde(default, deserialize_with = "opt_f64")]
        f: Option<f64>,
        #[serde(default, deserialize_with = "opt_u64")]
        u: Option<u64>,
        #[serde(default, deserialize_with = "opt_bool")]
        b: Option<bool>,
        #[serde(default, deserialize_with = "string_list")]
        l: Vec<String>,
        #[serde(default, deserialize_with = "fallbacks")]
        fb: Vec<BTreeMap<String, Vec<String>>>,
    }

    fn t(y: &str) -> Result<T, serde_yaml_ng::Error> {
        serde_yaml_ng::from_str(y)
    }

    #[test]
    fn numbers_accept_numeric_strings() {
        let v = t("f: \"30.5\"\nu: '7'\n").unwrap();
        assert_eq!(v.f, Some(30.5));
        assert_eq!(v.u, Some(7));
        let v = t("f: 30\nu: 8.0\n").unwrap();
        assert_eq!(v.f, Some(30.0));
        assert_eq!(v.u, Some(8));
        let v = t("f: null\n").unwrap();
        assert_eq!(v.f, None);
    }

    #[test]
    fn numbers_reject_words_and_negatives() {
        let e = t("u: abc\n").unwrap_err().to_string();
        assert!(e.contains("\"abc\"") && e.contains("numeric"), "{e}");
        let e = t("u: -5\n").unwrap_err().to_string();
        assert!(e.contains("non-negative"), "{e}");
        assert!(t("u: 1.5\n").is_err());
    }

    #[test]
    fn bools_accept_yaml11_words() {
        assert_eq!(t("b: True").unwrap().b, Some(true));
        assert_eq!(t("b: \"no\"").unwrap().b, Some(false));
        assert_eq!(t("b: 'On'").unwrap().b, Some(true));
        assert!(t("b: maybe").is_err());
    }

    #[test]
    fn string_list_accepts_single_string() {
        assert_eq!(t("l: prometheus").unwrap().l, vec!["prometheus"]);
        assert_eq!(t("l: [a, 2]").unwrap().l, vec!["a", "2"]);
    }

    #[test]
    fn fallbacks_shape() {
        let v = t("fb: [{\"gpt-4o\": [\"a\", \"b\"]}, {x: y}]").unwrap();
        assert_eq!(v.fb[0]["gpt-4o"], vec!["a", "b"]);
        assert_eq!(v.fb[1]["x"], vec!["y"]);
    }
}
