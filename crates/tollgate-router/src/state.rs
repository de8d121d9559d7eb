//! Per-deployment routing state: requests in flight, this minute's usage, latency moving
//! averages, the failure window and the cooldown deadline.
//!
//! [`RouterState`] keeps the operations coarse (one call per attempt start, end and outcome,
//! one snapshot per candidate) so a shared store (Redis) can replace [`InMemoryState`]
//! later. Deployments are addressed by a dense slot number assigned by the router
//! ([`crate::Router::slot_ids`] gives the deployment id of each slot). Memory is fixed per
//! deployment: nothing grows with requests.
//!
//! [`FleetState`] shares the state across the replicas of a fleet: each replica's own numbers
//! in an [`InMemoryState`], the others' (usage this minute, in flight, cooldowns) merged into
//! every snapshot, at most one sync period old (see [`fleet`]).

pub mod fleet;

pub use fleet::{FleetState, FleetUsage, UsageReport, WallClock};

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Weight of the newest sample in the latency moving averages.
pub const LATENCY_EWMA_ALPHA: f64 = 0.3;

/// What the router reads about one deployment before choosing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeploymentSnapshot {
    /// Requests currently in flight.
    pub in_flight: u32,
    /// Requests started this minute.
    pub rpm_used: u64,
    /// Tokens (prompt estimates at start + completion tokens reported) this minute.
    pub tpm_used: u64,
    /// Moving average of whole-call latency, ms, with the time of its latest sample.
    pub latency_ms: Option<(f64, Instant)>,
    /// Moving average of time to first token (streams), ms, with its latest sample time.
    pub ttft_ms: Option<(f64, Instant)>,
    /// When the current cooldown ends (`None`: not cooling down).
    pub cooldown_until: Option<Instant>,
}

/// How long a successful call took: the samples latency-based routing averages (LiteLLM's
/// `lowest_latency` handler keeps the same two: whole-call latency and, for streams, time to
/// first token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallTiming {
    /// From sending the request to the last byte of the response or the stream's last event
    /// (`None`: not measured, e.g. a stream that failed or lost its client before its end).
    pub latency: Option<Duration>,
    /// From sending the request to the stream's first event relayed (`None`: not a stream,
    /// or no event arrived).
    pub ttft: Option<Duration>,
}

impl CallTiming {
    /// A non-streamed call that took `latency`.
    pub fn unary(latency: Duration) -> Self {
        Self {
            latency: Some(latency),
            ttft: None,
        }
    }
}

/// A successful call, as recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SuccessSample {
    /// Its timing (a relayed stream's is recorded at its end instead, through
    /// [`RouterState::record_timing`], and is empty here).
    pub timing: CallTiming,
    /// The tokens its usage reported (a stream's come later, through
    /// [`RouterState::settle_tokens`]).
    pub tokens: AttemptTokens,
}

/// The tokens of one answered attempt: what its start counted towards TPM and what the
/// upstream's usage then reported.
///
/// An attempt's start adds an estimate of its prompt (body bytes / 4) to the minute's TPM so
/// that requests routed meanwhile see it. The estimate can be far off: a base64 image is
/// ~100 times more bytes than the tokens it is billed as. So once the usage arrives, the
/// estimate is replaced by the reported `prompt_tokens`, as long as both fall in the same
/// minute (LiteLLM's `usage-based-routing-v2` counts reported tokens only).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptTokens {
    /// When the attempt started and its estimate was counted.
    pub began: Instant,
    /// Prompt tokens counted at the start (the estimate).
    pub prompt_estimate: u64,
    /// Prompt tokens the upstream reported (`None`: no usage, or a usage without them).
    pub prompt_tokens: Option<u64>,
    /// Completion tokens the upstream reported (0 if unknown).
    pub completion_tokens: u64,
}

/// How failures turn into a cooldown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CooldownRule {
    /// What starts the cooldown.
    pub trigger: CooldownTrigger,
    /// Cooldown length.
    pub cooldown_time: Duration,
    /// Count failures but never cool down.
    pub disabled: bool,
}

