//! For a legacy OpenAI Completions client (`/v1/completions`) calling a Chat Completions
//! deployment (and, chained through [`crate::chat_to_anthropic`], an Anthropic one): the prompt
//! becomes one user message ([`request`]), and the chat response ([`response`]) or chunk stream
//! ([`StreamTranslator`]) comes back as `text_completion` objects.

use bytes::BytesMut;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::chat_chunk::ChatChunk;
use crate::common::object;
use crate::errors::write_openai_stream_error;
use crate::stream::ChunkData;
use crate::usage::Usage;
use crate::{StreamOutcome, StreamTranslate, TranslateError, sse_out};

/// Translates a Completions request body into a Chat Completions request body.
///
/// `prompt` (a string, or an array holding one string) → one user message. Kept: `model`,
/// `max_tokens`, `temperature`, `top_p`, `n`, `stop`, `presence_penalty`, `frequency_penalty`,
/// `logit_bias`, `seed`, `user`, `stream` (plus `stream_options`, with `include_usage` forced
/// on so the gateway can bill). Dropped: `logprobs` (chat's is a different shape), `suffix`
/// when empty.
///
/// Errors ([`TranslateError::Unsupported`] naming the field): several prompts in one request,
/// token-id prompts, `echo: true`, `best_of > 1`, a non-empty `suffix`.
pub fn request(req: &Value) -> Result<Value, TranslateError> {
    let r = object(req, "body")?;
    let prompt = match r.get("prompt") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(list)) if list.len() == 1 && list[0].is_string() => {
            list[0].as_str().unwrap_or_default()
        }
        Some(Value::Array(_)) => {
            return Err(TranslateError::unsupported(
                "prompt",
                "only a single text prompt translates to a chat deployment",
            ));
        }
        _ => {
            return Err(TranslateError::invalid(
                "prompt",
                "required string is missing",
            ));
        }
    };
    if r.get("echo").and_then(Value::as_bool) == Some(true) {
        return Err(TranslateError::unsupported(
            "echo",
            "chat deployments cannot echo the prompt",
        ));
    }
    if r.get("best_of")
        .and_then(Value::as_u64)
        .is_some_and(|b| b > 1)
    {
        return Err(TranslateError::unsupported(
            "best_of",
            "chat deployments have no best_of",
        ));
    }
    if r.get("suffix")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        return Err(TranslateError::unsupported(
            "suffix",
            "chat deployments cannot insert text",
        ));
    }
    let mut out = Map::new();
    out.insert(
        "model".into(),
        r.get("model").cloned().unwrap_or_else(|| "".into()),
    );
    out.insert(
        "messages".into(),
        json!([{"role": "user", "content": prompt}]),
    );
    for key in [
        "max_tokens",
        "temperature",
        "top_p",
        "n",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "seed",
        "user",
    ] {
        if let Some(v) = r.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    if r.get("stream").and_then(Value::as_bool) == Some(true) {
        out.insert("stream".into(), true.into());
        out.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(out))
}

/// Translates a `chat.completion` into a `text_completion`: each choice's `message.content`
/// becomes `text`, `finish_reason` is kept (`tool_calls` cannot occur: no tools were sent),
/// `logprobs: null`, usage unchanged.
///
/// Errors: [`TranslateError::InvalidResponse`] if `choices` is missing.
pub fn response(chat: &Value) -> Result<Value, TranslateError> {
    let choices = chat
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| TranslateError::InvalidResponse("chat.completion has no choices".into()))?;
    let choices: Vec<Value> = choices
        .iter()
        .map(|c| {
            json!({
                "text": c.get("message").and_then(|m| m.get("content")).and_then(Value::as_str).unwrap_or(""),
                "index": c.get("index").cloned().unwrap_or(0.into()),
                "logprobs": null,
                "finish_reason": c.get("finish_reason").cloned().unwrap_or(Value::Null),
            })
        })
        .collect();
    let mut out = json!({
        "id": chat.get("id").cloned().unwrap_or_else(|| "".into()),
        "object": "text_completion",
        "created": chat.get("created").cloned().unwrap_or(0.into()),
        "model": chat.get("model").cloned().unwrap_or_else(|| "".into()),
        "choices": choices,
    });
    if let Some(u) = chat.get("usage").filter(|u| u.is_object()) {
        out["usage"] = u.clone();
    }
    Ok(out)
}

/// Chat chunks → `text_completion` chunks (`data: {"object":"text_completion","choices":
/// [{"text","index","logprobs":null,"finish_reason"}]}`), the usage chunk when the client asked
/// for `include_usage`, then `data: [DONE]`. Upstream errors and EOF before `[DONE]` become an
/// OpenAI error chunk, as for chat.
#[derive(Debug)]
pub struct StreamTranslator {
    include_usage: bool,
    finish_reason: Option<String>,
    usage: Usage,
    outcome: StreamOutcome,
}

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: &'a [Choice<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a Value>,
}

#[derive(Serialize)]
struct Choice<'a> {
    text: &'a str,
    index: u32,
    logprobs: Option<()>,
    finish_reason: Option<&'a str>,
}

impl StreamTranslator {
    /// A translator for one stream; `include_usage` as the client's
    /// `stream_options.include_usage`.
    pub fn new(include_usage: bool) -> Self {
        Self {
            include_usage,
            finish_reason: None,
            usage: Usage::default(),
            outcome: StreamOutcome::InProgress,
        }
    }

