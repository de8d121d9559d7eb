//! The bounded queue between requests (which push settlements, releases and charges without
//! waiting) and the batcher (which takes them out in batches).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use tokio::sync::Notify;

use crate::admission::redis::BatchOp;

/// A queued operation and when it was queued.
#[derive(Debug)]
struct Pending {
    op: BatchOp,
    queued: Instant,
}

/// Operations waiting for the batcher. The lock is held only to push or to take a batch out
/// (never across an await).
#[derive(Debug)]
pub(super) struct OpQueue {
    items: Mutex<VecDeque<Pending>>,
    capacity: usize,
    max_batch: usize,
    /// Wakes the batcher: the first operation of an empty queue, the one that fills a batch, a
    /// flush.
    pub(super) wake: Notify,
    /// Signalled after each delivered or given-up batch (what `flush` waits on).
    pub(super) progress: Notify,
    /// Operations queued and not yet delivered, failed or dropped (in the queue or in the
    /// batch being sent).
    pub(super) outstanding: AtomicUsize,
    /// A flush is waiting: send without lingering.
    pub(super) flushing: AtomicBool,
}

impl OpQueue {
    /// A queue of at most `capacity` operations, batches of at most `max_batch`.
    pub(super) fn new(capacity: usize, max_batch: usize) -> Self {
        Self {
            items: Mutex::new(VecDeque::with_capacity(capacity.min(4096))),
            capacity: capacity.max(1),
            max_batch: max_batch.max(1),
            wake: Notify::new(),
            progress: Notify::new(),
            outstanding: AtomicUsize::new(0),
            flushing: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Pending>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `op`; false (nothing queued) when the queue is full.
    pub(super) fn push(&self, op: BatchOp) -> bool {
        let n = {
            let mut q = self.lock();
            if q.len() >= self.capacity {
                return false;
            }
            q.push_back(Pending {
                op,
                queued: Instant::now(),
            });
            q.len()
        };
        self.outstanding.fetch_add(1, Ordering::AcqRel);
        // on the transitions only: a backlog (Redis down) must not wake a batcher that is
        // pausing between retries at every request
        if n == 1 || n == self.max_batch {
            self.wake.notify_one();
        }
        true
    }

    /// Moves up to `max_batch - ops.len()` operations, oldest first, into `ops`, and when
    /// each was queued into `queued`.
    pub(super) fn take_into(&self, ops: &mut Vec<BatchOp>, queued: &mut Vec<Instant>) {
        let room = self.max_batch.saturating_sub(ops.len());
        let mut q = self.lock();
        let n = room.min(q.len());
        for p in q.drain(..n) {
            ops.push(p.op);
            queued.push(p.queued);
        }
    }

    /// Operations waiting in the queue (not counting a batch being sent).
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The batch size.
    pub(super) fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// `n` queued operations are done with (delivered, failed, or given up).
    pub(super) fn resolved(&self, n: usize) {
        self.outstanding.fetch_sub(n, Ordering::AcqRel);
        self.progress.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::admission::{ScopeKey, Ticket};

    fn op(id: &str) -> BatchOp {
        BatchOp::Release(Ticket {
            request_id: Arc::from(id),
            attempt: 0,
            scopes: Arc::from(vec![ScopeKey::key("h")]),
            cost_units: 1,
            tokens: 1,
            spend_units: None,
        })
    }

    #[test]
    fn a_full_queue_refuses_and_batches_come_out_oldest_first() {
        let q = OpQueue::new(3, 2);
        assert!(q.push(op("a")) && q.push(op("b")) && q.push(op("c")));
        assert!(!q.push(op("d")), "capacity 3");
        assert_eq!(q.outstanding.load(Ordering::Acquire), 3);
        let (mut batch, mut queued) = (Vec::new(), Vec::new());
        q.take_into(&mut batch, &mut queued);
        let ids: Vec<_> = batch
            .iter()
            .map(|op| op.ticket().request_id.to_string())
            .collect();
        assert_eq!(ids, ["a", "b"], "batches of 2, oldest first");
        assert!(queued[0] <= queued[1]);
        q.take_into(&mut batch, &mut queued);
        assert_eq!(
            (batch.len(), queued.len()),
            (2, 2),
            "a full batch takes no more"
        );
        assert_eq!(q.len(), 1);
        q.resolved(2);
        assert_eq!(q.outstanding.load(Ordering::Acquire), 1);
    }
}
