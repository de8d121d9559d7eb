//! Reading a few numbers out of a JSON document without building it.
//!
//! Deserializing a response with serde to keep only its `usage` costs as many instructions
//! as the rest of a forwarded request's path (callgrind, bench/README.md 2026-11-30): every
//! key is decoded and checked as UTF-8 on the way. The gateway needs a handful of token
//! counts, so these scanners find a top-level key by skipping strings and nesting, then read
//! objects of unsigned integers. What they cannot decide exactly as serde_json would (an escaped
//! key, a float, a duplicate field, broken punctuation) they hand back as *undecided*, and
//! the caller falls back to serde; their answers are tested against serde's on the same
//! inputs. Members the gateway does not read are skipped, not validated: a malformed value
//! there (`[1}`) is passed over where serde would refuse the whole object.

/// What follows `"key":` in the top-level object of `json` (the key's value and the rest of
/// the document), or `None` when the top-level object has no such key written without
/// escapes. Strings are skipped whole (escaped quotes included) and nesting is counted, so a
/// key of a nested object or text inside a string never matches. Nothing else is validated.
pub(crate) fn after_top_level_key<'a>(json: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&byte) = json.get(i) {
        match byte {
            b'"' => {
                let start = i + 1;
                let end = string_end(json, start)?;
                i = end + 1;
                if depth == 1 {
                    let rest = json.get(i..)?;
                    let colon = rest
                        .iter()
                        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
                    if rest[colon] == b':' && &json[start..end] == key {
                        return rest.get(colon + 1..);
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

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

    /// Walks an object: `member(key, cursor)` is called with the cursor at each member's
    /// value, and must consume it. `None` (undecided) for anything else than an object, a
    /// key with an escape, broken punctuation, or when `member` returns `None`.
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&'a [u8], &mut Self) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.plain_string()?;
            if !self.eat(b':') {
                return None;
            }
            member(key, self)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
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
        self.object(|key, c| match wanted.iter().position(|w| *w == key) {
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

/// A byte that would continue a number or literal (so `nullx` or `12a` is not one).
fn is_word(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_returns_what_follows_the_key() {
        let json = br#"{"x":{"usage":1},"y":["usage",{"usage":2}],"usage" :[3],"z":4}"#;
        assert_eq!(
            after_top_level_key(json, b"usage"),
            Some(&br#"[3],"z":4}"#[..])
        );
        assert_eq!(after_top_level_key(json, b"z"), Some(&b"4}"[..]));
        assert_eq!(after_top_level_key(json, b"w"), None);
        assert_eq!(after_top_level_key(br#"["usage",1]"#, b"usage"), None);
        assert_eq!(after_top_level_key(br#"{"a":"\"#, b"usage"), None);
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
            br#"{"\u0061":1}"#,               // escaped key
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
