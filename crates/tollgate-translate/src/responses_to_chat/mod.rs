//! For an OpenAI-Responses client (`/v1/responses`) calling a Chat Completions deployment:
//! the Responses request goes out as a chat request ([`request`]), and the chat response
//! ([`response`]) or chunk stream ([`StreamTranslator`]) comes back as a Response object or
//! Responses events.
//!
//! `previous_response_id`: the gateway stores, per response id, the chat messages a follow-up
//! needs ([`history_after`]) behind its store seam, and passes them to [`request`].

mod codec;
mod content;
mod request;
mod response;
mod stream;

use serde_json::Value;

pub use codec::ResponsesToChat;
pub use request::request;
pub(crate) use request::request_with;
pub use response::{ResponseContext, response};
pub use stream::StreamTranslator;

use crate::TranslateError;

/// The chat conversation a follow-up turn (`previous_response_id` = this response) starts
/// from: `history` (the earlier turns), then this turn's `input` from the Responses request,
/// then the assistant's output from the Response object (`output` items are valid input items).
/// `instructions` are not included: the Responses API does not carry them over.
///
/// Errors as for [`request`] (input items that cannot be expressed in chat).
pub fn history_after(
    history: &[Value],
    responses_request: &Value,
    response: &Value,
) -> Result<Vec<Value>, TranslateError> {
    let mut out = history.to_vec();
    request::input_messages(
        responses_request.get("input").unwrap_or(&Value::Null),
        "input",
        false,
        &mut out,
    )?;
    request::input_messages(
        response.get("output").unwrap_or(&Value::Null),
        "output",
        false,
        &mut out,
    )?;
    Ok(out)
}
