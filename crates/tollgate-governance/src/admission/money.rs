//! Exact money arithmetic for counters.
//!
//! Counters hold money as integer **units of 1e-10 USD** (`i64`: up to ±922 million USD per
//! scope), so concurrent additions are exact and order-independent, and a budget that covers
//! exactly N requests admits exactly N. The public API speaks `f64` USD; conversion rounds to
//! the nearest unit (the cheapest listed price, $0.005 per 1M tokens, is 50 units per token).

/// Units per USD.
pub const UNITS_PER_USD: f64 = 1e10;

/// USD → units, rounded to nearest; non-finite or negative values give 0; saturates at `i64::MAX`.
pub fn usd_to_units(usd: f64) -> i64 {
    if !usd.is_finite() || usd <= 0.0 {
        return 0;
    }
    let u = (usd * UNITS_PER_USD).round();
    if u >= i64::MAX as f64 {
        i64::MAX
    } else {
        u as i64
    }
}

/// Units → USD.
pub fn units_to_usd(units: i64) -> f64 {
    units as f64 / UNITS_PER_USD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_common_values_exactly() {
        for v in [0.0, 0.002, 0.0612, 0.06, 1.0, 30.0, 99.1, 1e-9, 123456.789] {
            assert_eq!(units_to_usd(usd_to_units(v)), v, "{v}");
        }
        assert_eq!(usd_to_units(0.002), 20_000_000);
        assert_eq!(usd_to_units(-1.0), 0);
        assert_eq!(usd_to_units(f64::NAN), 0);
        assert_eq!(usd_to_units(f64::INFINITY), 0);
        assert_eq!(usd_to_units(1e12), i64::MAX);
        // ten additions of 0.1 are exactly 1.0 in units (not 0.9999999999999999)
        let ten: i64 = (0..10).map(|_| usd_to_units(0.1)).sum();
        assert_eq!(ten, usd_to_units(1.0));
    }
}