/// What makes a recorded failure start a cooldown. Counts are per deployment and per minute
/// (successes and failures of the current minute; a cooldown starts the count afresh).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CooldownTrigger {
    /// This many failures within the minute (`allowed_fails`, or an `allowed_fails_policy`
    /// entry; 0 behaves as 1).
    FailCount(u32),
    /// This failure, at once (LiteLLM's default for a 429, 401 or 404).
    Immediately,
    /// More than `over` (a fraction) of the minute's finished calls failed, counted once at
    /// least `min_calls` finished (LiteLLM's default for timeouts and 5xx).
    FailureRate {
        /// Fraction of failed calls above which the deployment cools down, e.g. 0.5.
        over: f64,
        /// Finished calls (successes + failures) this minute before the rate counts.
        min_calls: u32,
    },
}

impl CooldownTrigger {
    /// Whether `fails` failures and `oks` successes this minute start a cooldown.
    fn fires(self, fails: u32, oks: u32) -> bool {
        match self {
            CooldownTrigger::FailCount(n) => fails >= n.max(1),
            CooldownTrigger::Immediately => true,
            CooldownTrigger::FailureRate { over, min_calls } => {
                let total = fails.saturating_add(oks);
                total >= min_calls.max(1) && f64::from(fails) > over * f64::from(total)
            }
        }
    }
}

/// Storage of per-deployment routing state. All times are the caller's `now` (injectable).
pub trait RouterState: Send + Sync + fmt::Debug {
    /// The deployment's current numbers. Usage from an earlier minute reads as 0; an expired
    /// cooldown reads as `None`.
    fn snapshot(&self, slot: usize, now: Instant) -> DeploymentSnapshot;
    /// An attempt starts: one more in flight, one more request and `prompt_tokens` more
    /// tokens this minute.
    fn begin(&self, slot: usize, now: Instant, prompt_tokens: u64);
    /// An attempt ends (whatever its outcome): one fewer in flight.
    fn end(&self, slot: usize);
    /// Settles an attempt's tokens in this minute's TPM (a stream's, known at its end): adds
    /// its completion tokens and swaps its prompt estimate for the reported prompt tokens
    /// when the attempt began this minute. Nothing when the TPM held is from an earlier
    /// minute.
    fn settle_tokens(&self, slot: usize, now: Instant, tokens: &AttemptTokens);
    /// Records a success: latency averages as [`RouterState::record_timing`] does, then its
    /// tokens as [`RouterState::settle_tokens`] does.
    fn record_success(&self, slot: usize, now: Instant, sample: &SuccessSample);
    /// Adds a call's measured times to the deployment's moving averages (a stream's, known at
    /// its end); a `None` leaves its average as it is.
    fn record_timing(&self, slot: usize, now: Instant, timing: &CallTiming);
    /// Records a failure that counts towards cooldown; returns the cooldown deadline if this
    /// failure started one.
    fn record_failure(&self, slot: usize, now: Instant, rule: &CooldownRule) -> Option<Instant>;
    /// When the minute `now` falls in ends: this minute's RPM/TPM counts start afresh then.
    fn minute_ends(&self, now: Instant) -> Instant;
    /// Number of slots held.
    fn slots(&self) -> usize;
    /// Bytes held for the state (constant for a given number of slots).
    fn footprint_bytes(&self) -> usize;
    /// The fleet-shared state behind this store, for the transport that syncs it (`None`:
    /// a store of this process alone).
    fn fleet(&self) -> Option<&FleetState> {
        None
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    in_flight: u32,
    minute: u64,
    rpm_used: u64,
    tpm_used: u64,
    latency_ms: Option<(f64, Instant)>,
    ttft_ms: Option<(f64, Instant)>,
    fail_minute: u64,
    fails: u32,
    oks: u32,
    cooldown_until: Option<Instant>,
}

impl Slot {
    /// See [`RouterState::settle_tokens`]; `minute` is now's, `began` the attempt's.
    fn settle_tokens(&mut self, minute: u64, began: u64, t: &AttemptTokens) {
        if self.minute != minute {
            return;
        }
        let mut tpm = self.tpm_used.saturating_add(t.completion_tokens);
        if let Some(actual) = t.prompt_tokens
            && began == minute
        {
            tpm = tpm.saturating_sub(t.prompt_estimate).saturating_add(actual);
        }
        self.tpm_used = tpm;
    }

