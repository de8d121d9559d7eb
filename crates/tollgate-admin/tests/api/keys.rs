//! `/key/*`: generate → info round trip, update in force, block/unblock, delete, regenerate,
//! reset_spend, list.

use chrono::DateTime;
use http::StatusCode;
use serde_json::{Value, json};
use tollgate_governance::admission::ScopeKey;
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::{KeyError, RequestFacts};
use tollgate_governance::store::hash_key;

use crate::common::{H, without};

/// sha256("sk-1234"), LiteLLM's documented example key.
const SK_1234_HASH: &str = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b";

#[tokio::test]
async fn generate_then_info_round_trip() {
    let h = H::new().await;
    let (s, g) = h
        .post(
            "/key/generate",
            json!({
                "key": "sk-1234", "key_alias": "ci", "models": ["mock-gpt"], "max_budget": 1.5,
                "tpm_limit": 1000, "rpm_limit": 10, "metadata": {"owner": "qa"},
                "model_rpm_limit": {"mock-gpt": 5}, "tags": ["prod"]
            }),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{g}");
    assert_eq!(g["key"], "sk-1234");
    assert_eq!(g["token_id"], SK_1234_HASH);
    assert_eq!(g["key_name"], "sk-...1234");
    assert_eq!(g["expires"], Value::Null);
    assert_eq!(g["duration"], Value::Null);
    assert_eq!(g["created_by"], "litellm-proxy-master-key");
    assert_eq!(g["litellm_budget_table"], Value::Null);
    assert!(g.get("token").is_none(), "{g}");
    assert!(g["created_at"].is_string());

    let (s, info) = h.get(&format!("/key/info?key={SK_1234_HASH}")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(info["key"], SK_1234_HASH);
    assert_eq!(
        without(&info["info"], &["created_at", "updated_at"]),
        json!({
            "key_name": "sk-...1234", "key_alias": "ci", "spend": 0.0, "max_budget": 1.5,
            "budget_duration": null, "budget_reset_at": null, "expires": null,
            "models": ["mock-gpt"], "aliases": {}, "config": {}, "user_id": null,
            "team_id": null, "organization_id": null, "budget_id": null, "permissions": {},
            "max_parallel_requests": null, "tpm_limit": 1000, "rpm_limit": 10,
            "model_max_budget": {}, "model_spend": {},
            "metadata": {"owner": "qa", "model_rpm_limit": {"mock-gpt": 5}, "tags": ["prod"]},
            "blocked": null, "key_type": null,
            "created_by": "litellm-proxy-master-key", "updated_by": "litellm-proxy-master-key",
            "soft_budget": null, "litellm_budget_table": null,
            "model_rpm_limit": {"mock-gpt": 5}, "model_tpm_limit": null, "tags": ["prod"]
        })
    );
    // the same through the plaintext key, and the store holds only the hash and masked name
    let (_, by_key) = h.get("/key/info?key=sk-1234").await;
    assert_eq!(by_key, info);
    let stored = h.gov.store().load().await.unwrap();
    assert_eq!(stored.keys.len(), 1);
    assert_eq!(stored.keys[0].token, SK_1234_HASH);
    assert_eq!(stored.keys[0].key_name.as_deref(), Some("sk-...1234"));
}

#[tokio::test]
async fn duration_sets_expiry_and_soft_budget_makes_a_tier() {
    let h = H::new().await;
    let (_, g) = h
        .post(
            "/key/generate",
            json!({"duration": "1h", "soft_budget": 4.0}),
        )
        .await;
    let created = DateTime::parse_from_rfc3339(g["created_at"].as_str().unwrap()).unwrap();
    let expires = DateTime::parse_from_rfc3339(g["expires"].as_str().unwrap()).unwrap();
    assert_eq!((expires - created).num_seconds(), 3600);
    assert_eq!(g["duration"], "1h");
    assert!(g["key"].as_str().unwrap().starts_with("sk-"));
    assert_eq!(g["key"].as_str().unwrap().len(), 25);
    assert_eq!(g["token_id"], hash_key(g["key"].as_str().unwrap()));
    assert_eq!(g["soft_budget"], 4.0);
    assert_eq!(g["litellm_budget_table"]["soft_budget"], 4.0);
    assert_eq!(g["litellm_budget_table"]["budget_id"], g["budget_id"]);
}

#[tokio::test]
async fn update_is_in_force_on_the_next_request() {
    let h = H::new().await;
    let (_, hash) = h
        .key(json!({"key": "sk-1234", "max_budget": 1.0, "metadata": {"owner": "qa"}}))
        .await;
    let (s, v) = h
        .post(
            "/key/update",
            json!({"key": "sk-1234", "max_budget": 3.0, "budget_duration": "1d", "models": ["a", "b"], "metadata": {"x": 1}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["key"], SK_1234_HASH);
    assert_eq!(v["max_budget"], 3.0);
    assert_eq!(v["metadata"], json!({"owner": "qa", "x": 1}));
    let row = h.gov.cache().read().keys[&hash].clone();
    assert_eq!(row.max_budget, Some(3.0));
    assert_eq!(row.models, vec!["a".to_owned(), "b".to_owned()]);
    // the request path sees the new cap and window
    let p = h.gov.principal(&hash).unwrap();
    let scopes = h.gov.scopes(Some(&p), RequestFacts::default()).unwrap();
    assert_eq!(scopes[0].key, ScopeKey::key(&hash));
    assert_eq!(scopes[0].limits.max_budget, Some(3.0));
    assert_eq!(
        scopes[0].limits.budget_duration,
        Some(BudgetDuration::Days(1))
    );
    // the window started in the counters at the row's standardised reset time
    let counters = h
        .gov
        .admission()
        .spend(&ScopeKey::key(&hash))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(counters.budget_reset_at, row.budget_reset_at);
    assert_eq!(
        row.budget_reset_at,
        Some(BudgetDuration::Days(1).next_reset(row.updated_at.unwrap()))
    );
    // and the store has it
    let stored = h.gov.store().load().await.unwrap();
    assert_eq!(stored.keys[0].max_budget, Some(3.0));
    // null clears a limit (LiteLLM: remove a key's max budget), absence keeps it
    let (s, v) = h
        .post(
            "/key/update",
            json!({"key": "sk-1234", "max_budget": null, "rpm_limit": 5}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["max_budget"], Value::Null);
    assert_eq!(v["rpm_limit"], 5);
    let p = h.gov.principal(&hash).unwrap();
    let scopes = h.gov.scopes(Some(&p), RequestFacts::default()).unwrap();
    assert_eq!(scopes[0].limits.max_budget, None);
    assert_eq!(scopes[0].limits.rpm_limit, Some(5));
    let (s, v) = h
        .post("/key/update", json!({"key": "sk-1234", "tpm_limit": 7}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (v["rpm_limit"].clone(), v["tpm_limit"].clone()),
        (json!(5), json!(7))
    );
    // a negative limit is refused
    let (s, v) = h
        .post("/key/update", json!({"key": "sk-1234", "max_budget": -1.0}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["error"]["message"],
        "max_budget must not be negative, got -1"
    );
    // unknown key
    let (s, _) = h
        .post("/key/update", json!({"key": "sk-nope", "max_budget": 1.0}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn block_and_unblock_reach_the_request_path() {
    let h = H::new().await;
    let (raw, hash) = h.key(json!({})).await;
    let (s, v) = h.post("/key/block", json!({"key": raw})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["blocked"], true);
    assert_eq!(h.gov.principal(&hash).unwrap_err(), KeyError::Blocked);
    // the blocked key cannot read its own info any more (401 from auth)
    let (s, _) = h.call("GET", "/key/info", Some(&raw), None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, v) = h.post("/key/unblock", json!({"key": hash})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["blocked"], false);
    assert!(h.gov.principal(&hash).is_ok());
}

#[tokio::test]
async fn delete_by_key_and_by_alias_then_info_says_deleted() {
    let h = H::new().await;
    let (raw, hash) = h.key(json!({})).await;
    let (_, other) = h.key(json!({"key_alias": "tmp"})).await;
    let (s, v) = h.post("/key/delete", json!({"keys": [raw]})).await;
    assert_eq!(s, StatusCode::OK);
    // a plaintext key is answered by its hash (no plaintext in any response but creation)
    assert_eq!(v, json!({"deleted_keys": [hash]}));
    assert_eq!(
        h.gov.principal(&hash).unwrap_err(),
        KeyError::NotFound(hash.clone())
    );
    let (s, v) = h.get(&format!("/key/info?key={hash}")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"key": hash, "info": {"status": "deleted"}}));
    let (s, _) = h.post("/key/delete", json!({"keys": [hash]})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (_, v) = h.post("/key/delete", json!({"key_aliases": ["tmp"]})).await;
    assert_eq!(v, json!({"deleted_keys": ["tmp"]}));
    assert!(h.gov.principal(&other).is_err());
    assert!(h.gov.cache().read().keys.is_empty());
}

#[tokio::test]
async fn regenerate_keeps_settings_and_spend_and_retires_the_old_key() {
    let h = H::new().await;
    let (raw, old) = h.key(json!({"max_budget": 1.0, "key_alias": "svc"})).await;
    let cost = h.charge(&old, "r1", 1000, 500, None).await;
    assert_eq!(cost, 0.002);
    let (s, v) = h
        .post(
            &format!("/key/{raw}/regenerate"),
            json!({"max_budget": 2.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let new_raw = v["key"].as_str().unwrap().to_owned();
    assert_ne!(new_raw, raw);
    let new = hash_key(&new_raw);
    assert_eq!(v["token_id"], new);
    assert_eq!(v["key_alias"], "svc");
    assert_eq!(v["max_budget"], 2.0);
    assert_eq!(v["spend"], json!(cost));
    assert_eq!(h.gov.spend_of(&ScopeKey::key(&new)).await.unwrap(), cost);
    assert_eq!(
        h.gov.principal(&old).unwrap_err(),
        KeyError::NotFound(old.clone())
    );
    let (_, info) = h.get(&format!("/key/info?key={old}")).await;
    assert_eq!(info["info"]["status"], "deleted");
    // body form
    let (s, v) = h.post("/key/regenerate", json!({"key": new_raw})).await;
    assert_eq!(s, StatusCode::OK);
    assert!(h.gov.principal(v["token_id"].as_str().unwrap()).is_ok());
}

#[tokio::test]
async fn reset_spend_is_in_force_at_once() {
    let h = H::new().await;
    let (raw, hash) = h.key(json!({"max_budget": 0.001})).await;
    let cost = h.charge(&hash, "r1", 1000, 500, None).await;
    assert!(!h.admits(&hash).await);
    let (s, v) = h
        .post(&format!("/key/{raw}/reset_spend"), json!({"reset_to": 1.0}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, v) = h.post(&format!("/key/{raw}/reset_spend"), json!({})).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v,
        json!({"key_hash": hash, "spend": 0.0, "previous_spend": cost, "max_budget": 0.001, "budget_duration": null})
    );
    assert_eq!(h.gov.spend_of(&ScopeKey::key(&hash)).await.unwrap(), 0.0);
    // admitted again on the very next request
    assert!(h.admits(&hash).await);
}

#[tokio::test]
async fn list_filters_and_pages() {
    let h = H::new().await;
    let (_, a) = h.key(json!({"user_id": "u1"})).await;
    let (_, b) = h.key(json!({"user_id": "u1"})).await;
    let (_, c) = h.key(json!({"user_id": "u2", "key_alias": "third"})).await;
    let (s, v) = h.get("/key/list?user_id=u1&size=1&page=2").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (
            v["total_count"].clone(),
            v["current_page"].clone(),
            v["total_pages"].clone()
        ),
        (json!(2), json!(2), json!(2))
    );
    let (_, p1) = h.get("/key/list?user_id=u1&size=1&page=1").await;
    let mut seen = vec![p1["keys"][0].clone(), v["keys"][0].clone()];
    seen.sort_by_key(|k| k.as_str().unwrap().to_owned());
    let mut want = vec![json!(a), json!(b)];
    want.sort_by_key(|k| k.as_str().unwrap().to_owned());
    assert_eq!(seen, want);
    let (_, v) = h
        .get("/key/list?key_alias=third&return_full_object=True")
        .await;
    assert_eq!(v["total_count"], 1);
    assert_eq!(v["keys"][0]["token"], c);
    assert_eq!(v["keys"][0]["user_id"], "u2");
    let (_, v) = h.get("/key/list").await;
    assert_eq!(
        (v["total_count"].clone(), v["total_pages"].clone()),
        (json!(3), json!(1))
    );
    let (s, _) = h.get("/key/list?size=0").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}
