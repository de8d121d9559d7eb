//! The sync against a real Redis (`TOLLGATE_TEST_REDIS_URL=redis://127.0.0.1:6379`, each test
//! under its own key prefix, deleted at the end; skipped, saying so, without it): two replicas
//! in one process, each its own router and task, see each other's usage and in flight; a
//! stopped replica's in flight fades; a Redis that goes away and comes back (a private
//! `redis-server` the test starts on a free loopback port and stops by PID) leaves each replica
//! on its own numbers, then shares them again.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tollgate_config::Config;
use tollgate_router::{CooldownRule, CooldownTrigger, DeploymentSnapshot, RouterState};

use super::RoutingSync;
use crate::state::{SharedRouter, build_router};

const VAR: &str = "TOLLGATE_TEST_REDIS_URL";

/// The Redis URL, or `None` after reporting the skip (the protocol of `tests/common/skip.rs`).
pub(super) fn redis_url(what: &str) -> Option<String> {
    let url = std::env::var(VAR).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        let test = format!("tollgate_server::fleet::routing::tests::{what}");
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED {test}: set {VAR} (e.g. {VAR}=redis://127.0.0.1:6379) to run it"
        );
        if let Some(log) = std::env::var_os("TOLLGATE_TEST_SKIP_LOG")
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
        {
            let _ = f.write_all(format!("{VAR}\tredis://127.0.0.1:6379\t{test}\n").as_bytes());
        }
    }
    url
}

fn config(redis: &str, prefix: &str, sync_ms: u64) -> Config {
    config_with("REDIS_URL", redis, prefix, sync_ms)
}

/// Deployments east and west in group `pair`, the Redis named by env `var` = `value`.
pub(super) fn config_with(var: &str, value: &str, prefix: &str, sync_ms: u64) -> Config {
    let yaml = format!(
        "model_list:\n  - model_name: pair\n    litellm_params: {{model: openai/m, api_base: 'http://127.0.0.1:1/v1', api_key: k}}\n    model_info: {{id: east}}\n  - model_name: pair\n    litellm_params: {{model: openai/m, api_base: 'http://127.0.0.1:2/v1', api_key: k}}\n    model_info: {{id: west}}\nenvironment_variables:\n  {var}: '{value}'\n  TOLLGATE_REDIS_KEY_PREFIX: '{prefix}'\n  TOLLGATE_ROUTING_SYNC_MS: '{sync_ms}'\n"
    );
    tollgate_config::load_str(&yaml, "test.yaml", &|_| None)
        .unwrap()
        .config
}

pub(super) fn replica(cfg: &Config) -> (SharedRouter, RoutingSync) {
    let router = build_router(cfg, &cfg.model_list, &|_| None).unwrap();
    assert!(router.state().fleet().is_some(), "Redis set: a fleet state");
    let shared: SharedRouter = Arc::new(ArcSwap::from_pointee(router));
    let sync = RoutingSync::start(cfg, &|_| None, Arc::clone(&shared)).unwrap();
    (shared, sync)
}

pub(super) fn east(r: &SharedRouter) -> DeploymentSnapshot {
    let router = r.load();
    let fleet = router.state().fleet().unwrap();
    fleet.snapshot(fleet.slot_of("east").unwrap(), Instant::now())
}

pub(super) fn begin_east(r: &SharedRouter, n: usize) {
    let router = r.load();
    let fleet = router.state().fleet().unwrap();
    let slot = fleet.slot_of("east").unwrap();
    for _ in 0..n {
        fleet.begin(slot, Instant::now(), 10);
    }
}