    /// See [`RouterState::record_timing`].
    fn add_timing(&mut self, timing: &CallTiming, now: Instant) {
        if let Some(t) = timing.latency {
            self.latency_ms = ewma(self.latency_ms, t, now);
        }
        if let Some(t) = timing.ttft {
            self.ttft_ms = ewma(self.ttft_ms, t, now);
        }
    }

    /// Starts the success/failure counts afresh in a new minute.
    fn roll_fail_minute(&mut self, minute: u64) {
        if self.fail_minute != minute {
            self.fail_minute = minute;
            self.fails = 0;
            self.oks = 0;
        }
    }
}

/// Process-local state: one mutex-guarded fixed-size record per deployment. No lock is held
/// beyond a single method call.
pub struct InMemoryState {
    epoch: Instant,
    slots: Box<[Mutex<Slot>]>,
}

impl fmt::Debug for InMemoryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryState")
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl InMemoryState {
    /// State for `slots` deployments; minutes count from `epoch`.
    pub fn new(slots: usize, epoch: Instant) -> Self {
        InMemoryState {
            epoch,
            slots: (0..slots).map(|_| Mutex::new(Slot::default())).collect(),
        }
    }

    fn minute(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_secs() / 60
    }

    fn with<R>(&self, slot: usize, f: impl FnOnce(&mut Slot) -> R) -> Option<R> {
        let m = self.slots.get(slot)?;
        // A poisoned lock only means a panic elsewhere mid-update of plain counters.
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        Some(f(&mut g))
    }
}

fn ewma(prev: Option<(f64, Instant)>, sample: Duration, now: Instant) -> Option<(f64, Instant)> {
    let ms = sample.as_secs_f64() * 1000.0;
    Some(match prev {
        Some((avg, _)) => (avg + LATENCY_EWMA_ALPHA * (ms - avg), now),
        None => (ms, now),
    })
}

impl RouterState for InMemoryState {
    fn snapshot(&self, slot: usize, now: Instant) -> DeploymentSnapshot {
        let minute = self.minute(now);
        self.with(slot, |s| {
            let current = s.minute == minute;
            DeploymentSnapshot {
                in_flight: s.in_flight,
                rpm_used: if current { s.rpm_used } else { 0 },
                tpm_used: if current { s.tpm_used } else { 0 },
                latency_ms: s.latency_ms,
                ttft_ms: s.ttft_ms,
                cooldown_until: s.cooldown_until.filter(|&t| t > now),
            }
        })
        .unwrap_or_default()
    }

    fn begin(&self, slot: usize, now: Instant, prompt_tokens: u64) {
        let minute = self.minute(now);
        self.with(slot, |s| {
            if s.minute != minute {
                s.minute = minute;
                s.rpm_used = 0;
                s.tpm_used = 0;
            }
            s.in_flight = s.in_flight.saturating_add(1);
            s.rpm_used = s.rpm_used.saturating_add(1);
            s.tpm_used = s.tpm_used.saturating_add(prompt_tokens);
        });
    }

    fn end(&self, slot: usize) {
        self.with(slot, |s| s.in_flight = s.in_flight.saturating_sub(1));
    }

    fn settle_tokens(&self, slot: usize, now: Instant, tokens: &AttemptTokens) {
        let (minute, began) = (self.minute(now), self.minute(tokens.began));
        self.with(slot, |s| s.settle_tokens(minute, began, tokens));
    }

    fn record_success(&self, slot: usize, now: Instant, sample: &SuccessSample) {
        let (minute, began) = (self.minute(now), self.minute(sample.tokens.began));
        self.with(slot, |s| {
            s.add_timing(&sample.timing, now);
            s.settle_tokens(minute, began, &sample.tokens);
            s.roll_fail_minute(minute);
            s.oks = s.oks.saturating_add(1);
        });
    }

    fn record_timing(&self, slot: usize, now: Instant, timing: &CallTiming) {
        self.with(slot, |s| s.add_timing(timing, now));
    }

