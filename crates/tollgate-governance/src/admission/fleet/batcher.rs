//! The background task that sends queued operations: it lingers up to
//! [`BatchedOptions::interval`](super::BatchedOptions::interval) after the first operation of
//! an empty queue (or until [`BatchedOptions::max_batch`](super::BatchedOptions::max_batch)
//! are queued, or a flush asks), sends the batch as one round trip, and on a failed round trip
//! keeps the batch and sends it again after a growing pause (10 ms doubling to 500 ms), topped
//! up with what was queued meanwhile. A re-sent operation that had taken effect changes
//! nothing (its ticket or charge key), so a batch is delivered exactly once per operation.
//! A batch Redis refuses for want of the fleet marker (it lost its data) waits for the fleet
//! to be seeded again (`reseed.rs`), then goes again as never sent: a settlement whose ticket
//! was lost with the data is then charged its actual usage (see `RedisCounterStore::batch`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::batched::Core;
use super::counts::RoundTrips;
use super::reseed;
use crate::admission::redis::{BatchOp, BatchReply, OpOutcome, Resent};

const FIRST_RETRY: Duration = Duration::from_millis(10);
const LAST_RETRY: Duration = Duration::from_millis(500);

/// Runs until aborted (when its [`super::BatchedRedis`] is dropped).
pub(super) async fn run(core: Arc<Core>) {
    let q = &core.queue;
    let mut ops: Vec<BatchOp> = Vec::with_capacity(q.max_batch());
    let mut queued: Vec<Instant> = Vec::with_capacity(q.max_batch());
    let mut pause = Duration::ZERO;
    // the leading operations of `ops` sent before, and the fleet generation last seen
    let mut resent = Resent::default();
    loop {
        if ops.is_empty() {
            if q.len() == 0 {
                q.wake.notified().await;
            }
            linger(&core).await;
        } else {
            // a batch to send again: wait, unless a flush asks for it now
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = q.wake.notified() => {}
            }
        }
        q.take_into(&mut ops, &mut queued);
        if ops.is_empty() {
            continue;
        }
        if resent.count > 0 && resent.generation.is_none() {
            // sent before any batch told the generation: ask for it (retries only)
            if let Ok(g) = core.store.fleet_generation().await {
                resent.generation = g.map(Arc::from);
            }
        }
        match send(&core, &ops, &queued, &resent).await {
            Sent::Delivered(generation) => {
                ops.clear();
                queued.clear();
                pause = Duration::ZERO;
                resent = Resent {
                    count: 0,
                    generation: Some(generation),
                };
            }
            Sent::Failed => {
                resent.count = ops.len();
                pause = (pause * 2).clamp(FIRST_RETRY, LAST_RETRY);
            }
            // Redis lost its data, and with it whatever an earlier send of these did
            Sent::Unseeded => match reseed::reseed(&core).await {
                Ok(()) => {
                    resent = Resent::default();
                    pause = Duration::ZERO;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reseed before a counter batch failed");
                    resent = Resent::default();
                    pause = (pause * 2).clamp(FIRST_RETRY, LAST_RETRY);
                }
            },
        }
    }
}

/// Waits up to the interval for a full batch, unless a flush is waiting.
async fn linger(core: &Core) {
    let q = &core.queue;
    let until = tokio::time::Instant::now() + core.opts.interval;
    while q.len() < q.max_batch() && !q.flushing.load(Ordering::Acquire) {
        tokio::select! {
            () = tokio::time::sleep_until(until) => return,
            () = q.wake.notified() => {}
        }
    }
}

/// What became of one send.
enum Sent {
    /// Each operation applied, found done, or refused on its own; the fleet generation.
    Delivered(Arc<str>),
    /// The round trip failed: send again.
    Failed,
    /// Redis lost its data: seed it again, then send again.
    Unseeded,
}

/// One round trip for `ops`.
async fn send(core: &Core, ops: &[BatchOp], queued: &[Instant], resent: &Resent) -> Sent {
    RoundTrips::bump(&core.counts.after_call);
    let sent = tokio::time::timeout(
        core.opts.send_timeout,
        core.store.batch(ops, resent, core.opts.batch),
    )
    .await;
    let (generation, outcomes) = match sent {
        Ok(Ok(BatchReply::Done(g, o))) => (g, o),
        Ok(Ok(BatchReply::Unseeded)) => return Sent::Unseeded,
        Ok(Err(e)) => {
            tracing::warn!(ops = ops.len(), error = %e, "counter batch not delivered; sending it again");
            core.queue.progress.notify_waiters();
            return Sent::Failed;
        }
        Err(_) => {
            tracing::warn!(ops = ops.len(), timeout = ?core.opts.send_timeout, "counter batch timed out; sending it again");
            core.queue.progress.notify_waiters();
            return Sent::Failed;
        }
    };
    core.health.up();
    let now = Instant::now();
    let c = &core.counts;
    let mut failed = 0;
    for ((op, at), outcome) in ops.iter().zip(queued).zip(&outcomes) {
        if let OpOutcome::Failed(msg) = outcome {
            failed += 1;
            let t = op.ticket();
            tracing::warn!(request_id = %t.request_id, attempt = t.attempt, error = %msg, "Redis refused one counter operation");
        }
        let waited = now.saturating_duration_since(*at);
        let ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
        c.max_delivery_ms.fetch_max(ms, Ordering::Relaxed);
        if waited > core.opts.deadline {
            RoundTrips::bump(&c.late_ops);
        }
    }
    RoundTrips::add(&c.failed_ops, failed);
    RoundTrips::add(&c.settled_ops, ops.len() as u64 - failed);
    RoundTrips::bump(&c.batches);
    core.queue.resolved(ops.len());
    Sent::Delivered(generation)
}
