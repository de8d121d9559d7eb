//! Routing, mocks, upstream transport failures, and the non-inference routes.

use std::borrow::Cow;

use http::{Method, StatusCode};
use tollgate_providers::UpstreamError;
use tollgate_providers::client::TimeoutPhase;
use tollgate_router::FailureClass;
use tracing::Level;

use super::{bad, check, expect};
use crate::errors::{GatewayError, GatewayFailure, MockException};
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
    let (e, class) = crate::errors::upstream_failure(&refused, "d1", false);
    assert_eq!(class, FailureClass::Connection);
    assert_eq!(e.envelope.status, 502);
    assert_eq!(e.envelope.code.as_deref(), Some("upstream_unreachable"));
    assert_eq!(
        e.envelope.message,
        "could not reach the upstream: connection refused"
    );
    let (e, class) = crate::errors::upstream_failure(&FIRST_BYTE, "d1", true);
    assert_eq!(
        (e.envelope.status, class),
        (504, FailureClass::ClientTimeout)
    );
    assert_eq!(
        crate::errors::upstream_error_class(&FIRST_BYTE, false),
        FailureClass::Timeout
    );
    assert_eq!(
        crate::errors::upstream_error_class(&LARGE, false),
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
    check(
        || GatewayFailure::PreviousResponseNotFound { id: "resp_1" },
        expect(
            404,
            "invalid_request_error",
            "not_found_error",
            "Previous response with id 'resp_1' not found.",
        )
        .code("previous_response_not_found")
        .param("previous_response_id"),
    )
    .await;
    check(
        || GatewayFailure::ResponseNotFound { id: "resp_2" },
        expect(
            404,
            "invalid_request_error",
            "not_found_error",
            "Response with id 'resp_2' not found.",
        )
        .param("response_id"),
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
    let (class, retry) = crate::errors::classify(StatusCode::TOO_MANY_REQUESTS, &h, body);
    assert_eq!(class, FailureClass::RateLimit);
    assert_eq!(retry, Some(std::time::Duration::from_secs(2)));
    h.insert("retry-after-ms", "250".parse().unwrap());
    let (_, retry) = crate::errors::classify(StatusCode::TOO_MANY_REQUESTS, &h, body);
    assert_eq!(retry, Some(std::time::Duration::from_millis(250)));
}
