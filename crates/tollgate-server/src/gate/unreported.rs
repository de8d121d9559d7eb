//! Tokens an upstream's usage leaves out, counted at settlement so every caller gets the same
//! bill for the same answer (a key with a budget, one without, the master key).
//!
//! When the provider reports usage (the common case) nothing here runs but a cheap check. When
//! it does not (an OpenAI-compatible server without `usage`, a stream cut off by the client or
//! failing before its usage event), settlement counts, as LiteLLM does with its tokenizer when
//! a response has no usage:
//! - **prompt tokens**: the admission count when admission made one (a budget or TPM limit
//!   needed it), else the client's request counted now the same way
//!   ([`super::facts::prompt_tokens`]: the model's BPE for OpenAI models, bytes/4 otherwise);
//! - **completion tokens**: the text actually produced ([`ProducedText`]): a unary answer's
//!   content, a stream's content deltas as relayed (not its envelopes: role chunks,
//!   `message_start`, `ping`, ...), counted with the same tokenizer.
//!
//! The counting happens once the answer is over (a stream's end or drop; a unary answer after
//! its body arrived), and only for governed calls: an ungoverned call keeps nothing.

use bytes::Bytes;
use tollgate_governance::tokens::Encoding;
use tollgate_protocol::Usage;
use tollgate_protocol::produced::ProducedText;

use crate::request::{Endpoint, ParsedRequest};

/// What settlement counts from when the usage lacks tokens (see the module docs).
#[derive(Debug, Default)]
pub struct Unreported {
    /// The client's request body and endpoint; `None` for an ungoverned call (nothing kept).
    request: Option<(Bytes, Endpoint)>,
    /// Generated text of the answer.
    produced: ProducedText,
}

impl Unreported {
    /// For one attempt: keeps the request (a reference-counted handle, no copy) only when the
    /// call is `governed`.
    pub fn new(governed: bool, body: &Bytes, endpoint: Endpoint) -> Self {
        Self {
            request: governed.then(|| (body.clone(), endpoint)),
            produced: ProducedText::default(),
        }
    }

    /// True when settlement may need it (a governed call).
    pub fn governed(&self) -> bool {
        self.request.is_some()
    }

    /// A complete answer body: read for its text only when `usage` leaves the completion
    /// tokens out (embeddings produce none).
    pub fn answer(&mut self, body: &[u8], usage: Option<Usage>) {
        let Some((_, endpoint)) = &self.request else {
            return;
        };
        if *endpoint != Endpoint::Embeddings && usage.is_none_or(|u| u.completion_tokens == 0) {
            self.produced.feed_body(body);
        }
    }

    /// One stream event relayed to the client (its raw upstream bytes; held by reference
    /// and read only if settlement needs it, [`ProducedText::feed_event`]).
    pub fn event(&mut self, raw: &Bytes) {
        if self.request.is_some() {
            self.produced.feed_event(raw);
        }
    }

    /// Prompt tokens of the client's request, counted for `upstream_model` (0 when the call
    /// kept no request, or its body no longer parses).
    pub fn prompt_tokens(&self, upstream_model: &str) -> u64 {
        let Some((body, endpoint)) = &self.request else {
            return 0;
        };
        ParsedRequest::parse(body, *endpoint).map_or(0, |req| {
            super::facts::prompt_tokens(&req, *endpoint, upstream_model)
        })
    }

    /// True when no generated text was seen.
    pub fn produced_nothing(&self) -> bool {
        self.produced.is_empty()
    }

    /// Tokens of the generated text, counted for `upstream_model`; a stream's text past
    /// [`tollgate_protocol::produced::KEPT_STREAM_BYTES`] at the kept text's tokens per byte.
    pub fn completion_tokens(&self, upstream_model: &str) -> u64 {
        let produced = self.produced.read();
        if produced.is_empty() {
            return 0;
        }
        let enc = Encoding::for_model(upstream_model);
        let kept = enc.count(&produced.text());
        let dropped = produced.dropped_bytes();
        if dropped == 0 {
            return kept;
        }
        let per_byte = match produced.kept_bytes() {
            0 => 1.0 / tollgate_governance::tokens::ESTIMATE_BYTES_PER_TOKEN as f64,
            n => kept as f64 / n as f64,
        };
        kept + (dropped as f64 * per_byte).ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(content: &str) -> Bytes {
        Bytes::from(
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": content}]})
                .to_string(),
        )
    }

    #[test]
    fn counts_the_prompt_and_the_answer_for_governed_calls_only() {
        let body = chat(&"x".repeat(4000));
        let mut u = Unreported::new(true, &body, Endpoint::ChatCompletions);
        // bytes/4 for a model without a shipped tokenizer: 3 (reply priming) + 3 (message)
        // + 1 ("user") + 1000
        assert_eq!(u.prompt_tokens("local-llama"), 1007);
        let answer = br#"{"choices":[{"message":{"role":"assistant","content":"Hello from fake upstream."}}]}"#;
        // reported completion tokens: the body is not read
        u.answer(
            answer,
            Some(Usage {
                completion_tokens: 5,
                ..Usage::default()
            }),
        );
        assert!(u.produced_nothing());
        u.answer(answer, None);
        // 25 bytes
        assert_eq!(u.completion_tokens("local-llama"), 7);
        let mut off = Unreported::new(false, &body, Endpoint::ChatCompletions);
        off.answer(answer, None);
        off.event(&Bytes::from_static(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"abcd\"}}]}\n\n",
        ));
        assert!(off.produced_nothing());
        assert_eq!(off.prompt_tokens("local-llama"), 0);
    }

    #[test]
    fn a_long_stream_is_counted_past_what_it_keeps() {
        let body = chat("hi");
        let mut u = Unreported::new(true, &body, Endpoint::ChatCompletions);
        let kept = tollgate_protocol::produced::KEPT_STREAM_BYTES;
        for _ in 0..(kept / 8 + 100) {
            u.event(&Bytes::from_static(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"abcdefgh\"}}]}\n\n",
            ));
        }
        // bytes/4: 2 tokens per delta, kept or not
        assert_eq!(
            u.completion_tokens("local-llama"),
            (kept as u64 / 8 + 100) * 2
        );
    }

    #[test]
    fn embeddings_answers_are_not_read() {
        let body = Bytes::from_static(br#"{"model":"e","input":"abcdefgh"}"#);
        let mut u = Unreported::new(true, &body, Endpoint::Embeddings);
        u.answer(br#"{"data":[{"embedding":[0.1]}],"text":"x"}"#, None);
        assert!(u.produced_nothing());
        assert_eq!(u.prompt_tokens("e"), 2);
    }
}
