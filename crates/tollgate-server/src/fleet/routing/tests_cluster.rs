//! The sync on a Redis Cluster of three primaries the test starts on free loopback ports (and
//! stops by PID; run when `TOLLGATE_TEST_REDIS_URL` is set, as the other Redis tests, skipped
//! without `redis-server`): the function library loads on every primary, the sync runs on the
//! primary of the fleet's one slot, and a cooldown published through one node reaches a
//! replica subscribed through another.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tollgate_router::{CooldownRule, CooldownTrigger, RouterState};

use super::tests::{
    PrivateRedis, begin_east, config_with, redis_url, replica, start_redis_with, until,
};

/// A port whose cluster bus port (+10 000) is free too.
fn free_cluster_port(taken: &[u16]) -> u16 {
    loop {
        let p = 20_000 + rand_port() % 20_000;
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if !taken.contains(&p) && free(p) && free(p + 10_000) {
            return p;
        }
    }
}

fn rand_port() -> u16 {
    (uuid::Uuid::new_v4().as_u128() % u128::from(u16::MAX)) as u16
}

/// Three primaries sharing every slot, once `cluster_state:ok`; their ports.
async fn cluster(dir: &std::path::Path) -> Option<(Vec<PrivateRedis>, Vec<u16>)> {
    let (mut nodes, mut ports) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let port = free_cluster_port(&ports);
        ports.push(port);
        let conf = dir.join(format!("nodes-{port}.conf"));
        let conf = conf.to_str().unwrap_or_default();
        let dir = dir.to_str().unwrap_or_default();
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            conf,
            "--dir",
            dir,
        ];
        nodes.push(start_redis_with(port, &args).await?);
    }
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let created = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    assert!(created.success(), "redis-cli --cluster create failed");
    for _ in 0..200 {
        let ok = ports.iter().all(|p| {
            redis::Client::open(format!("redis://127.0.0.1:{p}"))
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut c))
                .is_ok_and(|info| info.contains("cluster_state:ok"))
        });
        if ok {
            return Some((nodes, ports));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the cluster did not reach cluster_state:ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_routing_state_on_a_cluster() {
    if redis_url("replicas_share_routing_state_on_a_cluster").is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!(
        "tg-route-cluster-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let Some((nodes, ports)) = cluster(&dir).await else {
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED replicas_share_routing_state_on_a_cluster: no redis-server binary"
        );
        return;
    };
    // Replica a knows the first node, b the last: each subscribes through its own.
    let nodes_json = |p: u16| format!("[{{\"host\": \"127.0.0.1\", \"port\": {p}}}]");
    let (a, sync_a) = replica(&config_with(
        "REDIS_CLUSTER_NODES",
        &nodes_json(ports[0]),
        "cl",
        20,
    ));
    let (b, sync_b) = replica(&config_with(
        "REDIS_CLUSTER_NODES",
        &nodes_json(ports[2]),
        "cl",
        20,
    ));
    begin_east(&a, 2);
    assert_eq!(
        until(&b, Duration::from_secs(3), |s| s.in_flight == 2)
            .await
            .in_flight,
        2
    );
    // A listener on the middle node, which neither replica talks to.
    let listener = redis::Client::open(format!("redis://127.0.0.1:{}", ports[1])).unwrap();
    let mut sub = listener.get_async_pubsub().await.unwrap();
    sub.subscribe("cl:cooldowns").await.unwrap();
    let mut messages = sub.into_on_message();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rule = CooldownRule {
        trigger: CooldownTrigger::Immediately,
        cooldown_time: Duration::from_secs(30),
        disabled: false,
    };
    {
        let router = a.load();
        let fleet = router.state().fleet().unwrap();
        fleet.record_failure(fleet.slot_of("east").unwrap(), Instant::now(), &rule);
    }
    let s = until(&b, Duration::from_secs(2), |s| s.cooldown_until.is_some()).await;
    assert!(s.cooldown_until.is_some(), "the cooldown reached b");
    let msg = tokio::time::timeout(
        Duration::from_secs(2),
        futures_util::StreamExt::next(&mut messages),
    )
    .await
    .unwrap()
    .unwrap();
    let text = String::from_utf8_lossy(msg.get_payload_bytes()).into_owned();
    assert!(
        text.ends_with(" east"),
        "published through the cluster: {text}"
    );
    sync_a.stop().await;
    sync_b.stop().await;
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}
