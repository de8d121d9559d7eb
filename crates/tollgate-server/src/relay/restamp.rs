//! An answer to a request made through an alias carries the name the client sent as its
//! `model`, not the name of the group or upstream model that answered.
//!
//! LiteLLM's proxy restamps the `model` field of what it returns to the model the client
//! requested, except after a fallback, where the answering model is kept
//! (`_override_openai_response_model` in `litellm/proxy/common_request_processing.py`).
//! Tollgate does this where the client's name is an alias, a key's or team's `aliases`
//! entry or a router `model_group_alias`, so a client that asked for `my-alias` is answered
//! as `my-alias`. Requests that name a group are relayed as bytes, as before (see the README
//! on what differs from LiteLLM there).
//!
//! Where the name sits: top-level `model` in chat, completions, embeddings, Messages and
//! Responses bodies and in chat chunks; `message.model` in Anthropic's `message_start`;
//! `response.model` in the Responses events that carry the response object.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;
use tollgate_protocol::{RawEvent, Usage};

use super::handlers::{EventHandler, Step, data_payload};

/// `body` (a JSON object) with its `model` set to `model`; `None` when it is not a JSON
/// object or has no `model`, so the caller relays it unchanged.
pub fn restamp_body(body: &[u8], model: &str) -> Option<Bytes> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    set_model(&mut v, model).then(|| Bytes::from(v.to_string()))
}

/// Sets the first of `model`, `message.model`, `response.model` that `v` has; whether one was.
pub fn set_model(v: &mut Value, model: &str) -> bool {
    let Some(obj) = v.as_object_mut() else {
        return false;
    };
    if let Some(m) = obj.get_mut("model") {
        *m = Value::from(model);
        return true;
    }
    for outer in ["message", "response"] {
        if let Some(m) = obj
            .get_mut(outer)
            .and_then(Value::as_object_mut)
            .and_then(|o| o.get_mut("model"))
        {
            *m = Value::from(model);
            return true;
        }
    }
    false
}

/// One SSE event as the client gets it (single `data:` line, as every handler writes), with
/// the model restamped; the event unchanged when its data is not JSON naming a model.
fn restamp_event(raw: Bytes, model: &str) -> Bytes {
    let data = data_payload(&raw);
    if data.is_empty() || data == b"[DONE]" {
        return raw;
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(data) else {
        return raw;
    };
    if !set_model(&mut v, model) {
        return raw;
    }
    // what precedes the data line (an `event:` line) is kept as it is
    let start = data.as_ptr() as usize - raw.as_ptr() as usize;
    let head = raw[..start].strip_suffix(b" ").unwrap_or(&raw[..start]);
    let mut out = BytesMut::with_capacity(raw.len() + model.len());
    out.put_slice(head);
    out.put_slice(b" ");
    out.put_slice(v.to_string().as_bytes());
    out.put_slice(b"\n\n");
    out.freeze()
}

/// A stream handler whose output events carry `model` (see the module docs); everything else
/// (ends, failures, usage) is the inner handler's.
pub struct Restamped {
    inner: Box<dyn EventHandler>,
    model: String,
    events: VecDeque<Bytes>,
}

impl Restamped {
    /// Wraps `inner`, restamping to `model`.
    pub fn new(inner: Box<dyn EventHandler>, model: String) -> Self {
        Self {
            inner,
            model,
            events: VecDeque::new(),
        }
    }
}

impl EventHandler for Restamped {
    fn on_event(&mut self, ev: RawEvent, out: &mut VecDeque<Bytes>) -> Step {
        let step = self.inner.on_event(ev, &mut self.events);
        out.extend(self.events.drain(..).map(|e| restamp_event(e, &self.model)));
        step
    }

    fn on_failure(&mut self, message: &str, out: &mut VecDeque<Bytes>) {
        self.inner.on_failure(message, out);
    }

    fn usage(&self) -> Option<Usage> {
        self.inner.usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_take_the_name_the_client_sent() {
        let b = restamp_body(
            br#"{"id":"c1","object":"chat.completion","model":"gpt-4o-2024-08-06","choices":[]}"#,
            "my-alias",
        );
        assert_eq!(
            b.as_deref(),
            Some(&br#"{"id":"c1","object":"chat.completion","model":"my-alias","choices":[]}"#[..])
        );
        assert_eq!(restamp_body(b"[1,2]", "a"), None);
        assert_eq!(restamp_body(br#"{"id":"x"}"#, "a"), None);
        assert_eq!(restamp_body(b"not json", "a"), None);
    }

    #[test]
    fn events_keep_their_name_line_and_take_the_model() {
        let chunk = Bytes::from_static(
            b"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"echo\",\"choices\":[]}\n\n",
        );
        assert_eq!(
            &restamp_event(chunk, "alias-a")[..],
            &b"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"alias-a\",\"choices\":[]}\n\n"[..]
        );
        let start = Bytes::from_static(
            b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-x\"}}\n\n",
        );
        assert_eq!(
            &restamp_event(start, "alias-a")[..],
            &b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"alias-a\"}}\n\n"[..]
        );
        let created = Bytes::from_static(
            b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"gpt\"}}\n\n",
        );
        assert_eq!(
            &restamp_event(created, "alias-a")[..],
            &b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"alias-a\"}}\n\n"[..]
        );
        // no model, [DONE], not JSON: as they came
        for raw in [
            &b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0}\n\n"[..],
            b"data: [DONE]\n\n",
            b": keep-alive\n\n",
        ] {
            let b = Bytes::copy_from_slice(raw);
            assert_eq!(restamp_event(b.clone(), "x"), b);
        }
    }
}
