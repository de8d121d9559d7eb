//! What a Responses API follow-up needs (`previous_response_id`) and what
//! `GET /v1/responses/{id}` returns, for responses the gateway produced by translation.
//!
//! [`ResponseStore`] is the seam: the in-process [`MemoryResponseStore`] serves one replica;
//! a shared backend (Redis, with governance's shared state) implements the same trait for
//! several. Entries are bounded in number and expire after a TTL, so a busy gateway cannot
//! grow memory without bound. Each entry keeps its creator, and is served only to the callers
//! [`crate::response_owner`] admits ([`ResponseStore::get_for`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use tollgate_translate::responses_to_chat;

use crate::auth::Identity;
use crate::response_owner::ResponseOwner;

/// One stored response.
#[derive(Debug, Clone)]
pub struct StoredResponse {
    /// The Response object as the client received it; `Value::Null` for a response the
    /// upstream itself stores (passthrough), which is fetched from `deployment_id`.
    pub response: Value,
    /// The deployment that produced it (retrieval of passthrough responses goes there).
    pub deployment_id: String,
    /// The chat conversation a follow-up continues from
    /// (`tollgate_translate::responses_to_chat::history_after`).
    pub history: Vec<Value>,
    /// The model group the response came from (a follow-up may name another).
    pub model_group: String,
    /// Who created it: who else may read or continue it.
    pub owner: ResponseOwner,
}

/// Storage for translated responses.
pub trait ResponseStore: Send + Sync + std::fmt::Debug {
    /// Stores `entry` under `id` (a `resp_...` id), replacing any earlier one.
    fn put(&self, id: String, entry: StoredResponse);
    /// The entry for `id`, if present and not expired.
    fn get(&self, id: &str) -> Option<StoredResponse>;

    /// The entry for `id` if `identity` may read it ([`ResponseOwner::admits`]): `None` for
    /// another caller's entry exactly as for an unknown id.
    fn get_for(&self, id: &str, identity: &Identity) -> Option<StoredResponse> {
        self.get(id).filter(|e| e.owner.admits(identity))
    }
}

/// Remembers which deployment stores a passthrough Response, and who created it, for
/// `GET /v1/responses/{id}` and follow-ups.
pub fn remember_upstream_response(
    store: &dyn ResponseStore,
    id: &str,
    deployment_id: String,
    model_group: String,
    owner: ResponseOwner,
) {
    store.put(
        id.to_owned(),
        StoredResponse {
            response: Value::Null,
            deployment_id,
            history: Vec::new(),
            model_group,
            owner,
        },
    );
}

/// Keeps a translated Response, the conversation a follow-up continues from and its creator.
pub fn store_response(
    store: &dyn ResponseStore,
    history: &[Value],
    request: &Value,
    response: &Value,
    model_group: String,
    owner: ResponseOwner,
) {
    let Some(id) = response.get("id").and_then(Value::as_str) else {
        return;
    };
    match responses_to_chat::history_after(history, request, response) {
        Ok(h) => store.put(
            id.to_owned(),
            StoredResponse {
                response: response.clone(),
                deployment_id: String::new(),
                history: h,
                model_group,
                owner,
            },
        ),
        Err(e) => tracing::debug!(error = %e, "response not stored for follow-ups"),
    }
}

/// In-process store: at most `capacity` entries (oldest evicted first), each kept for `ttl`.
#[derive(Debug)]
pub struct MemoryResponseStore {
    inner: Mutex<Inner>,
    capacity: usize,
    ttl: Duration,
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<String, (Instant, StoredResponse)>,
    order: VecDeque<(Instant, String)>,
}

/// Default bound: 10,000 responses.
pub const DEFAULT_CAPACITY: usize = 10_000;
/// Default TTL: 1 hour.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

impl MemoryResponseStore {
    /// A store bounded by `capacity` entries and `ttl`.
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            capacity: capacity.max(1),
            ttl,
        }
    }
}

impl Default for MemoryResponseStore {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY, DEFAULT_TTL)
    }
}

impl ResponseStore for MemoryResponseStore {
    fn put(&self, id: String, entry: StoredResponse) {
        let now = Instant::now();
        let Ok(mut g) = self.inner.lock() else { return };
        // Expire from the front, then evict the oldest while over capacity.
        while let Some((t, _)) = g.order.front() {
            let expired = now.duration_since(*t) > self.ttl;
            if !expired && g.map.len() < self.capacity {
                break;
            }
            if let Some((t, k)) = g.order.pop_front()
                && g.map.get(&k).is_some_and(|(at, _)| *at == t)
            {
                g.map.remove(&k);
            }
        }
        g.order.push_back((now, id.clone()));
        g.map.insert(id, (now, entry));
    }

    fn get(&self, id: &str) -> Option<StoredResponse> {
        let g = self.inner.lock().ok()?;
        let (at, e) = g.map.get(id)?;
        (at.elapsed() <= self.ttl).then(|| e.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> StoredResponse {
        StoredResponse {
            response: serde_json::json!({"n": n}),
            deployment_id: "d".into(),
            history: vec![],
            model_group: "g".into(),
            owner: ResponseOwner::Admin,
        }
    }

    #[test]
    fn bounded_by_capacity_oldest_first() {
        let s = MemoryResponseStore::new(2, DEFAULT_TTL);
        s.put("a".into(), entry(1));
        s.put("b".into(), entry(2));
        s.put("c".into(), entry(3));
        assert!(s.get("a").is_none());
        assert_eq!(s.get("b").unwrap().response["n"], 2);
        assert_eq!(s.get("c").unwrap().response["n"], 3);
        // Replacing a key keeps one entry for it.
        s.put("c".into(), entry(4));
        assert_eq!(s.get("c").unwrap().response["n"], 4);
    }

    #[test]
    fn entries_expire() {
        let s = MemoryResponseStore::new(10, Duration::from_millis(20));
        s.put("a".into(), entry(1));
        assert!(s.get("a").is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert!(s.get("a").is_none());
        s.put("b".into(), entry(2));
        assert_eq!(
            s.inner.lock().unwrap().map.len(),
            1,
            "expired entry evicted on put"
        );
    }
}
