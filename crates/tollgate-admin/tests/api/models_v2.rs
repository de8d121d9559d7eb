//! `GET /v2/model/info`: LiteLLM's filters and paging.

use http::StatusCode;
use serde_json::{Value, json};

use crate::common::H;

fn names(v: &Value) -> Vec<String> {
    v["data"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|e| e["model_name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn v2_model_info_filters_and_pages() {
    let h = H::new().await;
    for name in ["beta", "Alpha", "gamma-alpha"] {
        let (s, _) = h
            .post(
                "/model/new",
                json!({"model_name": name, "litellm_params": {"model": format!("openai/{name}")}}),
            )
            .await;
        assert_eq!(s, StatusCode::OK);
    }
    let (s, v) = h.get("/v2/model/info").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (
            v["total_count"].clone(),
            v["current_page"].clone(),
            v["size"].clone(),
            v["total_pages"].clone()
        ),
        (json!(3), json!(1), json!(50), json!(1))
    );
    assert_eq!(
        v["data"][0],
        json!({"model_name": "beta", "litellm_params": {"model": "openai/beta"}, "model_info": {"id": "m-1"}})
    );
    let (_, v) = h.get("/v2/model/info?model=Alpha").await;
    assert_eq!(names(&v), ["Alpha"]);
    let (_, v) = h.get("/v2/model/info?search=ALPH").await;
    assert_eq!(names(&v), ["Alpha", "gamma-alpha"]);
    let (_, v) = h.get("/v2/model/info?modelId=m-3").await;
    assert_eq!(names(&v), ["gamma-alpha"]);
    let (_, v) = h
        .get("/v2/model/info?sortBy=model_name&sortOrder=desc&size=2&page=2")
        .await;
    assert_eq!(names(&v), ["Alpha"]);
    assert_eq!(
        (
            v["total_count"].clone(),
            v["current_page"].clone(),
            v["size"].clone(),
            v["total_pages"].clone()
        ),
        (json!(3), json!(2), json!(2), json!(2))
    );
    // teamId: the deployments that team may call; an unknown team: none
    h.post("/team/new", json!({"team_id": "t", "models": ["beta"]}))
        .await;
    let (_, v) = h.get("/v2/model/info?teamId=t").await;
    assert_eq!(names(&v), ["beta"]);
    let (_, v) = h.get("/v2/model/info?teamId=nope").await;
    assert_eq!((names(&v).len(), v["total_pages"].clone()), (0, json!(0)));
    // a key sees only what it may call
    let (raw, _) = h.key(json!({"models": ["Alpha"]})).await;
    let (s, v) = h.call("GET", "/v2/model/info", Some(&raw), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(names(&v), ["Alpha"]);
    // bad paging or sorting: 400 in LiteLLM's error shape
    for (q, msg) in [
        ("page=0", "page must be an integer >= 1, got 0"),
        ("size=x", "size must be an integer >= 1, got x"),
        (
            "sortBy=price",
            "Invalid sortBy=price; expected one of model_name, created_at, updated_at, costs",
        ),
        ("sortOrder=up", "Invalid sortOrder=up; expected asc or desc"),
    ] {
        let (s, v) = h.get(&format!("/v2/model/info?{q}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
        assert_eq!(v["error"]["message"], msg);
        assert_eq!(v["error"]["code"], "400");
    }
}
