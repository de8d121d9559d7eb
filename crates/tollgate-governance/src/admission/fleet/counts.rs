//! [`RoundTrips`]: how often a replica waited on Redis, before and after the upstream call,
//! and what became of its queued operations; atomics the server reads for `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one [`super::BatchedRedis`], each only ever increased (except
/// [`RoundTrips::max_delivery_ms`], a maximum). Relaxed atomics: each is exact on its own; a
/// [`RoundTrips::snapshot`] taken under load may mix instants by a few operations.
#[derive(Debug, Default)]
pub struct RoundTrips {
    /// Redis round trips before the upstream call: reservations sent (a reservation retried
    /// after a reseed counts twice).
    pub before_call: AtomicU64,
    /// Redis round trips after the upstream call: batches sent, including sends that failed
    /// and were retried.
    pub after_call: AtomicU64,
    /// Operations delivered (settled, released or charged, or found already done).
    pub settled_ops: AtomicU64,
    /// Batches delivered.
    pub batches: AtomicU64,
    /// Operations dropped because the queue was full (their usage never reaches Redis).
    pub dropped: AtomicU64,
    /// Operations Redis refused one by one (logged; the rest of their batch was delivered).
    pub failed_ops: AtomicU64,
    /// Operations delivered later than the delivery deadline after being queued.
    pub late_ops: AtomicU64,
    /// Longest time from queueing to delivery, ms.
    pub max_delivery_ms: AtomicU64,
    /// Reservations admitted on the local fallback counters (Redis failed or backing off).
    pub local_reserves: AtomicU64,
    /// Reservations refused because Redis failed and the policy fails closed.
    pub refused: AtomicU64,
    /// Reseeds this replica ran after finding the fleet marker missing.
    pub reseeds: AtomicU64,
}

/// A plain copy of [`RoundTrips`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RoundTripCounts {
    /// [`RoundTrips::before_call`].
    pub before_call: u64,
    /// [`RoundTrips::after_call`].
    pub after_call: u64,
    /// [`RoundTrips::settled_ops`].
    pub settled_ops: u64,
    /// [`RoundTrips::batches`].
    pub batches: u64,
    /// [`RoundTrips::dropped`].
    pub dropped: u64,
    /// [`RoundTrips::failed_ops`].
    pub failed_ops: u64,
    /// [`RoundTrips::late_ops`].
    pub late_ops: u64,
    /// [`RoundTrips::max_delivery_ms`].
    pub max_delivery_ms: u64,
    /// [`RoundTrips::local_reserves`].
    pub local_reserves: u64,
    /// [`RoundTrips::refused`].
    pub refused: u64,
    /// [`RoundTrips::reseeds`].
    pub reseeds: u64,
}

impl RoundTrips {
    /// Adds 1 to `c`.
    pub(super) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to `c`.
    pub(super) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// The current values.
    pub fn snapshot(&self) -> RoundTripCounts {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RoundTripCounts {
            before_call: r(&self.before_call),
            after_call: r(&self.after_call),
            settled_ops: r(&self.settled_ops),
            batches: r(&self.batches),
            dropped: r(&self.dropped),
            failed_ops: r(&self.failed_ops),
            late_ops: r(&self.late_ops),
            max_delivery_ms: r(&self.max_delivery_ms),
            local_reserves: r(&self.local_reserves),
            refused: r(&self.refused),
            reseeds: r(&self.reseeds),
        }
    }
}

impl RoundTripCounts {
    /// Round trips after the call per delivered operation (`after_call / settled_ops`; 0
    /// without operations): at most 0.1 means a batch carried 10 operations or more.
    pub fn after_call_per_op(&self) -> f64 {
        if self.settled_ops == 0 {
            return 0.0;
        }
        self.after_call as f64 / self.settled_ops as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_copies_every_counter_and_divides_round_trips_by_ops() {
        let rt = RoundTrips::default();
        RoundTrips::add(&rt.settled_ops, 64);
        RoundTrips::bump(&rt.after_call);
        RoundTrips::bump(&rt.batches);
        RoundTrips::add(&rt.before_call, 64);
        let s = rt.snapshot();
        assert_eq!(
            (s.before_call, s.after_call, s.settled_ops, s.batches),
            (64, 1, 64, 1)
        );
        assert_eq!(s.after_call_per_op(), 1.0 / 64.0);
        assert_eq!(RoundTripCounts::default().after_call_per_op(), 0.0);
    }
}
