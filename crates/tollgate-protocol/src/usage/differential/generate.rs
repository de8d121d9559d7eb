//! Generated usage documents and the three serialisers (compact, pretty, Python).

use proptest::prelude::*;

use crate::usage::Usage;

// ---- generated documents --------------------------------------------------------------

/// A JSON value; numbers and literals as their text.
#[derive(Debug, Clone)]
pub(super) enum J {
    Raw(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// How a count is written.
#[derive(Debug, Clone)]
pub(super) enum Num {
    Int(u64),
    Float(u64),
    Exp(u64),
    FracExp(u64),
    Negative(u64),
    Half(u64),
    Text(u64),
}

impl Num {
    /// The count the rule gives it, `None` for an invalid one.
    fn value(&self) -> Option<u64> {
        match *self {
            Num::Int(v) => Some(v),
            Num::Float(v) | Num::Exp(v) | Num::FracExp(v) => Some(v),
            Num::Negative(_) | Num::Half(_) | Num::Text(_) => None,
        }
    }

    fn plain(&self) -> bool {
        matches!(self, Num::Int(_))
    }

    fn json(&self) -> J {
        J::Raw(match *self {
            Num::Int(v) => v.to_string(),
            Num::Float(v) => format!("{v}.0"),
            Num::Exp(v) => {
                let (mut m, mut e) = (v, 0);
                while m >= 10 && m % 10 == 0 {
                    m /= 10;
                    e += 1;
                }
                if e % 2 == 0 {
                    format!("{m}e{e}")
                } else {
                    format!("{m}E+{e}")
                }
            }
            Num::FracExp(v) => format!("{v}0e-1"),
            Num::Negative(v) => format!("-{}", v + 1),
            Num::Half(v) => format!("{v}.5"),
            Num::Text(v) => return J::Str(v.to_string()),
        })
    }
}

/// A member that is a count: written, `null`, or absent.
#[derive(Debug, Clone)]
pub(super) enum Field {
    Num(Num),
    Null,
    Absent,
}

impl Field {
    fn value(&self) -> Option<u64> {
        match self {
            Field::Num(n) => n.value(),
            _ => Some(0),
        }
    }
    fn valid(&self) -> bool {
        self.value().is_some()
    }
    fn plain(&self) -> bool {
        !matches!(self, Field::Num(n) if !n.plain())
    }
    fn json(&self) -> Option<J> {
        match self {
            Field::Num(n) => Some(n.json()),
            Field::Null => Some(J::Raw("null".into())),
            Field::Absent => None,
        }
    }
}

pub(super) fn num() -> impl Strategy<Value = Num> {
    let small = prop_oneof![4 => 0u64..5_000, 2 => 0u64..10_000_000, 1 => Just(1u64 << 53)];
    let any_int = prop_oneof![6 => small.clone(), 1 => any::<u64>()];
    prop_oneof![
        12 => any_int.prop_map(Num::Int),
        3 => small.clone().prop_map(Num::Float),
        3 => small.clone().prop_map(Num::Exp),
        1 => small.clone().prop_map(Num::FracExp),
        1 => small.clone().prop_map(Num::Negative),
        1 => small.clone().prop_map(Num::Half),
        1 => small.prop_map(Num::Text),
    ]
}

pub(super) fn field() -> impl Strategy<Value = Field> {
    prop_oneof![6 => num().prop_map(Field::Num), 1 => Just(Field::Null), 2 => Just(Field::Absent)]
}

/// Characters of generated strings: JSON's escapes, braces, non-ASCII, the word `usage`.
const CHARS: &[char] = &[
    'a', 'z', ' ', '"', '\\', '/', '{', '}', '[', ']', ':', ',', '\n', '\t', '\u{1}', 'é', '中',
    '😀', 'u', 's', 'g', 'e',
];

pub(super) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(CHARS), 0..10)
            .prop_map(|v| v.into_iter().collect::<String>()),
        1 => Just(r#""usage": {"prompt_tokens": 99}"#.to_string()),
    ]
}