    fn record_failure(&self, slot: usize, now: Instant, rule: &CooldownRule) -> Option<Instant> {
        let minute = self.minute(now);
        self.with(slot, |s| {
            s.roll_fail_minute(minute);
            s.fails = s.fails.saturating_add(1);
            if rule.disabled || !rule.trigger.fires(s.fails, s.oks) {
                return None;
            }
            s.fails = 0;
            s.oks = 0;
            let until = now + rule.cooldown_time;
            s.cooldown_until = Some(until);
            Some(until)
        })
        .flatten()
    }

    fn minute_ends(&self, now: Instant) -> Instant {
        self.epoch + Duration::from_secs((self.minute(now) + 1) * 60)
    }

    fn slots(&self) -> usize {
        self.slots.len()
    }

    fn footprint_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.slots.len() * std::mem::size_of::<Mutex<Slot>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: CooldownRule = CooldownRule {
        trigger: CooldownTrigger::FailCount(2),
        cooldown_time: Duration::from_secs(5),
        disabled: false,
    };

    fn tokens(
        began: Instant,
        estimate: u64,
        prompt: Option<u64>,
        completion: u64,
    ) -> AttemptTokens {
        AttemptTokens {
            began,
            prompt_estimate: estimate,
            prompt_tokens: prompt,
            completion_tokens: completion,
        }
    }

    #[test]
    fn usage_resets_each_minute() {
        let t0 = Instant::now();
        let st = InMemoryState::new(1, t0);
        st.begin(0, t0, 100);
        st.begin(0, t0 + Duration::from_secs(10), 50);
        let s = st.snapshot(0, t0 + Duration::from_secs(20));
        assert_eq!((s.in_flight, s.rpm_used, s.tpm_used), (2, 2, 150));
        st.end(0);
        let s = st.snapshot(0, t0 + Duration::from_secs(61));
        assert_eq!((s.in_flight, s.rpm_used, s.tpm_used), (1, 0, 0));
        st.end(0);
        st.end(0); // never below 0
        assert_eq!(st.snapshot(0, t0).in_flight, 0);
    }

    #[test]
    fn failures_within_a_minute_cool_down() {
        let t0 = Instant::now();
        let st = InMemoryState::new(1, t0);
        assert_eq!(st.record_failure(0, t0, &RULE), None);
        // The window is per minute: a failure in the next minute starts afresh.
        assert_eq!(
            st.record_failure(0, t0 + Duration::from_secs(60), &RULE),
            None
        );
        let t = t0 + Duration::from_secs(70);
        assert_eq!(
            st.record_failure(0, t, &RULE),
            Some(t + Duration::from_secs(5))
        );
        assert_eq!(
            st.snapshot(0, t + Duration::from_secs(4)).cooldown_until,
            Some(t + Duration::from_secs(5))
        );
        assert_eq!(
            st.snapshot(0, t + Duration::from_secs(5)).cooldown_until,
            None
        );
        let off = CooldownRule {
            disabled: true,
            ..RULE
        };
        for _ in 0..5 {
            assert_eq!(st.record_failure(0, t, &off), None);
        }
    }

    #[test]
    fn failure_rate_counts_this_minutes_calls() {
        let t0 = Instant::now();
        let st = InMemoryState::new(1, t0);
        let rate = CooldownRule {
            trigger: CooldownTrigger::FailureRate {
                over: 0.5,
                min_calls: 5,
            },
            ..RULE
        };
        let ok = SuccessSample {
            timing: CallTiming::unary(Duration::from_millis(10)),
            tokens: tokens(t0, 0, None, 0),
        };
        // 2 successes, then failures: 3 of 5 (60 %) is over half with 5 calls finished.
        st.record_success(0, t0, &ok);
        st.record_success(0, t0, &ok);
        assert_eq!(st.record_failure(0, t0, &rate), None);
        assert_eq!(st.record_failure(0, t0, &rate), None); // 2 of 4: too few calls
        assert_eq!(
            st.record_failure(0, t0, &rate),
            Some(t0 + Duration::from_secs(5))
        );
        // The cooldown starts the count afresh; 3 failures of 6 (50 %) are not over half.
        let t = t0 + Duration::from_secs(6);
        for _ in 0..3 {
            st.record_success(0, t, &ok);
        }
        for _ in 0..3 {
            assert_eq!(st.record_failure(0, t, &rate), None);
        }
        // A new minute forgets the earlier calls: the 5-call minimum applies again.
        let next = t0 + Duration::from_secs(60);
        for _ in 0..4 {
            assert_eq!(st.record_failure(0, next, &rate), None);
        }
        assert!(st.record_failure(0, next, &rate).is_some());
        // Immediately: the first failure cools down.
        let st = InMemoryState::new(1, t0);
        let now = CooldownRule {
            trigger: CooldownTrigger::Immediately,
            ..RULE
        };
        assert!(st.record_failure(0, t0, &now).is_some());
    }

