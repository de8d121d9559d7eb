//! Error events inside a 200 stream, per dialect: what an upstream sends when it fails after
//! its response head (wire-formats.md §1.3, §2.3, §3).
//!
//! - OpenAI-compatible chat / completions: `data: {"error":{"message","type","param","code"}}`
//!   and no `[DONE]` (OpenAI's own servers, vLLM, llama-cpp-python, ...).
//! - Anthropic: `event: error` with `{"type":"error","error":{"type","message"}}`
//!   (`overloaded_error`, `api_error`, `rate_limit_error`; Anthropic's streaming docs).
//! - Responses: `response.failed` (the response with `status: "failed"` and `error: {code,
//!   message}`), or a stream-level `error` event `{"type":"error","code","message","param"}`.
//!
//! Chosen by [`Behavior::first_event_error`] (the stream's first event is the error) or, after
//! [`Behavior::midstream_error_after`] content events, by [`Behavior::stream_error`];
//! [`Behavior::stream_error_style`] `python` writes the event's JSON with Python's
//! `json.dumps` separators (`", "` and `": "`), [`Behavior::stream_error_event`] `error` picks
//! the Responses `error` event over `response.failed`.

use std::io;

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Value, json};

use crate::behavior::Behavior;
use crate::errors::{anthropic_error_parts, openai_error_parts};

/// What went wrong, in words every dialect has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// OpenAI 429 `rate_limit_exceeded`; Anthropic `rate_limit_error`.
    RateLimit,
    /// OpenAI 503 `overloaded`; Anthropic `overloaded_error` (its HTTP 529).
    Overloaded,
    /// OpenAI 500 `server_error`; Anthropic `api_error`.
    Server,
}

impl ErrorKind {
    /// Reads a kind: `rate_limit` (`rate_limit_error`, `rate_limit_exceeded`), `overloaded`
    /// (`overloaded_error`), `server_error` (`server`, `api_error`). `None` otherwise.
    pub fn parse(s: &str) -> Option<ErrorKind> {
        Some(match s.trim() {
            "rate_limit" | "rate_limit_error" | "rate_limit_exceeded" => ErrorKind::RateLimit,
            "overloaded" | "overloaded_error" => ErrorKind::Overloaded,
            "server" | "server_error" | "api_error" => ErrorKind::Server,
            _ => return None,
        })
    }

    /// The HTTP status an upstream would have answered with before its head.
    fn openai_status(self) -> u16 {
        match self {
            ErrorKind::RateLimit => 429,
            ErrorKind::Overloaded => 503,
            ErrorKind::Server => 500,
        }
    }
}

/// One error event to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamError {
    /// What failed.
    pub kind: ErrorKind,
    /// JSON with Python's `json.dumps` separators.
    pub python: bool,
    /// Responses: a stream-level `error` event instead of `response.failed`.
    pub error_event: bool,
}

impl StreamError {
    /// The error a stream starts with, when [`Behavior::first_event_error`] names a kind.
    pub fn first(b: &Behavior) -> Option<StreamError> {
        let kind = ErrorKind::parse(b.first_event_error.as_deref()?)?;
        Some(Self::styled(kind, b))
    }

    /// The error after [`Behavior::midstream_error_after`] content events: the kind
    /// [`Behavior::stream_error`] names, else `default` (the dialect's usual one).
    pub fn midstream(b: &Behavior, default: ErrorKind) -> StreamError {
        let kind = b
            .stream_error
            .as_deref()
            .and_then(ErrorKind::parse)
            .unwrap_or(default);
        Self::styled(kind, b)
    }

    fn styled(kind: ErrorKind, b: &Behavior) -> StreamError {
        StreamError {
            kind,
            python: b.stream_error_style.as_deref() == Some("python"),
            error_event: b.stream_error_event.as_deref() == Some("error"),
        }
    }

    /// OpenAI-compatible error chunk: `data: {"error":{...}}\n\n`, the body OpenAI sends for
    /// the same failure as an HTTP error (`model` appears in the rate-limit message).
    pub fn openai_event(&self, model: &str) -> Bytes {
        let status = self.kind.openai_status();
        let (ty, code, message) = openai_error_parts(status, model);
        let param = (status == 429).then_some("requests");
        let v = json!({"error": {"message": message, "type": ty, "param": param, "code": code}});
        Bytes::from(format!("data: {}\n\n", render(&v, self.python)))
    }

