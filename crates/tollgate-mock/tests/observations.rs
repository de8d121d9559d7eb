//! Recording: fields, drain vs keep, deployment prefix, disconnect detection.

mod common;

use std::time::Duration;

use common::*;
use http_body_util::BodyExt;
use serde_json::json;

#[tokio::test]
async fn recorded_fields_and_drain() {
    let mock = start().await;
    let base = mock.base_url();
    let body = json!({"model": "mock-gpt-text", "messages": [{"role": "user", "content": "hi"}]});
    let r = post(
        &base,
        "/d/east/v1/chat/completions?api-version=1",
        &[("authorization", "Bearer sk-test"), ("X-Custom", "a")],
        &body,
    )
    .await;
    assert_eq!(r.status, 200);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let kept = get(&base, "/__observations?keep=1").await.json();
    assert_eq!(kept["requests"].as_array().unwrap().len(), 1);
    let all = get(&base, "/__observations").await.json();
    let o = &all["requests"][0];
    assert_eq!(o["seq"], 1);
    assert_eq!(o["method"], "POST");
    assert_eq!(o["path"], "/d/east/v1/chat/completions");
    assert_eq!(o["route"], "/chat/completions");
    assert_eq!(o["deployment"], "east");
    assert_eq!(o["query"], "api-version=1");
    assert_eq!(o["headers"]["authorization"], "Bearer sk-test");
    assert_eq!(o["headers"]["x-custom"], "a");
    assert_eq!(o["body"], body);
    assert_eq!(o["model"], "mock-gpt-text");
    assert_eq!(o["status"], 200);
    assert_eq!(o["bytes_sent"], r.body().len() as u64);
    assert_eq!(o["client_disconnected"], false);
    assert!(o["finished_at"].as_f64().unwrap() >= o["received_at"].as_f64().unwrap());
    // drained
    assert_eq!(
        get(&base, "/__observations").await.json()["requests"],
        json!([])
    );
    // non-JSON body recorded as string
    send_raw(
        http::Method::POST,
        &format!("{base}/v1/embeddings"),
        &[],
        bytes::Bytes::from_static(b"plain"),
    )
    .await;
    let obs = mock.drain_observations();
    assert_eq!(obs[0].body, json!("plain"));
    mock.shutdown().await;
}

#[tokio::test]
async fn streaming_disconnect_recorded_within_100ms() {
    let mock = start().await;
    let url = format!("{}/v1/chat/completions", mock.base_url());
    let body = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "a long answer please, a long answer"}]});
    let req = http::Request::post(&url)
        .header("x-mock-chunks", "40")
        .header("x-mock-chunk-delay-ms", "50")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&body).unwrap(),
        )))
        .unwrap();
    let resp = client().request(req).await.unwrap();
    let mut b = resp.into_body();
    for _ in 0..3 {
        b.frame().await.unwrap().unwrap();
    }
    drop(b);
    let hung_up = tollgate_mock::observe::now_ms();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let obs = mock.drain_observations();
    let o = &obs[0];
    assert!(o.client_disconnected, "{o:?}");
    let at = o.client_disconnected_at.unwrap();
    assert!(
        at - hung_up < 100.0,
        "noticed {} ms after hang-up",
        at - hung_up
    );
    assert!(o.finished_at.is_none());
    assert!(o.bytes_sent > 0);
    mock.shutdown().await;
}

#[tokio::test]
async fn disconnect_before_first_byte_recorded() {
    let mock = start().await;
    let url = format!("{}/v1/chat/completions", mock.base_url());
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
    let req = http::Request::post(&url)
        .header("x-mock-first-byte-delay-ms", "5000")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&body).unwrap(),
        )))
        .unwrap();
    let fut = client().request(req);
    let _ = tokio::time::timeout(Duration::from_millis(200), fut).await;
    let hung_up = tollgate_mock::observe::now_ms();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let obs = mock.drain_observations();
    assert_eq!(obs.len(), 1);
    assert!(obs[0].client_disconnected);
    assert_eq!(obs[0].status, None);
    let at = obs[0].client_disconnected_at.unwrap();
    assert!(
        at - hung_up < 100.0,
        "noticed {} ms after hang-up",
        at - hung_up
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn no_record_and_bound() {
    let mock = start_with(tollgate_mock::MockConfig {
        record: false,
        ..Default::default()
    })
    .await;
    post(
        &mock.base_url(),
        "/v1/chat/completions",
        &[],
        &json!({"model": "m", "messages": []}),
    )
    .await;
    assert!(mock.observations().is_empty());
    assert_eq!(mock.request_count(), 1);
    mock.shutdown().await;
    let mock = start_with(tollgate_mock::MockConfig {
        max_records: 2,
        ..Default::default()
    })
    .await;
    for _ in 0..4 {
        get(&mock.base_url(), "/health").await;
    }
    let seqs: Vec<u64> = mock.observations().iter().map(|o| o.seq).collect();
    assert_eq!(seqs, vec![3, 4]);
    mock.shutdown().await;
}

#[tokio::test]
async fn h2c_prior_knowledge_is_served_and_recorded() {
    let mock = start().await;
    let c: hyper_util::client::legacy::Client<_, http_body_util::Full<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .http2_only(true)
            .build_http();
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "h2"}]});
    let req = http::Request::post(format!("{}/v1/chat/completions", mock.base_url()))
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&body).unwrap(),
        )))
        .unwrap();
    let resp = c.request(req).await.unwrap();
    assert_eq!(resp.version(), http::Version::HTTP_2);
    let text = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(text.ends_with(b"data: [DONE]\n\n"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let o = &mock.drain_observations()[0];
    assert_eq!(o.status, Some(200));
    assert_eq!(o.bytes_sent, text.len() as u64);
    mock.shutdown().await;
}

#[tokio::test]
async fn filtered_observations_drain_only_matches() {
    let mock = start().await;
    let base = mock.base_url();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
    post(&base, "/d/east/v1/chat/completions", &[], &body).await;
    post(&base, "/d/west/v1/chat/completions", &[], &body).await;
    post(
        &base,
        "/d/east/v1/embeddings",
        &[],
        &json!({"model": "e", "input": "x"}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let east_chat = get(
        &base,
        "/__observations?deployment=east&route=/chat/completions",
    )
    .await
    .json();
    assert_eq!(east_chat["requests"].as_array().unwrap().len(), 1);
    assert_eq!(
        east_chat["requests"][0]["path"],
        "/d/east/v1/chat/completions"
    );
    let rest = get(&base, "/__observations").await.json();
    let paths: Vec<&str> = rest["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        vec!["/d/west/v1/chat/completions", "/d/east/v1/embeddings"]
    );
    mock.shutdown().await;
}
