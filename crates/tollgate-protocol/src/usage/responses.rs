//! OpenAI Responses usage: `input_tokens` includes `input_tokens_details.cached_tokens`,
//! `output_tokens` includes `output_tokens_details.reasoning_tokens` (API reference, "The
//! response object").

use serde::Deserialize;

use super::Usage;
use super::count::Count;
use super::openai::{CompletionDetails, Names, PromptDetails, scan_usage, two_level};
use crate::json_scan::{Cursor, document};

const RESPONSES: Names = Names {
    prompt: b"input_tokens",
    completion: b"output_tokens",
    prompt_details: b"input_tokens_details",
    completion_details: b"output_tokens_details",
};

#[derive(Deserialize)]
struct ResponsesUsage {
    input_tokens: Option<Count>,
    output_tokens: Option<Count>,
    input_tokens_details: Option<PromptDetails>,
    output_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct Inner {
    usage: Option<ResponsesUsage>,
}

#[derive(Deserialize)]
struct Doc {
    response: Option<Inner>,
    usage: Option<ResponsesUsage>,
}

impl From<ResponsesUsage> for Usage {
    fn from(u: ResponsesUsage) -> Self {
        two_level(
            u.input_tokens,
            u.output_tokens,
            u.input_tokens_details,
            u.output_tokens_details,
        )
    }
}

/// Usage of a Responses object (a body: its top-level `usage`) or of an event wrapping one
/// under `response` (`response.completed`, `response.incomplete`: `response.usage`, which
/// wins when the document has a `response` object). `None` when there is none or it is
/// `null`, or the document is not JSON.
pub fn responses_usage(data: &[u8]) -> Option<Usage> {
    match document(data, scan) {
        Some(found) => found,
        None => {
            let d = serde_json::from_slice::<Doc>(data).ok()?;
            match d.response {
                Some(inner) => inner.usage,
                None => d.usage,
            }
            .map(Usage::from)
        }
    }
}

fn scan(c: &mut Cursor<'_>) -> Option<Option<Usage>> {
    let mut seen = [false; 2];
    // Some when `response` is an object (`null` is as if absent, serde's `Option`).
    let mut response: Option<Option<Usage>> = None;
    let mut top = None;
    c.object(|key, _, c| {
        if key == b"response" {
            if std::mem::replace(&mut seen[0], true) {
                return None;
            }
            if !c.eat_literal(b"null") {
                response = Some(c.member(b"usage", |c| scan_usage(c, &RESPONSES))?.flatten());
            }
        } else if key == b"usage" {
            if std::mem::replace(&mut seen[1], true) {
                return None;
            }
            top = scan_usage(c, &RESPONSES)?;
        } else {
            c.skip_value()?;
        }
        Some(())
    })?;
    Some(response.unwrap_or(top))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_completed_event_and_the_body() {
        let ev = br#"{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":2},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":3}}}}"#;
        let u = responses_usage(ev).unwrap();
        assert_eq!(
            (
                u.prompt_tokens,
                u.completion_tokens,
                u.cached_tokens,
                u.reasoning_tokens
            ),
            (12, 7, 2, 3)
        );
        let body = br#"{"id": "r", "object": "response", "usage": {"input_tokens": 4, "output_tokens": 1}}"#;
        let u = responses_usage(body).unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (4, 1));
        assert_eq!(
            responses_usage(br#"{"type":"response.completed","response":{"usage":null}}"#),
            None
        );
    }
}
