//! [`FleetState`]: routing state shared by every replica of a fleet, without a network call
//! on the request path.
//!
//! Each replica keeps its own numbers in an [`InMemoryState`] and holds, beside them, what the
//! rest of the fleet last reported: the others' requests and tokens of this minute, their
//! requests in flight, and the cooldowns they started. [`RouterState::snapshot`] returns the
//! sum (usage, in flight) and the later deadline (cooldown), so every strategy and every
//! cooldown check sees the fleet. The request path only reads and writes in-process memory
//! (one uncontended mutex, as [`InMemoryState`], plus a few atomics); a transport outside this
//! crate (the server's) moves the numbers:
//!
//! - **out**: [`FleetState::drain_usage`] gives this replica's usage deltas since the last
//!   drain (and its current in-flight counts), [`FleetState::drain_cooldowns`] the cooldowns
//!   started here since the last drain, as absolute deadlines in Unix epoch ms. A cooldown
//!   starting calls the waker set by [`FleetState::set_waker`], so the transport can publish
//!   it at once instead of at its next sync.
//! - **in**: [`FleetState::apply_fleet`] takes the fleet's totals for a minute (this
//!   replica's own contribution is subtracted here, so it is never counted twice),
//!   [`FleetState::apply_cooldown`] another replica's cooldown deadline.
//!
//! # Staleness
//!
//! Remote numbers are as old as the transport's last sync (one sync period, 100 ms by default
//! in the server, plus one round trip); a remote cooldown arrives as soon as the transport
//! relays it. Within that window a replica may route as if the others had not moved, which is
//! the bound the fleet's usage-based routing and cooldowns keep.
//!
//! # Minutes and clocks
//!
//! Usage is counted per wall-clock minute (Unix ms / 60 000), so all replicas count the same
//! minutes: the local [`InMemoryState`]'s minutes are aligned to them through the
//! [`WallClock`] taken at construction. Remote usage of an earlier minute reads as 0. A
//! replica whose clock is off by `s` seconds counts its usage of the first or last `s`
//! seconds of each minute into the neighbouring minute; a cooldown deadline set by a
//! publisher whose clock is `s` ahead lasts `s` longer on the others (`s` shorter when
//! behind). Usage recorded in the last sync period of a minute that has ended by the next
//! drain is not sent: only the current minute matters for routing.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{
    AttemptTokens, CallTiming, CooldownRule, DeploymentSnapshot, InMemoryState, RouterState,
    SuccessSample,
};

/// Milliseconds in a minute, the usage window.
const MINUTE_MS: u64 = 60_000;

/// An anchor pairing a monotonic [`Instant`] with the Unix time (ms) it was taken at, to turn
/// one into the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    instant: Instant,
    unix_ms: u64,
}

impl WallClock {
    /// The anchor of this moment (system clock; 0 ms if it reads before 1970).
    pub fn now() -> Self {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self::at(Instant::now(), unix_ms)
    }

    /// The anchor saying that `instant` is `unix_ms` ms after the Unix epoch (tests).
    pub fn at(instant: Instant, unix_ms: u64) -> Self {
        Self { instant, unix_ms }
    }

    /// Unix time of `t`, ms (the anchor's for a `t` before it).
    pub fn unix_ms(&self, t: Instant) -> u64 {
        let since = t.saturating_duration_since(self.instant).as_millis();
        self.unix_ms
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
    }

    /// The instant of Unix time `ms`: the anchor's instant for a time this process cannot
    /// represent before it (so an old deadline reads as past), a year ahead for one it
    /// cannot represent after it.
    pub fn instant(&self, ms: u64) -> Instant {
        if ms >= self.unix_ms {
            let ahead = Duration::from_millis(ms - self.unix_ms);
            self.instant
                .checked_add(ahead)
                .or_else(|| self.instant.checked_add(Duration::from_secs(86_400 * 365)))
                .unwrap_or(self.instant)
        } else {
            self.instant
                .checked_sub(Duration::from_millis(self.unix_ms - ms))
                .unwrap_or(self.instant)
        }
    }
}

