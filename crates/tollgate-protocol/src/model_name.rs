//! Model names as the gateway accepts them, and the one wildcard rule every model list uses.
//!
//! **Names.** A client's `model` (and every name in its `fallbacks`) is a `/`-separated path of
//! segments, as LiteLLM writes them: `gpt-4o`, `openai/gpt-4o`,
//! `together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo`, `hosted_vllm/Qwen/Qwen2.5-7B-Instruct`,
//! `ollama_chat/llama3.1:8b`, `anthropic.claude-3-5-sonnet-20240620-v1:0`, Bedrock ARNs
//! (`arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0`).
//! [`check`] refuses what could walk a provider that puts the model in its URL path (Bedrock's
//! `/model/{id}/invoke`, Vertex's `.../models/{id}:generateContent`, Azure's
//! `/openai/deployments/{id}/...`) out of that path: an empty name, an empty segment (`a//b`,
//! a leading or trailing `/`), a `.` or `..` segment, a backslash (a separator to some
//! servers), a control character, and any percent-encoded byte (`%2e%2e`, `%2F`, `%5c`): a
//! model name is never URL-encoded text, so an escape in one can only mean a second decoding
//! somewhere down the line.
//!
//! **Wildcards.** A pattern holds one or more `*`; each `*` stands for a non-empty run of any
//! characters (`/` included), and every other character must match exactly, case included.
//! So `bedrock/*` admits `bedrock/anthropic.claude-3` and `bedrock/us/x`, but neither
//! `bedrockz/x`, `bedrock-evil/x`, `BEDROCK/x`, the bare `bedrock` nor `bedrock/`; `*` admits
//! any name. A wildcard never admits a name [`check`] refuses. The same rule serves key, team,
//! user and organization `models` lists, access groups and the router's wildcard groups
//! (`model_name: "openai/*"`), so a name one of them admits is one the others would route.
//! (LiteLLM turns each `*` into the regular expression `.*`; the non-empty rest is Tollgate's:
//! `openai/` names no model.)

/// Why a model name is refused (see the module docs). The message names the rule, never
/// the whole name twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ModelNameError {
    /// `""`.
    #[error("the model name is empty")]
    Empty,
    /// `a//b`, `/a`, `a/`.
    #[error("the model name has an empty path segment (`//`, or a leading or trailing `/`)")]
    EmptySegment,
    /// `a/../b`, `./a`.
    #[error("the model name has a `.` or `..` path segment")]
    DotSegment,
    /// `a\b`.
    #[error("the model name has a backslash")]
    Backslash,
    /// A C0/C1 control character or DEL.
    #[error("the model name has a control character")]
    ControlCharacter,
    /// `%2e`, `%2F`, ...
    #[error("the model name has a percent-encoded byte (`%` and two hex digits)")]
    PercentEncoded,
}

/// Checks a model name a client sent (see the module docs).
///
/// Errors: the first rule the name breaks, as a [`ModelNameError`].
pub fn check(name: &str) -> Result<(), ModelNameError> {
    if name.is_empty() {
        return Err(ModelNameError::Empty);
    }
    let bytes = name.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\\' => return Err(ModelNameError::Backslash),
            b'%' if bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit) =>
            {
                return Err(ModelNameError::PercentEncoded);
            }
            _ => {}
        }
    }
    if name.chars().any(char::is_control) {
        return Err(ModelNameError::ControlCharacter);
    }
    for segment in name.split('/') {
        match segment {
            "" => return Err(ModelNameError::EmptySegment),
            "." | ".." => return Err(ModelNameError::DotSegment),
            _ => {}
        }
    }
    Ok(())
}

/// Whether `pattern` holds a `*` (is a wildcard rather than a literal name).
pub fn is_wildcard(pattern: &str) -> bool {
    pattern.contains('*')
}

/// The byte range of `name` that the stars of `pattern` cover (from the first `*`'s match to
/// the end of the last one's), when `pattern` is a wildcard that admits `name`; `None`
/// otherwise, and for a pattern without `*`. For `openai/*` and `openai/gpt-4o` it is the
/// range of `gpt-4o`: the part the router puts in place of a deployment's own `*`.
pub fn wildcard_match(pattern: &str, name: &str) -> Option<(usize, usize)> {
    let (first_star, last_star) = (pattern.find('*')?, pattern.rfind('*')?);
    let (first, last) = (&pattern[..first_star], &pattern[last_star + 1..]);
    if !name.starts_with(first) || !name.ends_with(last) || check(name).is_err() {
        return None;
    }
    let end = name.len().checked_sub(last.len())?;
    // The literals between the stars (none for a single star); each star covers at least one
    // character, and the literals are taken leftmost, which leaves the most room for the rest.
    let middles = (last_star > first_star)
        .then(|| pattern[first_star + 1..last_star].split('*'))
        .into_iter()
        .flatten();
    let mut pos = first.len();
    for m in middles {
        let from = pos + name[pos..].chars().next()?.len_utf8();
        let found = name.get(from..end)?.find(m)?;
        pos = from + found + m.len();
    }
    (end > pos).then_some((first.len(), end))
}

