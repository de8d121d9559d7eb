//! Wire-level building blocks shared by every Tollgate crate, with no I/O:
//!
//! - [`sse`]: a bounded, split-safe Server-Sent Events framer and parser.
//! - [`body`]: parse-once handling of JSON request bodies (interpret a few fields, keep the rest
//!   as raw JSON slices, re-serialize with the model rewritten and gateway-only fields removed).
//! - [`error`]: error envelopes in each client dialect (OpenAI, Anthropic).
//! - [`usage`]: the usage numbers the gateway needs from a response or stream.
//! - [`produced`]: the generated text of an answer, for one whose usage leaves tokens out.
//! - [`model_name`]: which model names the gateway accepts, and the wildcard rule of every
//!   model list.

pub mod body;
pub mod error;
mod json_scan;
pub mod model_name;
pub mod produced;
pub mod sse;
pub mod usage;

pub use body::{BodyError, RequestBody};
pub use error::{Dialect, ErrorEnvelope};
pub use sse::{ParsedEvent, RawEvent, SseError, SseFramer};
pub use usage::Usage;
