//! The catalogue, variant by variant: status, OpenAI `type`, `code`, `param`, message and log
//! level, and the body each client dialect receives (OpenAI chat, Responses, Anthropic).

use std::borrow::Cow;

use http::{HeaderName, Method, StatusCode};
use serde_json::{Value, json};
use tollgate_governance::admission::{RejectReason, Rejection};
use tollgate_governance::runtime::{BlockedEndUser, DeniedBy, KeyError};
use tollgate_protocol::BodyError;
use tollgate_protocol::model_name::ModelNameError;
use tollgate_providers::UpstreamError;
use tollgate_providers::client::TimeoutPhase;
use tollgate_providers::egress::EgressError;
use tollgate_router::FailureClass;
use tracing::Level;

use super::{ClientsideRefusal, GatewayError, GatewayFailure, MockException};
use crate::auth::AuthError;
use crate::request::Endpoint;

/// What one failure must render as.
struct Expect {
    status: u16,
    kind: &'static str,
    /// Anthropic's `type` for the status.
    anthropic: &'static str,
    code: Option<&'static str>,
    param: Option<&'static str>,
    message: String,
    level: Level,
}

fn expect(status: u16, kind: &'static str, anthropic: &'static str, message: &str) -> Expect {
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
    fn code(mut self, c: &'static str) -> Self {
        self.code = Some(c);
        self
    }
    fn param(mut self, p: &'static str) -> Self {
        self.param = Some(p);
        self
    }
    fn level(mut self, l: Level) -> Self {
        self.level = l;
        self
    }
}

