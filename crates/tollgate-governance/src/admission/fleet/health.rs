//! [`Health`]: the back-off after a failed reservation, so a Redis that is down is tried once
//! per back-off period, not once per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Whether reservations should skip Redis for now. Lock-free: one atomic read per reservation.
#[derive(Debug)]
pub(super) struct Health {
    epoch: Instant,
    /// Ms since `epoch` until which reservations go straight to the fallback (0 = none).
    down_until_ms: AtomicU64,
    backoff: Duration,
}

impl Health {
    /// Healthy, backing off for `backoff` after each failure.
    pub(super) fn new(backoff: Duration) -> Self {
        Self {
            epoch: Instant::now(),
            down_until_ms: AtomicU64::new(0),
            backoff,
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// True while a failure's back-off runs.
    pub(super) fn backing_off(&self) -> bool {
        let until = self.down_until_ms.load(Ordering::Acquire);
        until != 0 && self.now_ms() < until
    }

    /// True when the last reservation sent to Redis failed (and none succeeded since).
    pub(super) fn last_call_failed(&self) -> bool {
        self.down_until_ms.load(Ordering::Acquire) != 0
    }

    /// A call failed: back off from now.
    pub(super) fn failed(&self) {
        let until = self
            .now_ms()
            .saturating_add(u64::try_from(self.backoff.as_millis()).unwrap_or(u64::MAX));
        self.down_until_ms.store(until.max(1), Ordering::Release);
    }

    /// A call succeeded: Redis answers again, stop backing off.
    pub(super) fn up(&self) {
        self.down_until_ms.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_backs_off_for_its_period_and_a_success_ends_it() {
        let h = Health::new(Duration::from_millis(40));
        assert!(!h.backing_off());
        assert!(!h.last_call_failed());
        h.failed();
        assert!(h.backing_off());
        std::thread::sleep(Duration::from_millis(60));
        assert!(!h.backing_off(), "the period ended");
        assert!(h.last_call_failed(), "failed until a call succeeds");
        h.failed();
        h.up();
        assert!(!h.backing_off());
        assert!(!h.last_call_failed());
    }
}
