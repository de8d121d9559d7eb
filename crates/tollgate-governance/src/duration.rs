//! LiteLLM duration strings and budget windows.
//!
//! Durations are `<int><unit>` with units `s`, `m`, `h`, `d`, `w`, `mo` (`"30s"`, `"10m"`,
//! `"1h"`, `"1d"`, `"1w"`, `"1mo"`), as parsed by LiteLLM's
//! `litellm_core_utils/duration_parser.py` (litellm-surface §4.3). They are used for
//! `budget_duration` (windows that reset spend) and for key `duration` (expiry).
//!
//! Budget resets are **standardised**, not "now + duration" (litellm-surface §5.3, LiteLLM's
//! `get_next_standardized_reset_time`), all in UTC:
//!
//! | duration | next `budget_reset_at` after `now` |
//! |---|---|
//! | `Ns`, `Nm`, `Nh` | the next multiple of the period counted from today's midnight; a period that does not divide the day is cut at the next midnight (`5h` at 22:10 → 00:00) |
//! | `1d` | the next midnight |
//! | `Nd` | today's midnight + N days |
//! | `Nw` | the next Monday 00:00, + (N−1) weeks |
//! | `Nmo` | the 1st of the month N calendar months after the current one, 00:00 |
//!
//! The result is always strictly after `now` (at exactly 00:00, `1d` gives the following midnight).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Datelike, Duration as ChronoDuration, Months, NaiveDate, TimeZone, Utc};

/// A parsed LiteLLM duration. The count is at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetDuration {
    /// `Ns`
    Seconds(u32),
    /// `Nm`
    Minutes(u32),
    /// `Nh`
    Hours(u32),
    /// `Nd`
    Days(u32),
    /// `Nw`
    Weeks(u32),
    /// `Nmo`
    Months(u32),
}

/// Error for a duration string that is not `<int><s|m|h|d|w|mo>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {0:?}: expected <positive int><s|m|h|d|w|mo>, e.g. \"30s\", \"1d\", \"1mo\""
)]
pub struct DurationError(pub String);

impl FromStr for BudgetDuration {
    type Err = DurationError;

    /// Parses `"30s"`, `"10m"`, `"1h"`, `"1d"`, `"1w"`, `"1mo"` (surrounding whitespace allowed).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let err = || DurationError(s.to_owned());
        let digits_end = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?;
        let (num, unit) = t.split_at(digits_end);
        let n: u32 = num.parse().map_err(|_| err())?;
        if n == 0 {
            return Err(err());
        }
        Ok(match unit {
            "s" => Self::Seconds(n),
            "m" => Self::Minutes(n),
            "h" => Self::Hours(n),
            "d" => Self::Days(n),
            "w" => Self::Weeks(n),
            "mo" => Self::Months(n),
            _ => return Err(err()),
        })
    }
}

impl fmt::Display for BudgetDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Seconds(n) => write!(f, "{n}s"),
            Self::Minutes(n) => write!(f, "{n}m"),
            Self::Hours(n) => write!(f, "{n}h"),
            Self::Days(n) => write!(f, "{n}d"),
            Self::Weeks(n) => write!(f, "{n}w"),
            Self::Months(n) => write!(f, "{n}mo"),
        }
    }
}

fn midnight(t: DateTime<Utc>) -> DateTime<Utc> {
    let d = t.date_naive();
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default())
}

impl BudgetDuration {
    /// `now + duration` (calendar months for `mo`, clamped to the month's last day).
    /// LiteLLM uses this for key expiry (`expires` from `duration`). Saturates at the far future.
    pub fn add_to(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let add = |d: ChronoDuration| {
            now.checked_add_signed(d)
                .unwrap_or(DateTime::<Utc>::MAX_UTC)
        };
        match *self {
            Self::Seconds(n) => add(ChronoDuration::seconds(n.into())),
            Self::Minutes(n) => add(ChronoDuration::minutes(n.into())),
            Self::Hours(n) => add(ChronoDuration::hours(n.into())),
            Self::Days(n) => add(ChronoDuration::days(n.into())),
            Self::Weeks(n) => add(ChronoDuration::weeks(n.into())),
            Self::Months(n) => now
                .checked_add_months(Months::new(n))
                .unwrap_or(DateTime::<Utc>::MAX_UTC),
        }
    }

