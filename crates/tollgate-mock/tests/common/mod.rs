//! Test helpers: start the mock in-process and talk to it with a plain hyper client, keeping
//! each received body frame separately (to count reads).
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tollgate_mock::{MockConfig, MockHandle};

pub fn fixtures_dir() -> std::path::PathBuf {
    tollgate_mock::shared_fixtures_dir().expect("shared fixtures dir (set TOLLGATE_SHARED_DIR)")
}

pub async fn start() -> MockHandle {
    tollgate_mock::start(MockConfig {
        fixtures_dir: Some(fixtures_dir()),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

pub async fn start_with(cfg: MockConfig) -> MockHandle {
    tollgate_mock::start(cfg).await.unwrap()
}

pub fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub frames: Vec<Bytes>,
}

impl Resp {
    pub fn body(&self) -> Vec<u8> {
        self.frames.concat()
    }
    pub fn text(&self) -> String {
        String::from_utf8(self.body()).unwrap()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// `data:` payloads of an SSE body (no `[DONE]`), parsed.
    pub fn sse_data(&self) -> Vec<Value> {
        self.text()
            .split("\n\n")
            .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
    /// `(event name, data)` pairs of a named-event SSE body.
    pub fn sse_events(&self) -> Vec<(String, Value)> {
        self.text()
            .split("\n\n")
            .filter(|ev| !ev.is_empty())
            .map(|ev| {
                let name = ev
                    .lines()
                    .find_map(|l| l.strip_prefix("event: "))
                    .unwrap_or("")
                    .to_owned();
                let data = ev.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                (name, serde_json::from_str(data).unwrap())
            })
            .collect()
    }
}

pub async fn send(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Resp {
    send_raw(
        method,
        url,
        headers,
        body.map(|b| Bytes::from(serde_json::to_vec(b).unwrap()))
            .unwrap_or_default(),
    )
    .await
}

pub async fn send_raw(method: Method, url: &str, headers: &[(&str, &str)], body: Bytes) -> Resp {
    let mut b = Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let req = b.body(Full::new(body)).unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(20), client().request(req))
        .await
        .expect("response head within 20 s")
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut body = resp.into_body();
    let mut frames = Vec::new();
    while let Some(f) = tokio::time::timeout(Duration::from_secs(20), body.frame())
        .await
        .expect("frame within 20 s")
    {
        if let Ok(d) = f.unwrap().into_data() {
            frames.push(d);
        }
    }
    Resp {
        status,
        headers,
        frames,
    }
}

pub async fn post(base: &str, path: &str, headers: &[(&str, &str)], body: &Value) -> Resp {
    send(Method::POST, &format!("{base}{path}"), headers, Some(body)).await
}

pub async fn get(base: &str, path: &str) -> Resp {
    send(Method::GET, &format!("{base}{path}"), &[], None).await
}
