//! Shared state of one mock instance.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::MockConfig;
use crate::behavior::Scripts;
use crate::fixtures::Fixtures;
use crate::observe::Recorder;

/// Everything the request handler needs, behind one `Arc`.
pub(crate) struct State {
    pub config: MockConfig,
    pub fixtures: Fixtures,
    pub recorder: Recorder,
    pub scripts: Scripts,
    seq: AtomicU64,
    flaky: Mutex<HashMap<String, u64>>,
}

impl State {
    pub fn new(config: MockConfig, fixtures: Fixtures) -> Self {
        let recorder = Recorder::new(config.record, config.max_records);
        Self {
            config,
            fixtures,
            recorder,
            scripts: Scripts::default(),
            seq: AtomicU64::new(0),
            flaky: Mutex::new(HashMap::new()),
        }
    }

    /// Next request sequence number (1-based).
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Requests received so far.
    pub fn request_count(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    /// 1-based count of requests seen for a `*-flaky` model.
    pub fn flaky_count(&self, model: &str) -> u64 {
        let mut m = self.flaky.lock().unwrap_or_else(|e| e.into_inner());
        let c = m.entry(model.to_owned()).or_insert(0);
        *c += 1;
        *c
    }
}