/// Whether a list entry admits `name`: the same name exactly, or a wildcard that matches it
/// ([`wildcard_match`]). Sentinels such as `all-proxy-models` are the caller's business.
pub fn entry_admits(entry: &str, name: &str) -> bool {
    entry == name || (is_wildcard(entry) && wildcard_match(entry, name).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names real configs use (LiteLLM's provider docs) all pass.
    #[test]
    fn real_names_pass() {
        for name in [
            "gpt-4o",
            "openai/gpt-4o",
            "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
            "ollama_chat/llama3.1:8b",
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0",
            "vertex_ai/gemini-1.5-pro@001",
            "ft:gpt-4o-mini-2024-07-18:my-org:custom:9Xz",
            "azure/my deployment (eu)",
            "claude-3.5",
            "a.b/..c/d..",
            "100%",
            "50%-off",
        ] {
            assert_eq!(check(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn names_that_leave_a_path_are_refused() {
        use ModelNameError::*;
        for (name, why) in [
            ("", Empty),
            ("a//b", EmptySegment),
            ("/a", EmptySegment),
            ("a/", EmptySegment),
            ("bedrock/", EmptySegment),
            ("/", EmptySegment),
            ("..", DotSegment),
            ("a/../b", DotSegment),
            ("bedrock/../../admin", DotSegment),
            ("./a", DotSegment),
            ("a/.", DotSegment),
            ("a\\..\\b", Backslash),
            ("a\nb", ControlCharacter),
            ("a\u{0}b", ControlCharacter),
            ("a\u{7f}", ControlCharacter),
            ("a\u{85}", ControlCharacter),
            ("bedrock/%2e%2e/x", PercentEncoded),
            ("bedrock%2Fx", PercentEncoded),
            ("a%5cb", PercentEncoded),
            ("a%252e", PercentEncoded),
            ("a%00", PercentEncoded),
        ] {
            assert_eq!(check(name), Err(why), "{name:?}");
        }
    }

    #[test]
    fn a_prefix_wildcard_admits_its_first_segment_only() {
        let p = "bedrock/*";
        for ok in [
            "bedrock/x",
            "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
            "bedrock/us/eu/x",
        ] {
            assert!(entry_admits(p, ok), "{ok}");
        }
        for no in [
            "bedrockz/x",
            "bedrock-evil/x",
            "BEDROCK/x",
            "Bedrock/x",
            "bedrock",
            "bedrock/",
            "bedrock//x",
            "bedrock/../x",
            "bedrock/%2e%2e/x",
            "xbedrock/x",
            "",
        ] {
            assert!(!entry_admits(p, no), "{no:?}");
        }
        assert_eq!(wildcard_match(p, "bedrock/ab"), Some((8, 10)));
    }

    #[test]
    fn stars_cover_non_empty_runs() {
        assert!(entry_admits("*", "any/thing"));
        assert!(!entry_admits("*", ""));
        assert!(!entry_admits("*", "a/../b"));
        assert!(entry_admits("gpt-*", "gpt-4o"));
        assert!(!entry_admits("gpt-*", "gpt-"));
        assert!(entry_admits("*-mini", "gpt-4o-mini"));
        assert!(!entry_admits("*-mini", "-mini"));
        assert!(entry_admits("a/*/c/*", "a/b/c/d"));
        assert!(entry_admits("a/**", "a/bc"));
        assert!(!entry_admits("a/**", "a/b"));
        assert!(entry_admits("a/*/c/*", "a/b/c/c/d"));
        assert!(!entry_admits("a/*/c/*", "a/c/d"));
        assert!(!entry_admits("a/*/c/*", "a/b/c/"));
        assert_eq!(wildcard_match("a/*/c/*", "a/b/c/d"), Some((2, 7)));
        // Stars over multi-byte text: ranges stay on character boundaries.
        assert_eq!(wildcard_match("m/*", "m/é"), Some((2, 4)));
        assert!(entry_admits("m/*/x", "m/é/x"));
        // A literal entry is an exact match, never a prefix.
        assert!(entry_admits("openai/gpt-4o", "openai/gpt-4o"));
        assert!(!entry_admits("openai/gpt-4o", "openai/gpt-4o-mini"));
        assert_eq!(wildcard_match("openai/gpt-4o", "openai/gpt-4o"), None);
    }
}
