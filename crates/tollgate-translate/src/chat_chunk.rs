//! Borrowing view of an OpenAI Chat stream chunk (wire-formats.md §1.3): only the fields the
//! translators read, strings borrowed from the event when they have no escapes.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
pub(crate) struct ChatChunk<'a> {
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub model: Option<Cow<'a, str>>,
    /// Unix seconds; some servers send a float, so read as a number of any kind.
    #[serde(default)]
    pub created: Option<f64>,
    #[serde(default, borrow)]
    pub choices: Option<Vec<ChunkChoice<'a>>>,
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Deserialize)]
pub(crate) struct ChunkChoice<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(default, borrow)]
    pub delta: Option<ChunkDelta<'a>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

impl ChunkChoice<'_> {
    /// `finish_reason`, treating `""` (sent by some servers on every chunk) as absent.
    pub fn finish(&self) -> Option<&str> {
        self.finish_reason.as_deref().filter(|f| !f.is_empty())
    }
}

#[derive(Deserialize)]
pub(crate) struct ChunkDelta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Content<'a>>,
    /// DeepSeek / vLLM reasoning text.
    #[serde(default, borrow)]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// OpenRouter / newer vLLM name for the same.
    #[serde(default, borrow)]
    pub reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    /// Complete signed thinking blocks (written by `chat_to_anthropic`'s stream).
    #[serde(default)]
    pub thinking_blocks: Option<Vec<Value>>,
}

#[derive(Deserialize)]
pub(crate) struct ToolCallDelta<'a> {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

/// `delta.content`: a string, or (Mistral and some OpenAI-compatible servers) an array of parts.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Parts(#[serde(borrow)] Vec<Part<'a>>),
}

#[derive(Deserialize)]
pub(crate) struct Part<'a> {
    #[serde(rename = "type", default, borrow)]
    pub ty: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub text: Option<Cow<'a, str>>,
}

impl ChunkDelta<'_> {
    /// The visible text of `delta.content`, if non-empty: the string, or the `text` parts
    /// joined (other parts, e.g. Mistral `thinking`, are not visible text).
    pub fn content_text(&self) -> Option<Cow<'_, str>> {
        let text = match self.content.as_ref()? {
            Content::Text(t) => Cow::Borrowed(t.as_ref()),
            Content::Parts(parts) => {
                let mut s = String::new();
                for p in parts
                    .iter()
                    .filter(|p| p.ty.as_deref().is_none_or(|t| t == "text"))
                {
                    s.push_str(p.text.as_deref().unwrap_or(""));
                }
                Cow::Owned(s)
            }
        };
        (!text.is_empty()).then_some(text)
    }

    /// Reasoning text under either field name, if non-empty.
    pub fn reasoning_text(&self) -> Option<&str> {
        self.reasoning_content
            .as_deref()
            .or(self.reasoning.as_deref())
            .filter(|t| !t.is_empty())
    }
}

/// Resolves a tool-call delta to its tool-call position: its `index`, or, for servers that omit
/// it, a new position when the delta carries an `id` and the last known one otherwise.
pub(crate) fn tool_position(tc: &ToolCallDelta<'_>, known: usize) -> u32 {
    match tc.index {
        Some(i) => i,
        None if tc.id.is_some() => known as u32,
        None => known.saturating_sub(1) as u32,
    }
}
