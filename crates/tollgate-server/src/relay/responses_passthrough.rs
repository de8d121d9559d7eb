//! Responses API events relayed to a Responses client, and how such a stream ends when it fails.
//!
//! Every upstream event is relayed as its exact bytes. A failed stream always ends with
//! `response.failed` and never `response.completed` (OpenAI's Responses streaming: an `error`
//! event is followed by `response.failed`, the response object of that stream with
//! `status: "failed"` and `error: {code, message}`, at the next `sequence_number`):
//!
//! - the upstream's own `response.failed` is relayed and ends the stream;
//! - after the upstream's `error` event (relayed), the gateway writes that `response.failed`
//!   itself: the `response` of the stream's `response.created` with `status: "failed"` and the
//!   error's `code` and `message`, numbered after the `error` event;
//! - a stream cut short (EOF before a terminal event, read error, idle gap) gets the same
//!   event, with code `server_error` and the relay's message.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_protocol::{RawEvent, Usage};

use super::handlers::{EventHandler, Step, data_payload, event_name};
use tollgate_protocol::usage::responses_usage;

/// Called once with the upstream's response id.
pub type OnId = Box<dyn FnOnce(&str) + Send>;

/// Responses API events relayed to a Responses client; usage from `response.completed`
/// (`response.usage`: `input_tokens` includes cached, `output_tokens` includes reasoning).
#[derive(Default)]
pub struct ResponsesPassthrough {
    usage: Option<Usage>,
    on_id: Option<OnId>,
    /// The `response` object of `response.created` (the stream's id, model, `created_at`...).
    created: Option<Value>,
    /// `(n, e)`: after `e` events relayed, the next event would be number `n` (read from the
    /// numbered events the handler parses anyway; the events between are counted, not read).
    anchor: Option<(u64, u64)>,
    /// Events relayed.
    events: u64,
}

impl std::fmt::Debug for ResponsesPassthrough {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesPassthrough")
            .field("usage", &self.usage)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Created {
    response: Option<Value>,
    sequence_number: Option<u64>,
}

/// A stream-level `error` event: `{"type":"error","code","message","param",
/// "sequence_number"}`, or with them under `error` (as some OpenAI streams send it).
#[derive(Deserialize)]
struct ErrorEvent {
    code: Option<Value>,
    message: Option<String>,
    error: Option<Box<ErrorEvent>>,
    sequence_number: Option<u64>,
}

impl ResponsesPassthrough {
    /// Calls `f` with the response id from `response.created` (so the gateway can later route
    /// `GET /v1/responses/{id}` to the deployment that stores it).
    pub fn on_id(f: OnId) -> Self {
        Self {
            on_id: Some(f),
            ..Self::default()
        }
    }

    fn created(&mut self, data: &[u8]) {
        let Ok(c) = serde_json::from_slice::<Created>(data) else {
            return;
        };
        if let Some(n) = c.sequence_number {
            self.anchor = Some((n + 1, self.events));
        }
        if let Some(f) = self.on_id.take()
            && let Some(id) = c.response.as_ref().and_then(|r| r["id"].as_str())
        {
            f(id);
        }
        self.created = c.response.filter(Value::is_object);
    }

    /// The sequence number of the event the gateway writes next (Responses streams number
    /// their events from 0, one apart).
    fn seq(&self) -> u64 {
        match self.anchor {
            Some((n, at)) => n + (self.events - at),
            None => self.events,
        }
    }

