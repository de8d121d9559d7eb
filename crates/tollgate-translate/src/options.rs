//! Knobs the gateway sets per deployment for request translation.

use crate::TranslateError;

/// `max_tokens` sent to Anthropic when the client gave none (the Messages API requires it).
/// Used for every model without an entry in [`default_max_tokens`].
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The documented default `max_tokens` for an Anthropic model when the client sent neither
/// `max_tokens` nor `max_completion_tokens`: 8192 for the Claude 3.5/3.7/4 families (whose
/// output limit is at least 8192), [`DEFAULT_MAX_TOKENS`] (4096) for everything else, which is
/// also the Claude 3 output limit. Override with [`RequestOptions::default_max_tokens`].
pub fn default_max_tokens(model: &str) -> u32 {
    const LARGE: [&str; 6] = [
        "claude-3-5",
        "claude-3-7",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-haiku-4",
        "claude-4",
    ];
    if LARGE.iter().any(|p| model.contains(p)) {
        8192
    } else {
        DEFAULT_MAX_TOKENS
    }
}

/// Anthropic `thinking.budget_tokens` for an OpenAI `reasoning_effort` (policy from
/// `shared/reference/wire-formats.md` §7.1): minimal/low 1024, medium 4096, high 16384,
/// xhigh 24576, max 32768. `none` means no thinking (`Ok(None)`); an unknown value is a 400
/// naming `reasoning_effort`.
pub fn thinking_budget(effort: &str) -> Result<Option<u32>, TranslateError> {
    Ok(match effort {
        "none" => None,
        "minimal" | "low" => Some(1024),
        "medium" => Some(4096),
        "high" => Some(16384),
        "xhigh" => Some(24576),
        "max" => Some(32768),
        other => {
            return Err(TranslateError::unsupported(
                "reasoning_effort",
                format!("value `{other}` has no Anthropic thinking budget"),
            ));
        }
    })
}

/// OpenAI `reasoning_effort` for an Anthropic `thinking.budget_tokens` (inverse of
/// [`thinking_budget`]): below 4096 → `low`, below 16384 → `medium`, else `high`.
pub fn reasoning_effort_for_budget(budget: u64) -> &'static str {
    if budget < 4096 {
        "low"
    } else if budget < 16384 {
        "medium"
    } else {
        "high"
    }
}

/// Which field carries the output limit toward an OpenAI-dialect upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    /// `max_completion_tokens` (current name; required by OpenAI reasoning models).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens` (legacy name; some OpenAI-compatible servers only know this one).
    MaxTokens,
}

/// Per-deployment options for request translation. `Default` gives the documented behaviour.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// Replaces the request's `model` (the deployment's upstream model name). `None` keeps it.
    pub upstream_model: Option<String>,
    /// Anthropic `max_tokens` when the client sent none; `None` uses [`default_max_tokens`].
    pub default_max_tokens: Option<u32>,
    /// Toward OpenAI-dialect upstreams: the name of the output-limit field.
    pub max_tokens_field: MaxTokensField,
    /// Toward OpenAI-dialect upstreams: send Anthropic `thinking` config as
    /// `reasoning_effort` (set `true` only for reasoning models; others reject the field).
    pub thinking_to_reasoning_effort: bool,
    /// Toward OpenAI-dialect upstreams: drop earlier-turn thinking entirely instead of sending
    /// its text as the non-standard assistant `reasoning_content` field (DeepSeek/vLLM style; by
    /// default it is sent, so a multi-turn reasoning conversation keeps its earlier thinking). Thinking never goes into visible `content` either way.
    pub drop_reasoning_history: bool,
}