/// This replica's usage of one deployment since the last drain, as [`FleetState::drain_usage`]
/// gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageReport {
    /// The deployment's slot.
    pub slot: usize,
    /// Requests started since the last drain.
    pub rpm_delta: i64,
    /// Tokens since the last drain (negative when reported prompt tokens replaced a larger
    /// estimate).
    pub tpm_delta: i64,
    /// Requests in flight on this replica now (absolute).
    pub in_flight: u32,
}

/// The fleet's numbers for one deployment, as the transport read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FleetUsage {
    /// The deployment's slot.
    pub slot: usize,
    /// Requests started in the minute by every replica, this one included.
    pub rpm_total: u64,
    /// Tokens of the minute of every replica, this one included.
    pub tpm_total: u64,
    /// Requests in flight on the other replicas (this one excluded).
    pub in_flight_others: u32,
}

/// What the others last reported for one deployment.
#[derive(Debug, Default)]
struct Remote {
    /// Unix minute of `rpm` / `tpm`, plus one (0: nothing known).
    minute: AtomicU64,
    rpm: AtomicU64,
    tpm: AtomicU64,
    in_flight: AtomicU32,
    /// The latest cooldown deadline another replica announced, Unix ms (0: none).
    cooldown_ms: AtomicU64,
    /// A cooldown started here and not drained yet, Unix ms (0: none).
    outgoing_ms: AtomicU64,
}

/// What this replica has sent of one deployment's current minute (touched by the transport
/// only).
#[derive(Debug, Default, Clone, Copy)]
struct Sent {
    minute: u64,
    rpm: u64,
    tpm: u64,
}

/// The waker a started cooldown calls (see [`FleetState::set_waker`]).
type Waker = Box<dyn Fn() + Send + Sync>;

/// Routing state of a replica merged with the fleet's (see the module docs).
pub struct FleetState {
    local: InMemoryState,
    clock: WallClock,
    /// Unix minute of the local state's minute 0.
    base_minute: u64,
    remote: Box<[Remote]>,
    sent: Mutex<Box<[Sent]>>,
    ids: Box<[String]>,
    /// Slot of each shared id: the first slot carrying it (a later duplicate stays local).
    slot_of: HashMap<String, usize>,
    waker: OnceLock<Waker>,
}

impl fmt::Debug for FleetState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetState")
            .field("slots", &self.ids.len())
            .field("waker", &self.waker.get().is_some())
            .finish()
    }
}

