//! For an OpenAI-Chat client (`/v1/chat/completions`) calling an `anthropic/` deployment:
//! the chat request goes out as an Anthropic Messages request ([`request`]), and the Anthropic
//! response ([`response`]) or stream ([`StreamTranslator`]) comes back as OpenAI Chat.

mod codec;
mod messages;
mod request;
mod response;
mod stream;

pub use codec::ChatToAnthropic;
pub use request::request;
pub use response::response;
pub use stream::{StreamOptions, StreamTranslator};
