//! What counts as a token count in an upstream's `usage`, one rule for every reader.
//!
//! JSON has one number type; serde's `u64` takes only integers written without a fraction
//! or exponent and refuses `1000.0` and `1e3`. Python servers that compute their counts
//! with floats write exactly those, and LiteLLM takes them (pydantic reads an integer-valued
//! float into an `int` field). The gateway's rule, for the fast scanner and for the serde
//! readers alike:
//!
//! - an integer written as one (`1000`) counts when it fits `u64`;
//! - a number with a fraction or exponent (`1000.0`, `1e3`, `10000e-1`) counts when its value,
//!   read as an IEEE double, is a whole number from 0 to 2^53 (9,007,199,254,740,992: every
//!   integer up to there is exact in a double);
//! - `null` or an absent member is no count (0 once defaulted);
//! - anything else (negative, fractional, too large, a string) is not a count, and the whole
//!   usage object is unreadable, as serde refuses a struct with a field it cannot read: the
//!   request is then billed from the gateway's estimate.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// The largest float value taken as a count: 2^53.
pub const MAX_FLOAT_COUNT: f64 = 9_007_199_254_740_992.0;

/// A token count read by the rule above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Count(pub u64);

/// `v` as a count by the rule above; `None` for anything else.
pub fn float_count(v: f64) -> Option<u64> {
    // `as` is exact here: a whole number in 0..=2^53.
    (v.fract() == 0.0 && (0.0..=MAX_FLOAT_COUNT).contains(&v)).then_some(v as u64)
}

/// A `serde_json::Value` as a count by the rule above (the translators read usage as values).
pub fn value_count(v: &serde_json::Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_f64().and_then(float_count))
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a token count (a whole number)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                u64::try_from(v)
                    .map(Count)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                float_count(v)
                    .map(Count)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Option<u64> {
        serde_json::from_str::<Count>(json).ok().map(|c| c.0)
    }

    #[test]
    fn integers_and_integer_valued_floats_count() {
        assert_eq!(read("1000"), Some(1000));
        assert_eq!(read("1000.0"), Some(1000));
        assert_eq!(read("1e3"), Some(1000));
        assert_eq!(read("1E+3"), Some(1000));
        assert_eq!(read("10000e-1"), Some(1000));
        assert_eq!(read("0.0"), Some(0));
        assert_eq!(read("-0"), Some(0));
        assert_eq!(read("18446744073709551615"), Some(u64::MAX));
        assert_eq!(read("9007199254740992.0"), Some(1 << 53));
    }

    #[test]
    fn anything_else_is_not_a_count() {
        for json in [
            "-1",
            "1.5",
            "1e-3",
            "18446744073709551616",
            "9007199254740994.0",
            "\"5\"",
            "true",
            "[]",
        ] {
            assert_eq!(read(json), None, "{json}");
        }
        assert_eq!(value_count(&serde_json::json!(12.0)), Some(12));
        assert_eq!(value_count(&serde_json::json!(-3)), None);
        assert_eq!(value_count(&serde_json::json!("7")), None);
    }
}
