//! Prompt token counting for admission.
//!
//! Admission needs the prompt's token count *before* dispatch to reserve TPM and budget. The
//! count is an estimate that settlement later replaces by the provider's usage, so it must be
//! fast first and close second:
//!
//! - **OpenAI-family models** ([`Encoding::O200kBase`] for `gpt-4o`, `gpt-4.1`, `gpt-5`, `o1`,
//!   `o3`, `o4`, `chatgpt-4o`, `gpt-oss`; [`Encoding::Cl100kBase`] for `gpt-4`, `gpt-3.5`,
//!   `text-embedding-*`): exact BPE counts. The vocabularies are `tiktoken-rs`'s (bundled in the
//!   crate, built once, lazily, on first use); pure-ASCII text is pre-tokenized by a hand-written
//!   equivalent of tiktoken's regex and merged over an `FxHashMap` rank table, other text goes
//!   through `tiktoken-rs` itself (`fancy-regex`, several times slower). Measured numbers are in
//!   `bench/README.md` ("Micro-benchmark results").
//! - **Every other model** ([`Encoding::Estimate`]): `ceil(utf8_bytes / 4)`, the usual
//!   "≈ 4 characters per token" rule for English text (OpenAI's and Anthropic's documentation
//!   both quote it). It overestimates code and CJK less than it underestimates them; the
//!   reservation is corrected at settlement either way.
//!
//! Chat prompts ([`count_chat_messages`]) follow OpenAI's cookbook rule ("How to count tokens
//! with tiktoken"): every message costs [`TOKENS_PER_MESSAGE`] = 3 tokens plus the tokens of its
//! role and content (and 1 more when it has a `name`), and the reply is primed with
//! [`REPLY_PRIMING_TOKENS`] = 3. Image parts count a fixed [`IMAGE_TOKENS_LOW`] = 85
//! (`detail: "low"`) or [`IMAGE_TOKENS_DEFAULT`] = 765 (other details: a 1024×1024 image at high
//! detail in OpenAI's vision pricing) tokens; other non-text parts (audio, files) count their
//! JSON text.

mod bpe;
mod pretokenize;

use std::sync::OnceLock;

use serde_json::Value;

use bpe::Vocab;
use pretokenize::Pattern;

/// Fixed tokens per chat message (OpenAI cookbook, models since gpt-3.5-turbo-0613).
pub const TOKENS_PER_MESSAGE: u64 = 3;
/// Extra token when a message carries a `name` (OpenAI cookbook).
pub const TOKENS_PER_NAME: u64 = 1;
/// Tokens that prime the assistant's reply (`<|start|>assistant<|message|>`, OpenAI cookbook).
pub const REPLY_PRIMING_TOKENS: u64 = 3;
/// Estimate for an image part with `detail: "low"` (OpenAI vision pricing: 85 tokens).
pub const IMAGE_TOKENS_LOW: u64 = 85;
/// Estimate for any other image part: 765 tokens (a 1024×1024 image at high detail).
pub const IMAGE_TOKENS_DEFAULT: u64 = 765;
/// Bytes per token for [`Encoding::Estimate`].
pub const ESTIMATE_BYTES_PER_TOKEN: u64 = 4;

/// How a model's text is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// OpenAI `o200k_base` (gpt-4o and later).
    O200kBase,
    /// OpenAI `cl100k_base` (gpt-4, gpt-3.5-turbo, text-embedding-3-*).
    Cl100kBase,
    /// `ceil(bytes / 4)` for models whose tokenizer Tollgate does not ship.
    Estimate,
}

impl Encoding {
    /// The encoding for a model name as the client or deployment names it. A provider prefix
    /// (`openai/gpt-4o`, `azure/gpt-4o`) is ignored; only OpenAI-family names get a BPE.
    pub fn for_model(model: &str) -> Self {
        let m = model.rsplit('/').next().unwrap_or(model);
        const O200K: [&str; 8] = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "chatgpt-4o",
            "gpt-oss",
            "o1",
            "o3",
        ];
        if O200K.iter().any(|p| m.starts_with(p)) || m.starts_with("o4") {
            Self::O200kBase
        } else if m.starts_with("gpt-4")
            || m.starts_with("gpt-3.5")
            || m.starts_with("gpt-35")
            || m.starts_with("text-embedding-")
        {
            Self::Cl100kBase
        } else {
            Self::Estimate
        }
    }

    /// Builds this encoding's vocabulary now (a few hundred ms, tens of MB resident) instead
    /// of on the first request that counts with it; nothing for [`Encoding::Estimate`].
    pub fn warm_up(self) {
        match self {
            Self::O200kBase => {
                let _ = o200k();
            }
            Self::Cl100kBase => {
                let _ = cl100k();
            }
            Self::Estimate => {}
        }
    }

    /// Tokens in `text`.
    pub fn count(self, text: &str) -> u64 {
        match self {
            Self::O200kBase => o200k().count(text),
            Self::Cl100kBase => cl100k().count(text),
            Self::Estimate => estimate(text),
        }
    }
}

