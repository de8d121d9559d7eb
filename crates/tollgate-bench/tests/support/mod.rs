//! A tiny in-process OpenAI/Anthropic-shaped upstream for the harness tests
//! (the real mock is the `tollgate-mock` crate; this one keeps the tests
//! independent of its build).
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]
#![allow(
    dead_code,
    reason = "shared by several test crates, each using a part of it"
)]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Counters of what the mock received.
#[derive(Default)]
pub struct Seen {
    /// Chat completion requests.
    pub chat: AtomicU64,
    /// Anthropic messages requests.
    pub messages: AtomicU64,
    /// Largest request body seen (bytes).
    pub max_body: AtomicU64,
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn full(status: u16, ct: &str, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", ct)
        .body(Full::new(Bytes::from(body)).boxed())
        .unwrap()
}

async fn handle(
    req: Request<Incoming>,
    delay: Duration,
    seen: Arc<Seen>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    seen.max_body
        .fetch_max(body.len() as u64, Ordering::Relaxed);
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    tokio::time::sleep(delay).await;
    let resp = match path.as_str() {
        "/v1/chat/completions" | "/chat/completions" => {
            seen.chat.fetch_add(1, Ordering::Relaxed);
            if json["stream"] == true {
                let chunks: Vec<Result<Frame<Bytes>, Infallible>> = ["Hel", "lo", "!"]
                    .iter()
                    .map(|t| {
                        format!(
                            "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}},\"finish_reason\":null}}]}}\n\n"
                        )
                    })
                    .chain(std::iter::once("data: [DONE]\n\n".to_string()))
                    .map(|s| Ok(Frame::data(Bytes::from(s))))
                    .collect();
                let stream = futures_stream(chunks);
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(StreamBody::new(stream).boxed())
                    .unwrap()
            } else {
                full(200, "application/json", serde_json::json!({
                    "id": "chatcmpl-bench", "object": "chat.completion", "created": 1,
                    "model": json["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
                }).to_string())
            }
        }
        "/v1/messages" => {
            seen.messages.fetch_add(1, Ordering::Relaxed);
            full(200, "application/json", serde_json::json!({
                "id": "msg_bench", "type": "message", "role": "assistant", "model": json["model"],
                "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2}
            }).to_string())
        }
        // A LiteLLM-style key endpoint: master key in, virtual key (echoing the budget) out.
        "/key/generate" if auth == "Bearer sk-bench-master" => full(
            200,
            "application/json",
            serde_json::json!({"key": "sk-virtual-1", "max_budget": json["max_budget"]})
                .to_string(),
        ),
        "/key/generate" => full(
            401,
            "application/json",
            "{\"error\":\"bad master key\"}".into(),
        ),
        _ => full(404, "application/json", "{\"error\":\"not found\"}".into()),
    };
    Ok(resp)
}

/// Yields the frames one by one with a 1 ms pause between them, so SSE events arrive separately.
fn futures_stream(
    frames: Vec<Result<Frame<Bytes>, Infallible>>,
) -> impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + Send {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tokio::spawn(async move {
        for f in frames {
            if tx.send(f).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    tokio_stream_from(rx)
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Starts the mock on a loopback port; returns its base URL and counters.
/// The server lives as long as the runtime.
pub async fn start(delay: Duration) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s2 = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            stream.set_nodelay(true).ok();
            let seen = s2.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| handle(req, delay, seen.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// Starts the mock on its own thread and runtime (for tests whose harness
/// runs on another runtime); returns the base URL and counters.
pub fn start_on_thread(delay: Duration) -> (String, Arc<Seen>) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            tx.send(start(delay).await).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}
