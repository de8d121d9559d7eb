//! Routing state across replicas: cooldowns and deployment usage shared through the fleet's
//! Redis, at a fixed cost per replica whatever the request rate.
//!
//! When Redis settings resolve ([`tollgate_config::redis_settings`]: `REDIS_URL`,
//! `router_settings.redis_*`, `cache_params`, cluster or Sentinel nodes), the router keeps its
//! state in a [`FleetState`] ([`router_state`]) and [`RoutingSync::start`] runs one background
//! task per replica that moves the numbers; the request path itself never waits on Redis.
//!
//! - **Cooldowns**, the moment one starts here: `PUBLISH <key_prefix>:cooldowns
//!   "<deadline Unix ms> <replica> <deployment id>"`, and the deadline recorded in the sorted
//!   set `{<key_prefix>}:route:cool` (the later deadline wins). Every replica subscribes to the
//!   channel and skips the deployment until the deadline: within one Redis round trip, well
//!   under 100 ms on a LAN. A replica that missed the message (it started later, or its
//!   subscription was reconnecting) reads the set at its next sync. The deadline is the
//!   publisher's clock: a publisher whose clock runs `s` seconds ahead of a receiver's cools
//!   the deployment `s` seconds longer there (shorter when behind); keep the fleet on NTP.
//! - **Usage**, every `TOLLGATE_ROUTING_SYNC_MS` (default 100 ms; `0` turns the sharing off):
//!   one `FCALL` of the versioned library `library.lua` sends this replica's request and token
//!   deltas since the last sync (`HINCRBY` into `{<key_prefix>}:route:use:<Unix minute>`,
//!   expiring after two minutes) and its requests in flight (its own field of
//!   `{<key_prefix>}:route:busy`, dropped when the replica has not synced for
//!   max(30 sync periods, 3 s), so a dead replica's in-flight fades), and reads back the
//!   minute's fleet totals, the others' in flight and the running cooldowns: about 10 round
//!   trips per second per replica at the default. Every key carries the hash tag
//!   `{<key_prefix>}`, so a Redis Cluster keeps them in one slot.
//!
//! Staleness: the others' usage and in-flight counts a replica routes on are at most one sync
//! period (plus a round trip) old; usage-based routing across N replicas can overshoot a
//! deployment by what the others sent it within that window. Minutes are Unix minutes of
//! each replica's clock (see [`tollgate_router::state::fleet`]).
//!
//! Redis down: routing goes on this replica's numbers alone (the others' usage and in flight
//! are forgotten; cooldowns already known run to their deadlines), reconnecting with back-off
//! from one sync period to 5 s; the outage is logged once, and its end once (no URL or
//! password is logged). The deltas of the outage are sent once it is back, if their minute is
//! still running, and so are the cooldowns started meanwhile (or whose publication failed). A
//! sync whose reply is lost (a timeout) is not sent again: its deltas may or may not have been
//! counted.

mod link;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cluster;
mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redis::RedisError;
use tokio::sync::{Notify, watch};
use tollgate_config::{Config, RedisSettings};
use tollgate_router::state::UsageReport;
use tollgate_router::{FleetState, InMemoryState, Router, RouterState, WallClock};

use crate::state::SharedRouter;
use link::Link;
use wire::{Keys, SyncReply, Ttls};

