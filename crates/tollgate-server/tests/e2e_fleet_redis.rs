//! End-to-end: governance counters in Redis, shared by a fleet of real `tollgate` processes.
//!
//! - One request with key, team and end-user budgets, key and team TPM/RPM limits and
//!   `usage-based-routing-v2` costs **exactly one** counter command on Redis before its
//!   upstream call (the reservation), and its settlement after (a private `redis-server` under
//!   `MONITOR`).
//! - Three replicas on one Redis and one Postgres: an `rpm_limit` holds across them exactly,
//!   and 60 concurrent requests against a budget that fits 10 admit at most 10 (the overshoot
//!   bound of `tollgate_governance::admission`: `final spend < max_budget + one estimate`
//!   when estimates bound their costs, as they do here); the spend logs, the key's row and
//!   `/key/info` on every replica then agree.
//! - Redis gone: a request is refused with 503 in its dialect, nothing sent upstream; a
//!   Redis that cannot be reached at start stops the start with an error naming it, its
//!   password masked.
//!
//! Mock token rule (crates/tollgate-mock/README.md): `"hello"` with `max_tokens: 8` answers 8
//! completion tokens. The `flat` deployment prices input at 0, so every estimate equals the
//! actual cost: 8 × [`Y`] = [`C1`].
//!
//! Needs `TOLLGATE_TEST_REDIS_URL` (the fleet tests also `TOLLGATE_TEST_DATABASE_URL`; the
//! round-trip and outage tests a `redis-server` binary); each skips and says so otherwise.
//! Every gateway runs under a key prefix unique to its test (`TOLLGATE_REDIS_KEY_PREFIX`),
//! deleted at the end.
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;
#[path = "common/redis.rs"]
mod redis_support;

use std::time::Duration;

use gov::*;
use redis_support::*;
use serde_json::{Value, json};

/// Output price of `flat`, USD per token (input is free).
const Y: f64 = 0.002;
/// Cost (and estimate) of one `"hello"` / `max_tokens: 8` call on `flat`.
const C1: f64 = 0.016;

fn flat() -> Dep<'static> {
    Dep {
        group: "flat",
        deployment: "flat",
        upstream: "mock-gpt",
        id: "dep-flat",
        input_cost: 0.0,
        output_cost: Y,
    }
}

/// A governed config on the mock whose counters live in the Redis at `redis_url` under
/// `prefix`, with `router_extra` and `litellm_extra` (YAML lines, indented two spaces).
fn fleet_config(
    mock_base: &str,
    redis_url: &str,
    prefix: &str,
    db_url: Option<&str>,
    router_extra: &str,
    litellm_extra: &str,
) -> String {
    let env = format!("  REDIS_URL: \"{redis_url}\"\n");
    config_with_env(mock_base, &env, prefix, db_url, router_extra, litellm_extra)
}

/// [`fleet_config`] with the Redis named by `redis_env` (`environment_variables` lines).
fn config_with_env(
    mock_base: &str,
    redis_env: &str,
    prefix: &str,
    db_url: Option<&str>,
    router_extra: &str,
    litellm_extra: &str,
) -> String {
    let mut c = config(mock_base, &[flat()], router_extra, db_url);
    c.push_str("environment_variables:\n");
    c.push_str(redis_env);
    c.push_str(&format!("  TOLLGATE_REDIS_KEY_PREFIX: \"{prefix}\"\n"));
    if !litellm_extra.is_empty() {
        c.push_str("litellm_settings:\n");
        c.push_str(litellm_extra);
    }
    c
}

fn is_counter_fcall(s: &Seen, function: &str) -> bool {
    s.command == "FCALL" && s.args.first().map(String::as_str) == Some(function)
}

/// Not a request's round trip: a command a function ran inside Redis (part of its caller's
/// call), the write-behind's own drain (each replica drains changed scopes every second), the
/// routing-state sync (one call per replica every 100 ms, whatever the traffic), or the
/// identity feed's subscription keep-alive.
fn is_background(s: &Seen) -> bool {
    !s.is_from_client()
        || is_counter_fcall(s, "tollgate_v2_drain")
        || (s.command == "FCALL"
            && s.args
                .first()
                .is_some_and(|f| f.starts_with("tollgate_route_v1_")))
        || matches!(s.command.as_str(), "PING" | "SUBSCRIBE" | "PUBLISH")
}