    /// Anthropic `event: error` with `{"type":"error","error":{"type","message"}}`.
    pub fn anthropic_event(&self) -> Bytes {
        let status = match self.kind {
            ErrorKind::RateLimit => 429,
            ErrorKind::Overloaded => 529,
            ErrorKind::Server => 500,
        };
        let (ty, message) = anthropic_error_parts(status);
        let v = json!({"type": "error", "error": {"type": ty, "message": message}});
        named(self.python, "error", &v)
    }

    /// Responses `error: {code, message}` (also the stream-level `error` event's fields).
    pub fn responses_error(&self, model: &str) -> (&'static str, String) {
        match self.kind {
            ErrorKind::RateLimit => ("rate_limit_exceeded", openai_error_parts(429, model).2),
            ErrorKind::Overloaded => ("server_error", openai_error_parts(503, model).2),
            ErrorKind::Server => ("server_error", "The model produced an error.".to_owned()),
        }
    }

    /// Responses terminal error event number `seq`: `response.failed` carrying `failed` (the
    /// response object with `status: "failed"` and the error), or with
    /// [`StreamError::error_event`] the stream-level `error` event.
    pub fn responses_event(&self, model: &str, seq: u64, failed: Value) -> Bytes {
        if self.error_event {
            let (code, message) = self.responses_error(model);
            let v = json!({"type": "error", "code": code, "message": message, "param": null,
                           "sequence_number": seq});
            return named(self.python, "error", &v);
        }
        let v = json!({"type": "response.failed", "response": failed, "sequence_number": seq});
        named(self.python, "response.failed", &v)
    }
}

fn named(python: bool, name: &str, v: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {}\n\n", render(v, python)))
}

/// `v` as compact JSON, or with Python's `json.dumps` default separators (`", "`, `": "`).
pub fn render(v: &Value, python: bool) -> String {
    if !python {
        return v.to_string();
    }
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    if v.serialize(&mut ser).is_err() {
        return v.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|_| v.to_string())
}

/// serde_json formatter writing `json.dumps`'s default separators.
struct PythonFormatter;

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn behavior(v: Value) -> Behavior {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn python_separators() {
        let v = json!({"error": {"message": "m", "code": null, "list": [1, 2]}});
        assert_eq!(
            render(&v, true),
            r#"{"error": {"message": "m", "code": null, "list": [1, 2]}}"#
        );
        assert_eq!(
            render(&v, false),
            r#"{"error":{"message":"m","code":null,"list":[1,2]}}"#
        );
    }

    #[test]
    fn first_event_errors_per_dialect() {
        let b =
            behavior(json!({"first_event_error": "rate_limit", "stream_error_style": "python"}));
        let e = StreamError::first(&b).unwrap();
        assert_eq!(
            &e.openai_event("m")[..],
            "data: {\"error\": {\"message\": \"Rate limit reached for m on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms.\", \"type\": \"requests\", \"param\": \"requests\", \"code\": \"rate_limit_exceeded\"}}\n\n".as_bytes()
        );
        let b = behavior(json!({"first_event_error": "overloaded_error"}));
        assert_eq!(
            &StreamError::first(&b).unwrap().anthropic_event()[..],
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
        );
        let b = behavior(json!({"first_event_error": "api_error", "stream_error_event": "error"}));
        assert_eq!(
            &StreamError::first(&b).unwrap().responses_event("m", 0, Value::Null)[..],
            b"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The model produced an error.\",\"param\":null,\"sequence_number\":0}\n\n"
        );
        assert_eq!(StreamError::first(&Behavior::default()), None);
        assert_eq!(
            StreamError::first(&behavior(json!({"first_event_error": "nonsense"}))),
            None
        );
    }

    #[test]
    fn midstream_kind_defaults_to_the_dialects_usual_error() {
        let e = StreamError::midstream(&Behavior::default(), ErrorKind::Overloaded);
        assert_eq!(e.kind, ErrorKind::Overloaded);
        let b = behavior(json!({"stream_error": "rate_limit_error"}));
        assert_eq!(
            StreamError::midstream(&b, ErrorKind::Server).kind,
            ErrorKind::RateLimit
        );
    }
}
