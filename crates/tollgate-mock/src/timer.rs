//! Precise delays for the mock's answers.
//!
//! tokio's timer wheel fires on whole-millisecond ticks, so every request whose delay ends
//! within the same millisecond is answered in one burst, 0–1 ms late. No real upstream answers
//! that way, and a benchmark behind such a mock measures how a gateway relays bursts rather
//! than its added latency (bench/README.md, 2026-11-30 entries). `async-io`'s timers wait on a
//! `timerfd` (nanosecond resolution) on their own reactor thread, so each answer leaves when its
//! own delay ends.

use std::time::{Duration, Instant};

/// A future that completes `delay` after now, to within the kernel's timer slack (50 µs for
/// an ordinary thread on Linux) instead of tokio's 1 ms tick.
///
/// Dropping it cancels the wait. It runs on any executor: the wake-up comes from
/// `async-io`'s reactor thread.
pub fn sleep(delay: Duration) -> async_io::Timer {
    async_io::Timer::at(Instant::now() + delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_at_least_the_delay_and_wakes_a_tokio_task() {
        let start = Instant::now();
        sleep(Duration::from_millis(3)).await;
        assert!(start.elapsed() >= Duration::from_millis(3));
    }
}
