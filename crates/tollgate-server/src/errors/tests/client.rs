//! Refusals of the client's own request: credentials, bodies, names, client-side
//! credentials, governance.

use http::{HeaderName, StatusCode};
use serde_json::Value;
use tollgate_governance::admission::{RejectReason, Rejection};
use tollgate_governance::runtime::{BlockedEndUser, DeniedBy, KeyError};
use tollgate_protocol::BodyError;
use tollgate_protocol::model_name::ModelNameError;
use tollgate_providers::egress::EgressError;

use super::{bad, check, expect};
use crate::auth::AuthError;
use crate::errors::{ClientsideRefusal, GatewayError, GatewayFailure};
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
        || GatewayFailure::Auth(AuthError::Key(KeyError::NotFound("9f86d0".into()))),
        expect(
            401,
            "token_not_found_in_db",
            "authentication_error",
            "Authentication Error, Invalid proxy server token passed. key=9f86d0, not found in db. \
             Create key via `/key/generate` call.",
        )
        .code("401")
        .param("key"),
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

#[test]
fn management_routes_keep_their_own_auth_type() {
    let f = GatewayFailure::management_auth(AuthError::Invalid);
    assert_eq!((f.status, f.error_type), (401, "auth_error"));
    assert_eq!(f.message, "Authentication Error, Invalid API key provided.");
    let f = GatewayFailure::management_auth(AuthError::Key(KeyError::Blocked));
    assert_eq!((f.status, f.error_type), (401, "auth_error"));
    let f = GatewayFailure::management_auth(AuthError::Key(KeyError::NotFound("9f86d0".into())));
    assert_eq!(f.error_type, "token_not_found_in_db");
}
