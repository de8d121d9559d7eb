//! Recording of every request the mock receives (the "observation log").
//!
//! Each request gets one [`Observation`], created when the request head arrives and completed
//! when the response body has been handed to the connection in full, or when the body (or the
//! pending handler) is dropped early because the client went away. The log is bounded: at most
//! `max_records` entries are kept and the oldest are dropped first, so a benchmark cannot grow
//! the mock's memory without bound.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Wall-clock time as unix epoch milliseconds (fractional), the unit of every `*_at` field.
pub fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// One recorded request and what the mock did with it.
///
/// Serialized as one element of `GET /__observations` → `{"requests":[...]}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Observation {
    /// Request counter (starts at 1, also used in generated ids such as `chatcmpl-mock-7`).
    pub seq: u64,
    /// When the request head was received, unix epoch ms.
    pub received_at: f64,
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Full request path as received, e.g. `/d/east/v1/chat/completions`.
    pub path: String,
    /// Route the mock matched after stripping prefixes, e.g. `/chat/completions` (`null` if none).
    pub route: Option<String>,
    /// Deployment name from a `/d/{deployment}/...` (or Azure `/openai/deployments/{d}/...`) prefix.
    pub deployment: Option<String>,
    /// Raw query string without `?`, if any.
    pub query: Option<String>,
    /// All request headers, names lowercase; repeated headers are joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// Request body: parsed JSON when it parses, otherwise the body as a (lossy UTF-8) string;
    /// `null` for an empty body.
    pub body: serde_json::Value,
    /// `model` field of the JSON body, if any.
    pub model: Option<String>,
    /// Response status sent (`null` while the handler had not produced a response).
    pub status: Option<u16>,
    /// Response body bytes handed to the connection.
    pub bytes_sent: u64,
    /// When the response head was produced, unix epoch ms.
    pub response_started_at: Option<f64>,
    /// When the last body byte was handed to the connection, unix epoch ms.
    pub finished_at: Option<f64>,
    /// True when the client went away before the response was complete.
    pub client_disconnected: bool,
    /// When the mock noticed the disconnect (the body stream or pending handler was dropped), unix epoch ms.
    pub client_disconnected_at: Option<f64>,
    /// True when the mock itself closed the connection (`drop_connection`, `drop_after_chunks`);
    /// `finished_at` is then the time it did so.
    #[serde(default)]
    pub dropped_by_mock: bool,
}

type Slot = Arc<Mutex<Observation>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding this lock cannot leave an Observation half-written in a way that
    // matters to a test, so a poisoned lock is simply taken over.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bounded, shared observation log.
#[derive(Debug)]
pub struct Recorder {
    enabled: bool,
    max_records: usize,
    entries: Mutex<VecDeque<Slot>>,
}