/// Unknown values: literals, numbers, strings, nested arrays and objects.
pub(super) fn junk() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Raw("null".into())),
        Just(J::Raw("true".into())),
        Just(J::Raw("-1.5e-3".into())),
        (0u64..1000).prop_map(|v| J::Raw(v.to_string())),
        text().prop_map(J::Str),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(J::Arr),
            prop::collection::vec(
                (
                    prop::sample::select(&["usage", "prompt_tokens", "x", "type"][..]),
                    inner
                ),
                0..3
            )
            .prop_map(|m| J::Obj(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// Unknown members, under keys the readers do not read at that level.
pub(super) fn extras() -> impl Strategy<Value = Vec<(String, J)>> {
    prop::collection::vec(
        (
            prop::sample::select(
                &[
                    "total_tokens",
                    "audio_tokens",
                    "service_tier",
                    "x_usage",
                    "usage_",
                    "Usage",
                ][..],
            ),
            junk(),
        ),
        0..3,
    )
    .prop_map(|m| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The generated counts of one two-level (OpenAI, Responses) or flat (Anthropic) usage.
#[derive(Debug, Clone)]
pub(super) struct Counts {
    pub(super) fields: [Field; 5],
    /// Whether each `*_details` object is written at all (or `null`).
    pub(super) details: [Option<bool>; 2],
    pub(super) extras: Vec<(String, J)>,
    /// Write the first count twice (serde refuses the duplicate).
    pub(super) duplicate: bool,
}

pub(super) fn counts() -> impl Strategy<Value = Counts> {
    (
        [field(), field(), field(), field(), field()],
        [
            prop_oneof![3 => Just(Some(true)), 1 => Just(Some(false)), 1 => Just(None)],
            prop_oneof![3 => Just(Some(true)), 1 => Just(Some(false)), 1 => Just(None)],
        ],
        extras(),
        prop::bool::weighted(0.04),
    )
        .prop_map(|(fields, details, extras, duplicate)| Counts {
            fields,
            details,
            extras,
            duplicate,
        })
}

impl Counts {
    pub(super) fn clean(&self) -> bool {
        !self.duplicate && self.fields.iter().all(Field::valid)
    }
    pub(super) fn plain(&self) -> bool {
        self.fields.iter().all(Field::plain)
    }
    pub(super) fn v(&self, i: usize) -> u64 {
        self.fields[i].value().unwrap_or(0)
    }

    /// A two-level usage object under `names` (prompt, completion, prompt details,
    /// completion details); counts 2..4 sit in the details objects.
    pub(super) fn two_level(&self, names: [&str; 4]) -> J {
        let mut m = Vec::new();
        let put = |m: &mut Vec<(String, J)>, k: &str, f: &Field| {
            if let Some(j) = f.json() {
                m.push((k.to_string(), j));
            }
        };
        put(&mut m, names[0], &self.fields[0]);
        if self.duplicate {
            put(&mut m, names[0], &Field::Num(Num::Int(7)));
        }
        put(&mut m, names[1], &self.fields[1]);
        let details = |present: Option<bool>, members: Vec<(&str, &Field)>| match present {
            None => None,
            Some(false) => Some(J::Raw("null".into())),
            Some(true) => {
                let mut d: Vec<(String, J)> = members
                    .into_iter()
                    .filter_map(|(k, f)| Some((k.to_string(), f.json()?)))
                    .collect();
                d.push(("audio_tokens".into(), J::Raw("0".into())));
                Some(J::Obj(d))
            }
        };
        let pd = details(
            self.details[0],
            vec![
                ("cached_tokens", &self.fields[2]),
                ("cache_write_tokens", &self.fields[3]),
            ],
        );
        let cd = details(self.details[1], vec![("reasoning_tokens", &self.fields[4])]);
        if let Some(pd) = pd {
            m.push((names[2].into(), pd));
        }
        if let Some(cd) = cd {
            m.push((names[3].into(), cd));
        }
        m.extend(self.extras.iter().cloned());
        J::Obj(m)
    }

    /// What a clean two-level usage reads as.
    pub(super) fn two_level_usage(&self) -> Usage {
        let d = |i: usize, at: usize| {
            if self.details[at] == Some(true) {
                self.v(i)
            } else {
                0
            }
        };
        Usage {
            prompt_tokens: self.v(0),
            completion_tokens: self.v(1),
            cached_tokens: d(2, 0),
            cache_write_tokens: d(3, 0),
            reasoning_tokens: d(4, 1),
        }
    }

    /// A flat Anthropic usage object (counts 0..4).
    pub(super) fn anthropic(&self) -> J {
        let names = [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ];
        let mut m: Vec<(String, J)> = names
            .iter()
            .zip(&self.fields)
            .filter_map(|(k, f)| Some((k.to_string(), f.json()?)))
            .collect();
        if self.duplicate {
            m.push((names[1].into(), J::Raw("3".into())));
        }
        m.push(("service_tier".into(), J::Str("standard".into())));
        m.extend(self.extras.iter().cloned());
        J::Obj(m)
    }
}

// ---- the three serialisers ------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
pub(super) enum Style {
    Compact,
    Pretty,
    Python,
}

pub(super) fn style() -> impl Strategy<Value = Style> {
    prop_oneof![
        Just(Style::Compact),
        Just(Style::Pretty),
        Just(Style::Python)
    ]
}

/// How members are ordered and keys escaped, from one generated number (xorshift).
pub(super) struct Writer {
    style: Style,
    rng: u64,
    escape_keys: bool,
}

impl Writer {
    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn string(&mut self, s: &str, out: &mut String, is_key: bool) {
        out.push('"');
        for ch in s.chars() {
            let escape_ascii =
                is_key && self.escape_keys && self.rng != 0 && self.next().is_multiple_of(3);
            match ch {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c if escape_ascii || (!c.is_ascii() && matches!(self.style, Style::Python)) => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }

    fn write(&mut self, j: &J, out: &mut String, indent: usize) {
        let (comma, colon) = match self.style {
            Style::Compact => (",", ":"),
            Style::Python => (", ", ": "),
            Style::Pretty => (",", ": "),
        };
        let newline = |out: &mut String, n: usize| out.push_str(&format!("\n{}", "  ".repeat(n)));
        match j {
            J::Raw(s) => out.push_str(s),
            J::Str(s) => self.string(s, out, false),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    if matches!(self.style, Style::Pretty) {
                        newline(out, indent + 1);
                    }
                    self.write(item, out, indent + 1);
                }
                if matches!(self.style, Style::Pretty) && !items.is_empty() {
                    newline(out, indent);
                }
                out.push(']');
            }
            J::Obj(members) => {
                let mut members: Vec<&(String, J)> = members.iter().collect();
                let shuffle = if self.rng != 0 { members.len() } else { 0 };
                for i in (1..shuffle).rev() {
                    let k = (self.next() % (i as u64 + 1)) as usize;
                    members.swap(i, k);
                }
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    if matches!(self.style, Style::Pretty) {
                        newline(out, indent + 1);
                    }
                    self.string(k, out, true);
                    out.push_str(colon);
                    self.write(v, out, indent + 1);
                }
                if matches!(self.style, Style::Pretty) && !members.is_empty() {
                    newline(out, indent);
                }
                out.push('}');
            }
        }
    }
}

/// Style, member-order seed (0 keeps the written order), whether keys get `\u` escapes.
pub(super) fn writer() -> impl Strategy<Value = (Style, u64, bool)> {
    (
        style(),
        prop_oneof![1 => Just(0u64), 4 => any::<u64>()],
        any::<bool>(),
    )
}

pub(super) fn serialise(j: &J, (style, seed, escape_keys): (Style, u64, bool)) -> String {
    let mut w = Writer {
        style,
        rng: seed | 1,
        escape_keys,
    };
    if seed == 0 {
        w.rng = 0; // xorshift stays 0: no shuffle, no escapes
    }
    let mut out = String::new();
    w.write(j, &mut out, 0);
    out
}

pub(super) fn obj(members: Vec<(&str, J)>) -> J {
    J::Obj(
        members
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

pub(super) fn s(v: &str) -> J {
    J::Str(v.to_string())
}
