//! One attempt's view of the Responses API's stored state: the conversation a
//! `previous_response_id` continues ([`ResponsesSession::continue_from`]), and what the answer
//! leaves behind for `GET /v1/responses/{id}` and follow-ups — a translated Response with its
//! conversation ([`ResponsesSession::keep_translated`]), or which deployment stores a
//! passthrough one ([`ResponsesSession::remember_upstream`]). Every entry is owned by the
//! caller ([`ResponseOwner::of`]); reads are filtered by [`ResponseOwner::admits`].
//!
//! A stream learns its Response only at its end: [`ResponsesSession::on_upstream_id`] and
//! [`ResponsesSession::on_translated`] hand the relay a hook that does the same there.

use std::sync::Arc;

use serde_json::Value;

use crate::auth::Identity;
use crate::errors::GatewayError;
use crate::relay::handlers::OnResponse;
use crate::relay::responses_passthrough::OnId;
use crate::response_owner::{ResponseOwner, previous_not_found};
use crate::response_store::{ResponseStore, remember_upstream_response, store_response};

/// The stored state one Responses API attempt reads and writes (see the module docs).
pub struct ResponsesSession<'a> {
    store: &'a Arc<dyn ResponseStore>,
    identity: &'a Identity,
    /// The model group answering (a follow-up may name another).
    group: &'a str,
    /// The conversation `previous_response_id` continues; empty for a new one.
    history: Vec<Value>,
}

impl<'a> ResponsesSession<'a> {
    /// A session of `identity` on `store`, answered by `group`.
    pub fn new(store: &'a Arc<dyn ResponseStore>, identity: &'a Identity, group: &'a str) -> Self {
        Self {
            store,
            identity,
            group,
            history: Vec::new(),
        }
    }

    /// Loads the conversation the request's `previous_response_id` (a string) continues; a
    /// request without one starts a new conversation.
    ///
    /// Errors: 404 `previous_response_not_found` ([`previous_not_found`]) for an id that is
    /// unknown, expired, or another caller's.
    #[expect(clippy::result_large_err, reason = "the refusal path is cold")]
    pub fn continue_from(&mut self, request: &Value) -> Result<(), GatewayError> {
        if let Some(prev) = request.get("previous_response_id").and_then(Value::as_str) {
            self.history = self
                .store
                .get_for(prev, self.identity)
                .ok_or_else(|| previous_not_found(prev))?
                .history;
        }
        Ok(())
    }

    /// The conversation so far (chat messages), for the translation.
    pub fn history(&self) -> &[Value] {
        &self.history
    }

    /// Remembers that deployment `deployment_id` stores the passthrough Response `id`.
    pub fn remember_upstream(&self, id: &str, deployment_id: &str) {
        remember_upstream_response(
            self.store.as_ref(),
            id,
            deployment_id.to_owned(),
            self.group.to_owned(),
            ResponseOwner::of(self.identity),
        );
    }

    /// Keeps the translated `response` to `request`, with the conversation after it.
    pub fn keep_translated(&self, request: &Value, response: &Value) {
        store_response(
            self.store.as_ref(),
            &self.history,
            request,
            response,
            self.group.to_owned(),
            ResponseOwner::of(self.identity),
        );
    }

    /// [`Self::remember_upstream`] for a passthrough stream, run when its id is seen.
    pub fn on_upstream_id(&self, deployment_id: &str) -> OnId {
        let store = Arc::clone(self.store);
        let (dep_id, group) = (deployment_id.to_owned(), self.group.to_owned());
        let owner = ResponseOwner::of(self.identity);
        Box::new(move |id| {
            remember_upstream_response(store.as_ref(), id, dep_id, group, owner);
        })
    }

    /// [`Self::keep_translated`] for a translated stream, run with its final Response.
    pub fn on_translated(self, request: Arc<Value>) -> OnResponse {
        let store = Arc::clone(self.store);
        let (group, owner) = (self.group.to_owned(), ResponseOwner::of(self.identity));
        let history = self.history;
        Box::new(move |resp| {
            store_response(store.as_ref(), &history, &request, resp, group, owner);
        })
    }
}
