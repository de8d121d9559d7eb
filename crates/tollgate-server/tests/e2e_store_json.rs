//! End-to-end: what the management API answers about an entity is the same before and after a
//! restart, on SQLite and on Postgres with LiteLLM's tables. A team, an internal user, an end
//! user (customer) and a virtual key are created through the API; `/key/info`, `/team/info`,
//! `/user/info`, `/customer/info` and `/key/list` are read, the gateway is stopped (SIGTERM) and
//! started again on the same database, and the same reads must give the same JSON, field for
//! field: JSON columns LiteLLM defaults to `{}` (`metadata`, `aliases`, `config`,
//! `permissions`, `model_spend`, `model_max_budget`) stay `{}`, never `null`, and times keep
//! their milliseconds.
//!
//! On Postgres the second start must also be quiet: the schema is already there, so no
//! `already exists` notice reaches the log.

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

fn deps() -> Vec<Dep<'static>> {
    vec![flat_dep("flat", 0.001)]
}

/// The entities this test creates, and the reads that show them.
struct Reads {
    key: String,
    paths: Vec<String>,
}

/// Creates a team (with an alias, no metadata), an internal user, a customer and a key of that
/// team and user; one chat call gives the key some spend.
async fn create(gw: &GovGateway) -> Reads {
    let team = new_team(gw, json!({"team_alias": "persisted", "max_budget": 10.0})).await;
    let r = post_as(
        gw,
        MASTER,
        "/user/new",
        &json!({"user_id": "u-persist", "max_budget": 5.0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = post_as(
        gw,
        MASTER,
        "/customer/new",
        &json!({"user_id": "c-persist", "max_budget": 2.0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (key, _) = generate_key(
        gw,
        json!({"team_id": team, "user_id": "u-persist", "key_alias": "kept", "max_budget": 1.0}),
    )
    .await;
    let r = chat(gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    key_spend_eventually(gw, &key, 0.008).await;
    Reads {
        paths: vec![
            format!("/key/info?key={key}"),
            format!("/team/info?team_id={team}"),
            "/user/info?user_id=u-persist".into(),
            "/customer/info?end_user_id=c-persist".into(),
            "/key/list?return_full_object=true".into(),
        ],
        key,
    }
}

async fn read_all(gw: &GovGateway, reads: &Reads) -> Vec<Value> {
    let mut out = Vec::new();
    for p in &reads.paths {
        let r = get_as(gw, MASTER, p).await;
        assert_eq!(r.status, 200, "{p}: {}", r.text);
        out.push(r.body);
    }
    out
}

/// Every path where `a` and `b` differ, with both values.
fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let vb = y.get(k).unwrap_or(&Value::Null);
                differences(&format!("{path}.{k}"), va, vb, out);
            }
            for (k, vb) in y {
                if !x.contains_key(k) {
                    differences(&format!("{path}.{k}"), &Value::Null, vb, out);
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} then {b}")),
        _ => {}
    }
}

/// The JSON-object columns LiteLLM defaults to `{}` are objects in `/key/info`.
fn assert_key_objects(info: &Value) {
    for field in [
        "metadata",
        "aliases",
        "config",
        "permissions",
        "model_max_budget",
    ] {
        assert!(
            info["info"][field].is_object(),
            "/key/info {field} is not an object: {info}"
        );
    }
}

async fn same_after_restart(db_url: &str) {
    let m = mock().await;
    let cfg = config(&m.base_url(), &deps(), "", Some(db_url));
    let mut gw = GovGateway::start(&cfg);
    let reads = create(&gw).await;
    let before = read_all(&gw, &reads).await;
    assert_key_objects(&before[0]);
    assert!(gw.stop().await, "graceful shutdown");
    let mut gw = GovGateway::start(&cfg);
    let after = read_all(&gw, &reads).await;
    let mut diffs = Vec::new();
    for (p, (a, b)) in reads.paths.iter().zip(before.iter().zip(&after)) {
        differences(p, a, b, &mut diffs);
    }
    assert!(
        diffs.is_empty(),
        "the API answers differently after a restart:\n{}",
        diffs.join("\n")
    );
    // the restarted gateway still serves the key and counts on from its stored spend
    let r = chat(&gw, &reads.key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let spend = r.header_f64("x-litellm-key-spend");
    assert!(same_dollars(spend, 0.016), "x-litellm-key-spend {spend}");
    let log = gw.log();
    assert!(gw.stop().await, "graceful shutdown");
    assert!(
        !log.contains("already exists"),
        "a second start on the same database logs schema notices:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_reads_are_the_same_after_a_restart_sqlite() {
    let dir = TempDir::new("store-json");
    let url = format!("sqlite://{}", dir.0.join("t.db").display());
    same_after_restart(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_reads_are_the_same_after_a_restart_postgres() {
    let Some(db) = PgDb::create("store_json").await else {
        return;
    };
    same_after_restart(&db.url).await;
}