fn bad(message: &str) -> Expect {
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
async fn check(make: impl Fn() -> GatewayFailure<'static>, x: Expect) {
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

#[tokio::test]
async fn authentication() {
    check(
        || GatewayFailure::Auth(AuthError::Missing),
        expect(
            401,
            "authentication_error",
            "authentication_error",
            "Authentication Error, No api key passed in.",
        )
        .code("invalid_api_key"),
    )
    .await;
    check(
        || GatewayFailure::Auth(AuthError::Key(KeyError::Blocked)),
        expect(
            401,
            "auth_error",
            "authentication_error",
            "Authentication Error, Key is blocked. Update via `/key/unblock` if you're an admin.",
        )
        .code("401"),
    )
    .await;
    check(
        || GatewayFailure::Auth(AuthError::Key(KeyError::NotFound)),
        expect(
            401,
            "token_not_found_in_db",
            "authentication_error",
            "Authentication Error, Invalid API key provided.",
        )
        .code("401"),
    )
    .await;
}

#[tokio::test]
async fn request_bodies() {
    check(
        || GatewayFailure::Body(BodyError::Missing("max_tokens")),
        bad("max_tokens: Field required")
            .code("missing_required_parameter")
            .param("max_tokens"),
    )
    .await;
    check(
        || GatewayFailure::Body(BodyError::Missing("model")),
        bad("Missing required parameter: 'model'.")
            .code("missing_required_parameter")
            .param("model"),
    )
    .await;
    let wrong = || BodyError::WrongType {
        field: "api_key",
        expected: "a string",
    };
    check(
        move || GatewayFailure::Body(wrong()),
        bad("Invalid type for 'api_key': expected a string.")
            .code("invalid_type")
            .param("api_key"),
    )
    .await;
    check(
        || GatewayFailure::Body(BodyError::EmptyArray("messages")),
        bad("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
            .code("empty_array")
            .param("messages"),
    )
    .await;
    check(
        || GatewayFailure::Body(BodyError::NotAnObject),
        bad("The request body must be a JSON object."),
    )
    .await;
    check(
        || GatewayFailure::InvalidJson(serde_json::from_str::<Value>("{").unwrap_err()),
        bad("Invalid JSON: EOF while parsing an object at line 1 column 1"),
    )
    .await;
    check(
        || GatewayFailure::UnreadableBody {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            detail: "length limit exceeded",
            limit_bytes: 4 * 1024 * 1024,
        },
        expect(
            413,
            "invalid_request_error",
            "request_too_large",
            "The request body is larger than this gateway accepts (4 MiB; general_settings.max_request_size_mb).",
        ),
    )
    .await;
    check(
        || GatewayFailure::UnreadableBody {
            status: StatusCode::BAD_REQUEST,
            detail: "connection reset",
            limit_bytes: 1024,
        },
        bad("Could not read the request body: connection reset"),
    )
    .await;
}

#[tokio::test]
async fn names_and_headers() {
    check(
        || GatewayFailure::InvalidModelName {
            name: "a/../b\n",
            param: "fallbacks",
            why: ModelNameError::DotSegment,
        },
        bad("Invalid model name 'a/../b\\n' in `fallbacks`: the model name has a `.` or `..` path segment. Model names are `/`-separated segments without `.`, `..` or empty segments, backslashes, control characters or percent-encoded bytes.")
            .code("invalid_model_name")
            .param("fallbacks"),
    )
    .await;
    static RETRIES: HeaderName = HeaderName::from_static("x-litellm-num-retries");
    check(
        || GatewayFailure::InvalidHeader { name: &RETRIES },
        bad("The x-litellm-num-retries header must be a non-negative integer.")
            .code("invalid_header"),
    )
    .await;
}

/// A refusal, its `param` and its message.
type ClientsideCase = (
    fn() -> ClientsideRefusal<'static>,
    &'static str,
    &'static str,
);

#[tokio::test]
async fn clientside_refusals() {
    let cases: [ClientsideCase; 7] = [
        (
            || ClientsideRefusal::ConflictingBase,
            "api_base",
            "`api_base` and `base_url` name different URLs: send one of them.",
        ),
        (
            || ClientsideRefusal::NotListed {
                field: "api_key",
                group: "gpt",
            },
            "api_key",
            "`api_key` is not allowed in the request body for model group 'gpt': its deployment does not list it in litellm_params.configurable_clientside_auth_params.",
        ),
        (
            || ClientsideRefusal::NotApplied {
                field: "organization",
                provider: "openai",
            },
            "organization",
            "`organization` is listed in configurable_clientside_auth_params, but Tollgate applies no client `organization` for provider 'openai': only api_base, base_url, api_key are taken from a request.",
        ),
        (
            || ClientsideRefusal::BaseNeedsKey { field: "base_url" },
            "base_url",
            "`base_url` needs the client's own `api_key` in the request body: the deployment's key is never sent to a host the client chose.",
        ),
        (
            || ClientsideRefusal::BadBase {
                field: "api_base",
                why: EgressError::NotAUrl,
            },
            "api_base",
            "`api_base` must be an absolute https:// URL with a host.",
        ),
        (
            || ClientsideRefusal::KeyNotHeader,
            "api_key",
            "`api_key` cannot be sent as an HTTP header value.",
        ),
        (
            || ClientsideRefusal::Nested {
                nest: "metadata",
                field: "api_key",
            },
            "metadata.api_key",
            "`metadata.api_key` is not allowed in the request body: client credentials and upstreams are taken only at the top level, and only where the deployment lists them in litellm_params.configurable_clientside_auth_params.",
        ),
    ];
    for (make, param, message) in cases {
        check(
            move || GatewayFailure::Clientside(make()),
            bad(message)
                .code("clientside_param_not_allowed")
                .param(param),
        )
        .await;
    }
}

#[tokio::test]
async fn governance() {
    check(
        || GatewayFailure::BlockedEndUser(BlockedEndUser("u-1".to_owned())),
        bad("Blocked user: end user u-1 is blocked. Unblock via `/customer/unblock`."),
    )
    .await;
    check(
        || GatewayFailure::ModelAccessDenied { by: DeniedBy::Team, requested: "gpt-4o" },
        expect(
            403,
            "team_model_access_denied",
            "permission_error",
            "The requested model 'gpt-4o' is not available for this API key, or the model name is invalid. Call `/v1/models` to view the models available to your key.",
        )
        .code("403")
        .param("model"),
    )
    .await;
    let budget = || Rejection {
        status: 422,
        error_type: "budget_exceeded",
        message: "Budget has been exceeded! Current cost: 2.0, Max budget: 1.0".to_owned(),
        scope: None,
        reason: RejectReason::Budget {
            current_cost: 2.0,
            max_budget: 1.0,
        },
        retry_after_s: None,
        headers: Vec::new(),
    };
    check(
        move || GatewayFailure::Rejected(budget()),
        expect(
            422,
            "budget_exceeded",
            "invalid_request_error",
            "Budget has been exceeded! Current cost: 2.0, Max budget: 1.0",
        )
        .code("422"),
    )
    .await;
}

#[test]
fn rejection_headers_are_kept_and_bad_ones_dropped() {
    let r = Rejection {
        status: 429,
        error_type: "rate_limit_error",
        message: "limit".to_owned(),
        scope: None,
        reason: RejectReason::Requests { limit: 1 },
        retry_after_s: Some(3),
        headers: vec![
            ("retry-after".to_owned(), "3".to_owned()),
            ("bad header".to_owned(), "x".to_owned()),
            ("x-ratelimit-remaining-requests".to_owned(), "0".to_owned()),
        ],
    };
    let e = GatewayError::from(GatewayFailure::Rejected(r));
    let h: Vec<_> = e
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
        .collect();
    assert_eq!(
        h,
        [
            ("retry-after", "3"),
            ("x-ratelimit-remaining-requests", "0")
        ]
    );
    assert_eq!(
        (e.envelope.status, e.envelope.code.as_deref()),
        (429, Some("429"))
    );
}

#[tokio::test]
async fn routing() {
    check(
        || GatewayFailure::ModelNotFound { model: Cow::Borrowed("nope"), available: vec!["a".into(), "b".into()] },
        expect(404, "invalid_request_error", "not_found_error", "The model `nope` does not exist or you do not have access to it. Models available: a, b.")
            .code("model_not_found")
            .param("model"),
    )
    .await;
    check(
        || GatewayFailure::route(tollgate_router::RouteError::ModelNotFound("x".into()), Vec::new),
        expect(404, "invalid_request_error", "not_found_error", "The model `x` does not exist or you do not have access to it. Models available: none are configured.")
            .code("model_not_found")
            .param("model"),
    )
    .await;
    check(
        || GatewayFailure::UnknownModelId { id: "m" },
        expect(
            404,
            "invalid_request_error",
            "not_found_error",
            "The model `m` does not exist or you do not have access to it.",
        )
        .code("model_not_found")
        .param("model"),
    )
    .await;
    check(
        || GatewayFailure::NoDeployments {
            group: Cow::Borrowed("g"),
            retry_after_secs: 7,
        },
        expect(
            429,
            "rate_limit_error",
            "rate_limit_error",
            "No deployments available for selected model=g. Try again in 7 s.",
        ),
    )
    .await;
    let e = GatewayError::from(GatewayFailure::route(
        tollgate_router::RouteError::NoDeployments("g".into()),
        || unreachable!("the model list is built only for an unknown model"),
    ));
    assert_eq!(e.envelope.status, 429);
    assert_eq!(e.headers.len(), 1);
    assert_eq!(
        (e.headers[0].0.as_str(), e.headers[0].1.to_str().unwrap()),
        ("retry-after", "1")
    );
}

#[tokio::test]
async fn mocks_and_simulations() {
    assert_eq!(
        MockException::named("litellm.RateLimitError"),
        Some(MockException::RateLimit)
    );
    assert_eq!(MockException::named("hello"), None);
    assert_eq!(MockException::RateLimit.class(), FailureClass::RateLimit);
    assert_eq!(
        MockException::InternalServer.class(),
        FailureClass::ServerError
    );
    assert_eq!(
        MockException::ContextWindowExceeded.class(),
        FailureClass::ContextWindowExceeded
    );
    check(
        || GatewayFailure::Mock(MockException::RateLimit),
        expect(
            429,
            "rate_limit_error",
            "rate_limit_error",
            "litellm.RateLimitError: this is a mock rate limit error",
        ),
    )
    .await;
    check(
        || GatewayFailure::Mock(MockException::InternalServer),
        expect(
            500,
            "server_error",
            "api_error",
            "litellm.InternalServerError: this is a mock internal server error",
        ),
    )
    .await;
    check(
        || GatewayFailure::Mock(MockException::ContextWindowExceeded),
        bad("litellm.ContextWindowExceededError: this is a mock context window exceeded error")
            .code("context_length_exceeded"),
    )
    .await;
    let sim = |class| move || GatewayFailure::Simulated { class, group: "g" };
    check(
        sim(FailureClass::ContextWindowExceeded),
        bad("litellm.ContextWindowExceededError: This is a mock exception for model=g, to trigger a fallback.")
            .code("context_length_exceeded"),
    )
    .await;
    check(
        sim(FailureClass::ContentPolicy),
        bad("litellm.ContentPolicyViolationError: This is a mock exception for model=g, to trigger a fallback.")
            .code("content_policy_violation"),
    )
    .await;
    check(
        sim(FailureClass::ServerError),
        expect(500, "server_error", "api_error", "litellm.InternalServerError: This is a mock exception for model=g, to trigger a fallback."),
    )
    .await;
}

#[tokio::test]
async fn upstream_transport() {
    static FIRST_BYTE: UpstreamError = UpstreamError::Timeout {
        phase: TimeoutPhase::FirstByte,
        limit_ms: 1500,
    };
    static IDLE: UpstreamError = UpstreamError::Timeout {
        phase: TimeoutPhase::Idle,
        limit_ms: 20,
    };
    static LARGE: UpstreamError = UpstreamError::TooLarge { limit: 10 };
    let up = |error: &'static UpstreamError, request_limit| {
        move || GatewayFailure::Upstream {
            error,
            request_limit,
            deployment: Some("d1"),
        }
    };
    check(
        up(&FIRST_BYTE, true),
        expect(
            504,
            "timeout",
            "timeout_error",
            "The upstream did not start answering within 1500 ms (the request's timeout).",
        )
        .code("upstream_timeout")
        .level(Level::WARN),
    )
    .await;
    check(
        up(&IDLE, false),
        expect(
            504,
            "timeout",
            "timeout_error",
            "The upstream sent nothing for 20 ms (the deployment's timeout).",
        )
        .code("upstream_timeout")
        .level(Level::WARN),
    )
    .await;
    check(
        up(&LARGE, false),
        expect(
            502,
            "server_error",
            "api_error",
            "the upstream response exceeded 10 bytes",
        )
        .code("upstream_response_too_large")
        .level(Level::WARN),
    )
    .await;
    let refused = UpstreamError::Connect("connection refused".into());
    let (e, class) = super::upstream_failure(&refused, "d1", false);
    assert_eq!(class, FailureClass::Connection);
    assert_eq!(e.envelope.status, 502);
    assert_eq!(e.envelope.code.as_deref(), Some("upstream_unreachable"));
    assert_eq!(
        e.envelope.message,
        "could not reach the upstream: connection refused"
    );
    let (e, class) = super::upstream_failure(&FIRST_BYTE, "d1", true);
    assert_eq!(
        (e.envelope.status, class),
        (504, FailureClass::ClientTimeout)
    );
    assert_eq!(
        super::upstream_error_class(&FIRST_BYTE, false),
        FailureClass::Timeout
    );
    assert_eq!(
        super::upstream_error_class(&LARGE, false),
        FailureClass::ServerError
    );
}

#[tokio::test]
async fn routes_and_health() {
    check(
        || GatewayFailure::HealthNeedsMasterKey,
        expect(
            403,
            "auth_error",
            "permission_error",
            "Only the master key may run health checks: each one calls every deployment.",
        ),
    )
    .await;
    check(
        || GatewayFailure::NoHealthTarget { model: "m" },
        expect(
            404,
            "invalid_request_error",
            "not_found_error",
            "No model group `m` with a deployment to check.",
        )
        .code("model_not_found"),
    )
    .await;
    static GET: Method = Method::GET;
    check(
        || GatewayFailure::MethodNotAllowed {
            method: &GET,
            path: "/v1/chat/completions",
        },
        expect(
            405,
            "invalid_request_error",
            "invalid_request_error",
            "Method GET is not allowed on /v1/chat/completions",
        ),
    )
    .await;
    check(
        || GatewayFailure::UnknownRoute { path: "/nope" },
        expect(
            404,
            "invalid_request_error",
            "not_found_error",
            "Unknown route: /nope",
        ),
    )
    .await;
    check(
        || GatewayFailure::ManagementApiOff { path: "/key/generate" },
        bad("/key/generate is part of the management API, which runs only with a master key: set general_settings.master_key (or LITELLM_MASTER_KEY) to turn on virtual keys, teams, budgets and spend tracking (stored in an embedded SQLite file, or in Postgres with general_settings.database_url)")
            .code("management_api_off"),
    )
    .await;
}

#[test]
fn upstream_error_bodies_are_classified() {
    let mut h = http::HeaderMap::new();
    h.insert("retry-after", "2".parse().unwrap());
    let body = br#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#;
    let (class, retry) = super::classify(StatusCode::TOO_MANY_REQUESTS, &h, body);
    assert_eq!(class, FailureClass::RateLimit);
    assert_eq!(retry, Some(std::time::Duration::from_secs(2)));
    h.insert("retry-after-ms", "250".parse().unwrap());
    let (_, retry) = super::classify(StatusCode::TOO_MANY_REQUESTS, &h, body);
    assert_eq!(retry, Some(std::time::Duration::from_millis(250)));
}

#[test]
fn management_routes_keep_their_own_auth_type() {
    let f = GatewayFailure::management_auth(AuthError::Invalid);
    assert_eq!((f.status, f.error_type), (401, "auth_error"));
    assert_eq!(f.message, "Authentication Error, Invalid API key provided.");
    let f = GatewayFailure::management_auth(AuthError::Key(KeyError::Blocked));
    assert_eq!((f.status, f.error_type), (401, "auth_error"));
    let f = GatewayFailure::management_auth(AuthError::Key(KeyError::NotFound));
    assert_eq!(f.error_type, "token_not_found_in_db");
}