/// `ceil(utf8_bytes / 4)`.
pub fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(ESTIMATE_BYTES_PER_TOKEN)
}

/// Ordinary (non-special) ranks of `o200k_base`: 0..199998.
const O200K_RANKS: u32 = 199_998;
/// Ordinary ranks of `cl100k_base`: 0..100256.
const CL100K_RANKS: u32 = 100_256;

fn o200k() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| {
        Vocab::new(
            tiktoken_rs::o200k_base_singleton(),
            O200K_RANKS,
            Pattern::O200k,
        )
    })
}

fn cl100k() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| {
        Vocab::new(
            tiktoken_rs::cl100k_base_singleton(),
            CL100K_RANKS,
            Pattern::Cl100k,
        )
    })
}

/// Builds both vocabularies now (a few hundred ms) instead of on the first request.
pub fn warm_up() {
    let _ = o200k();
    let _ = cl100k();
}

/// Tokens of a chat prompt: `messages` (an OpenAI `messages` array; Anthropic content blocks
/// of `type: "text"` count the same way) plus the reply priming. Content may be a string or an
/// array of parts (`{"type":"text","text":…}`, `{"type":"image_url",…}`, …); `tool_calls`
/// count their function names and argument strings. A non-array `messages` counts 0 messages.
pub fn count_chat_messages(enc: Encoding, messages: &Value) -> u64 {
    let mut total = REPLY_PRIMING_TOKENS;
    let Some(list) = messages.as_array() else {
        return total;
    };
    let mut buf = String::new();
    for msg in list {
        total += TOKENS_PER_MESSAGE;
        let Some(obj) = msg.as_object() else { continue };
        for (k, v) in obj {
            match (k.as_str(), v) {
                ("content", v) => total += count_content(enc, v, &mut buf),
                ("name", Value::String(s)) => total += TOKENS_PER_NAME + enc.count(s),
                ("tool_calls", Value::Array(calls)) => {
                    for call in calls {
                        if let Some(f) = call.get("function") {
                            for field in ["name", "arguments"] {
                                if let Some(s) = f.get(field).and_then(Value::as_str) {
                                    total += enc.count(s);
                                }
                            }
                        }
                    }
                }
                (_, Value::String(s)) => total += enc.count(s),
                _ => {}
            }
        }
    }
    total
}

/// Tokens of a JSON value that is prompt text: a string, or an array of strings / content
/// parts (used for chat `content`, completions `prompt`, embeddings `input`, Anthropic
/// `system`). Arrays of token ids count one token per id.
pub fn count_content(enc: Encoding, v: &Value, buf: &mut String) -> u64 {
    match v {
        Value::String(s) => enc.count(s),
        Value::Number(_) => 1,
        Value::Array(parts) => parts.iter().map(|p| count_content(enc, p, buf)).sum(),
        Value::Object(part) => {
            let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
            if kind == "image_url" || kind == "image" || kind == "input_image" {
                let detail = part
                    .get("image_url")
                    .and_then(|i| i.get("detail"))
                    .or_else(|| part.get("detail"))
                    .and_then(Value::as_str);
                return if detail == Some("low") {
                    IMAGE_TOKENS_LOW
                } else {
                    IMAGE_TOKENS_DEFAULT
                };
            }
            if let Some(Value::String(t)) = part.get("text") {
                return enc.count(t);
            }
            if let Some(c) = part.get("content") {
                return count_content(enc, c, buf);
            }
            buf.clear();
            buf.push_str(&v.to_string());
            enc.count(buf)
        }
        Value::Null | Value::Bool(_) => 0,
    }
}

