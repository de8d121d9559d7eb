//! Reading a few numbers out of a JSON document without building it.
//!
//! Deserializing a response with serde to keep only its `usage` costs as many instructions
//! as the rest of a forwarded request's path (callgrind, bench/README.md 2026-11-30): every
//! key is decoded and checked as UTF-8 on the way. The gateway needs a handful of token
//! counts, so this cursor walks objects member by member, skipping the values it is not asked
//! for (strings whole, nesting counted) and reading unsigned integers. Keys are compared as
//! serde_json compares them: after unescaping (`"us\u0061ge"` is `usage`), whatever the
//! whitespace between tokens. What it cannot decide exactly as serde_json would (a number
//! with a fraction or exponent, a duplicate field, a lone surrogate, broken punctuation) it
//! hands back as *undecided*, and the caller falls back to serde; its answers are tested
//! against serde's on generated documents (`usage/differential.rs`). Members the gateway
//! does not read are skipped, not validated: a malformed value there (`[1}`) is passed over
//! where serde would refuse the whole document.

/// The index of the quote that closes the string whose contents start at `start`; a
/// backslash escapes the byte after it. `None` when the string does not end.
fn string_end(json: &[u8], start: usize) -> Option<usize> {
    let mut j = start;
    loop {
        let k = j + memchr::memchr2(b'"', b'\\', json.get(j..)?)?;
        if json[k] == b'"' {
            return Some(k);
        }
        j = k + 2;
    }
}

/// A cursor over JSON text that reads only the shapes it can read exactly. Every method
/// returns `None` for input it will not decide (the caller then asks serde), never a guess.
pub(crate) struct Cursor<'a> {
    json: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `json`.
    pub(crate) fn new(json: &'a [u8]) -> Self {
        Self { json, at: 0 }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.json.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.json.get(self.at).copied()
    }

    /// Consumes `byte` if it comes next (after whitespace).
    pub(crate) fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Consumes the literal `lit` (`null`, `true`, `false`) if it comes next, whole.
    pub(crate) fn eat_literal(&mut self, lit: &[u8]) -> bool {
        self.skip_ws();
        let end = self.at + lit.len();
        if self.json.get(self.at..end) == Some(lit) && !self.json.get(end).is_some_and(is_word) {
            self.at = end;
            true
        } else {
            false
        }
    }

    /// A string with no escape in it, without its quotes. `None` for an escape, a missing
    /// quote or an unterminated string.
    pub(crate) fn plain_string(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        let end = start + memchr::memchr2(b'"', b'\\', self.json.get(start..)?)?;
        if self.json[end] != b'"' {
            return None;
        }
        self.at = end + 1;
        Some(&self.json[start..end])
    }

    /// An object key as serde_json reads it: the string's bytes, unescaped into `buf` when it
    /// has escapes. A key longer than `buf` once unescaped is returned as [`LONG_KEY`], which
    /// equals no key the gateway reads. `None` for a missing quote, an unterminated string, a
    /// bad escape or a lone surrogate (serde refuses those).
    pub(crate) fn key<'k>(&mut self, buf: &'k mut [u8; KEY_BUF]) -> Option<&'k [u8]>
    where
        'a: 'k,
    {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        let end = string_end(self.json, start)?;
        self.at = end + 1;
        let raw = &self.json[start..end];
        if memchr::memchr(b'\\', raw).is_none() {
            return Some(raw);
        }
        unescape(raw, buf)
    }

    /// The byte offset of the cursor in the document.
    pub(crate) fn pos(&self) -> usize {
        self.at
    }

    /// True when only whitespace is left: serde refuses trailing characters.
    pub(crate) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// `null` (`Some(None)`) or an unsigned integer in JSON's grammar (no sign, fraction,
    /// exponent or leading zero) that fits `u64`: what serde reads into an `Option<u64>`
    /// without error. `None` (undecided) for anything else.
    pub(crate) fn count(&mut self) -> Option<Option<u64>> {
        if self.eat_literal(b"null") {
            return Some(None);
        }
        self.skip_ws();
        let digits = self.json[self.at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let text = &self.json[self.at..self.at + digits];
        let after = self.json.get(self.at + digits);
        if digits == 0
            || (digits > 1 && text[0] == b'0')
            || after.is_some_and(|b| matches!(b, b'.' | b'e' | b'E') || is_word(b))
        {
            return None;
        }
        let n = text.iter().try_fold(0u64, |n, d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })?;
        self.at += digits;
        Some(Some(n))
    }

    /// Skips one value of any kind. Strings and nesting are tracked; numbers and literals are
    /// checked only for their characters. `None` when the value does not end.
    pub(crate) fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.at = string_end(self.json, self.at + 1)? + 1;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.json.get(self.at)? {
                        b'"' => self.at = string_end(self.json, self.at + 1)?,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            b't' | b'f' | b'n' => {
                if !(self.eat_literal(b"true")
                    || self.eat_literal(b"false")
                    || self.eat_literal(b"null"))
                {
                    return None;
                }
            }
            b'-' | b'0'..=b'9' => {
                let n = self.json[self.at..]
                    .iter()
                    .take_while(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .count();
                self.at += n;
            }
            _ => return None,
        }
        Some(())
    }

    /// Walks an object: `member(key, key_start, cursor)` is called with the cursor at each
    /// member's value, and must consume it; `key` is unescaped ([`Cursor::key`]) and
    /// `key_start` is the offset of its opening quote. `None` (undecided) for anything else
    /// than an object, an undecidable key, broken punctuation, or when `member` returns `None`.
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&[u8], usize, &mut Self) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        let mut buf = [0u8; KEY_BUF];
        loop {
            self.skip_ws();
            let key_start = self.at;
            let key = self.key(&mut buf)?;
            if !self.eat(b':') {
                return None;
            }
            member(key, key_start, self)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }

    /// Walks the object at the cursor, reading the member named `key` with `read` (which must
    /// consume its value) and skipping the others: `Some(None)` when there is no such member.
    /// `None` (undecided) as for [`Cursor::object`], when `read` is, and for a key given twice
    /// (serde refuses duplicate fields).
    pub(crate) fn member<T>(
        &mut self,
        key: &[u8],
        mut read: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        let mut out = None;
        self.object(|k, _, c| {
            if k != key {
                return c.skip_value();
            }
            if out.is_some() {
                return None;
            }
            out = Some(read(c)?);
            Some(())
        })?;
        Some(out)
    }

    /// `Some(true)` for an empty array (consumed), `Some(false)` for any other array (skipped),
    /// `None` for a value that is not an array.
    pub(crate) fn array_is_empty(&mut self) -> Option<bool> {
        if self.peek()? != b'[' {
            return None;
        }
        let mut j = self.at + 1;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.json.get(j) {
            j += 1;
        }
        if self.json.get(j) == Some(&b']') {
            self.at = j + 1;
            return Some(true);
        }
        self.skip_value()?;
        Some(false)
    }

    /// Reads `null` (`Some(None)`) or an object whose members named in `wanted` are counts
    /// ([`Cursor::count`]), skipping the others: `out[i]` is `wanted[i]`'s count, `None` when
    /// absent or `null`. `None` (undecided) as for [`Cursor::object`], for a wanted member
    /// that is not a count, and for a wanted member given twice (serde refuses duplicate
    /// fields).
    pub(crate) fn counts<const N: usize>(
        &mut self,
        wanted: [&[u8]; N],
    ) -> Option<Option<[Option<u64>; N]>> {
        if self.eat_literal(b"null") {
            return Some(None);
        }
        let mut out = [None; N];
        let mut seen = [false; N];
        self.object(|key, _, c| match wanted.iter().position(|w| *w == key) {
            Some(i) if !std::mem::replace(&mut seen[i], true) => {
                out[i] = c.count()?;
                Some(())
            }
            Some(_) => None,
            None => c.skip_value(),
        })?;
        Some(Some(out))
    }
}