/// Polls `r`'s snapshot of east (every 10 ms, at most `within`) until `ok` holds; the last one.
pub(super) async fn until(
    r: &SharedRouter,
    within: Duration,
    ok: impl Fn(&DeploymentSnapshot) -> bool,
) -> DeploymentSnapshot {
    let start = Instant::now();
    loop {
        let s = east(r);
        if ok(&s) || start.elapsed() > within {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(super) async fn clean(redis: &str, prefix: &str) {
    let client = redis::Client::open(redis).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{{{prefix}}}:*"))
        .query_async(&mut c)
        .await
        .unwrap();
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut c)
            .await
            .unwrap();
    }
}

pub(super) fn prefix(name: &str) -> String {
    format!("tg-test-route-{name}-{}", uuid::Uuid::new_v4().simple())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_usage_and_in_flight_and_a_stopped_ones_fades() {
    let Some(redis) = redis_url("replicas_share_usage_and_in_flight_and_a_stopped_ones_fades")
    else {
        return;
    };
    let prefix = prefix("share");
    let cfg = config(&redis, &prefix, 20);
    let (a, sync_a) = replica(&cfg);
    let (b, sync_b) = replica(&cfg);
    let minute = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 60;
    begin_east(&a, 3);
    let s = until(&b, Duration::from_secs(2), |s| s.in_flight == 3).await;
    assert_eq!(s.in_flight, 3, "a's three in flight reach b");
    let same_minute = |m: u64| {
        m == std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            / 60
    };
    if same_minute(minute) {
        assert_eq!((s.rpm_used, s.tpm_used), (3, 30), "and their usage");
    }
    // a's own view: its three, nothing from b.
    assert_eq!(east(&a).in_flight, 3);
    // One ends on a: b sees two.
    {
        let router = a.load();
        let fleet = router.state().fleet().unwrap();
        fleet.end(fleet.slot_of("east").unwrap());
    }
    let s = until(&b, Duration::from_secs(2), |s| s.in_flight == 2).await;
    assert_eq!(s.in_flight, 2);
    // a stops with two still in flight (a replica that died mid-request): they count until
    // a's entry expires, 3 s after its last sync, then no longer.
    sync_a.stop().await;
    let stopped = Instant::now();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(east(&b).in_flight, 2, "still within a's expiry");
    let s = until(&b, Duration::from_secs(5), |s| s.in_flight == 0).await;
    assert_eq!(s.in_flight, 0, "a's in flight faded");
    assert!(stopped.elapsed() >= Duration::from_millis(2_900));
    if same_minute(minute) {
        assert_eq!(s.rpm_used, 3, "the minute's usage stays counted");
    }
    sync_b.stop().await;
    clean(&redis, &prefix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooldown_reaches_the_other_replica_by_pub_sub_at_once() {
    let Some(redis) = redis_url("a_cooldown_reaches_the_other_replica_by_pub_sub_at_once") else {
        return;
    };
    let prefix = prefix("cool");
    // Syncs 10 s apart: only the published message can carry the cooldown in time.
    let cfg = config(&redis, &prefix, 10_000);
    let (a, sync_a) = replica(&cfg);
    let (b, sync_b) = replica(&cfg);
    // Both subscribed and a's waker set (at each task's first sync, right after start).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rule = CooldownRule {
        trigger: CooldownTrigger::Immediately,
        cooldown_time: Duration::from_secs(30),
        disabled: false,
    };
    let started = Instant::now();
    let until_a = {
        let router = a.load();
        let fleet = router.state().fleet().unwrap();
        fleet.record_failure(fleet.slot_of("east").unwrap(), started, &rule)
    }
    .unwrap();
    let s = until(&b, Duration::from_secs(2), |s| s.cooldown_until.is_some()).await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(100), "arrived after {took:?}");
    // The same deadline, to the millisecond the message carries: truncating to whole ms moves
    // it by up to 1 ms, and each replica maps its wall clock to its monotonic one through its
    // own (SystemTime, Instant) pair, read a few microseconds apart (more under load; 1.035 ms
    // was seen once in CI with a bound of exactly 1 ms).
    let until_b = s.cooldown_until.unwrap();
    let gap = until_b.max(until_a) - until_b.min(until_a);
    assert!(gap <= Duration::from_millis(2), "{gap:?}");
    sync_a.stop().await;
    sync_b.stop().await;
    clean(&redis, &prefix).await;
}

/// A `redis-server` of this test on `port`, stopped by PID on drop.
pub(super) struct PrivateRedis(pub(super) Child);

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

/// A `redis-server` on `port` with `args`, once it answers `PING`.
pub(super) async fn start_redis_with(port: u16, args: &[&str]) -> Option<PrivateRedis> {
    start(port, args).await
}

async fn start_redis(port: u16) -> Option<PrivateRedis> {
    start(port, &[]).await
}

async fn start(port: u16, args: &[&str]) -> Option<PrivateRedis> {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = PrivateRedis(child);
    let url = format!("redis://127.0.0.1:{port}");
    for _ in 0..200 {
        if let Ok(mut c) = redis::Client::open(url.as_str()).and_then(|c| c.get_connection())
            && redis::cmd("PING").query::<String>(&mut c).is_ok()
        {
            return Some(server);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_lost_and_back_routes_on_local_numbers_meanwhile() {
    if redis_url("redis_lost_and_back_routes_on_local_numbers_meanwhile").is_none() {
        return;
    }
    let port = free_port();
    let Some(server) = start_redis(port).await else {
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED redis_lost_and_back_routes_on_local_numbers_meanwhile: no redis-server binary"
        );
        return;
    };
    let url = format!("redis://127.0.0.1:{port}");
    let cfg = config(&url, "outage", 20);
    let (a, sync_a) = replica(&cfg);
    let (b, sync_b) = replica(&cfg);
    begin_east(&a, 2);
    begin_east(&b, 1);
    assert_eq!(
        until(&b, Duration::from_secs(2), |s| s.in_flight == 3)
            .await
            .in_flight,
        3
    );
    drop(server);
    // Unreachable: b forgets a's numbers and goes on its own one.
    assert_eq!(
        until(&b, Duration::from_secs(3), |s| s.in_flight == 1)
            .await
            .in_flight,
        1
    );
    let Some(_server) = start_redis(port).await else {
        panic!("redis-server restarts on its port");
    };
    // Back (reconnecting within the 5 s back-off cap): a's in flight is shared again.
    assert_eq!(
        until(&b, Duration::from_secs(8), |s| s.in_flight == 3)
            .await
            .in_flight,
        3
    );
    assert_eq!(
        until(&a, Duration::from_secs(8), |s| s.in_flight == 3)
            .await
            .in_flight,
        3
    );
    sync_a.stop().await;
    sync_b.stop().await;
}

#[test]
fn a_deadline_more_than_a_day_ahead_is_ignored() {
    let now = Instant::now();
    let fleet = tollgate_router::FleetState::new(
        &["east".to_owned()],
        tollgate_router::WallClock::at(now, 1_000_000),
    );
    assert!(super::plausible(&fleet, now, 1_000_000 + 86_400_000));
    assert!(!super::plausible(&fleet, now, 1_000_000 + 86_400_001));
    assert!(!super::plausible(&fleet, now, u64::MAX));
}
