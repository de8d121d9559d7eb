//! Roles: a key reads only what is its own; `proxy_admin` users' keys are admins; no raw key
//! in any response but the one that creates it.

use http::StatusCode;
use serde_json::{Value, json};

use crate::common::{H, error};

#[tokio::test]
async fn non_admin_reads_only_its_own_key() {
    let h = H::new().await;
    let (raw_a, hash_a) = h.key(json!({})).await;
    let (_, hash_b) = h.key(json!({})).await;
    let (s, v) = h
        .call(
            "GET",
            &format!("/key/info?key={hash_b}"),
            Some(&raw_a),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(
        v,
        error(
            "Only the key's owner or a proxy admin can view this key. Route=/key/info",
            "auth_error",
            403
        )
    );
    let (s, v) = h.call("GET", "/key/info", Some(&raw_a), None).await;
    assert_eq!((s, v["key"].clone()), (StatusCode::OK, json!(hash_a)));
    let (s, v) = h
        .call("GET", &format!("/key/info?key={raw_a}"), Some(&raw_a), None)
        .await;
    assert_eq!((s, v["key"].clone()), (StatusCode::OK, json!(hash_a)));
    let (s, v) = h
        .call("POST", "/key/generate", Some(&raw_a), Some("{}"))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(
        v,
        error(
            "Only proxy admin can be used to generate, delete, update info for new keys/users/teams. Route=/key/generate. Your role=internal_user",
            "auth_error",
            403
        )
    );
    for (m, uri) in [
        ("GET", "/key/list"),
        ("GET", "/user/list"),
        ("GET", "/team/list"),
        ("GET", "/budget/list"),
        ("GET", "/customer/list"),
        ("POST", "/team/new"),
        ("POST", "/model/new"),
    ] {
        let body = (m == "POST").then_some("{}");
        let (s, v) = h.call(m, uri, Some(&raw_a), body).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{uri}");
        assert_eq!(v["error"]["type"], "auth_error");
    }
    // team info: own team yes, another team no
    h.post("/team/new", json!({"team_id": "ta"})).await;
    h.post("/team/new", json!({"team_id": "tb"})).await;
    let (raw_t, _) = h.key(json!({"team_id": "ta"})).await;
    let (s, _) = h.call("GET", "/team/info", Some(&raw_t), None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = h
        .call("GET", "/team/info?team_id=tb", Some(&raw_t), None)
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn proxy_admin_users_keys_are_admins_and_viewers_read() {
    let h = H::new().await;
    let (_, v) = h
        .post(
            "/user/new",
            json!({"user_id": "boss", "user_role": "proxy_admin"}),
        )
        .await;
    let boss = v["key"].as_str().unwrap().to_owned();
    let (s, g) = h
        .call("POST", "/key/generate", Some(&boss), Some("{}"))
        .await;
    assert_eq!(s, StatusCode::OK, "{g}");
    assert_eq!(g["created_by"], "boss");
    let (_, v) = h
        .post(
            "/user/new",
            json!({"user_id": "eye", "user_role": "proxy_admin_viewer"}),
        )
        .await;
    let viewer = v["key"].as_str().unwrap().to_owned();
    let (s, _) = h.call("GET", "/key/list", Some(&viewer), None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = h
        .call("POST", "/key/generate", Some(&viewer), Some("{}"))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = h.post("/user/new", json!({"user_role": "emperor"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn no_raw_key_in_any_response_but_its_creation() {
    let h = H::new().await;
    h.post("/team/new", json!({"team_id": "t1"})).await;
    let raw = "sk-test-CANARY2-abcdef";
    let (s, g) = h
        .post(
            "/key/generate",
            json!({"key": raw, "team_id": "t1", "user_id": "u1", "max_budget": 1.0}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(g["key"], raw, "shown once, at creation");
    let hash = g["token_id"].as_str().unwrap().to_owned();
    h.charge(&hash, "r1", 10, 10, None).await;
    let mut seen: Vec<Value> = Vec::new();
    for (m, uri, body) in [
        ("GET", format!("/key/info?key={raw}"), None),
        ("GET", "/key/list?return_full_object=true".to_owned(), None),
        (
            "POST",
            "/key/update".to_owned(),
            Some(json!({"key": raw, "max_budget": 2.0})),
        ),
        ("POST", "/key/block".to_owned(), Some(json!({"key": raw}))),
        ("POST", "/key/unblock".to_owned(), Some(json!({"key": raw}))),
        ("POST", format!("/key/{raw}/reset_spend"), Some(json!({}))),
        ("GET", format!("/spend/logs?api_key={raw}"), None),
        ("GET", "/team/info?team_id=t1".to_owned(), None),
        (
            "GET",
            "/global/spend/report?group_by=api_key".to_owned(),
            None,
        ),
        (
            "POST",
            "/key/update".to_owned(),
            Some(json!({"key": raw, "max_budget": "sk-test-CANARY2-abcdef"})),
        ),
        (
            "POST",
            "/key/delete".to_owned(),
            Some(json!({"keys": [raw]})),
        ),
        ("GET", format!("/key/info?key={raw}"), None),
    ] {
        let body = body.map(|b| b.to_string());
        let (_, v) = h.call(m, &uri, Some("admin"), body.as_deref()).await;
        seen.push(v);
    }
    // the key as its own caller
    let (_, v) = h.call("GET", "/key/info", Some(raw), None).await;
    seen.push(v);
    for v in &seen {
        let text = v.to_string();
        assert!(!text.contains("CANARY2"), "raw key leaked: {text}");
    }
    // the wrong-type update was refused with the key masked in the message
    assert_eq!(seen[9]["error"]["code"], "400");
    assert!(
        seen[9]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sk-...cdef")
    );
    // and nothing stored holds it
    let stored = format!("{:?}", h.gov.store().load().await.unwrap());
    assert!(!stored.contains("CANARY2"));
}

#[tokio::test]
async fn a_users_key_lists_only_that_users_keys() {
    let h = H::new().await;
    let (_, v) = h.post("/user/new", json!({"user_id": "ann"})).await;
    let ann = v["key"].as_str().unwrap().to_owned();
    let ann_first = v["token_id"].as_str().unwrap().to_owned();
    let (_, ann_second) = h.key(json!({"user_id": "ann"})).await;
    let (_, bob) = h.key(json!({"user_id": "bob"})).await;
    let (_, _nobody) = h.key(json!({})).await;
    let (s, v) = h.call("GET", "/key/list", Some(&ann), None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let mut keys: Vec<String> = v["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    keys.sort();
    let mut want = vec![ann_first, ann_second.clone()];
    want.sort();
    assert_eq!(keys, want);
    assert_eq!(v["total_count"], 2);
    // Its user's other key reads; another user's does not.
    let (s, v) = h
        .call(
            "GET",
            &format!("/key/info?key={ann_second}"),
            Some(&ann),
            None,
        )
        .await;
    assert_eq!((s, v["key"].clone()), (StatusCode::OK, json!(ann_second)));
    let (s, _) = h
        .call("GET", &format!("/key/info?key={bob}"), Some(&ann), None)
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, v) = h
        .call("GET", "/key/list?user_id=bob", Some(&ann), None)
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(
        v,
        error(
            "You are not allowed to check another user's keys. Route=/key/list",
            "auth_error",
            403
        )
    );
}