/// Tokens of a tool/function definitions array (`tools`), counted as its compact JSON text.
/// OpenAI renders tool schemas into the prompt in its own way; the JSON text is a close,
/// documented stand-in.
pub fn count_tools(enc: Encoding, tools: &Value) -> u64 {
    match tools {
        Value::Null => 0,
        Value::Array(a) if a.is_empty() => 0,
        other => enc.count(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn picks_encodings_by_model_family() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("openai/gpt-4.1"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("o3-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("o4-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-5"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4"), Encoding::Cl100kBase);
        assert_eq!(
            Encoding::for_model("azure/gpt-35-turbo"),
            Encoding::Cl100kBase
        );
        assert_eq!(
            Encoding::for_model("text-embedding-3-small"),
            Encoding::Cl100kBase
        );
        assert_eq!(Encoding::for_model("claude-sonnet-4-5"), Encoding::Estimate);
        assert_eq!(Encoding::for_model("mock-gpt"), Encoding::Estimate);
    }

    #[test]
    fn exact_bpe_counts() {
        // Reference values from OpenAI's tiktoken.
        assert_eq!(Encoding::O200kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count("tiktoken is great!"), 6);
        assert_eq!(Encoding::O200kBase.count(""), 0);
    }

    /// The fast path must give exactly tiktoken's counts: random text over an alphabet rich in
    /// the regexes' edge cases (runs of spaces/tabs/newlines, apostrophes and contractions,
    /// case changes, digit runs, `/`, punctuation, a few non-ASCII letters, marks and spaces).
    #[test]
    fn fast_path_matches_tiktoken_exactly() {
        const ALPHABET: &[&str] = &[
            " ", " ", " ", "  ", "\t", "\n", "\n", "\r\n", "\n\n", "'", "'s", "'LL", "'re", "'d",
            "a", "e", "the", "The", "HTTP", "Server", "x", "Q", "0", "7", "12345", "/", ".", ",",
            "!", "(", ")", "{", "}", "\"", "-", "_", "=", "==", "#", "\n    ", "\n\t/", "\n /",
            "\n  \n", "é", "日本", "\u{a0}", "\u{301}", "😀", "\u{b}", "\u{c}", "hello", " world",
            "ing", "API",
        ];
        let mut x: u64 = 42;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as usize
        };
        for round in 0..4000 {
            let len = if round % 100 == 99 { 400 } else { next() % 24 };
            let text: String = (0..len)
                .map(|_| ALPHABET[next() % ALPHABET.len()])
                .collect();
            let o = tiktoken_rs::o200k_base_singleton()
                .encode_ordinary(&text)
                .len() as u64;
            assert_eq!(Encoding::O200kBase.count(&text), o, "o200k {text:?}");
            let c = tiktoken_rs::cl100k_base_singleton()
                .encode_ordinary(&text)
                .len() as u64;
            assert_eq!(Encoding::Cl100kBase.count(&text), c, "cl100k {text:?}");
        }
    }

    #[test]
    fn estimate_is_bytes_over_four_rounded_up() {
        assert_eq!(Encoding::Estimate.count(""), 0);
        assert_eq!(Encoding::Estimate.count("abc"), 1);
        assert_eq!(Encoding::Estimate.count("abcd"), 1);
        assert_eq!(Encoding::Estimate.count("abcde"), 2);
        assert_eq!(Encoding::Estimate.count("é"), 1); // 2 bytes
    }

    #[test]
    fn chat_messages_follow_the_cookbook_rule() {
        let enc = Encoding::Cl100kBase;
        let msgs = json!([
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "name": "bob", "content": "hello world"}
        ]);
        // system msg: 3 + "system"(1) + "You are a helpful assistant."(7)
        // user msg:   3 + "user"(1) + name: 1 + "bob"(1) + "hello world"(2)
        // + 3 priming
        let want = 3 + 1 + enc.count("You are a helpful assistant.") + 3 + 1 + 1 + 1 + 2 + 3;
        assert_eq!(enc.count("You are a helpful assistant."), 6);
        assert_eq!(count_chat_messages(enc, &msgs), want);
        assert_eq!(want, 21);
    }

    #[test]
    fn content_parts_images_and_tool_calls() {
        let enc = Encoding::Estimate;
        let msgs = json!([
            {"role": "user", "content": [
                {"type": "text", "text": "abcdefgh"},
                {"type": "image_url", "image_url": {"url": "data:...", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
            ]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{\"a\":1}"}}
            ]}
        ]);
        // msg1: 3 + "user"(1) + 2 + 85 + 765 ; msg2: 3 + "assistant"(3) + "get"(1) + 7 bytes(2); + 3
        assert_eq!(
            count_chat_messages(enc, &msgs),
            3 + 1 + 2 + 85 + 765 + 3 + 3 + 1 + 2 + 3
        );
        assert_eq!(count_chat_messages(enc, &json!("not an array")), 3);
        let mut buf = String::new();
        assert_eq!(count_content(enc, &json!(["abcd", "efgh"]), &mut buf), 2);
        assert_eq!(count_content(enc, &json!([1, 2, 3]), &mut buf), 3);
        assert_eq!(count_tools(enc, &json!([])), 0);
        assert_eq!(count_tools(enc, &json!([{"a":1}])), 3); // `[{"a":1}]` = 9 bytes
    }
}
