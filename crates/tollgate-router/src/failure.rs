//! Failure classes and attempt outcomes.
//!
//! The classes follow LiteLLM's exception types (`RateLimitError`, `Timeout`,
//! `APIConnectionError`, `InternalServerError`, `ContextWindowExceededError`,
//! `ContentPolicyViolationError`, `BadRequestError`, `AuthenticationError`, `NotFoundError`),
//! plus two client-side classes that are never the deployment's fault.

use std::time::Duration;

use crate::context_window::context_window_wording;
use crate::state::CallTiming;

/// Why an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// Upstream 429.
    RateLimit,
    /// Upstream 408, or the gateway's own configured upstream timeout fired.
    Timeout,
    /// Connect error, reset, or a broken response stream.
    Connection,
    /// Upstream 5xx (and any unexpected non-4xx status).
    ServerError,
    /// 400/413/422 saying the prompt is longer than the model's context window.
    ContextWindowExceeded,
    /// 400 refusing the content (OpenAI `content_policy_violation`, Azure content filter).
    ContentPolicy,
    /// Any other 4xx (400, 409, 413, 422, ...).
    BadRequest,
    /// 401 / 403.
    Auth,
    /// 404.
    NotFound,
    /// The client went away before the answer.
    ClientCancelled,
    /// The client's own (shorter) timeout fired, not the deployment's.
    ClientTimeout,
}

/// Message fragments of content-policy refusals, lower case.
const CONTENT_POLICY_MARKERS: &[&str] = &[
    "content_policy_violation",
    "content management policy",
    "content_filter",
    "violates our usage policy",
];

impl FailureClass {
    /// Classifies an upstream HTTP error from its status, provider error `code` (or `type`)
    /// and message. Matching on code and message is ASCII case-insensitive; a 400, 413 or
    /// 422 is a context-window error when it carries a wording of
    /// [`crate::context_window::CONTEXT_WINDOW_WORDINGS`].
    pub fn from_upstream(status: u16, code: Option<&str>, message: &str) -> FailureClass {
        let has = |markers: &[&str]| {
            let code = code.unwrap_or("").to_ascii_lowercase();
            let msg = message.to_ascii_lowercase();
            markers.iter().any(|m| code.contains(m) || msg.contains(m))
        };
        match status {
            429 => FailureClass::RateLimit,
            408 => FailureClass::Timeout,
            401 | 403 => FailureClass::Auth,
            404 => FailureClass::NotFound,
            400 | 413 | 422 if context_window_wording(code, message).is_some() => {
                FailureClass::ContextWindowExceeded
            }
            400 | 422 if has(CONTENT_POLICY_MARKERS) => FailureClass::ContentPolicy,
            400..=499 => FailureClass::BadRequest,
            _ => FailureClass::ServerError,
        }
    }

    /// Retried by default (`num_retries`): 429, 408/timeouts, connection errors, 5xx. Never
    /// another 4xx unless `retry_policy` says so.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            FailureClass::RateLimit
                | FailureClass::Timeout
                | FailureClass::Connection
                | FailureClass::ServerError
        )
    }

    /// Counts towards the deployment's `allowed_fails`: the same set as [`Self::is_retryable`].
    /// Client cancellations and client timeouts never count.
    pub fn counts_for_cooldown(self) -> bool {
        self.is_retryable()
    }

    /// Whether the plan may continue in a fallback group after this failure exhausted a
    /// group: retryable classes, context-window and content-policy errors. Other 4xx end the
    /// plan at once.
    pub fn allows_fallback(self) -> bool {
        self.is_retryable()
            || matches!(
                self,
                FailureClass::ContextWindowExceeded | FailureClass::ContentPolicy
            )
    }

    /// The client's own doing: ends the plan, never recorded against the deployment.
    pub fn is_client_side(self) -> bool {
        matches!(
            self,
            FailureClass::ClientCancelled | FailureClass::ClientTimeout
        )
    }
}

