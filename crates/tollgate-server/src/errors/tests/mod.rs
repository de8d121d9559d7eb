//! The catalogue, variant by variant: status, OpenAI `type`, `code`, `param`, message and log
//! level, and the body each client dialect receives (OpenAI chat, Responses, Anthropic).

use http::StatusCode;
use serde_json::{Value, json};
use tracing::Level;

use super::{GatewayError, GatewayFailure};
use crate::request::Endpoint;

/// What one failure must render as.
pub(super) struct Expect {
    status: u16,
    kind: &'static str,
    /// Anthropic's `type` for the status.
    anthropic: &'static str,
    code: Option<&'static str>,
    param: Option<&'static str>,
    message: String,
    level: Level,
}

pub(super) fn expect(
    status: u16,
    kind: &'static str,
    anthropic: &'static str,
    message: &str,
) -> Expect {
    Expect {
        status,
        kind,
        anthropic,
        code: None,
        param: None,
        message: message.to_owned(),
        level: Level::DEBUG,
    }
}

impl Expect {
    pub(super) fn code(mut self, c: &'static str) -> Self {
        self.code = Some(c);
        self
    }
    pub(super) fn param(mut self, p: &'static str) -> Self {
        self.param = Some(p);
        self
    }
    pub(super) fn level(mut self, l: Level) -> Self {
        self.level = l;
        self
    }
}

pub(super) fn bad(message: &str) -> Expect {
    expect(
        400,
        "invalid_request_error",
        "invalid_request_error",
        message,
    )
}

async fn body_of(e: GatewayError, endpoint: Endpoint) -> (StatusCode, Value) {
    let resp = e.into_response_in(endpoint.dialect());
    let status = resp.status();
    assert_eq!(resp.headers()["content-type"], "application/json");
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// Checks `make()`'s accessors and its body on the chat, Responses and Messages routes.
pub(super) async fn check(make: impl Fn() -> GatewayFailure<'static>, x: Expect) {
    let f = make();
    let label = format!("{f:?}");
    assert_eq!(f.status(), x.status, "{label}");
    assert_eq!(f.kind(), x.kind, "{label}");
    assert_eq!(f.code().as_deref(), x.code, "{label}");
    assert_eq!(f.param().as_deref(), x.param, "{label}");
    assert_eq!(f.message(), x.message, "{label}");
    assert_eq!(f.level(), x.level, "{label}");
    let openai = json!({"error": {
        "message": x.message, "type": x.kind, "param": x.param, "code": x.code,
    }});
    for endpoint in [Endpoint::ChatCompletions, Endpoint::Responses] {
        let (status, body) = body_of(make().into(), endpoint).await;
        assert_eq!(status.as_u16(), x.status, "{label}");
        assert_eq!(body, openai, "{label} on {endpoint:?}");
    }
    let (status, body) = body_of(make().into(), Endpoint::Messages).await;
    assert_eq!(status.as_u16(), x.status, "{label}");
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": x.anthropic, "message": x.message}}),
        "{label} on /v1/messages"
    );
}

mod client;
mod server;