impl FleetState {
    /// State for the deployments `ids` (slot `i` is `ids[i]`, the ids every replica shares:
    /// `model_info.id` or the config-derived hash), its minutes aligned to Unix minutes
    /// through `clock`.
    pub fn new(ids: &[String], clock: WallClock) -> Self {
        let into_minute = Duration::from_millis(clock.unix_ms % MINUTE_MS);
        // Minute 0 of the local state starts at the Unix minute `clock` falls in; a process
        // whose monotonic clock cannot go back that far (right after boot) starts it at the
        // next Unix minute instead.
        let (epoch, base_minute) = match clock.instant.checked_sub(into_minute) {
            Some(e) => (e, clock.unix_ms / MINUTE_MS),
            None => (
                clock.instant + (Duration::from_millis(MINUTE_MS) - into_minute),
                clock.unix_ms / MINUTE_MS + 1,
            ),
        };
        let mut slot_of = HashMap::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            slot_of.entry(id.clone()).or_insert(i);
        }
        FleetState {
            local: InMemoryState::new(ids.len(), epoch),
            clock,
            base_minute,
            remote: (0..ids.len()).map(|_| Remote::default()).collect(),
            sent: Mutex::new(vec![Sent::default(); ids.len()].into_boxed_slice()),
            ids: ids.into(),
            slot_of,
            waker: OnceLock::new(),
        }
    }

    /// Sets what a cooldown starting here calls (once; `false` if one is set already). It runs
    /// on the request path: it must not block (a `tokio::sync::Notify::notify_one` fits).
    pub fn set_waker(&self, waker: Waker) -> bool {
        self.waker.set(waker).is_ok()
    }

    /// The shared id of `slot`.
    pub fn id(&self, slot: usize) -> Option<&str> {
        self.ids.get(slot).map(String::as_str)
    }

    /// The slot whose numbers the fleet shares under `id`.
    pub fn slot_of(&self, id: &str) -> Option<usize> {
        self.slot_of.get(id).copied()
    }

    /// The Unix minute (Unix ms / 60 000) `now` falls in, as the local state counts it.
    pub fn fleet_minute(&self, now: Instant) -> u64 {
        self.base_minute + self.local.minute(now)
    }

    /// Unix time of `now`, ms.
    pub fn unix_ms(&self, now: Instant) -> u64 {
        self.clock.unix_ms(now)
    }

    /// Whether `slot` is the one carrying its id (duplicates stay local).
    fn shared(&self, slot: usize) -> bool {
        self.ids
            .get(slot)
            .is_some_and(|id| self.slot_of.get(id) == Some(&slot))
    }

    fn sent(&self) -> std::sync::MutexGuard<'_, Box<[Sent]>> {
        // A poisoned lock only means a panic elsewhere mid-update of plain counters.
        self.sent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends to `out` this replica's usage since the last drain, for every deployment with
    /// a change or requests in flight, and returns the Unix minute it belongs to. Each request
    /// and token is drained once: a report that could not be delivered is handed back with
    /// [`FleetState::restore_usage`].
    pub fn drain_usage(&self, now: Instant, out: &mut Vec<UsageReport>) -> u64 {
        let minute = self.fleet_minute(now);
        let mut sent = self.sent();
        for (slot, s) in sent.iter_mut().enumerate() {
            if !self.shared(slot) {
                continue;
            }
            let snap = self.local.snapshot(slot, now);
            if s.minute != minute {
                *s = Sent {
                    minute,
                    rpm: 0,
                    tpm: 0,
                };
            }
            let rpm_delta = signed(snap.rpm_used) - signed(s.rpm);
            let tpm_delta = signed(snap.tpm_used) - signed(s.tpm);
            s.rpm = snap.rpm_used;
            s.tpm = snap.tpm_used;
            if rpm_delta != 0 || tpm_delta != 0 || snap.in_flight != 0 {
                out.push(UsageReport {
                    slot,
                    rpm_delta,
                    tpm_delta,
                    in_flight: snap.in_flight,
                });
            }
        }
        minute
    }

    /// Takes back `reports` of `minute` that did not reach the fleet, so the next drain sends
    /// them again (nothing for a minute that has ended since).
    pub fn restore_usage(&self, minute: u64, reports: &[UsageReport]) {
        let mut sent = self.sent();
        for r in reports {
            if let Some(s) = sent.get_mut(r.slot)
                && s.minute == minute
            {
                s.rpm = unsigned(signed(s.rpm) - r.rpm_delta);
                s.tpm = unsigned(signed(s.tpm) - r.tpm_delta);
            }
        }
    }

    /// Takes the fleet's numbers of `minute`, read after this replica's reports up to its
    /// last drain were applied: the others' usage is `total - what this replica sent`.
    /// Deployments missing from `usage` have no usage and nothing in flight elsewhere.
    pub fn apply_fleet(&self, minute: u64, usage: &[FleetUsage]) {
        let mut seen = vec![false; self.remote.len()];
        let sent = self.sent();
        for u in usage {
            let (Some(r), Some(s)) = (self.remote.get(u.slot), sent.get(u.slot)) else {
                continue;
            };
            if let Some(flag) = seen.get_mut(u.slot) {
                *flag = true;
            }
            let own = |v: u64| if s.minute == minute { v } else { 0 };
            r.rpm
                .store(u.rpm_total.saturating_sub(own(s.rpm)), Ordering::Relaxed);
            r.tpm
                .store(u.tpm_total.saturating_sub(own(s.tpm)), Ordering::Relaxed);
            r.in_flight.store(u.in_flight_others, Ordering::Relaxed);
            // Published after the numbers: a reader seeing this minute sees them.
            r.minute.store(minute + 1, Ordering::Release);
        }
        for (r, _) in self.remote.iter().zip(&seen).filter(|(_, s)| !**s) {
            r.rpm.store(0, Ordering::Relaxed);
            r.tpm.store(0, Ordering::Relaxed);
            r.in_flight.store(0, Ordering::Relaxed);
            r.minute.store(minute + 1, Ordering::Release);
        }
    }

    /// Forgets the others' usage and in-flight counts (the fleet cannot be reached: routing
    /// goes on this replica's numbers alone). Their cooldowns stay until their deadlines.
    pub fn forget_remote(&self) {
        for r in self.remote.iter() {
            r.minute.store(0, Ordering::Release);
            r.in_flight.store(0, Ordering::Relaxed);
        }
    }

    /// Another replica cooled `slot` down until `until_ms` (Unix ms): the deployment is
    /// skipped here too until then. The later of several deadlines wins.
    pub fn apply_cooldown(&self, slot: usize, until_ms: u64) {
        if let Some(r) = self.remote.get(slot) {
            r.cooldown_ms.fetch_max(until_ms, Ordering::Relaxed);
        }
    }

    /// Hands back drained cooldowns (slot, deadline in Unix ms) that could not be published,
    /// so the next drain gives them again (the later deadline wins over one started since).
    pub fn requeue_cooldowns(&self, cooldowns: &[(usize, u64)]) {
        for &(slot, ms) in cooldowns {
            if let Some(r) = self.remote.get(slot) {
                r.outgoing_ms.fetch_max(ms, Ordering::Relaxed);
            }
        }
    }

    /// Appends to `out` the cooldowns started here since the last drain, as (slot, deadline
    /// in Unix ms); each once.
    pub fn drain_cooldowns(&self, out: &mut Vec<(usize, u64)>) {
        for (slot, r) in self.remote.iter().enumerate() {
            let ms = r.outgoing_ms.swap(0, Ordering::Relaxed);
            if ms != 0 && self.shared(slot) {
                out.push((slot, ms));
            }
        }
    }
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl RouterState for FleetState {
    fn snapshot(&self, slot: usize, now: Instant) -> DeploymentSnapshot {
        let mut snap = self.local.snapshot(slot, now);
        let Some(r) = self.remote.get(slot) else {
            return snap;
        };
        if r.minute.load(Ordering::Acquire) == self.fleet_minute(now) + 1 {
            snap.rpm_used = snap.rpm_used.saturating_add(r.rpm.load(Ordering::Relaxed));
            snap.tpm_used = snap.tpm_used.saturating_add(r.tpm.load(Ordering::Relaxed));
        }
        snap.in_flight = snap
            .in_flight
            .saturating_add(r.in_flight.load(Ordering::Relaxed));
        let ms = r.cooldown_ms.load(Ordering::Relaxed);
        if ms != 0 {
            let until = self.clock.instant(ms);
            if until > now && snap.cooldown_until.is_none_or(|t| t < until) {
                snap.cooldown_until = Some(until);
            }
        }
        snap
    }

    fn begin(&self, slot: usize, now: Instant, prompt_tokens: u64) {
        self.local.begin(slot, now, prompt_tokens);
    }

    fn end(&self, slot: usize) {
        self.local.end(slot);
    }

    fn settle_tokens(&self, slot: usize, now: Instant, tokens: &AttemptTokens) {
        self.local.settle_tokens(slot, now, tokens);
    }

    fn record_success(&self, slot: usize, now: Instant, sample: &SuccessSample) {
        self.local.record_success(slot, now, sample);
    }

    fn record_timing(&self, slot: usize, now: Instant, timing: &CallTiming) {
        self.local.record_timing(slot, now, timing);
    }

    fn record_failure(&self, slot: usize, now: Instant, rule: &CooldownRule) -> Option<Instant> {
        let until = self.local.record_failure(slot, now, rule)?;
        if let Some(r) = self.remote.get(slot) {
            r.outgoing_ms
                .fetch_max(self.clock.unix_ms(until), Ordering::Relaxed);
            if let Some(wake) = self.waker.get() {
                wake();
            }
        }
        Some(until)
    }

    fn minute_ends(&self, now: Instant) -> Instant {
        self.local.minute_ends(now)
    }

    fn slots(&self) -> usize {
        self.local.slots()
    }

    fn footprint_bytes(&self) -> usize {
        self.local.footprint_bytes()
            + self.remote.len() * (std::mem::size_of::<Remote>() + std::mem::size_of::<Sent>())
            + self.ids.iter().map(|i| 2 * i.len()).sum::<usize>()
    }

    fn fleet(&self) -> Option<&FleetState> {
        Some(self)
    }
}

#[cfg(test)]
mod tests;
