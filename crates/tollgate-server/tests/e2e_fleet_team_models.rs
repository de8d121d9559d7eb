//! End-to-end: a team-scoped deployment added through one replica of a fleet (two real
//! `tollgate` processes on one fresh Postgres database and one Redis, this test under its own
//! `TOLLGATE_REDIS_KEY_PREFIX`) is callable by that team's key under its public name on the
//! other replica within 1 s of the `/model/new` answer, timed from then; another team's key
//! gets the unknown-model 404 there; deleted on the first replica, it is gone from the other
//! within 1 s too. The identity feed announces `/model/new` and `/model/delete`
//! (`e2e_fleet_identity.rs` for the pattern).
//!
//! Mock token rule (crates/tollgate-mock/README.md): `"hello"` with `max_tokens: 8` is 5
//! prompt + 8 completion tokens, so 5 × 0.001 + 8 × 0.002 = 0.021 USD here.
//!
//! Runs when both `TOLLGATE_TEST_DATABASE_URL` and `TOLLGATE_TEST_REDIS_URL` are set.
#[path = "common/governance.rs"]
mod gov;

use std::time::{Duration, Instant};

use gov::*;
use serde_json::json;

/// The bound a change must meet on the other replica.
const BOUND: Duration = Duration::from_secs(1);

/// Deletes every key under the test's prefix when dropped (declared before the gateways, so
/// it runs after they are killed).
struct Cleanup {
    url: String,
    prefix: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Ok(mut c) = redis::Client::open(self.url.as_str()).and_then(|c| c.get_connection())
        else {
            return;
        };
        for pattern in [format!("{{{}}}*", self.prefix), format!("{}*", self.prefix)] {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query(&mut c)
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&keys).query(&mut c);
            }
        }
    }
}

/// Sends `call` every 10 ms until its status is `want`, for at most `limit`; returns the last
/// response and the time until it had `want`.
async fn until_status<F, Fut>(limit: Duration, want: u16, mut call: F) -> (Resp, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Resp>,
{
    let t0 = Instant::now();
    loop {
        let r = call().await;
        if r.status == want || t0.elapsed() > limit {
            return (r, t0.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn team_model_added_on_one_replica_is_callable_on_another_within_a_second_postgres() {
    let Some(db) = PgDb::create("fleet_team_models").await else {
        return;
    };
    let Ok(redis) = std::env::var("TOLLGATE_TEST_REDIS_URL") else {
        skip::skipped(
            "fleet_team_models",
            "TOLLGATE_TEST_REDIS_URL",
            "redis://127.0.0.1:6379",
        );
        return;
    };
    let prefix = format!("tg-teammodels-{}", uuid::Uuid::new_v4().simple());
    let _clean = Cleanup {
        url: redis.clone(),
        prefix: prefix.clone(),
    };
    let m = mock().await;
    let mut cfg = config(
        &m.base_url(),
        &[flat_dep("shared", 0.001)],
        "",
        Some(&db.url),
    );
    cfg.push_str(&format!(
        "environment_variables:\n  REDIS_URL: \"{redis}\"\n  TOLLGATE_REDIS_KEY_PREFIX: \"{prefix}\"\n  TOLLGATE_IDENTITY_RECONCILE_SECONDS: \"0\"\n"
    ));
    let r1 = GovGateway::start(&cfg);
    let r2 = GovGateway::start(&cfg);

    let a = new_team(
        &r1,
        json!({"team_alias": "fa", "members_with_roles": [{"user_id": "fa-admin", "role": "admin"}]}),
    )
    .await;
    let b = new_team(&r1, json!({"team_alias": "fb"})).await;
    let (admin, _) = generate_key(&r1, json!({"team_id": a, "user_id": "fa-admin"})).await;
    let (member, _) = generate_key(&r1, json!({"team_id": a})).await;
    let (other, _) = generate_key(&r1, json!({"team_id": b})).await;
    let body = chat_body("fleet-team-gpt", "hello", 8);
    // both keys known on replica 2 before the model exists: the unknown-model 404
    for key in [&member, &other] {
        let r = chat(&r2, key, &body).await;
        assert_eq!(r.status, 404, "{}", r.text);
    }

    let added = post_as(
        &r1,
        &admin,
        "/model/new",
        &json!({
            "model_name": "fleet-team-gpt",
            "litellm_params": {"model": "openai/fleet-upstream",
                "api_base": format!("{}/d/fleetteam/v1", m.base_url()), "api_key": UPSTREAM_KEY},
            "model_info": {"team_id": a, "input_cost_per_token": 0.001,
                "output_cost_per_token": 0.002},
        }),
    )
    .await;
    assert_eq!(added.status, 200, "{}", added.text);
    let id = added.body["model_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let internal = added.body["model_name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    let (r, took) = until_status(BOUND * 2, 200, || chat(&r2, &member, &body)).await;
    assert_eq!(r.status, 200, "after {took:?}: {}", r.text);
    assert!(took < BOUND, "team model on replica 2 took {took:?}");
    assert!(same_dollars(r.header_f64("x-litellm-response-cost"), 0.021));
    assert_eq!(r.header("x-litellm-model-group"), internal);
    let seen = upstream_calls(&m, "fleetteam");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].model.as_deref(), Some("fleet-upstream"));
    for name in ["fleet-team-gpt", internal.as_str()] {
        let r = chat(&r2, &other, &chat_body(name, "hello", 8)).await;
        assert_eq!(r.status, 404, "{name}: {}", r.text);
        assert_eq!(
            r.body,
            json!({"error": {
                "message": format!("The model `{name}` does not exist or you do not have access to it. Models available: shared."),
                "type": "invalid_request_error", "param": "model", "code": "model_not_found"}})
        );
    }
    let listed = get_as(&r2, &member, "/v1/models").await;
    let ids: Vec<&str> = listed.body["data"]
        .as_array()
        .map(|d| d.iter().filter_map(|m| m["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, vec!["shared", "fleet-team-gpt"], "{}", listed.text);

    let del = post_as(&r1, &admin, "/model/delete", &json!({"id": id})).await;
    assert_eq!(del.status, 200, "{}", del.text);
    let (r, took) = until_status(BOUND * 2, 404, || chat(&r2, &member, &body)).await;
    assert_eq!(r.status, 404, "after {took:?}: {}", r.text);
    assert!(took < BOUND, "deletion on replica 2 took {took:?}");
    // calls that raced the deletion reached the deployment; none does once it is gone
    let before = upstream_calls(&m, "fleetteam").len();
    let r = chat(&r2, &member, &body).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(upstream_calls(&m, "fleetteam").len(), before);
}
