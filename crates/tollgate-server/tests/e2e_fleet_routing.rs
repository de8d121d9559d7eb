//! Routing state across replicas, end to end: three gateway processes on one config and one
//! Redis (`TOLLGATE_TEST_REDIS_URL`, each test under its own `TOLLGATE_REDIS_KEY_PREFIX`)
//! share cooldowns and usage-based routing's numbers; the cooldown scenario runs again on a
//! three-primary Redis Cluster the test starts (needs `redis-server` and `redis-cli`).
//! Deployments are told apart by the mock's `/d/{deployment}` prefix; what each replica did is
//! read from the mock's calls.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;
#[path = "common/redis.rs"]
mod redis_support;

use std::time::{Duration, Instant};

use gov::{GovGateway, MASTER, UPSTREAM_KEY, chat, chat_body, mock, script_default};
use serde_json::json;
use tollgate_mock::MockHandle;

const REDIS_VAR: (&str, &str) = ("TOLLGATE_TEST_REDIS_URL", "redis://127.0.0.1:6379");

/// The Redis URL, or `None` after reporting the skip.
fn redis_url(what: &str) -> Option<String> {
    let url = std::env::var(REDIS_VAR.0).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        gov::skip::skipped(what, REDIS_VAR.0, REDIS_VAR.1);
    }
    url
}

/// A key prefix no other test (or run) uses.
fn prefix(name: &str) -> String {
    format!("tg-test-route-{name}-{}", uuid::Uuid::new_v4().simple())
}

/// `REDIS_URL` as an `environment_variables` line.
fn url_env(redis: &str) -> String {
    format!("  REDIS_URL: \"{redis}\"\n")
}

/// Two deployments, east and west, in group `pair`, with `model_info.id` = their names; the
/// fleet's Redis (`redis_env`: its `environment_variables` lines) and key prefix.
fn config(mock: &str, redis_env: &str, prefix: &str, router: &str) -> String {
    let dep = |name: &str| {
        format!(
            "  - model_name: pair\n    litellm_params:\n      model: openai/mock-gpt\n      api_base: {mock}/d/{name}/v1\n      api_key: {UPSTREAM_KEY}\n    model_info:\n      id: {name}\n"
        )
    };
    format!(
        "model_list:\n{}{}router_settings:\n{router}general_settings:\n  master_key: {MASTER}\nenvironment_variables:\n{redis_env}  TOLLGATE_REDIS_KEY_PREFIX: \"{prefix}\"\n",
        dep("east"),
        dep("west")
    )
}

fn replicas(config: &str) -> [GovGateway; 3] {
    [
        GovGateway::start(config),
        GovGateway::start(config),
        GovGateway::start(config),
    ]
}

/// The deployments the mock saw called since the last drain, in order.
fn calls(m: &MockHandle) -> Vec<String> {
    m.drain_observations()
        .into_iter()
        .filter_map(|o| o.deployment)
        .collect()
}

