//! OpenAI-dialect usage: Chat Completions, legacy Completions and Embeddings bodies, and
//! Chat stream chunks. The same two-level shape (two counts, two `*_details` objects) is
//! read for Responses under other names ([`Names`]).

use std::ops::Range;

use memchr::memmem;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::count::Count;
use super::{ChunkUsage, Usage};
use crate::json_scan::{Cursor, document};

/// The member names of a two-level usage object.
pub(super) struct Names {
    pub prompt: &'static [u8],
    pub completion: &'static [u8],
    pub prompt_details: &'static [u8],
    pub completion_details: &'static [u8],
}

/// Chat Completions, Completions and Embeddings.
pub(super) const CHAT: Names = Names {
    prompt: b"prompt_tokens",
    completion: b"completion_tokens",
    prompt_details: b"prompt_tokens_details",
    completion_details: b"completion_tokens_details",
};

/// Reads the usage value at the cursor (`null` gives `Some(None)`) as the serde structs below
/// would; `None` when the scanner leaves it undecided.
pub(super) fn scan_usage(c: &mut Cursor<'_>, names: &Names) -> Option<Option<Usage>> {
    if c.eat_literal(b"null") {
        return Some(None);
    }
    let mut u = Usage::default();
    let mut seen = [false; 4];
    c.object(|key, _, c| {
        let i = if key == names.prompt {
            0
        } else if key == names.completion {
            1
        } else if key == names.prompt_details {
            2
        } else if key == names.completion_details {
            3
        } else {
            return c.skip_value();
        };
        if std::mem::replace(&mut seen[i], true) {
            return None; // a duplicate field: serde refuses it
        }
        match i {
            0 => u.prompt_tokens = c.count()?.unwrap_or(0),
            1 => u.completion_tokens = c.count()?.unwrap_or(0),
            2 => {
                let [cached, written] = c
                    .counts([b"cached_tokens", b"cache_write_tokens"])?
                    .unwrap_or_default();
                u.cached_tokens = cached.unwrap_or(0);
                u.cache_write_tokens = written.unwrap_or(0);
            }
            _ => {
                let [reasoning] = c.counts([b"reasoning_tokens"])?.unwrap_or_default();
                u.reasoning_tokens = reasoning.unwrap_or(0);
            }
        }
        Some(())
    })?;
    Some(Some(u))
}

#[derive(Deserialize, Default)]
pub(super) struct PromptDetails {
    cached_tokens: Option<Count>,
    cache_write_tokens: Option<Count>,
}

#[derive(Deserialize, Default)]
pub(super) struct CompletionDetails {
    reasoning_tokens: Option<Count>,
}

/// The serde reading of a two-level usage object's parts (unknown members ignored).
pub(super) fn two_level(
    prompt: Option<Count>,
    completion: Option<Count>,
    p: Option<PromptDetails>,
    c: Option<CompletionDetails>,
) -> Usage {
    let n = |c: Option<Count>| c.map_or(0, |c| c.0);
    let p = p.unwrap_or_default();
    let c = c.unwrap_or_default();
    Usage {
        prompt_tokens: n(prompt),
        completion_tokens: n(completion),
        cached_tokens: n(p.cached_tokens),
        cache_write_tokens: n(p.cache_write_tokens),
        reasoning_tokens: n(c.reasoning_tokens),
    }
}

/// OpenAI `usage` object (chat, completions, embeddings).
#[derive(Deserialize)]
struct OpenAiUsage {
    prompt_tokens: Option<Count>,
    completion_tokens: Option<Count>,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
}

impl From<OpenAiUsage> for Usage {
    fn from(u: OpenAiUsage) -> Self {
        two_level(
            u.prompt_tokens,
            u.completion_tokens,
            u.prompt_tokens_details,
            u.completion_tokens_details,
        )
    }
}

#[derive(Deserialize)]
struct Body {
    usage: Option<OpenAiUsage>,
}

#[derive(Deserialize)]
struct Chunk {
    usage: Option<OpenAiUsage>,
    choices: Option<Vec<IgnoredAny>>,
}

