//! An ASCII fast path for tiktoken's pre-tokenization regexes (`o200k_base` and `cl100k_base`).
//!
//! tiktoken splits text with a regex before byte-pair encoding each piece; `tiktoken-rs` runs
//! that regex with `fancy-regex` (backtracking, for the `\s+(?!\S)` look-ahead), which is what
//! makes it take ~20–35 ms for a 100K-token prompt here. This module splits **pure-ASCII** text
//! by hand, piece for piece as the regexes do (the alternatives below, tried in order), and
//! [`segments`] cuts any text into independently encodable segments so that only segments
//! holding non-ASCII characters go through `tiktoken-rs`.
//!
//! `o200k_base` (gpt-4o and later):
//! ```text
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//! `cl100k_base` (gpt-4, gpt-3.5):
//! ```text
//! '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
//! ```
//! Exactness is checked against `tiktoken-rs` on random edge-case text in the tests.

/// Which regex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    O200k,
    Cl100k,
}

const UPPER: u8 = 1;
const LOWER: u8 = 2;
const DIGIT: u8 = 3;
const SPACE: u8 = 4; // \s without \r \n
const NEWLINE: u8 = 5; // \r \n
const OTHER: u8 = 6; // [^\s\p{L}\p{N}] in ASCII

const fn class_table() -> [u8; 128] {
    let mut t = [OTHER; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = if b.is_ascii_uppercase() {
            UPPER
        } else if b.is_ascii_lowercase() {
            LOWER
        } else if b.is_ascii_digit() {
            DIGIT
        } else if b == b'\r' || b == b'\n' {
            NEWLINE
        } else if b == b' ' || b == b'\t' || b == 0x0B || b == 0x0C {
            SPACE
        } else {
            OTHER
        };
        c += 1;
    }
    t
}

static CLASS: [u8; 128] = class_table();

#[inline]
fn class(s: &[u8], i: usize) -> u8 {
    // callers only pass ASCII text; a stray high byte counts as OTHER
    s.get(i)
        .map(|&b| if b < 128 { CLASS[b as usize] } else { OTHER })
        .unwrap_or(0)
}

#[inline]
fn is_ws(c: u8) -> bool {
    c == SPACE || c == NEWLINE
}

#[inline]
fn is_letter(c: u8) -> bool {
    c == UPPER || c == LOWER
}

/// Length of a contraction (`'s 't 're 've 'm 'll 'd`, any case) starting at `i`, or 0.
#[inline]
fn contraction(s: &[u8], i: usize) -> usize {
    if s.get(i) != Some(&b'\'') {
        return 0;
    }
    let a = s.get(i + 1).map(u8::to_ascii_lowercase);
    let b = s.get(i + 2).map(u8::to_ascii_lowercase);
    match (a, b) {
        (Some(b's' | b't' | b'm' | b'd'), _) => 2,
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
        _ => 0,
    }
}

#[inline]
fn run(s: &[u8], mut i: usize, pred: impl Fn(u8) -> bool) -> usize {
    while i < s.len() && pred(class(s, i)) {
        i += 1;
    }
    i
}

/// End of the piece starting at `i` in ASCII text `s`. `at_text_end`: whether `s` ends where
/// the whole text ends (for `$` and `(?!\S)`); otherwise `s` is followed by a non-whitespace char.
pub(crate) fn next_piece(p: Pattern, s: &[u8], i: usize, at_text_end: bool) -> usize {
    let c = class(s, i);
    if p == Pattern::Cl100k {
        let n = contraction(s, i);
        if n > 0 {
            return i + n;
        }
    }
    // letters, with an optional leading non-letter, non-digit, non-newline char
    let j = if c == SPACE || c == OTHER { i + 1 } else { i };
    if is_letter(class(s, j)) {
        let end = match p {
            Pattern::Cl100k => run(s, j, is_letter),
            Pattern::O200k => {
                let u = run(s, j, |c| c == UPPER);
                let l = run(s, u, |c| c == LOWER);
                let end = if l > u { l } else { u };
                end + contraction(s, end)
            }
        };
        return end;
    }
    if c == DIGIT {
        let mut e = i + 1;
        while e < i + 3 && class(s, e) == DIGIT {
            e += 1;
        }
        return e;
    }
    // punctuation run, optionally after one space, then trailing newlines
    let k = if s[i] == b' ' && class(s, i + 1) == OTHER {
        i + 1
    } else {
        i
    };
    if class(s, k) == OTHER {
        let mut e = run(s, k, |c| c == OTHER);
        while e < s.len()
            && (s[e] == b'\r' || s[e] == b'\n' || (p == Pattern::O200k && s[e] == b'/'))
        {
            e += 1;
        }
        return e;
    }
    // whitespace
    let r = run(s, i, is_ws);
    if p == Pattern::Cl100k && r == s.len() && at_text_end {
        return r; // \s++$
    }
    if let Some(last_nl) = (i..r).rev().find(|&x| class(s, x) == NEWLINE) {
        return last_nl + 1; // \s*[\r\n]+  (cl100k: \s*[\r\n])
    }
    if r == s.len() && at_text_end {
        return r; // \s+(?!\S) at the end
    }
    if r - i >= 2 { r - 1 } else { i + 1 }
}

/// Splits `text` into segments that tokenize independently: a cut is made after every `\n`
/// followed by optional spaces/tabs and then an ASCII non-whitespace character (not a `/` right
/// after the `\n`); no piece of either regex spans such a point. Source code thus splits per
/// line, and only lines holding non-ASCII text go through `tiktoken-rs`. Yields `(segment, is_ascii, is_last)`.
pub(crate) fn segments(text: &str) -> impl Iterator<Item = (&str, bool, bool)> {
    let bytes = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let mut ascii = true;
        let mut i = start;
        while i < bytes.len() {
            let b = bytes[i];
            if b >= 128 {
                ascii = false;
            } else if b == b'\n' && i + 1 < bytes.len() {
                // Cut when the next non-blank char (skipping spaces/tabs, not newlines) is ASCII
                // non-whitespace: every alternative ends a piece at that '\n' (a following
                // newline would extend `\s*[\r\n]+`; o200k's `[\r\n/]*` also takes a '/'
                // right after it; non-ASCII may be \s).
                let mut j = i + 1;
                while j < bytes.len() && CLASS.get(bytes[j] as usize) == Some(&SPACE) {
                    j += 1;
                }
                let cut = j < bytes.len() && {
                    let nb = bytes[j];
                    nb < 128 && !is_ws(CLASS[nb as usize]) && (j > i + 1 || nb != b'/')
                };
                if cut {
                    i += 1;
                    break;
                }
            }
            i += 1;
        }
        let seg = &text[start..i];
        start = i;
        Some((seg, ascii, i >= bytes.len()))
    })
}