impl Recorder {
    /// New log keeping at most `max_records` entries (0 or `enabled == false` records nothing).
    pub fn new(enabled: bool, max_records: usize) -> Self {
        Self {
            enabled: enabled && max_records > 0,
            max_records,
            entries: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether requests are being recorded.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Append a new observation and return a guard that completes it.
    pub fn begin(&self, obs: Observation) -> RequestGuard {
        if !self.enabled {
            return RequestGuard::disabled();
        }
        let slot = Arc::new(Mutex::new(obs));
        {
            let mut entries = lock(&self.entries);
            while entries.len() >= self.max_records {
                entries.pop_front();
            }
            entries.push_back(slot.clone());
        }
        RequestGuard {
            slot: Some(slot),
            done: false,
        }
    }

    /// Copy of all records, oldest first; with `drain` the log is emptied.
    pub fn snapshot(&self, drain: bool) -> Vec<Observation> {
        let slots: Vec<Slot> = {
            let mut entries = lock(&self.entries);
            if drain {
                entries.drain(..).collect()
            } else {
                entries.iter().cloned().collect()
            }
        };
        slots.iter().map(|s| lock(s).clone()).collect()
    }

    /// Records matching `pred`, oldest first; with `drain` those (and only those) are removed.
    pub fn take_matching(
        &self,
        drain: bool,
        pred: impl Fn(&Observation) -> bool,
    ) -> Vec<Observation> {
        let mut entries = lock(&self.entries);
        let mut out = Vec::new();
        if drain {
            entries.retain(|slot| {
                let o = lock(slot);
                if pred(&o) {
                    out.push(o.clone());
                    false
                } else {
                    true
                }
            });
        } else {
            out.extend(
                entries
                    .iter()
                    .map(|s| lock(s))
                    .filter(|o| pred(o))
                    .map(|o| o.clone()),
            );
        }
        out
    }

    /// Number of records currently held.
    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    /// True when no records are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Completes one [`Observation`]. Lives in the handler future until the response exists, then in
/// the response body. If it is dropped before [`RequestGuard::finish`] ran, the client went away:
/// the drop time is recorded as `client_disconnected_at`.
#[derive(Debug)]
pub struct RequestGuard {
    slot: Option<Slot>,
    done: bool,
}

impl RequestGuard {
    /// A guard that records nothing (recording disabled).
    pub fn disabled() -> Self {
        Self {
            slot: None,
            done: true,
        }
    }

    fn with(&self, f: impl FnOnce(&mut Observation)) {
        if let Some(slot) = &self.slot {
            f(&mut lock(slot));
        }
    }

    /// Record the response status and the time the response head was produced.
    pub fn response_started(&self, status: u16) {
        self.with(|o| {
            o.status = Some(status);
            o.response_started_at = Some(now_ms());
        });
    }

    /// Count `n` body bytes handed to the connection.
    pub fn add_bytes(&self, n: usize) {
        self.with(|o| o.bytes_sent += n as u64);
    }

    /// Mark that the mock closed the connection on purpose (also completes the record).
    pub fn dropped_by_mock(&mut self) {
        self.with(|o| o.dropped_by_mock = true);
        self.finish();
    }

    /// Mark the response complete.
    pub fn finish(&mut self) {
        if !self.done {
            self.done = true;
            self.with(|o| o.finished_at = Some(now_ms()));
        }
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if !self.done {
            self.with(|o| {
                o.client_disconnected = true;
                o.client_disconnected_at = Some(now_ms());
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(seq: u64) -> Observation {
        Observation {
            seq,
            received_at: now_ms(),
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            route: Some("/chat/completions".into()),
            deployment: None,
            query: None,
            headers: BTreeMap::new(),
            body: serde_json::Value::Null,
            model: None,
            status: None,
            bytes_sent: 0,
            response_started_at: None,
            finished_at: None,
            client_disconnected: false,
            client_disconnected_at: None,
            dropped_by_mock: false,
        }
    }

    #[test]
    fn bounded_oldest_dropped() {
        let r = Recorder::new(true, 3);
        for i in 1..=5 {
            let mut g = r.begin(obs(i));
            g.finish();
        }
        let seqs: Vec<u64> = r.snapshot(false).iter().map(|o| o.seq).collect();
        assert_eq!(seqs, vec![3, 4, 5]);
        assert_eq!(r.snapshot(true).len(), 3);
        assert!(r.is_empty());
    }

    #[test]
    fn drop_without_finish_is_disconnect() {
        let r = Recorder::new(true, 10);
        {
            let g = r.begin(obs(1));
            g.response_started(200);
            g.add_bytes(10);
        }
        let mut g2 = r.begin(obs(2));
        g2.add_bytes(5);
        g2.finish();
        drop(g2);
        let all = r.snapshot(false);
        assert!(all[0].client_disconnected);
        assert!(all[0].client_disconnected_at.is_some());
        assert_eq!(all[0].bytes_sent, 10);
        assert_eq!(all[0].status, Some(200));
        assert!(!all[1].client_disconnected);
        assert!(all[1].finished_at.is_some());
        assert_eq!(all[1].bytes_sent, 5);
    }

    #[test]
    fn filtered_drain_keeps_the_rest() {
        let r = Recorder::new(true, 10);
        for i in 1..=4 {
            let mut o = obs(i);
            o.deployment = Some(if i % 2 == 0 { "east" } else { "west" }.into());
            r.begin(o).finish();
        }
        let east = r.take_matching(true, |o| o.deployment.as_deref() == Some("east"));
        assert_eq!(east.iter().map(|o| o.seq).collect::<Vec<_>>(), vec![2, 4]);
        assert_eq!(
            r.snapshot(false).iter().map(|o| o.seq).collect::<Vec<_>>(),
            vec![1, 3]
        );
    }

    #[test]
    fn disabled_records_nothing() {
        let r = Recorder::new(false, 10);
        drop(r.begin(obs(1)));
        assert!(r.is_empty());
    }
}