    /// The `finish_reason` of choice 0 (or the last one seen), once known.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }
}

impl StreamTranslate for StreamTranslator {
    /// Feeds one upstream chunk as its `data:` text.
    ///
    /// Errors: [`TranslateError::InvalidStreamEvent`] for an unreadable chunk, after an error
    /// chunk has been written.
    fn feed_str(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut BytesMut,
    ) -> Result<(), TranslateError> {
        if self.outcome != StreamOutcome::InProgress {
            return Ok(());
        }
        let data = match ChunkData::of(data) {
            ChunkData::Empty => return Ok(()),
            ChunkData::Done => {
                sse_out::done(out);
                self.outcome = StreamOutcome::Completed;
                return Ok(());
            }
            ChunkData::Chunk(c) => c,
        };
        let chunk: ChatChunk<'_> = match serde_json::from_str(data) {
            Ok(c) => c,
            Err(e) => {
                let msg = format!("upstream sent an unreadable chunk: {e}");
                write_openai_stream_error(out, &msg, None);
                self.outcome = StreamOutcome::InvalidEvent;
                return Err(TranslateError::InvalidStreamEvent(msg));
            }
        };
        if let Some(err) = &chunk.error {
            sse_out::data(out, &json!({"error": err}));
            self.outcome = StreamOutcome::UpstreamError;
            return Ok(());
        }
        let id = chunk.id.as_deref().unwrap_or("");
        let model = chunk.model.as_deref().unwrap_or("");
        let created = chunk.created.map_or(0, |c| c as u64);
        if let Some(u) = chunk.usage.as_ref().filter(|u| u.is_object()) {
            self.usage = Usage::from_openai_chat(u);
            if self.include_usage {
                sse_out::data(
                    out,
                    &Chunk {
                        id,
                        object: "text_completion",
                        created,
                        model,
                        choices: &[],
                        usage: Some(u),
                    },
                );
            }
        }
        for c in chunk.choices.iter().flatten() {
            let text = c.delta.as_ref().and_then(|d| d.content_text());
            let text = text.as_deref().unwrap_or("");
            if let Some(f) = c.finish() {
                self.finish_reason = Some(f.to_owned());
            }
            if text.is_empty() && c.finish().is_none() {
                continue;
            }
            let choice = [Choice {
                text,
                index: c.index,
                logprobs: None,
                finish_reason: c.finish(),
            }];
            sse_out::data(
                out,
                &Chunk {
                    id,
                    object: "text_completion",
                    created,
                    model,
                    choices: &choice,
                    usage: None,
                },
            );
        }
        Ok(())
    }

    /// Ends a stream cut short (EOF, read error, idle gap): an error chunk carrying `message`
    /// if `[DONE]` never came.
    fn cut_short(&mut self, out: &mut BytesMut, message: &str) {
        if self.outcome == StreamOutcome::InProgress {
            write_openai_stream_error(out, message, None);
            self.outcome = StreamOutcome::Truncated;
        }
    }

    /// Usage seen (from the upstream's usage chunk), for billing.
    fn usage(&self) -> Usage {
        self.usage
    }

    /// How the stream ended (or [`StreamOutcome::InProgress`]).
    fn outcome(&self) -> StreamOutcome {
        self.outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_becomes_a_user_message_and_batches_are_refused() {
        let out = request(
            &json!({"model":"m","prompt":"Say hi","max_tokens":5,"stream":true,"logprobs":2}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"model":"m","messages":[{"role":"user","content":"Say hi"}],"max_tokens":5,
                   "stream":true,"stream_options":{"include_usage":true}})
        );
        let err = request(&json!({"model":"m","prompt":["a","b"]})).unwrap_err();
        assert_eq!(err.param(), Some("prompt"));
        assert_eq!(
            request(&json!({"model":"m","prompt":"a","echo":true}))
                .unwrap_err()
                .param(),
            Some("echo")
        );
    }

    #[test]
    fn response_and_stream() {
        let chat = json!({"id":"c1","object":"chat.completion","created":5,"model":"m",
            "choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}});
        assert_eq!(
            response(&chat).unwrap(),
            json!({"id":"c1","object":"text_completion","created":5,"model":"m",
                   "choices":[{"text":"Hi.","index":0,"logprobs":null,"finish_reason":"stop"}],
                   "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})
        );
        let mut t = StreamTranslator::new(false);
        let mut out = BytesMut::new();
        for d in [
            r#"{"id":"c1","created":5,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"id":"c1","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"Hi."}}]}"#,
            r#"{"id":"c1","created":5,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"id":"c1","created":5,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#,
            "[DONE]",
        ] {
            t.feed_str(None, d, &mut out).unwrap();
        }
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            concat!(
                "data: {\"id\":\"c1\",\"object\":\"text_completion\",\"created\":5,\"model\":\"m\",\"choices\":[{\"text\":\"Hi.\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}\n\n",
                "data: {\"id\":\"c1\",\"object\":\"text_completion\",\"created\":5,\"model\":\"m\",\"choices\":[{\"text\":\"\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n",
                "data: [DONE]\n\n"
            )
        );
        assert_eq!((t.usage().input_tokens, t.usage().output_tokens), (3, 2));
        assert_eq!(t.outcome(), StreamOutcome::Completed);
    }
}
