//! serde's reading of the generated documents: derive over structs declared here.

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::usage::Usage;
use crate::usage::count::Count;

// ---- serde's reading ------------------------------------------------------------------

#[derive(Deserialize)]
pub(super) struct RPromptDetails {
    pub(super) cached_tokens: Option<Count>,
    pub(super) cache_write_tokens: Option<Count>,
}
#[derive(Deserialize)]
pub(super) struct RCompletionDetails {
    pub(super) reasoning_tokens: Option<Count>,
}
#[derive(Deserialize)]
pub(super) struct RChat {
    pub(super) prompt_tokens: Option<Count>,
    pub(super) completion_tokens: Option<Count>,
    pub(super) prompt_tokens_details: Option<RPromptDetails>,
    pub(super) completion_tokens_details: Option<RCompletionDetails>,
}
#[derive(Deserialize)]
pub(super) struct RBody {
    pub(super) usage: Option<RChat>,
}
#[derive(Deserialize)]
pub(super) struct RChunk {
    pub(super) usage: Option<RChat>,
    pub(super) choices: Option<Vec<IgnoredAny>>,
}
#[derive(Deserialize)]
pub(super) struct RResponses {
    pub(super) input_tokens: Option<Count>,
    pub(super) output_tokens: Option<Count>,
    pub(super) input_tokens_details: Option<RPromptDetails>,
    pub(super) output_tokens_details: Option<RCompletionDetails>,
}
#[derive(Deserialize)]
pub(super) struct RResponsesInner {
    pub(super) usage: Option<RResponses>,
}
#[derive(Deserialize)]
pub(super) struct RResponsesEvent {
    pub(super) response: Option<RResponsesInner>,
    pub(super) usage: Option<RResponses>,
}
#[derive(Deserialize, Clone, Copy, Default)]
pub(super) struct RAnthropic {
    pub(super) input_tokens: Option<Count>,
    pub(super) output_tokens: Option<Count>,
    pub(super) cache_read_input_tokens: Option<Count>,
    pub(super) cache_creation_input_tokens: Option<Count>,
}
#[derive(Deserialize)]
pub(super) struct RAnthropicMessage {
    pub(super) usage: Option<RAnthropic>,
}
#[derive(Deserialize)]
pub(super) struct RAnthropicEvent {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) message: Option<RAnthropicMessage>,
    pub(super) usage: Option<RAnthropic>,
}

pub(super) fn n(c: Option<Count>) -> u64 {
    c.map_or(0, |c| c.0)
}

pub(super) fn two_level(
    p: Option<Count>,
    c: Option<Count>,
    pd: Option<RPromptDetails>,
    cd: Option<RCompletionDetails>,
) -> Usage {
    Usage {
        prompt_tokens: n(p),
        completion_tokens: n(c),
        cached_tokens: pd.as_ref().map_or(0, |d| n(d.cached_tokens)),
        cache_write_tokens: pd.as_ref().map_or(0, |d| n(d.cache_write_tokens)),
        reasoning_tokens: cd.map_or(0, |d| n(d.reasoning_tokens)),
    }
}

pub(super) fn chat(u: RChat) -> Usage {
    two_level(
        u.prompt_tokens,
        u.completion_tokens,
        u.prompt_tokens_details,
        u.completion_tokens_details,
    )
}

pub(super) fn responses(u: RResponses) -> Usage {
    two_level(
        u.input_tokens,
        u.output_tokens,
        u.input_tokens_details,
        u.output_tokens_details,
    )
}

pub(super) fn anthropic(u: RAnthropic) -> Usage {
    let (r, w) = (
        n(u.cache_read_input_tokens),
        n(u.cache_creation_input_tokens),
    );
    Usage {
        prompt_tokens: n(u.input_tokens).saturating_add(r).saturating_add(w),
        completion_tokens: n(u.output_tokens),
        cached_tokens: r,
        cache_write_tokens: w,
        reasoning_tokens: 0,
    }
}