    #[test]
    fn latency_moving_average() {
        let t0 = Instant::now();
        let st = InMemoryState::new(2, t0);
        let ok = |ms| SuccessSample {
            timing: CallTiming {
                latency: Some(Duration::from_millis(ms)),
                ttft: Some(Duration::from_millis(ms / 10)),
            },
            tokens: tokens(t0, 3, None, 7),
        };
        st.begin(0, t0, 3);
        st.record_success(0, t0, &ok(100));
        st.record_success(0, t0, &ok(200));
        let s = st.snapshot(0, t0);
        let (lat, _) = s.latency_ms.unwrap();
        assert!((lat - 130.0).abs() < 1e-9, "{lat}");
        let (ttft, _) = s.ttft_ms.unwrap();
        assert!((ttft - 13.0).abs() < 1e-9, "{ttft}");
        assert_eq!(s.tpm_used, 3 + 14);
        assert_eq!(st.snapshot(1, t0), DeploymentSnapshot::default());
        assert_eq!(st.snapshot(99, t0), DeploymentSnapshot::default());
    }

    #[test]
    fn reported_prompt_tokens_replace_the_estimate_of_the_same_minute() {
        let t0 = Instant::now();
        let st = InMemoryState::new(1, t0);
        let tpm = |at| st.snapshot(0, at).tpm_used;
        // A request with a base64 image: 40,000 estimated, 1,200 reported.
        st.begin(0, t0, 40_000);
        st.begin(0, t0, 500);
        assert_eq!(tpm(t0), 40_500);
        st.settle_tokens(
            0,
            t0 + Duration::from_secs(2),
            &tokens(t0, 40_000, Some(1_200), 30),
        );
        assert_eq!(tpm(t0), 500 + 1_200 + 30);
        // No reported prompt: the estimate stays, completion tokens add.
        st.settle_tokens(0, t0, &tokens(t0, 500, None, 9));
        assert_eq!(tpm(t0), 500 + 1_200 + 30 + 9);
        // The same through a success record.
        st.begin(0, t0, 100);
        let ok = SuccessSample {
            timing: CallTiming::unary(Duration::from_millis(10)),
            tokens: tokens(t0, 100, Some(40), 2),
        };
        st.record_success(0, t0, &ok);
        assert_eq!(tpm(t0), 500 + 1_200 + 30 + 9 + 40 + 2);

        // Begun in one minute, answered in the next: the estimate went to the first minute,
        // which is gone; only the completion tokens count in the new one.
        let next = t0 + Duration::from_secs(60);
        st.begin(0, next, 10);
        st.settle_tokens(
            0,
            next,
            &tokens(t0 + Duration::from_secs(59), 5_000, Some(7), 3),
        );
        assert_eq!(tpm(next), 10 + 3);
        // Settled in a minute with no begin yet: the TPM held is older, nothing changes.
        let later = t0 + Duration::from_secs(180);
        st.settle_tokens(0, later, &tokens(later, 10, Some(1), 1));
        assert_eq!(tpm(later), 0);
        // An estimate smaller than what is held never takes the count below the rest.
        let st = InMemoryState::new(1, t0);
        st.begin(0, t0, 10);
        st.settle_tokens(0, t0, &tokens(t0, 1_000, Some(4), 0));
        assert_eq!(st.snapshot(0, t0).tpm_used, 4);
    }
}
