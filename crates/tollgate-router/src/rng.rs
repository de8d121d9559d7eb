//! A small seeded random source (SplitMix64), shared lock-free across threads.
//!
//! Routing only needs uniform draws, not cryptographic ones; a seed makes tests
//! deterministic. Concurrent callers each get a distinct draw (atomic counter).

use std::sync::atomic::{AtomicU64, Ordering};

/// SplitMix64 over an atomic counter.
#[derive(Debug)]
pub struct SharedRng {
    state: AtomicU64,
}

const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl SharedRng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SharedRng {
            state: AtomicU64::new(seed),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&self) -> u64 {
        let mut z = self
            .state
            .fetch_add(GAMMA, Ordering::Relaxed)
            .wrapping_add(GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (`n > 0`; returns 0 for `n == 0`).
    pub fn below(&self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_uniform() {
        let a = SharedRng::new(7);
        let b = SharedRng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[a.below(4) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        for _ in 0..1000 {
            let x = a.next_f64();
            assert!((0.0..1.0).contains(&x));
        }
    }
}