/// Reads the whole of `json` with `read`, as serde's `from_slice` would: `None` (undecided)
/// when `read` is or when anything but whitespace follows the value.
pub(crate) fn document<'a, T>(
    json: &'a [u8],
    read: impl FnOnce(&mut Cursor<'a>) -> Option<T>,
) -> Option<T> {
    let mut c = Cursor::new(json);
    let out = read(&mut c)?;
    c.at_end().then_some(out)
}

/// Room for an unescaped key: longer than every key the gateway reads.
pub(crate) const KEY_BUF: usize = 48;

/// What [`Cursor::key`] returns for a key too long to be one the gateway reads (`0xFF` is
/// never part of UTF-8 text, so no real key equals it).
pub(crate) const LONG_KEY: &[u8] = &[0xFF];

/// `raw` (a JSON string's contents with at least one backslash) unescaped into `buf` as
/// UTF-8, as serde_json does; [`LONG_KEY`] when it does not fit; `None` for a bad escape or a
/// lone surrogate.
fn unescape<'k>(raw: &[u8], buf: &'k mut [u8; KEY_BUF]) -> Option<&'k [u8]> {
    let mut n = 0;
    let mut i = 0;
    let mut put = |bytes: &[u8], n: &mut usize| -> bool {
        let Some(dst) = buf.get_mut(*n..*n + bytes.len()) else {
            return false;
        };
        dst.copy_from_slice(bytes);
        *n += bytes.len();
        true
    };
    while let Some(&b) = raw.get(i) {
        let fits = if b != b'\\' {
            i += 1;
            put(&[b], &mut n)
        } else {
            let e = *raw.get(i + 1)?;
            i += 2;
            let simple = match e {
                b'"' => b'"',
                b'\\' => b'\\',
                b'/' => b'/',
                b'b' => 0x08,
                b'f' => 0x0C,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => 0,
                _ => return None,
            };
            if e != b'u' {
                put(&[simple], &mut n)
            } else {
                let hi = hex4(raw.get(i..i + 4)?)?;
                i += 4;
                let code = match hi {
                    0xD800..=0xDBFF => {
                        if raw.get(i..i + 2) != Some(b"\\u") {
                            return None;
                        }
                        let lo = hex4(raw.get(i + 2..i + 6)?)?;
                        if !(0xDC00..=0xDFFF).contains(&lo) {
                            return None;
                        }
                        i += 6;
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => hi,
                };
                let ch = char::from_u32(code)?;
                put(ch.encode_utf8(&mut [0u8; 4]).as_bytes(), &mut n)
            }
        };
        if !fits {
            return Some(LONG_KEY);
        }
    }
    Some(&buf[..n])
}

