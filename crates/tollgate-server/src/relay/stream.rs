//! SSE relay.
//!
//! Each upstream read goes into a bounded [`SseFramer`]; every complete event is handed to an
//! [`EventHandler`] the moment it is complete, and what it produces is sent at once (so each
//! event is flushed on its own, and a multi-byte character split across reads is never cut).
//! Passthrough handlers forward the event's exact bytes and parse a copy for usage;
//! translating handlers run a dialect state machine.
//!
//! The relay starts from a [`Primed`] stream: its first event with content was already read
//! (and found not to be an error) before the client's head was sent ([`super::first_event`]);
//! the events held before it, that event and anything read with it are relayed first.
//!
//! Failure handling: an upstream read error, an idle gap longer than the deployment's limit,
//! an oversized event, or an upstream EOF before the stream's final event (or an error event)
//! reaches the client as its dialect's terminal error, never as a silent clean end, with one
//! message for every dialect pair ([`idle_message`], [`unreadable_message`],
//! [`STREAM_CUT_SHORT`]). When the client
//! goes away, axum drops this stream, which drops the upstream body and so closes the upstream
//! connection at once; the call is then recorded as client-disconnected with the usage seen so
//! far.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::Stream;
use tokio::time::Sleep;
use tollgate_protocol::{RawEvent, SseError, SseFramer};
use tollgate_providers::UpstreamError;
use tollgate_router::StreamSlot;
use tollgate_translate::errors::STREAM_CUT_SHORT;

use super::first_event::Primed;
use super::handlers::{EventHandler, Step};
use super::{CallRecord, CallSink};

/// The message of the terminal error when the upstream sent nothing for `idle` (its
/// `stream_timeout`) after the stream was committed: the same words for every client dialect
/// and dialect pair.
pub fn idle_message(idle: Duration) -> String {
    format!(
        "Upstream sent nothing for {} ms (stream idle timeout)",
        idle.as_millis()
    )
}

/// The message of the terminal error when an upstream event cannot be read (too large, not
/// UTF-8).
pub fn unreadable_message(e: &SseError) -> String {
    format!("Upstream stream could not be read: {e}")
}

/// Largest single SSE event accepted from an upstream, bytes (a chunk is normally < 2 KiB).
pub const MAX_EVENT_BYTES: usize = 4 << 20;

/// An upstream byte stream.
pub type UpstreamBytes = Pin<Box<dyn Stream<Item = Result<Bytes, UpstreamError>> + Send>>;

/// The client-facing stream.
pub struct StreamRelay {
    upstream: UpstreamBytes,
    framer: SseFramer,
    idle: Duration,
    sleep: Pin<Box<Sleep>>,
    /// Events read before the head (comments and content-free events, then the first event
    /// with content).
    preamble: Vec<RawEvent>,
    first: Option<RawEvent>,
    queue: VecDeque<Bytes>,
    handler: Box<dyn EventHandler>,
    finished: bool,
    saw_end: bool,
    record: Option<CallRecord>,
    sink: Arc<dyn CallSink>,
    router_slot: Option<StreamSlot>,
}