/// Usage of an OpenAI-dialect response body (chat.completion, text_completion, embeddings
/// list): its top-level `usage`; `None` when the body has none, `null`, or is not JSON.
/// Read by the scanner, serde deciding what it leaves undecided.
pub fn openai_response_usage(body: &[u8]) -> Option<Usage> {
    let scanned = document(body, |c| c.member(b"usage", |c| scan_usage(c, &CHAT)));
    match scanned {
        Some(found) => found.flatten(),
        None => serde_json::from_slice::<Body>(body)
            .ok()?
            .usage
            .map(Usage::from),
    }
}

/// What one OpenAI stream chunk says about usage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenAiChunk {
    /// The chunk's usage, when it carries an object.
    pub usage: Option<ChunkUsage>,
    /// The byte range of the chunk's `data` to cut to remove its top-level `usage` member
    /// (with the comma that joins it to its neighbour), whatever its value: the `"usage":
    /// null` that `include_usage` adds to every chunk, or a usage object on a content chunk
    /// (vLLM's `continuous_usage_stats`). `None` when it has none, or when the chunk was read
    /// by serde (the scanner left it undecided).
    pub usage_member: Option<Range<usize>>,
}

/// Reads usage from one OpenAI stream chunk's `data` JSON (see [`OpenAiChunk`]).
///
/// Cheap for the chunks that carry no usage: OpenAI's compact `...,"usage":null}` ending is
/// recognised from its last bytes (in a JSON document those bytes can only be the top-level
/// object's last member), and a chunk with neither `"usage"` nor a `\u` escape (which could
/// spell the key) is not read at all. Others are walked by the scanner, serde deciding what it
/// leaves undecided.
pub fn scan_openai_chunk(data: &[u8]) -> OpenAiChunk {
    const TAIL: &[u8] = b",\"usage\":null}";
    let end = data.len()
        - data
            .iter()
            .rev()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .count();
    if data[..end].ends_with(TAIL) {
        return OpenAiChunk {
            usage: None,
            usage_member: Some(end - TAIL.len()..end - 1),
        };
    }
    if memmem::find(data, b"\"usage\"").is_none() && memmem::find(data, b"\\u").is_none() {
        return OpenAiChunk::default();
    }
    if let Some(scanned) = document(data, scan_chunk) {
        return scanned;
    }
    let usage = serde_json::from_slice::<Chunk>(data).ok().and_then(|w| {
        Some(ChunkUsage {
            usage: Usage::from(w.usage?),
            usage_only: w.choices.is_none_or(|c| c.is_empty()),
        })
    });
    OpenAiChunk {
        usage,
        usage_member: None,
    }
}

/// The scanner's reading of a whole chunk object; `None` when undecided.
fn scan_chunk(c: &mut Cursor<'_>) -> Option<OpenAiChunk> {
    let mut usage: Option<Option<Usage>> = None;
    let mut choices_empty: Option<Option<bool>> = None;
    let mut usage_member = None;
    let mut prev_end: Option<usize> = None;
    let mut first_member_at: Option<usize> = None;
    c.object(|key, key_start, c| {
        if let Some(start) = first_member_at.take() {
            usage_member = Some(start..key_start);
        }
        if key == b"usage" {
            if usage.is_some() {
                return None;
            }
            usage = Some(scan_usage(c, &CHAT)?);
            match prev_end {
                Some(p) => usage_member = Some(p..c.pos()),
                None => first_member_at = Some(key_start),
            }
        } else if key == b"choices" {
            if choices_empty.is_some() {
                return None;
            }
            choices_empty = Some(if c.eat_literal(b"null") {
                None
            } else {
                Some(c.array_is_empty()?)
            });
        } else {
            c.skip_value()?;
        }
        prev_end = Some(c.pos());
        Some(())
    })?;
    if let (Some(start), Some(end)) = (first_member_at, prev_end) {
        usage_member = Some(start..end); // the only member
    }
    Some(OpenAiChunk {
        usage: usage.flatten().map(|usage| ChunkUsage {
            usage,
            usage_only: choices_empty.flatten().unwrap_or(true),
        }),
        usage_member,
    })
}