    /// The start of the window that [`Self::next_reset`] ends: that reset time minus one
    /// period (calendar months for `mo`). Used to re-derive a window's spend from spend logs.
    pub fn window_start(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let next = self.next_reset(now);
        let back = |d: ChronoDuration| next.checked_sub_signed(d).unwrap_or(next);
        let start = match *self {
            Self::Seconds(n) => back(ChronoDuration::seconds(n.into())),
            Self::Minutes(n) => back(ChronoDuration::minutes(n.into())),
            Self::Hours(n) => back(ChronoDuration::hours(n.into())),
            Self::Days(n) => back(ChronoDuration::days(n.into())),
            Self::Weeks(n) => back(ChronoDuration::weeks(n.into())),
            Self::Months(n) => next.checked_sub_months(Months::new(n)).unwrap_or(next),
        };
        // an aligned period clamped at midnight starts no later than now
        start.min(now)
    }

    /// The next standardised reset time strictly after `now` (see the module table).
    pub fn next_reset(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let day_start = midnight(now);
        let next_midnight = day_start + ChronoDuration::days(1);
        let aligned = |period_s: i64| {
            let since = (now - day_start).num_seconds();
            let next = day_start + ChronoDuration::seconds((since / period_s + 1) * period_s);
            next.min(next_midnight)
        };
        match *self {
            Self::Seconds(n) => aligned(i64::from(n)),
            Self::Minutes(n) => aligned(i64::from(n) * 60),
            Self::Hours(n) => aligned(i64::from(n) * 3600),
            Self::Days(n) => day_start + ChronoDuration::days(n.into()),
            Self::Weeks(n) => {
                let to_monday = 7 - i64::from(now.weekday().num_days_from_monday());
                day_start
                    + ChronoDuration::days(to_monday)
                    + ChronoDuration::weeks(i64::from(n) - 1)
            }
            Self::Months(n) => {
                let first = NaiveDate::from_ymd_opt(now.year(), now.month(), 1).unwrap_or_default();
                let target = first
                    .checked_add_months(Months::new(n))
                    .unwrap_or(NaiveDate::MAX);
                Utc.from_utc_datetime(&target.and_hms_opt(0, 0, 0).unwrap_or_default())
            }
        }
    }
}

/// A source of the current UTC time, injectable for tests.
pub trait Clock: Send + Sync + 'static {
    /// The current time, millisecond precision at least.
    fn now(&self) -> DateTime<Utc>;

    /// The current time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64 {
        self.now().timestamp_millis()
    }
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// Now, to the millisecond: LiteLLM's Postgres columns are `TIMESTAMP(3)`, so a time kept
    /// finer than that would read back different after a restart.
    fn now(&self) -> DateTime<Utc> {
        let now = Utc::now();
        DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
    }
}