impl std::fmt::Debug for StreamRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRelay")
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl StreamRelay {
    /// Relays `upstream` through `handler`, starting with the events already read from it;
    /// `idle` bounds each gap between reads. `record` is completed and sent to `sink` exactly
    /// once, when the stream ends or is dropped; then `router_slot` gets the stream's
    /// tokens and times (first event relayed; end, when it completed) and ends its in-flight
    /// count.
    pub fn new(
        upstream: Primed,
        idle: Duration,
        handler: Box<dyn EventHandler>,
        record: CallRecord,
        sink: Arc<dyn CallSink>,
        router_slot: Option<StreamSlot>,
    ) -> Self {
        Self {
            upstream: upstream.upstream,
            framer: upstream.framer,
            idle,
            sleep: upstream.sleep,
            preamble: upstream.preamble,
            first: upstream.first,
            queue: VecDeque::with_capacity(4),
            handler,
            finished: false,
            saw_end: false,
            record: Some(record),
            sink,
            router_slot,
        }
    }

    fn fail(&mut self, message: String) {
        self.handler.on_failure(&message, &mut self.queue);
        if let Some(r) = self.record.as_mut() {
            r.upstream_failed = true;
        }
        self.finished = true;
    }

    fn drain_events(&mut self) {
        loop {
            match self.framer.next_event() {
                Ok(Some(ev)) => self.on_event(ev),
                Ok(None) => return,
                Err(e) => {
                    self.fail(unreadable_message(&e));
                    return;
                }
            }
        }
    }

    fn on_event(&mut self, ev: RawEvent) {
        if self.saw_end {
            return;
        }
        if let Some(r) = self.record.as_mut() {
            // the generated text, for a stream whose usage never comes (governed calls only)
            r.unreported.event(&ev.raw);
        }
        let before = self.queue.len();
        let mut failed = false;
        if let Step::End { failed: f } = self.handler.on_event(ev, &mut self.queue) {
            self.saw_end = true;
            failed = f;
            if failed && let Some(r) = self.record.as_mut() {
                r.upstream_failed = true;
            }
        }
        if self.queue.len() > before
            && let Some(r) = self.record.as_mut()
        {
            // The spend log keys the call by the id the client saw: read from the first
            // client-bound event (a translated stream's `msg_...` / `resp_...`).
            if r.charge.is_some() && r.events_out == 0 {
                r.response_id =
                    super::response_id(super::handlers::data_payload(&self.queue[before]));
            }
            // The upstream's closing error event carries no content (nothing to bill).
            if !failed {
                r.events_out += 1;
            }
            if r.first_byte.is_none() {
                r.first_byte = Some(Instant::now());
            }
        }
    }

    fn complete(&mut self, client_disconnected: bool) {
        if let Some(mut r) = self.record.take() {
            r.usage = self.handler.usage().or(r.usage);
            r.client_disconnected = client_disconnected;
            r.ended = Instant::now();
            if let Some(slot) = self.router_slot.take() {
                if let Some(u) = r.usage {
                    slot.settle_usage(r.ended, u.reported_prompt_tokens(), u.completion_tokens);
                }
                let completed = self.saw_end && !r.upstream_failed && !client_disconnected;
                slot.record_timing(r.first_byte, r.ended, completed);
            }
            self.sink.record(r);
        }
        self.router_slot = None;
    }
}