/// Stops the replicas (their last sync included), then deletes every key of the test's prefix
/// on `redis` (a private cluster goes with its processes: `None`).
async fn clean(gws: &mut [GovGateway; 3], redis: Option<&str>, prefix: &str) {
    for gw in gws.iter_mut() {
        gw.stop().await;
    }
    let Some(redis) = redis else {
        return;
    };
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_cooled_down_by_one_replica_is_skipped_by_all() {
    let Some(redis) = redis_url("a_deployment_cooled_down_by_one_replica_is_skipped_by_all") else {
        return;
    };
    cooled_down_everywhere(&url_env(&redis), Some(&redis)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_three_primary_cluster_a_deployment_cooled_down_by_one_replica_is_skipped_by_all() {
    let what = "on_a_three_primary_cluster_a_deployment_cooled_down_is_skipped_by_all";
    if redis_url(what).is_none() {
        return;
    }
    let Some(cluster) = redis_support::private_cluster(what).await else {
        return;
    };
    let env = format!("  REDIS_CLUSTER_NODES: '{}'\n", cluster.nodes_json());
    cooled_down_everywhere(&env, None).await;
}

/// Replica 1 sees east answer 429 and cools it down for 3 s; replicas 2 and 3 then send 30
/// requests, all to west; after the cooldown every replica calls east again.
async fn cooled_down_everywhere(redis_env: &str, redis: Option<&str>) {
    let prefix = prefix("cool");
    let m = mock().await;
    script_default(&m, "east", json!({"status": 429}));
    // No allowed_fails: a 429 cools its deployment at once (LiteLLM's default rule).
    let cfg = config(
        &m.base_url(),
        redis_env,
        &prefix,
        "  num_retries: 0\n  cooldown_time: 3\n",
    );
    let mut gws = replicas(&cfg);
    let body = chat_body("pair", "hi", 5);

    // Through replica 1 until it calls east once (simple-shuffle: a coin per request).
    let mut cooled_at = None;
    for _ in 0..50 {
        let r = chat(&gws[0], MASTER, &body).await;
        if calls(&m).iter().any(|d| d == "east") {
            assert_eq!(r.status, 429, "{}", r.text);
            cooled_at = Some(Instant::now());
            break;
        }
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let cooled_at = cooled_at.unwrap();
    // Published at once; the others skip east from its arrival on.
    tokio::time::sleep(Duration::from_millis(150)).await;
    for i in 0..30 {
        let r = chat(&gws[1 + i % 2], MASTER, &body).await;
        assert_eq!(r.status, 200, "request {i}: {}", r.text);
    }
    assert!(
        cooled_at.elapsed() < Duration::from_millis(2_500),
        "the requests ran within the 3 s cooldown"
    );
    assert_eq!(
        calls(&m),
        vec!["west".to_owned(); 30],
        "replicas 2 and 3 never called east while replica 1 had it cooling down"
    );

    // After the cooldown east answers again and is used again, by every replica.
    script_default(&m, "east", json!({}));
    tokio::time::sleep(Duration::from_millis(3_100).saturating_sub(cooled_at.elapsed())).await;
    for gw in &gws {
        let mut east = 0;
        for _ in 0..40 {
            assert_eq!(chat(gw, MASTER, &body).await.status, 200);
            east += calls(&m).iter().filter(|d| *d == "east").count();
            if east > 0 {
                break;
            }
        }
        assert_eq!(east, 1, "east called again after its cooldown");
    }
    clean(&mut gws, redis, &prefix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_based_routing_sees_the_fleets_usage() {
    let Some(redis) = redis_url("usage_based_routing_sees_the_fleets_usage") else {
        return;
    };
    let prefix = prefix("usage");
    let m = mock().await;
    let cfg = config(
        &m.base_url(),
        &url_env(&redis),
        &prefix,
        "  num_retries: 0\n  disable_cooldowns: true\n  routing_strategy: usage-based-routing-v2\n",
    );
    let mut gws = replicas(&cfg);

    // Usage counts per Unix minute: start well inside one, so the scenario (~1 s) does not
    // straddle two.
    let into_minute = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 60_000;
    if into_minute > 55_000 {
        tokio::time::sleep(Duration::from_millis(60_200 - into_minute as u64)).await;
    }
    // One large request through replica 1: the mock reports ~10,000 prompt tokens for its
    // 40 KB prompt, on whichever deployment replica 1 chose.
    let large = chat(&gws[0], MASTER, &chat_body("pair", &"A ".repeat(20_000), 5)).await;
    assert_eq!(large.status, 200, "{}", large.text);
    let prompt = large.body["usage"]["prompt_tokens"].as_u64().unwrap();
    assert!(prompt > 5_000, "{}", large.text);
    let first = calls(&m);
    assert_eq!(first.len(), 1);
    let loaded = first[0].clone();
    let other = if loaded == "east" { "west" } else { "east" };

    // After a sync, replicas 2 and 3 see that minute's tokens: every small request (a few
    // tokens each, far below 10,000 in total) goes to the other deployment. Alone, each
    // would have split its own ten between the two.
    tokio::time::sleep(Duration::from_millis(400)).await;
    for i in 0..20 {
        let r = chat(&gws[1 + i % 2], MASTER, &chat_body("pair", "hi", 5)).await;
        assert_eq!(r.status, 200, "request {i}: {}", r.text);
    }
    let seen = calls(&m);
    assert_eq!(
        (
            seen.iter().filter(|d| *d == &loaded).count(),
            seen.iter().filter(|d| *d == other).count()
        ),
        (0, 20),
        "{seen:?}"
    );
    clean(&mut gws, Some(&redis), &prefix).await;
}
