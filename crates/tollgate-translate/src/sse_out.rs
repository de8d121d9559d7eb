//! Writing SSE events into the client-bound buffer, without intermediate allocations.

use bytes::{BufMut, BytesMut};
use serde::Serialize;

/// Appends `data: <json>\n\n` (OpenAI Chat chunk framing).
pub(crate) fn data<T: Serialize + ?Sized>(out: &mut BytesMut, value: &T) {
    out.put_slice(b"data: ");
    json(out, value);
    out.put_slice(b"\n\n");
}

/// Appends `event: <name>\ndata: <json>\n\n` (Anthropic and Responses framing).
pub(crate) fn event<T: Serialize + ?Sized>(out: &mut BytesMut, name: &str, value: &T) {
    out.put_slice(b"event: ");
    out.put_slice(name.as_bytes());
    out.put_slice(b"\ndata: ");
    json(out, value);
    out.put_slice(b"\n\n");
}

/// Appends `data: [DONE]\n\n`.
pub(crate) fn done(out: &mut BytesMut) {
    out.put_slice(b"data: [DONE]\n\n");
}

fn json<T: Serialize + ?Sized>(out: &mut BytesMut, value: &T) {
    // Serializing our own types and `serde_json::Value` into memory cannot fail (no map keys
    // that are not strings, no I/O); fall back to `null` rather than panic.
    if serde_json::to_writer(out.writer(), value).is_err() {
        out.put_slice(b"null");
    }
}
