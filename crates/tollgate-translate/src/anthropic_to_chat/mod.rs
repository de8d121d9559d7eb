//! For an Anthropic-Messages client (`/v1/messages`) calling an OpenAI-dialect deployment:
//! the Messages request goes out as an OpenAI Chat request ([`request`], which forces
//! `stream_options.include_usage` when streaming), and the chat response ([`response`]) or chunk
//! stream ([`StreamTranslator`]) comes back as Anthropic Messages.

mod codec;
mod request;
mod response;
mod stream;

pub use codec::MessagesToChat;
pub use request::request;
pub use response::response;
pub use stream::StreamTranslator;