    /// Appends `response.failed` for this stream with `code` and `message`.
    fn write_failed(&mut self, code: &str, message: &str, out: &mut VecDeque<Bytes>) {
        let mut response = match self.created.take() {
            Some(Value::Object(m)) => m,
            _ => {
                let mut m = Map::new();
                m.insert("object".into(), "response".into());
                m
            }
        };
        response.insert("status".into(), "failed".into());
        response.insert("error".into(), json!({"code": code, "message": message}));
        let mut b = BytesMut::new();
        tollgate_translate::errors::write_responses_failed(
            &mut b,
            &Value::Object(response),
            self.seq(),
        );
        out.push_back(b.freeze());
    }
}

impl EventHandler for ResponsesPassthrough {
    fn on_event(&mut self, ev: RawEvent, out: &mut VecDeque<Bytes>) -> Step {
        let name = event_name(&ev.raw);
        let data = data_payload(&ev.raw);
        self.events += 1;
        let step = match name {
            b"response.created" => {
                self.created(data);
                Step::Continue
            }
            b"response.completed" | b"response.incomplete" => {
                self.usage = responses_usage(data);
                Step::End { failed: false }
            }
            b"response.failed" => Step::End { failed: true },
            b"error" => {
                let e = serde_json::from_slice::<ErrorEvent>(data).ok();
                let seq = e.as_ref().and_then(|e| e.sequence_number);
                let e = e.map(|e| match e.error {
                    Some(inner) if e.message.is_none() => *inner,
                    _ => e,
                });
                let code = e
                    .as_ref()
                    .and_then(|e| e.code.as_ref())
                    .filter(|c| !c.is_null())
                    .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
                    .unwrap_or_else(|| "server_error".to_owned());
                let message = e
                    .and_then(|e| e.message)
                    .unwrap_or_else(|| "The upstream reported an error in its stream.".to_owned());
                if let Some(n) = seq {
                    self.anchor = Some((n + 1, self.events));
                }
                out.push_back(ev.raw);
                self.write_failed(&code, &message, out);
                return Step::End { failed: true };
            }
            _ => Step::Continue,
        };
        out.push_back(ev.raw);
        step
    }

    fn on_failure(&mut self, message: &str, out: &mut VecDeque<Bytes>) {
        self.write_failed("server_error", message, out);
    }

    fn usage(&self) -> Option<Usage> {
        self.usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, data: &str) -> RawEvent {
        RawEvent {
            raw: Bytes::from(format!("event: {name}\ndata: {data}\n\n")),
        }
    }

    fn head(h: &mut ResponsesPassthrough, out: &mut VecDeque<Bytes>) {
        for (name, data) in [
            (
                "response.created",
                r#"{"type":"response.created","response":{"id":"resp_7","object":"response","status":"in_progress","error":null,"model":"m","output":[]},"sequence_number":0}"#,
            ),
            (
                "response.in_progress",
                r#"{"type":"response.in_progress","response":{"id":"resp_7"},"sequence_number":1}"#,
            ),
            (
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":"Hi","sequence_number":2}"#,
            ),
        ] {
            assert_eq!(h.on_event(ev(name, data), out), Step::Continue);
        }
    }

    fn last(out: &VecDeque<Bytes>) -> String {
        String::from_utf8(out.back().unwrap().to_vec()).unwrap()
    }

    #[test]
    fn an_error_event_is_relayed_and_followed_by_response_failed() {
        let mut h = ResponsesPassthrough::default();
        let mut out = VecDeque::new();
        head(&mut h, &mut out);
        let error = r#"{"type": "error", "code": "server_error", "message": "died", "param": null, "sequence_number": 3}"#;
        assert_eq!(
            h.on_event(ev("error", error), &mut out),
            Step::End { failed: true }
        );
        assert_eq!(out.len(), 5);
        assert_eq!(out[3], format!("event: error\ndata: {error}\n\n"));
        assert_eq!(
            last(&out),
            "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_7\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"died\"},\"model\":\"m\",\"output\":[]},\"sequence_number\":4}\n\n"
        );
    }

    /// The error's fields under `error`, and no `sequence_number`: the next number is counted.
    #[test]
    fn a_nested_error_without_a_number_is_numbered_by_count() {
        let mut h = ResponsesPassthrough::default();
        let mut out = VecDeque::new();
        head(&mut h, &mut out);
        h.on_event(
            ev(
                "error",
                r#"{"type":"error","error":{"code":"rate_limit_exceeded","message":"slow down","param":null}}"#,
            ),
            &mut out,
        );
        let v: Value = serde_json::from_str(last(&out).split("data: ").nth(1).unwrap()).unwrap();
        assert_eq!(v["sequence_number"], 4);
        assert_eq!(
            v["response"]["error"],
            json!({"code": "rate_limit_exceeded", "message": "slow down"})
        );
    }

    #[test]
    fn a_stream_cut_short_ends_with_response_failed_and_the_relays_message() {
        let mut h = ResponsesPassthrough::default();
        let mut out = VecDeque::new();
        head(&mut h, &mut out);
        h.on_failure(
            "Upstream sent nothing for 100 ms (stream idle timeout)",
            &mut out,
        );
        let v: Value = serde_json::from_str(last(&out).split("data: ").nth(1).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"type": "response.failed", "response": {"id": "resp_7", "object": "response",
                "status": "failed", "error": {"code": "server_error",
                "message": "Upstream sent nothing for 100 ms (stream idle timeout)"},
                "model": "m", "output": []}, "sequence_number": 3})
        );
    }
}