/// Usage from one OpenAI stream chunk's `data` JSON: [`scan_openai_chunk`]'s `usage`.
pub fn openai_chunk_usage(data: &[u8]) -> Option<ChunkUsage> {
    scan_openai_chunk(data).usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_top_level_usage_counts() {
        // A nested `usage` key, and `"usage":` text inside strings (escaped quotes, a string
        // ending in an escaped backslash), come before the real one.
        let body = br#"{"id":"a\\","choices":[{"message":{"content":"say \"usage\":{\"prompt_tokens\":99}","usage":{"prompt_tokens":98}}}],"usage":{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}},"system_fingerprint":"fp"}"#;
        assert_eq!(
            openai_response_usage(body),
            Some(Usage {
                prompt_tokens: 7,
                completion_tokens: 3,
                cached_tokens: 2,
                cache_write_tokens: 0,
                reasoning_tokens: 1,
            })
        );
    }

    #[test]
    fn usage_anywhere_pretty_printed_python_style_or_escaped() {
        for body in [
            &b"{\n  \"usage\" : {\"prompt_tokens\": 5, \"completion_tokens\": 1},\n  \"choices\": []\n}"[..],
            br#"{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}"#,
            br#"{"choices":[],"us\u0061ge":{"prompt\u005ftokens":5,"completion_tokens":1}}"#,
            br#"{"usage":{"prompt_tokens":5.0,"completion_tokens":1e0}}"#,
        ] {
            let u = openai_response_usage(body).unwrap();
            assert_eq!((u.prompt_tokens, u.completion_tokens), (5, 1));
        }
    }

    #[test]
    fn no_usage_null_usage_or_not_json_is_none() {
        for body in [
            &br#"{"choices":[]}"#[..],
            br#"{"choices":[],"usage":null}"#,
            br#"{"data":[{"usage":{"prompt_tokens":3}}]}"#,
            b"not json",
            br#"{"usage":"#,
            br#"{"a":"unterminated"#,
            br#"{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}"#, // serde: duplicate
            br#"{"usage":{"prompt_tokens":1.5}}"#,
            br#"{"usage":{"prompt_tokens":-1}}"#,
        ] {
            assert_eq!(openai_response_usage(body), None, "{body:?}");
        }
    }

    #[test]
    fn chunk_usage_detects_usage_only_chunk() {
        let c = br#"{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#;
        let u = openai_chunk_usage(c).unwrap();
        assert!(u.usage_only);
        assert_eq!(u.usage.completion_tokens, 7);
        let with_choice = br#"{"choices":[{"index":0,"delta":{}}],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#;
        assert!(!openai_chunk_usage(with_choice).unwrap().usage_only);
        assert_eq!(openai_chunk_usage(br#"{"choices":[],"usage":null}"#), None);
        let python = br#"{"id": "c", "choices": [ ], "usage": {"prompt_tokens": 5, "completion_tokens": 7}}"#;
        assert!(openai_chunk_usage(python).unwrap().usage_only);
    }

    /// The range cut from a chunk to remove its `usage` member, null or not, in each
    /// formatting.
    #[test]
    fn the_usage_member_is_cut_with_its_comma() {
        let cut = |data: &[u8]| {
            let r = scan_openai_chunk(data).usage_member.unwrap();
            String::from_utf8([&data[..r.start], &data[r.end..]].concat()).unwrap()
        };
        assert_eq!(
            cut(br#"{"id":"c","choices":[],"usage":null}"#),
            r#"{"id":"c","choices":[]}"#
        );
        assert_eq!(
            cut(br#"{"id": "c", "choices": [], "usage": null}"#),
            r#"{"id": "c", "choices": []}"#
        );
        assert_eq!(cut(br#"{"usage": null, "id": "c"}"#), r#"{"id": "c"}"#);
        assert_eq!(
            cut(br#"{"id": "c", "usage": null, "x": 1}"#),
            r#"{"id": "c", "x": 1}"#
        );
        assert_eq!(cut(br#"{ "usage" : null }"#), r#"{  }"#);
        assert_eq!(
            cut(br#"{"a":{"usage":null},"us\u0061ge":null}"#),
            r#"{"a":{"usage":null}}"#
        );
        assert_eq!(
            cut(br#"{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}}"#),
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#
        );
        assert_eq!(
            cut(br#"{"usage": {"prompt_tokens": 9, "completion_tokens": 1}, "choices": [{"index": 0, "delta": {"content": "a"}}]}"#),
            r#"{"choices": [{"index": 0, "delta": {"content": "a"}}]}"#
        );
        assert_eq!(
            scan_openai_chunk(br#"{"a":{"usage":null}}"#).usage_member,
            None
        );
        assert_eq!(scan_openai_chunk(br#"{"a":1}"#), OpenAiChunk::default());
    }
}