/// What happened to one attempt, as the server reports it to the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The upstream answered successfully.
    Success {
        /// How long it took. A relayed stream's timing is known only at its end: it is empty
        /// here and recorded then, through [`crate::StreamSlot::record_timing`].
        timing: CallTiming,
        /// Prompt tokens the upstream reported (`None` if unknown); they replace the
        /// attempt's prompt estimate in this minute's TPM.
        prompt_tokens: Option<u64>,
        /// Completion tokens the upstream reported (0 if unknown), added to this minute's TPM.
        completion_tokens: u64,
    },
    /// The attempt failed.
    Failure {
        /// The class, e.g. from [`FailureClass::from_upstream`].
        class: FailureClass,
        /// The upstream's `retry-after`, if it sent one.
        retry_after: Option<Duration>,
    },
    /// The client went away; the plan ends and nothing is held against the deployment.
    ClientCancelled,
    /// A failure the request asked for instead of calling the upstream (LiteLLM's
    /// `mock_testing_fallbacks` and its context-window and content-policy variants, raised
    /// before retries in `Router.async_function_with_fallbacks`): no retry and no cooldown;
    /// the fallback chain for `class` is tried next.
    Simulated {
        /// The class whose fallbacks are tested.
        class: FailureClass,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_statuses() {
        use FailureClass::*;
        assert_eq!(FailureClass::from_upstream(429, None, ""), RateLimit);
        assert_eq!(FailureClass::from_upstream(408, None, ""), Timeout);
        assert_eq!(FailureClass::from_upstream(500, None, ""), ServerError);
        assert_eq!(FailureClass::from_upstream(503, None, ""), ServerError);
        assert_eq!(
            FailureClass::from_upstream(529, None, "overloaded"),
            ServerError
        );
        assert_eq!(FailureClass::from_upstream(401, None, ""), Auth);
        assert_eq!(FailureClass::from_upstream(403, None, ""), Auth);
        assert_eq!(FailureClass::from_upstream(404, None, ""), NotFound);
        assert_eq!(FailureClass::from_upstream(422, None, "bad"), BadRequest);
        assert_eq!(
            FailureClass::from_upstream(400, Some("invalid_request_error"), "bad param"),
            BadRequest
        );
        assert_eq!(
            FailureClass::from_upstream(400, Some("context_length_exceeded"), "x"),
            ContextWindowExceeded
        );
        assert_eq!(
            FailureClass::from_upstream(
                400,
                None,
                "This model's Maximum Context Length is 8192 tokens"
            ),
            ContextWindowExceeded
        );
        assert_eq!(
            FailureClass::from_upstream(
                400,
                Some("invalid_request_error"),
                "prompt is too long: 210000 tokens > 200000 maximum"
            ),
            ContextWindowExceeded
        );
        assert_eq!(
            FailureClass::from_upstream(400, Some("content_policy_violation"), "no"),
            ContentPolicy
        );
        // A 429 mentioning tokens stays a rate limit.
        assert_eq!(
            FailureClass::from_upstream(429, None, "too many tokens per minute"),
            RateLimit
        );
    }

    #[test]
    fn retry_and_cooldown_sets() {
        use FailureClass::*;
        for c in [RateLimit, Timeout, Connection, ServerError] {
            assert!(c.is_retryable() && c.counts_for_cooldown() && c.allows_fallback());
        }
        for c in [BadRequest, Auth, NotFound, ClientCancelled, ClientTimeout] {
            assert!(!c.is_retryable() && !c.counts_for_cooldown() && !c.allows_fallback());
        }
        for c in [ContextWindowExceeded, ContentPolicy] {
            assert!(!c.is_retryable() && !c.counts_for_cooldown() && c.allows_fallback());
        }
        assert!(ClientCancelled.is_client_side() && ClientTimeout.is_client_side());
        assert!(!Timeout.is_client_side());
    }
}
