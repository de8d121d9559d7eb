//! Embeddings (float and base64) and the models list.

mod common;

use base64::Engine;
use common::*;
use serde_json::json;

#[tokio::test]
async fn base64_decodes_to_the_float_vector() {
    let mock = start().await;
    let base = mock.base_url();
    let float = post(&base, "/v1/embeddings", &[], &json!({"model": "mock-embed", "input": ["first input", "second, longer input"], "encoding_format": "float"})).await.json();
    let b64 = post(&base, "/embeddings", &[], &json!({"model": "mock-embed", "input": ["first input", "second, longer input"], "encoding_format": "base64"})).await.json();
    assert_eq!(float["object"], "list");
    assert_eq!(float["model"], "mock-embed");
    // ceil(11/4) + ceil(20/4) = 3 + 5
    assert_eq!(
        float["usage"],
        json!({"prompt_tokens": 8, "total_tokens": 8})
    );
    for i in 0..2 {
        let floats: Vec<f32> = float["data"][i]["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(floats.len(), 8);
        assert_eq!(float["data"][i]["index"], i);
        assert_eq!(float["data"][i]["object"], "embedding");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(b64["data"][i]["embedding"].as_str().unwrap())
            .unwrap();
        let decoded: Vec<f32> = raw
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(decoded, floats);
    }
    assert_ne!(float["data"][0]["embedding"], float["data"][1]["embedding"]);
    let d = post(
        &base,
        "/v1/embeddings",
        &[],
        &json!({"model": "e", "input": "x", "dimensions": 3}),
    )
    .await
    .json();
    assert_eq!(d["data"][0]["embedding"].as_array().unwrap().len(), 3);
    let t = post(
        &base,
        "/v1/embeddings",
        &[],
        &json!({"model": "e", "input": [[1, 2, 3], [4]]}),
    )
    .await
    .json();
    assert_eq!(t["usage"]["prompt_tokens"], 4);
    mock.shutdown().await;
}

#[tokio::test]
async fn models_list() {
    let mock = start().await;
    let v = get(&mock.base_url(), "/v1/models").await.json();
    assert_eq!(v["object"], "list");
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"mock-gpt-text"));
    assert_eq!(v["data"][0]["object"], "model");
    let h = get(&mock.base_url(), "/health").await;
    assert_eq!(h.json(), json!({"status": "ok"}));
    mock.shutdown().await;
}