/// The variable setting the sync period, ms (`0`: routing state is not shared).
pub const SYNC_MS_ENV: &str = "TOLLGATE_ROUTING_SYNC_MS";
/// The sync period when [`SYNC_MS_ENV`] is unset or not a number.
pub const DEFAULT_SYNC: Duration = Duration::from_millis(100);
/// Longest wait between two connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long the last sync at shutdown may take.
const FINAL_SYNC: Duration = Duration::from_secs(1);
/// The longest cooldown another replica can impose here (a day: `cooldown_time` and an
/// upstream's `retry-after` stay well below).
pub const MAX_REMOTE_COOLDOWN: Duration = Duration::from_secs(86_400);
/// How long shutdown waits for the task.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// The Redis settings and the sync period when routing state is shared: Redis settings
/// resolve and [`SYNC_MS_ENV`] is not `0`. Variables are read from the config's
/// `environment_variables` first, then `env`. Invalid Redis settings share nothing here (the
/// governance start-up reports them).
pub fn settings(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(RedisSettings, Duration)> {
    let var = config.env_var(SYNC_MS_ENV, env);
    let period = match var.as_deref().map(str::trim).map(str::parse::<u64>) {
        Some(Ok(0)) => return None,
        Some(Ok(ms)) => Duration::from_millis(ms),
        _ => DEFAULT_SYNC,
    };
    let settings = tollgate_config::redis_settings(config, env)
        .ok()
        .flatten()?;
    Some((settings, period))
}

/// The router's state store: a [`FleetState`] when routing state is `shared`, else the
/// process-local [`InMemoryState`] (what [`Router::with_state`] takes).
pub fn router_state(shared: bool) -> impl FnOnce(&[String]) -> Box<dyn RouterState> {
    move |ids| {
        if shared {
            Box::new(FleetState::new(ids, WallClock::now()))
        } else {
            Box::new(InMemoryState::new(ids.len(), Instant::now()))
        }
    }
}

/// The running sync task of this replica.
#[derive(Debug)]
pub struct RoutingSync {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RoutingSync {
    /// Starts the sync of the routers `router` holds (it follows `/model/new` swaps) when
    /// [`settings`] says routing state is shared; `None` otherwise. Runs on the current tokio
    /// runtime.
    pub fn start(
        config: &Config,
        env: &dyn Fn(&str) -> Option<String>,
        router: SharedRouter,
    ) -> Option<RoutingSync> {
        let (settings, period) = settings(config, env)?;
        let replica = uuid::Uuid::new_v4().simple().to_string();
        tracing::info!(
            sync_ms = period.as_millis() as u64,
            redis = %settings.origin,
            replica = %replica,
            "routing state shared across replicas (cooldowns, usage, in flight)"
        );
        let (stop, stopped) = watch::channel(false);
        let task = Task {
            keys: Keys::new(&settings.key_prefix),
            settings,
            replica,
            period,
            ttl: Ttls {
                usage_ms: 120_000,
                replica_ms: (period * 30).max(Duration::from_secs(3)).as_millis() as u64,
            },
            router,
            wake: Arc::new(Notify::new()),
            seen: 0,
            reports: Vec::new(),
            cooldowns: Vec::new(),
            outage: false,
        };
        let task = tokio::spawn(task.run(stopped));
        Some(RoutingSync { stop, task })
    }

    /// Stops the task after a last sync (at most 1 s), which also takes this replica's
    /// in-flight counts out of the fleet's. A task still connecting to an unreachable Redis
    /// is given 2 s, then dropped.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let abort = self.task.abort_handle();
        if tokio::time::timeout(STOP_WAIT, self.task).await.is_err() {
            abort.abort();
        }
    }
}

/// How a connected stretch ended.
enum Served {
    Lost,
    Stopped,
}

struct Task {
    settings: RedisSettings,
    keys: Keys,
    replica: String,
    period: Duration,
    ttl: Ttls,
    router: SharedRouter,
    /// Woken by a cooldown starting on this replica.
    wake: Arc<Notify>,
    /// Address of the router whose state last got the waker.
    seen: usize,
    reports: Vec<UsageReport>,
    cooldowns: Vec<(usize, u64)>,
    /// Redis is unreachable (logged once).
    outage: bool,
}

impl Task {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let first = self.period.max(Duration::from_millis(100));
        let mut backoff = first;
        let mut attempt = 0usize;
        loop {
            match Link::connect(&self.settings, &self.keys.channel, attempt).await {
                Ok(link) => {
                    backoff = first;
                    if let Served::Stopped = self.serve(link, &mut stop).await {
                        return;
                    }
                }
                Err(e) => self.down(&e),
            }
            if let Some(f) = self.router.load().state().fleet() {
                f.forget_remote();
            }
            attempt = attempt.wrapping_add(1);
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop.changed() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Syncs every period, publishes cooldowns as they start and applies the others', until
    /// the link fails or the gateway stops.
    async fn serve(&mut self, mut link: Link, stop: &mut watch::Receiver<bool>) -> Served {
        let mut tick = tokio::time::interval(self.period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let wake = Arc::clone(&self.wake);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    if let Err(e) = self.sync(&mut link).await {
                        self.down(&e);
                        return Served::Lost;
                    }
                }
                _ = wake.notified() => {
                    let router = self.router.load_full();
                    if let Some(fleet) = router.state().fleet()
                        && let Err(e) = self.publish(&mut link, fleet).await
                    {
                        self.down(&e);
                        return Served::Lost;
                    }
                }
                msg = link.messages.next() => match msg {
                    Some(m) => self.received(m.get_payload_bytes()),
                    None => {
                        self.down(&RedisError::from(std::io::Error::new(
                            std::io::ErrorKind::ConnectionAborted,
                            "the cooldown subscription closed",
                        )));
                        return Served::Lost;
                    }
                },
                _ = stop.changed() => {
                    let _ = tokio::time::timeout(FINAL_SYNC, self.sync(&mut link)).await;
                    return Served::Stopped;
                }
            }
        }
    }

    /// One sync round trip (after publishing any cooldown not yet out).
    async fn sync(&mut self, link: &mut Link) -> Result<(), RedisError> {
        let router = self.router.load_full();
        let Some(fleet) = router.state().fleet() else {
            return Ok(());
        };
        self.adopt(&router, fleet);
        self.publish(link, fleet).await?;
        let now = Instant::now();
        self.reports.clear();
        let minute = fleet.drain_usage(now, &mut self.reports);
        let args = wire::sync_args(
            &self.replica,
            self.ttl,
            fleet.unix_ms(now),
            &self.reports,
            fleet,
        );
        let keys = self.keys.sync(minute);
        let reply: SyncReply = match fcall(link, wire::FN_SYNC, &keys, &args).await {
            Ok(r) => r,
            Err(e) => {
                if e.is_connection_refusal() {
                    fleet.restore_usage(minute, &self.reports);
                }
                return Err(e);
            }
        };
        let (usage, cooldowns) = wire::parse_sync(&reply, fleet);
        fleet.apply_fleet(minute, &usage);
        for (slot, ms) in cooldowns {
            if plausible(fleet, now, ms) {
                fleet.apply_cooldown(slot, ms);
            }
        }
        if self.outage {
            self.outage = false;
            tracing::info!("routing state: the fleet's Redis is reachable again");
        }
        Ok(())
    }

    /// Gives a router's state seen for the first time the waker of this task.
    fn adopt(&mut self, router: &Arc<Router>, fleet: &FleetState) {
        let at = Arc::as_ptr(router) as usize;
        if at != self.seen {
            self.seen = at;
            let wake = Arc::clone(&self.wake);
            fleet.set_waker(Box::new(move || wake.notify_one()));
        }
    }

    /// Publishes the cooldowns started here since the last call, and records them.
    async fn publish(&mut self, link: &mut Link, fleet: &FleetState) -> Result<(), RedisError> {
        self.cooldowns.clear();
        fleet.drain_cooldowns(&mut self.cooldowns);
        for (i, &(slot, ms)) in self.cooldowns.iter().enumerate() {
            let Some(id) = fleet.id(slot) else { continue };
            if let Err(e) = self.publish_one(link, id, ms).await {
                // Sent again once Redis is back (if still running by then).
                fleet.requeue_cooldowns(&self.cooldowns[i..]);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Publishes one cooldown of deployment `id` until `ms` (Unix ms), and records it.
    async fn publish_one(&self, link: &mut Link, id: &str, ms: u64) -> Result<(), RedisError> {
        let mut publish = redis::cmd("PUBLISH");
        publish
            .arg(&self.keys.channel)
            .arg(wire::cooldown_message(ms, &self.replica, id));
        link.send::<redis::Value>(&publish).await?;
        let keys = [self.keys.cooldowns()];
        let args = [id.to_owned(), ms.to_string()];
        fcall::<redis::Value>(link, wire::FN_COOLDOWN, &keys, &args).await?;
        Ok(())
    }

    /// Applies another replica's cooldown message.
    fn received(&self, payload: &[u8]) {
        let Ok(text) = std::str::from_utf8(payload) else {
            return;
        };
        let Some((ms, replica, id)) = wire::parse_cooldown_message(text) else {
            return;
        };
        if replica == self.replica {
            return;
        }
        let router = self.router.load();
        if let Some(fleet) = router.state().fleet()
            && let Some(slot) = fleet.slot_of(id)
            && plausible(fleet, Instant::now(), ms)
        {
            fleet.apply_cooldown(slot, ms);
        }
    }

    /// Notes a failure: logged at the start of an outage only.
    fn down(&mut self, e: &RedisError) {
        if !self.outage {
            self.outage = true;
            tracing::warn!(
                error = %e,
                "routing state: the fleet's Redis cannot be reached; routing on this replica's numbers alone until it is back"
            );
        }
    }
}

/// Whether a cooldown deadline `ms` (Unix ms) read from Redis ends within
/// [`MAX_REMOTE_COOLDOWN`] of `now`: a later one (a garbled message, a publisher's clock far
/// ahead) is ignored rather than taking the deployment out for that long.
fn plausible(fleet: &FleetState, now: Instant, ms: u64) -> bool {
    ms <= fleet
        .unix_ms(now)
        .saturating_add(MAX_REMOTE_COOLDOWN.as_millis() as u64)
}

/// `FCALL name`; when the server has lost the library (a flush, a fresh server, a failover),
/// loads it and sends the call again, once.
async fn fcall<T: redis::FromRedisValue>(
    link: &mut Link,
    name: &str,
    keys: &[String],
    args: &[String],
) -> Result<T, RedisError> {
    let mut cmd = redis::cmd("FCALL");
    cmd.arg(name).arg(keys.len()).arg(keys).arg(args);
    match link.send(&cmd).await {
        Err(e) if e.code() == Some("NOSCRIPT") || e.to_string().contains("Function not found") => {
            let mut load = redis::cmd("FUNCTION");
            load.arg("LOAD").arg("REPLACE").arg(wire::LIBRARY);
            link.send::<redis::Value>(&load).await?;
            link.send(&cmd).await
        }
        r => r,
    }
}