/// A clock that only moves when told to (tests, simulations).
#[derive(Debug)]
pub struct ManualClock {
    ms: AtomicI64,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            ms: AtomicI64::new(start.timestamp_millis()),
        }
    }

    /// Sets the time.
    pub fn set(&self, t: DateTime<Utc>) {
        self.ms.store(t.timestamp_millis(), Ordering::SeqCst);
    }

    /// Moves the time forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        self.ms.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.ms.load(Ordering::SeqCst)).unwrap_or_default()
    }

    fn now_ms(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn window_start_is_one_period_before_the_next_reset() {
        let now = DateTime::parse_from_rfc3339("2026-03-14T10:17:42Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        assert_eq!(
            BudgetDuration::Minutes(10).window_start(now),
            at("2026-03-14T10:10:00Z")
        );
        assert_eq!(
            BudgetDuration::Days(1).window_start(now),
            at("2026-03-14T00:00:00Z")
        );
        assert_eq!(
            BudgetDuration::Months(1).window_start(now),
            at("2026-03-01T00:00:00Z")
        );
    }

    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn d(s: &str) -> BudgetDuration {
        s.parse().unwrap()
    }

    #[test]
    fn parses_every_unit_and_round_trips() {
        assert_eq!(d("30s"), BudgetDuration::Seconds(30));
        assert_eq!(d("10m"), BudgetDuration::Minutes(10));
        assert_eq!(d("1h"), BudgetDuration::Hours(1));
        assert_eq!(d(" 1d "), BudgetDuration::Days(1));
        assert_eq!(d("30d"), BudgetDuration::Days(30));
        assert_eq!(d("1w"), BudgetDuration::Weeks(1));
        assert_eq!(d("1mo"), BudgetDuration::Months(1));
        assert_eq!(d("12mo").to_string(), "12mo");
        for bad in [
            "",
            "d",
            "0d",
            "1",
            "1y",
            "-1d",
            "1.5h",
            "1 d",
            "1M",
            "99999999999s",
        ] {
            assert!(bad.parse::<BudgetDuration>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn second_minute_hour_windows_align_to_boundaries() {
        let now = t("2026-03-14T10:17:43.500Z");
        assert_eq!(d("30s").next_reset(now), t("2026-03-14T10:18:00Z"));
        assert_eq!(d("10m").next_reset(now), t("2026-03-14T10:20:00Z"));
        assert_eq!(d("1h").next_reset(now), t("2026-03-14T11:00:00Z"));
        assert_eq!(d("6h").next_reset(now), t("2026-03-14T12:00:00Z"));
        // a period that does not divide the day is cut at midnight
        assert_eq!(
            d("5h").next_reset(t("2026-03-14T22:10:00Z")),
            t("2026-03-15T00:00:00Z")
        );
        // strictly after now, even on a boundary
        assert_eq!(
            d("1h").next_reset(t("2026-03-14T11:00:00Z")),
            t("2026-03-14T12:00:00Z")
        );
        assert_eq!(
            d("30s").next_reset(t("2026-12-31T23:59:45Z")),
            t("2027-01-01T00:00:00Z")
        );
    }

    #[test]
    fn day_week_month_windows() {
        let now = t("2026-03-14T10:17:43Z"); // a Saturday
        assert_eq!(d("1d").next_reset(now), t("2026-03-15T00:00:00Z"));
        assert_eq!(
            d("1d").next_reset(t("2026-03-15T00:00:00Z")),
            t("2026-03-16T00:00:00Z")
        );
        assert_eq!(d("7d").next_reset(now), t("2026-03-21T00:00:00Z"));
        assert_eq!(d("1w").next_reset(now), t("2026-03-16T00:00:00Z")); // Monday
        assert_eq!(d("2w").next_reset(now), t("2026-03-23T00:00:00Z"));
        // on a Monday the next week starts the Monday after
        assert_eq!(
            d("1w").next_reset(t("2026-03-16T00:00:00Z")),
            t("2026-03-23T00:00:00Z")
        );
        assert_eq!(d("1mo").next_reset(now), t("2026-04-01T00:00:00Z"));
        assert_eq!(
            d("1mo").next_reset(t("2026-12-31T23:00:00Z")),
            t("2027-01-01T00:00:00Z")
        );
        assert_eq!(
            d("3mo").next_reset(t("2026-11-05T00:00:00Z")),
            t("2027-02-01T00:00:00Z")
        );
    }

    #[test]
    fn add_to_for_expiry() {
        let now = t("2026-01-31T12:00:00Z");
        assert_eq!(d("30s").add_to(now), t("2026-01-31T12:00:30Z"));
        assert_eq!(d("2h").add_to(now), t("2026-01-31T14:00:00Z"));
        assert_eq!(d("1w").add_to(now), t("2026-02-07T12:00:00Z"));
        // calendar month, clamped to the last day of February
        assert_eq!(d("1mo").add_to(now), t("2026-02-28T12:00:00Z"));
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(t("2026-01-01T00:00:00Z"));
        assert_eq!(c.now(), t("2026-01-01T00:00:00Z"));
        c.advance_ms(61_500);
        assert_eq!(c.now(), t("2026-01-01T00:01:01.500Z"));
        assert_eq!(c.now_ms(), t("2026-01-01T00:01:01.500Z").timestamp_millis());
        c.set(t("2027-01-01T00:00:00Z"));
        assert_eq!(c.now(), t("2027-01-01T00:00:00Z"));
        let s = SystemClock;
        assert!(s.now() > t("2020-01-01T00:00:00Z"));
    }
}
