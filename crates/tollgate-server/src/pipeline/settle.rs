//! The settle stage's one exit: an attempt's [`CallRecord`] lives in a [`CallGuard`] from
//! the moment the attempt is admitted, and reaches the [`CallSink`] exactly once — settled
//! by the attempt ([`CallGuard::settle`], [`CallGuard::fail`]), handed to the stream relay
//! that settles it at the stream's end ([`CallGuard::into_stream`]), or, when the request's
//! future is dropped first (the client hung up before the answer's head), by the guard's drop,
//! as a call the client cut off. No return path can skip settlement or the spend-log row, and
//! the reservation and parallel slot are released with it.

use std::sync::Arc;
use std::time::Instant;

use crate::relay::{CallRecord, CallSink, Settled};

/// An attempt's call record on its way to the sink (see the module docs).
pub struct CallGuard<'a> {
    /// `Some` until delivered.
    record: Option<CallRecord>,
    sink: &'a Arc<dyn CallSink>,
}

impl<'a> CallGuard<'a> {
    /// Guards `record`, to be delivered to `sink`.
    pub fn new(record: CallRecord, sink: &'a Arc<dyn CallSink>) -> Self {
        Self {
            record: Some(record),
            sink,
        }
    }

    /// The record being filled in.
    #[expect(
        clippy::expect_used,
        reason = "`record` is `None` only after a consuming method, which takes `self`"
    )]
    pub fn record(&mut self) -> &mut CallRecord {
        // `record` is `None` only after a consuming method, which takes `self`.
        self.record
            .as_mut()
            .expect("a call record is delivered only by consuming its guard")
    }

    /// Delivers the record as it stands: the settlement of a governed call.
    pub fn settle(mut self) -> Option<Settled> {
        self.record.take().and_then(|r| deliver(self.sink, r))
    }

    /// Delivers the record of an attempt answered with an error of `status`.
    pub fn fail(mut self, status: u16) -> Option<Settled> {
        self.record().status = status;
        self.settle()
    }

    /// Hands the record to a stream relay, which delivers it when the stream ends or the
    /// client drops it ([`crate::relay::stream::StreamRelay`]).
    #[expect(
        clippy::expect_used,
        reason = "`record` is `None` only after a consuming method, which takes `self`"
    )]
    pub fn into_stream(mut self) -> (CallRecord, Arc<dyn CallSink>) {
        let record = self
            .record
            .take()
            .expect("a call record is delivered only by consuming its guard");
        (record, Arc::clone(self.sink))
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        // Neither settled nor handed on: the request's future was dropped, which happens when
        // the client goes away. Nothing reached it: no first byte, nothing produced to bill.
        if let Some(mut r) = self.record.take() {
            r.client_disconnected = true;
            r.ended = Instant::now();
            self.sink.record(r);
        }
    }
}

/// Stamps the end (and a first byte, for an answer relayed whole) and hands `record` to `sink`.
fn deliver(sink: &Arc<dyn CallSink>, mut record: CallRecord) -> Option<Settled> {
    record.ended = Instant::now();
    if record.first_byte.is_none() {
        record.first_byte = Some(record.ended);
    }
    sink.record(record)
}

#[cfg(test)]
#[path = "settle_tests.rs"]
mod tests;
