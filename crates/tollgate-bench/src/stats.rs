//! Latency histograms (HDR, microseconds) and their percentile summaries.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Highest value a histogram tracks: 120 s in µs. Larger values saturate.
pub const MAX_TRACKABLE_US: u64 = 120_000_000;

/// A new HDR histogram for microsecond values, 3 significant digits.
#[expect(
    clippy::expect_used,
    reason = "constant bounds: 1 <= low, high >= 2*low, sigfig <= 5"
)]
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKABLE_US, 3)
        .expect("constant bounds are valid: 1 <= low, high >= 2*low, sigfig <= 5")
}

/// Records a duration in µs (at least 1 µs, saturating at [`MAX_TRACKABLE_US`]).
pub fn record_us(h: &mut Histogram<u64>, us: u64) {
    h.saturating_record(us.max(1));
}

/// Percentiles of one histogram, in microseconds. All zero when empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Number of recorded values.
    pub count: u64,
    /// Median (µs).
    pub p50: u64,
    /// 90th percentile (µs).
    pub p90: u64,
    /// 99th percentile (µs).
    pub p99: u64,
    /// 99.9th percentile (µs).
    pub p999: u64,
    /// Largest value (µs).
    pub max: u64,
    /// Arithmetic mean (µs).
    pub mean: f64,
}

impl Percentiles {
    /// Summarises a histogram.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        }
    }
}

/// Median of a slice of samples (mean of the two middle ones for even length); 0 when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Smallest and largest sample; `(0, 0)` when empty.
pub fn min_max(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_recorded_values() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            record_us(&mut h, v * 10);
        }
        let p = Percentiles::of(&h);
        assert_eq!(p.count, 1000);
        // 3 significant digits: values are exact to within 0.1 %.
        assert!((4995..=5010).contains(&p.p50), "{}", p.p50);
        assert!((9890..=9910).contains(&p.p99), "{}", p.p99);
        assert!((9995..=10010).contains(&p.max), "{}", p.max);
        assert!(p.p50 <= p.p90 && p.p90 <= p.p99 && p.p99 <= p.p999);
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        assert_eq!(Percentiles::of(&new_histogram()), Percentiles::default());
    }

    #[test]
    fn median_and_range() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(min_max(&[3.0, -1.0, 2.0]), (-1.0, 3.0));
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn zero_and_huge_values_are_clamped() {
        let mut h = new_histogram();
        record_us(&mut h, 0);
        record_us(&mut h, u64::MAX);
        assert_eq!(h.min(), 1);
        assert!(h.max() >= MAX_TRACKABLE_US);
    }
}