#[tokio::test]
async fn one_redis_round_trip_before_the_upstream_call_and_the_settlement_after() {
    let what = "one_redis_round_trip_before_the_upstream_call";
    let Some(_shared) = redis_url(what) else {
        return;
    };
    let Some(redis) = private_redis(what).await else {
        return;
    };
    let m = mock().await;
    let prefix = unique_prefix("rt");
    let cfg = fleet_config(
        &m.base_url(),
        &redis.url,
        &prefix,
        None,
        "  routing_strategy: usage-based-routing-v2\n",
        "  max_end_user_budget: 5.0\n",
    );
    let gw = GovGateway::start(&cfg);
    assert!(
        gw.log()
            .contains(&format!("redis 127.0.0.1:{}", redis.port))
            || gw
                .log()
                .contains(&format!("redis://127.0.0.1:{}", redis.port)),
        "the start-up log says where counters live:\n{}",
        gw.log()
    );
    let team = new_team(
        &gw,
        json!({"max_budget": 10.0, "tpm_limit": 100000, "rpm_limit": 1000}),
    )
    .await;
    let (key, _) = generate_key(
        &gw,
        json!({"team_id": team, "max_budget": 5.0, "tpm_limit": 50000, "rpm_limit": 500}),
    )
    .await;
    script_default(&m, "flat", json!({"delay_ms": 1500}));
    let monitor = Monitor::start(redis.port);
    // let the management writes' own commands (and a first drain) pass before measuring
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent_ms = now_ms();
    let body = json!({"model": "flat", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8, "user": "cust-rt"});
    let gw_base = gw.base.clone();
    let key2 = key.clone();
    let call = tokio::spawn(async move {
        read(
            client()
                .post(format!("{gw_base}/v1/chat/completions"))
                .bearer_auth(&key2)
                .json(&body)
                .send()
                .await
                .expect("send"),
        )
        .await
    });
    let obs = poll(|| async { upstream_calls(&m, "flat") }, |v| !v.is_empty()).await;
    assert_eq!(obs.len(), 1, "the upstream call arrived");
    let upstream_at = obs[0].received_at;
    // commands reach MONITOR's stream a moment after they run: read once they are in
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before: Vec<Seen> = monitor
        .seen()
        .into_iter()
        .filter(|s| s.at_ms >= sent_ms && s.at_ms <= upstream_at && !is_background(s))
        .collect();
    assert_eq!(
        before.len(),
        1,
        "exactly one counter command before the upstream call: {before:?}"
    );
    assert!(
        is_counter_fcall(&before[0], "tollgate_v2_reserve"),
        "{before:?}"
    );
    // the one reservation covers key, team, end user and global: every scope in one call
    let reserve = before[0].args.join(" ");
    for scope in ["api_key", "team", "end_user", "cust-rt", &team] {
        assert!(
            reserve.contains(scope),
            "{scope} not in the reservation: {reserve}"
        );
    }
    let resp = call.await.expect("request task");
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert!(same_dollars(resp.header_f64("x-litellm-response-cost"), C1));
    // the key's spend after: the spend at admission (the reservation reports it) plus this
    // call's cost, never a second read
    assert!(same_dollars(resp.header_f64("x-litellm-key-spend"), C1));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after: Vec<Seen> = monitor
        .seen()
        .into_iter()
        .filter(|s| s.at_ms > upstream_at && !is_background(s))
        .collect();
    let settles: Vec<&Seen> = after
        .iter()
        .filter(|s| is_counter_fcall(s, "tollgate_v2_batch"))
        .collect();
    assert_eq!(
        settles.len(),
        1,
        "one settlement batch after the call: {after:?}"
    );
    assert!(
        settles[0].args.join(" ").contains(&key_hash_of(&key)),
        "the batch settles this request's scopes: {after:?}"
    );
    assert_eq!(
        after.len(),
        1,
        "nothing but the settlement after the call: {after:?}"
    );
    let info = key_info(&gw, &key).await;
    assert!(
        same_dollars(info["spend"].as_f64().unwrap_or(-1.0), C1),
        "{info}"
    );
    delete_prefix(&redis.url, &prefix).await;
}

