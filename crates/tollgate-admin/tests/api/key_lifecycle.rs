//! Key lifecycle fields LiteLLM keeps in `metadata`: a temporary budget increase
//! (`temp_budget_increase` + `temp_budget_expiry`), per-tag request limits
//! (`tag_rpm_limit`), and `/key/delete` echoing the list it was sent.

use http::StatusCode;
use serde_json::json;
use tollgate_governance::admission::{ScopeKey, ScopeKind};
use tollgate_governance::runtime::RequestFacts;

use crate::common::{H, error};

#[tokio::test]
async fn a_temporary_increase_raises_the_budget_until_its_expiry() {
    let h = H::new().await;
    // cap 0.001 USD; one call of 1000 prompt tokens costs exactly 0.001
    let (_, hash) = h
        .key(json!({"max_budget": 0.001, "key_alias": "temp"}))
        .await;
    h.charge(&hash, "r1", 1000, 0, None).await;
    assert!(!h.admits(&hash).await, "spend at the cap is refused");

    let (s, v) = h
        .post(
            "/key/update",
            json!({"key": hash, "temp_budget_increase": 1.0, "temp_budget_expiry": "2099-01-01"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(
        h.admits(&hash).await,
        "0.001 + 1.0 is the cap before the expiry"
    );
    assert_eq!(h.gov.principal(&hash).unwrap().key.max_budget, Some(1.001));
    // /key/info shows the stored fields in metadata and the key's own max_budget
    let (_, info) = h.get(&format!("/key/info?key={hash}")).await;
    assert_eq!(info["info"]["max_budget"], json!(0.001));
    assert_eq!(
        info["info"]["metadata"],
        json!({"temp_budget_increase": 1.0, "temp_budget_expiry": "2099-01-01T00:00:00"})
    );

    // an expiry in the past: the plain max_budget again
    let (s, v) = h
        .post(
            "/key/update",
            json!({"key": hash, "temp_budget_increase": 1.0, "temp_budget_expiry": "2020-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["metadata"]["temp_budget_expiry"],
        json!("2020-01-01T00:00:00+00:00")
    );
    assert!(!h.admits(&hash).await);
    assert_eq!(h.gov.principal(&hash).unwrap().key.max_budget, Some(0.001));
}

#[tokio::test]
async fn generate_stores_the_increase_and_bad_pairs_are_400() {
    let h = H::new().await;
    let (_, hash) = h
        .key(json!({
            "max_budget": 2.0,
            "temp_budget_increase": 3.5,
            "temp_budget_expiry": "2099-06-30T12:00:00+02:00",
            "metadata": {"team": "ml"}
        }))
        .await;
    let (_, info) = h.get(&format!("/key/info?key={hash}")).await;
    assert_eq!(
        info["info"]["metadata"],
        json!({"team": "ml", "temp_budget_increase": 3.5, "temp_budget_expiry": "2099-06-30T12:00:00+02:00"})
    );
    assert_eq!(h.gov.principal(&hash).unwrap().key.max_budget, Some(5.5));

    let half = json!({"key": hash, "temp_budget_increase": 1.0});
    let (s, v) = h.post("/key/update", half).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        error(
            "temp_budget_increase and temp_budget_expiry must be set together",
            "bad_request_error",
            400
        )
    );
    let (s, v) = h
        .post(
            "/key/update",
            json!({"key": hash, "temp_budget_increase": -1.0, "temp_budget_expiry": "2099-01-01"}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v["error"]["message"],
        "temp_budget_increase must be a finite amount >= 0 (USD), got -1"
    );
    let (s, v) = h
        .post(
            "/key/update",
            json!({"key": hash, "temp_budget_increase": 1.0, "temp_budget_expiry": "soon"}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v["error"]["message"],
        "Invalid temp_budget_expiry=soon: expected an ISO 8601 date or date-time, e.g. \"2026-10-15\" or \"2026-10-15T12:00:00Z\""
    );
    // nothing changed
    assert_eq!(h.gov.principal(&hash).unwrap().key.max_budget, Some(5.5));
}

#[tokio::test]
async fn tag_rpm_limit_is_kept_in_metadata_and_scopes_each_limited_tag() {
    let h = H::new().await;
    let (_, hash) = h
        .key(json!({"tag_rpm_limit": {"cell-1": 2, "cell-2": 7}}))
        .await;
    let (_, info) = h.get(&format!("/key/info?key={hash}")).await;
    assert_eq!(
        info["info"]["metadata"],
        json!({"tag_rpm_limit": {"cell-1": 2, "cell-2": 7}})
    );
    let p = h.gov.principal(&hash).unwrap();
    let tags = vec!["cell-2".to_owned(), "other".to_owned()];
    let facts = RequestFacts {
        model_group: "mock-gpt",
        tags: &tags,
        ..RequestFacts::default()
    };
    let scopes = h.gov.scopes(Some(&p), facts).unwrap();
    let tagged: Vec<_> = scopes
        .iter()
        .filter(|s| s.key.kind == ScopeKind::TagPerKey)
        .collect();
    assert_eq!(tagged.len(), 1);
    assert_eq!(tagged[0].key, ScopeKey::tag_per_key(&hash, "cell-2"));
    assert_eq!(tagged[0].limits.rpm_limit, Some(7));

    // an update replaces the map; a negative limit is refused
    let (s, v) = h
        .post(
            "/key/update",
            json!({"key": hash, "tag_rpm_limit": {"cell-1": 1}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["metadata"]["tag_rpm_limit"], json!({"cell-1": 1}));
    let (s, _) = h
        .post(
            "/key/update",
            json!({"key": hash, "tag_rpm_limit": {"cell-1": -1}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn delete_echoes_the_list_it_acted_on() {
    let h = H::new().await;
    let (raw, hash) = h.key(json!({})).await;
    let (_, by_hash) = h.key(json!({})).await;
    let (_, aliased) = h.key(json!({"key_alias": "keep-me"})).await;
    // both lists: LiteLLM acts on `keys` only and echoes them; a plaintext key as its hash
    let (s, v) = h
        .post(
            "/key/delete",
            json!({"keys": [raw, by_hash], "key_aliases": ["keep-me"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"deleted_keys": [hash, by_hash]}));
    assert!(h.gov.principal(&hash).is_err());
    assert!(h.gov.principal(&by_hash).is_err());
    assert!(h.gov.principal(&aliased).is_ok());
    let (s, v) = h
        .post(
            "/key/delete",
            json!({"keys": [], "key_aliases": ["keep-me"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"deleted_keys": ["keep-me"]}));
    assert!(h.gov.principal(&aliased).is_err());
    let (s, v) = h.post("/key/delete", json!({"keys": []})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        v,
        error("keys or key_aliases is required", "bad_request_error", 400)
    );
}