impl Stream for StreamRelay {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if this.finished || this.saw_end {
                this.complete(false);
                return Poll::Ready(None);
            }
            if this.first.is_some() || !this.preamble.is_empty() {
                for ev in std::mem::take(&mut this.preamble) {
                    this.on_event(ev);
                }
                if let Some(first) = this.first.take() {
                    this.on_event(first);
                }
                this.drain_events();
                continue;
            }
            match this.upstream.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let deadline = tokio::time::Instant::now() + this.idle;
                    this.sleep.as_mut().reset(deadline);
                    this.framer.push(&chunk);
                    this.drain_events();
                }
                Poll::Ready(Some(Err(e))) => {
                    this.fail(format!("Upstream stream failed: {e}"));
                }
                Poll::Ready(None) => {
                    match this.framer.finish() {
                        Ok(Some(ev)) => this.on_event(ev),
                        Ok(None) => {}
                        Err(e) => this.fail(unreadable_message(&e)),
                    }
                    if !this.saw_end && !this.finished {
                        this.fail(STREAM_CUT_SHORT.to_owned());
                    }
                    this.finished = true;
                }
                Poll::Pending => {
                    if this.sleep.as_mut().poll(cx).is_ready() {
                        this.fail(idle_message(this.idle));
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl Drop for StreamRelay {
    fn drop(&mut self) {
        // Dropped before the end: the client went away (axum drops the body on disconnect).
        self.complete(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::handlers::OpenAiPassthrough;
    use futures_util::StreamExt;
    use std::sync::Mutex;

    #[derive(Debug, Default)]
    struct Capture(Mutex<Vec<CallRecord>>);
    impl CallSink for Capture {
        fn record(&self, r: CallRecord) -> Option<crate::relay::Settled> {
            self.0.lock().unwrap().push(r);
            None
        }
    }

    fn record() -> CallRecord {
        let now = Instant::now();
        CallRecord {
            call_id: "c".into(),
            call_type: "acompletion",
            model_group: "g".into(),
            deployment_id: "d".into(),
            upstream_model: "m".into(),
            stream: true,
            status: 200,
            usage: None,
            client_disconnected: false,
            upstream_failed: false,
            started: now,
            first_byte: None,
            ended: now,
            started_at: chrono::Utc::now(),
            events_out: 0,
            unreported: Default::default(),
            charge: None,
            response_id: None,
        }
    }

    async fn run(chunks: Vec<&'static [u8]>, strip: bool) -> (Vec<u8>, Vec<CallRecord>) {
        let sink = Arc::new(Capture::default());
        let up: UpstreamBytes = Box::pin(futures_util::stream::iter(
            chunks.into_iter().map(|c| Ok(Bytes::from_static(c))),
        ));
        let relay = StreamRelay::new(
            Primed::unread(up, Duration::from_secs(5)),
            Duration::from_secs(5),
            Box::new(OpenAiPassthrough::new(strip)),
            record(),
            sink.clone(),
            None,
        );
        let out: Vec<u8> = relay
            .map(|r| r.unwrap().to_vec())
            .collect::<Vec<_>>()
            .await
            .concat();
        let recs = std::mem::take(&mut *sink.0.lock().unwrap());
        (out, recs)
    }

    const WITH_USAGE: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\xc3\xa9\"}}],\"usage\":null}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n";

    #[tokio::test]
    async fn relays_exact_bytes_and_captures_usage() {
        let (out, recs) = run(vec![&WITH_USAGE[..20], &WITH_USAGE[20..]], false).await;
        assert_eq!(out, WITH_USAGE);
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].usage.unwrap().completion_tokens, 2);
        assert!(!recs[0].client_disconnected && !recs[0].upstream_failed);
    }

    #[tokio::test]
    async fn forced_usage_is_hidden_from_the_client() {
        let (out, recs) = run(vec![WITH_USAGE], true).await;
        assert_eq!(
            out,
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\xc3\xa9\"}}]}\n\ndata: [DONE]\n\n"
        );
        assert_eq!(recs[0].usage.unwrap().prompt_tokens, 3);
    }

    #[tokio::test]
    async fn eof_without_done_becomes_an_error_event() {
        let (out, recs) = run(vec![b"data: {\"choices\":[]}\n\n"], false).await;
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("data: {\"choices\":[]}\n\ndata: {\"error\":{"),
            "{text}"
        );
        assert!(text.contains("closed the stream before it finished"));
        assert!(recs[0].upstream_failed);
    }

    #[tokio::test]
    async fn upstream_error_event_is_relayed_and_ends_the_stream() {
        let (out, recs) = run(
            vec![b"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"],
            false,
        )
        .await;
        assert_eq!(
            out,
            b"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"
        );
        assert!(recs[0].upstream_failed);
    }

    #[tokio::test]
    async fn an_error_chunk_in_any_json_layout_ends_the_stream_and_is_not_billed() {
        for error in [
            &b"data: { \"error\" : {\"message\": \"boom\", \"type\": \"server_error\"}}\n\n"[..],
            b"data: {\"id\":\"gen-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}],\"error\":{\"code\":502,\"message\":\"boom\"}}\n\n",
        ] {
            let content: &'static [u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n";
            let body: &'static [u8] = Vec::leak([content, error].concat());
            let (out, recs) = run(vec![body], false).await;
            // Relayed as the upstream wrote it, and nothing after it (no second error event).
            assert_eq!(out, body);
            assert!(recs[0].upstream_failed);
            assert_eq!(recs[0].events_out, 1, "the error event is not content");
        }
    }

    #[tokio::test]
    async fn idle_gap_ends_with_error_event() {
        let sink = Arc::new(Capture::default());
        let up: UpstreamBytes = Box::pin(
            futures_util::stream::iter(vec![Ok(Bytes::from_static(b"data: {\"a\":1}\n\n"))])
                .chain(futures_util::stream::pending()),
        );
        let relay = StreamRelay::new(
            Primed::unread(up, Duration::from_millis(50)),
            Duration::from_millis(50),
            Box::new(OpenAiPassthrough::new(false)),
            record(),
            sink.clone(),
            None,
        );
        let out: Vec<u8> = relay
            .map(|r| r.unwrap().to_vec())
            .collect::<Vec<_>>()
            .await
            .concat();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("stream idle timeout"), "{text}");
    }

    #[tokio::test]
    async fn drop_mid_stream_records_disconnect_with_usage_so_far() {
        let sink = Arc::new(Capture::default());
        let up: UpstreamBytes = Box::pin(
            futures_util::stream::iter(vec![Ok(Bytes::from_static(
                b"data: {\"choices\":[{\"index\":0,\"delta\":{}}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\n",
            ))])
            .chain(futures_util::stream::pending()),
        );
        let mut relay = StreamRelay::new(
            Primed::unread(up, Duration::from_secs(5)),
            Duration::from_secs(5),
            Box::new(OpenAiPassthrough::new(false)),
            record(),
            sink.clone(),
            None,
        );
        let first = relay.next().await.unwrap().unwrap();
        assert!(first.starts_with(b"data: "));
        drop(relay);
        let recs = sink.0.lock().unwrap();
        assert_eq!(recs.len(), 1);
        assert!(recs[0].client_disconnected);
        assert_eq!(recs[0].usage.unwrap().completion_tokens, 1);
    }
}