fn key_hash_of(key: &str) -> String {
    gov::sha256_hex(key)
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

#[tokio::test]
async fn three_replicas_share_an_rpm_limit_and_a_budget_exactly() {
    let what = "three_replicas_share_an_rpm_limit_and_a_budget_exactly";
    let Some(url) = redis_url(what) else {
        return;
    };
    let Some(db) = PgDb::create(what).await else {
        return;
    };
    let prefix = unique_prefix("fleet");
    let env = format!("  REDIS_URL: \"{url}\"\n");
    fleet_holds_rpm_and_budget(&db, &env, &prefix).await;
    delete_prefix(&url, &prefix).await;
}

#[tokio::test]
async fn three_replicas_on_a_three_primary_cluster_share_an_rpm_limit_and_a_budget_exactly() {
    let what = "three_replicas_on_a_three_primary_cluster_share_limits";
    let Some(_shared) = redis_url(what) else {
        return;
    };
    let Some(db) = PgDb::create(what).await else {
        return;
    };
    let Some(cluster) = private_cluster(what).await else {
        return;
    };
    let env = format!("  REDIS_CLUSTER_NODES: '{}'\n", cluster.nodes_json());
    fleet_holds_rpm_and_budget(&db, &env, &unique_prefix("cluster")).await;
}

/// Three replicas on the Redis of `redis_env` and on `db`: `rpm_limit: 30` under 45
/// round-robin requests admits exactly 30; 60 concurrent requests against a budget of 10
/// admit exactly 10 (and at most 10 by the overshoot bound); spend logs, the key's row and
/// `/key/info` on every replica then agree.
async fn fleet_holds_rpm_and_budget(db: &PgDb, redis_env: &str, prefix: &str) {
    let m = mock().await;
    let cfg = config_with_env(&m.base_url(), redis_env, prefix, Some(&db.url), "", "");
    // keys first (on a lone replica), so that every replica loads them at start
    let one = GovGateway::start(&cfg);
    let (rpm_key, _) = generate_key(&one, json!({"rpm_limit": 30})).await;
    let (budget_key, budget_hash) = generate_key(&one, json!({"max_budget": 10.0 * C1})).await;
    let fleet = [one, GovGateway::start(&cfg), GovGateway::start(&cfg)];
    let replicas = &fleet[..];

    // RPM 30, 45 requests spread round-robin over three replicas, inside one 60 s window
    let mut admitted = 0;
    let mut limited = 0;
    for i in 0..45 {
        let r = chat(&replicas[i % 3], &rpm_key, &chat_body("flat", "hello", 8)).await;
        match r.status {
            200 => admitted += 1,
            429 => {
                limited += 1;
                assert_eq!(r.error_type(), "rate_limit_error", "{}", r.text);
            }
            s => panic!("unexpected status {s}: {}", r.text),
        }
    }
    assert_eq!(
        (admitted, limited),
        (30, 15),
        "rpm_limit 30 across three replicas"
    );

    // 60 concurrent requests against a budget of exactly 10 requests
    script_default(&m, "flat", json!({"delay_ms": 200}));
    let calls: Vec<_> = (0..60)
        .map(|i| {
            let base = replicas[i % 3].base.clone();
            let key = budget_key.clone();
            tokio::spawn(async move {
                let r = client()
                    .post(format!("{base}/v1/chat/completions"))
                    .bearer_auth(&key)
                    .json(&chat_body("flat", "hello", 8))
                    .send()
                    .await
                    .expect("send");
                read(r).await
            })
        })
        .collect();
    let mut ok = 0;
    let mut over = 0;
    for c in calls {
        let r = c.await.expect("task");
        match r.status {
            200 => ok += 1,
            422 => {
                over += 1;
                assert_eq!(r.error_type(), "budget_exceeded", "{}", r.text);
            }
            s => panic!("unexpected status {s}: {}", r.text),
        }
    }
    // the bound: admitted × C1 < 10 × C1 + C1, so at most 10; all-or-nothing reservations
    // admit exactly as many as fit
    assert_eq!(
        (ok, over),
        (10, 50),
        "a budget of 10 requests across three replicas"
    );

    let rows = poll(
        || db.spend_rows(),
        |rows| rows.iter().filter(|(k, _)| *k == budget_hash).count() >= 10,
    )
    .await;
    let logged: Vec<f64> = rows
        .iter()
        .filter(|(k, _)| *k == budget_hash)
        .map(|(_, s)| *s)
        .collect();
    assert_eq!(logged.len(), 10, "one spend-log row per admitted request");
    let logged_sum: f64 = logged.iter().sum();
    assert!(same_dollars(logged_sum, 10.0 * C1), "{logged_sum}");
    for (i, gw) in replicas.iter().enumerate() {
        let s = key_spend(gw, &budget_key).await;
        assert!(
            same_dollars(s, logged_sum),
            "replica {} reports {s}, spend logs sum {logged_sum}",
            i + 1
        );
    }
    let row = poll(
        || db.token_rows(),
        |rows| {
            rows.iter()
                .any(|(t, s)| *t == budget_hash && same_dollars(*s, 10.0 * C1))
        },
    )
    .await;
    assert!(
        row.iter()
            .any(|(t, s)| *t == budget_hash && same_dollars(*s, logged_sum)),
        "the key's row holds the counters' spend: {row:?}"
    );

    // identities: a key made on replica 2 answers on 1 and 3 within a second; blocked
    // through replica 3, it is refused by 1 and 2 within a second
    let (late_key, _) = generate_key(&replicas[1], json!({})).await;
    for i in [0, 2] {
        let waited = within_a_second(&replicas[i], &late_key, 200).await;
        assert!(waited.is_some(), "replica {} never accepted the key", i + 1);
    }
    let r = post_as(
        &replicas[2],
        MASTER,
        "/key/block",
        &json!({"key": late_key}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    for i in [0, 1] {
        let waited = within_a_second(&replicas[i], &late_key, 401).await;
        assert!(
            waited.is_some(),
            "replica {} still serves a blocked key",
            i + 1
        );
    }
    drop(fleet);
}

/// Polls `gw` with `key` every 20 ms for at most 1 s until a chat answers `status`; the
/// time it took, `None` when it never did.
async fn within_a_second(gw: &GovGateway, key: &str, status: u16) -> Option<Duration> {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        if chat(gw, key, &chat_body("flat", "hello", 8)).await.status == status {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[tokio::test]
async fn redis_down_at_admission_refuses_with_503_in_the_client_dialect() {
    let what = "redis_down_at_admission_refuses_with_503";
    let Some(_shared) = redis_url(what) else {
        return;
    };
    let Some(redis) = private_redis(what).await else {
        return;
    };
    let m = mock().await;
    let prefix = unique_prefix("down");
    let cfg = fleet_config(&m.base_url(), &redis.url, &prefix, None, "", "");
    let gw = GovGateway::start(&cfg);
    let (key, _) = generate_key(&gw, json!({"max_budget": 1.0})).await;
    drop(redis);
    let r = chat(&gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.error_type(), "service_unavailable", "{}", r.text);
    let msg = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("budget and rate-limit store is unavailable"),
        "{msg}"
    );
    let a = post_as(
        &gw,
        &key,
        "/v1/messages",
        &json!({"model": "flat", "max_tokens": 8, "messages": [{"role": "user", "content": "hello"}]}),
    )
    .await;
    assert_eq!(a.status, 503, "{}", a.text);
    assert_eq!(a.body["type"], Value::from("error"), "{}", a.text);
    assert!(a.body["error"]["type"].is_string(), "{}", a.text);
    assert!(
        upstream_calls(&m, "flat").is_empty(),
        "nothing forwarded while the counters cannot answer"
    );
}

#[tokio::test]
async fn an_unreachable_redis_stops_the_start_naming_it_with_its_password_masked() {
    // a port nothing listens on: bind one, then free it
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let m = mock().await;
    let url = format!("redis://tg:CANARY-redis-pw@127.0.0.1:{port}/0");
    let cfg = fleet_config(&m.base_url(), &url, "tgtest-unreachable", None, "", "");
    let dir = TempDir::new("unreachable");
    let path = dir.0.join("config.yaml");
    std::fs::write(&path, cfg).expect("write config");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .arg("--config")
            .arg(&path)
            .args(["--port", "0", "--host", "127.0.0.1"])
            .env_remove("LITELLM_MASTER_KEY")
            .env_remove("DATABASE_URL")
            .output()
            .expect("run tollgate")
    })
    .await
    .expect("wait for tollgate");
    assert!(!out.status.success(), "started without its Redis");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("127.0.0.1:{port}")) && text.contains("REDIS_URL"),
        "the error names the target and its key:\n{text}"
    );
    assert!(text.contains("governance counters"), "{text}");
    assert!(!text.contains("CANARY"), "a password was printed:\n{text}");
    assert!(
        !text.contains("listening on"),
        "served without its counters:\n{text}"
    );
}