/// Four hex digits as a number.
fn hex4(h: &[u8]) -> Option<u32> {
    h.iter()
        .try_fold(0u32, |acc, d| Some(acc * 16 + char::from(*d).to_digit(16)?))
}

/// A byte that would continue a number or literal (so `nullx` or `12a` is not one).
fn is_word(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_compared_unescaped() {
        let mut buf = [0u8; KEY_BUF];
        for (json, key) in [
            (&br#""usage""#[..], &b"usage"[..]),
            (br#""us\u0061ge""#, b"usage"),
            (br#""\u0075\u0073\u0061\u0067\u0065""#, b"usage"),
            (br#""a\"b\\c\/d\n""#, b"a\"b\\c/d\n"),
            (br#""\u00e9\ud83d\ude00""#, "\u{e9}\u{1F600}".as_bytes()),
        ] {
            assert_eq!(Cursor::new(json).key(&mut buf), Some(key), "{json:?}");
        }
        let long = format!("\"{}\\n\"", "k".repeat(KEY_BUF));
        assert_eq!(Cursor::new(long.as_bytes()).key(&mut buf), Some(LONG_KEY));
        for bad in [
            &br#""\ud800""#[..],
            br#""\udc00x""#,
            br#""\ud800\u0041""#,
            br#""\x""#,
            br#""\u12""#,
        ] {
            assert_eq!(Cursor::new(bad).key(&mut buf), None, "{bad:?}");
        }
    }

    #[test]
    fn objects_walk_members_whatever_the_whitespace() {
        let json = b" {\n  \"a\" : 1 ,\t\"b\":{\"c\": [1, \"}\"]},\r\n \"d\"\n:\nnull\n}\n";
        let mut seen = Vec::new();
        let mut c = Cursor::new(json);
        c.object(|key, start, c| {
            seen.push((key.to_vec(), json[start]));
            c.skip_value()
        })
        .unwrap();
        assert!(c.at_end());
        let keys: Vec<&[u8]> = seen.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, [&b"a"[..], b"b", b"d"]);
        assert!(seen.iter().all(|(_, q)| *q == b'"'));
    }

    #[test]
    fn strings_end_at_the_first_unescaped_quote() {
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 300] {
            let body = "a".repeat(len);
            let json = format!("\"{body}\" rest");
            assert_eq!(string_end(json.as_bytes(), 1), Some(len + 1), "{len}");
            let escaped = format!("\"{body}\\\"{body}\\\\\"");
            assert_eq!(
                string_end(escaped.as_bytes(), 1),
                Some(escaped.len() - 1),
                "{escaped}"
            );
            assert_eq!(string_end(format!("\"{body}").as_bytes(), 1), None);
            assert_eq!(string_end(format!("\"{body}\\").as_bytes(), 1), None);
        }
    }

    #[test]
    fn counts_read_wanted_members_and_skip_the_rest() {
        let json = br#" { "a" : 12 , "skip": {"x":[1,"]}",{"a":9}]}, "s":"q\"}", "b":null, "n":-1.5e3, "t":true } tail"#;
        let mut c = Cursor::new(json);
        assert_eq!(
            c.counts([b"a", b"b", b"c"]),
            Some(Some([Some(12), None, None]))
        );
        assert_eq!(c.peek(), Some(b't'));
        assert_eq!(Cursor::new(b"null").counts([b"a"]), Some(None));
        assert_eq!(Cursor::new(b"{}").counts([b"a"]), Some(Some([None])));
        assert_eq!(
            Cursor::new(br#"{"a":18446744073709551615}"#).counts([b"a"]),
            Some(Some([Some(u64::MAX)]))
        );
    }

    #[test]
    fn counts_leave_undecided_what_serde_would_judge_differently() {
        for json in [
            &br#"{"a":1,"a":2}"#[..],         // duplicate field
            br#"{"a":1.0}"#,                  // a float
            br#"{"a":1e3}"#,                  // an exponent
            br#"{"a":-1}"#,                   // negative
            br#"{"a":01}"#,                   // leading zero
            br#"{"a":18446744073709551616}"#, // over u64
            br#"{"a":"1"}"#,                  // a string
            br#"{"\ud800":1}"#,               // a lone surrogate in a key
            br#"{"a":1"#,                     // unterminated
            br#"{"a":1 "b":2}"#,              // no comma
            br#"{"a":nul}"#,                  // broken literal
            br#"{"b":nullx}"#,                // broken literal, skipped member
            br#"[1]"#,                        // not an object
            br#"7"#,
        ] {
            assert_eq!(
                Cursor::new(json).counts([b"a"]),
                None,
                "{}",
                String::from_utf8_lossy(json)
            );
        }
    }
}