/// `TOLLGATE_REPLICAS=2` and no Redis (here `REDIS_URL` referenced but unset): the gateway
/// would count every budget alone, so it does not start, and says why.
#[tokio::test]
async fn a_replica_of_a_fleet_without_redis_does_not_start() {
    let m = mock().await;
    let mut cfg = config(
        &m.base_url(),
        &[flat()],
        "  redis_url: os.environ/TG_TEST_UNSET_REDIS\n",
        None,
    );
    cfg.push_str("environment_variables:\n  TOLLGATE_REPLICAS: \"2\"\n");
    let dir = TempDir::new("no-redis-fleet");
    let path = dir.0.join("config.yaml");
    std::fs::write(&path, cfg).expect("write config");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .arg("--config")
            .arg(&path)
            .args(["--port", "0", "--host", "127.0.0.1"])
            .env_remove("LITELLM_MASTER_KEY")
            .env_remove("DATABASE_URL")
            .env_remove("REDIS_URL")
            .env_remove("TG_TEST_UNSET_REDIS")
            .output()
            .expect("run tollgate")
    })
    .await
    .expect("wait for tollgate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "started alone as one of 2 replicas:\n{text}"
    );
    assert!(
        text.contains("TOLLGATE_REPLICAS=2") && text.contains("no Redis is configured"),
        "{text}"
    );
    assert!(!text.contains("listening on"), "{text}");
}
