//! `tollgate-mock`: a deterministic mock LLM upstream that speaks the OpenAI (Chat Completions,
//! legacy Completions, Embeddings, Models, Responses) and Anthropic (Messages) wire formats,
//! replays fixture files byte-exactly, fails on demand and records every request it sees.
//!
//! In-process use (tests of other crates):
//!
//! ```no_run
//! # async fn demo() -> Result<(), tollgate_mock::MockError> {
//! let mock = tollgate_mock::start(tollgate_mock::MockConfig::default()).await?;
//! let url = format!("{}/v1/chat/completions", mock.base_url());
//! // ... send requests to `url` ...
//! let seen = mock.drain_observations();
//! mock.shutdown().await;
//! # let _ = (url, seen); Ok(()) }
//! ```
//!
//! The behaviour reference (headers, model names, scripts, observation format) is the crate's
//! README.md.

pub mod behavior;
pub mod body;
mod dispatch;
pub mod errors;
pub mod fixtures;
pub mod leak;
pub mod observe;
pub mod python_json;
mod routes;
mod server;
mod state;
pub mod stream_error;
pub mod synth;
mod timer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use behavior::{Behavior, ScriptRequest, UsageOverride};
pub use observe::Observation;

/// Errors starting the mock.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// Binding the listening socket failed (address in use, bad host...).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// `host:port` that was requested.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Reading the fixtures directory failed.
    #[error("cannot load fixtures: {0}")]
    Fixtures(String),
}

/// Configuration of one mock instance.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Host or IP to bind (default `127.0.0.1`).
    pub host: String,
    /// TCP port; 0 picks an ephemeral port (default 0).
    pub port: u16,
    /// Fixed delay applied to every inference request before responding, ms (default 0);
    /// `x-mock-delay-ms` or a script's `delay_ms` overrides it per request.
    pub delay_ms: u64,
    /// Directory of fixtures for replay (`None`: replay answers 404).
    pub fixtures_dir: Option<PathBuf>,
    /// Record requests in the observation log (default true; `--no-record` turns it off).
    pub record: bool,
    /// Maximum number of observations kept; the oldest are dropped (default 10,000).
    pub max_records: usize,
    /// When set, requests must carry this key (`authorization: Bearer KEY`, `x-api-key: KEY` or
    /// `api-key: KEY`), else 401 in the route's dialect.
    pub require_key: Option<String>,
    /// Number of content chunks in generated streams when `x-mock-chunks` is absent (default 8).
    pub default_chunks: usize,
    /// Answer 400 when an inference request body carries a gateway-internal field (see
    /// [`leak::INTERNAL_FIELDS`]), like LiteLLM's integration upstream does (default false; a
    /// script's `reject_internal_fields` turns it on per deployment or model).
    pub reject_internal_fields: bool,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_owned(),
            port: 0,
            delay_ms: 0,
            fixtures_dir: None,
            record: true,
            max_records: 10_000,
            require_key: None,
            default_chunks: 8,
            reject_internal_fields: false,
        }
    }
}

impl MockConfig {
    /// Default config with fixtures from `$TOLLGATE_SHARED_DIR/fixtures`, or else the first of
    /// `../shared/fixtures` relative to the workspace root that exists (tests run from the crate).
    pub fn with_shared_fixtures() -> Self {
        Self {
            fixtures_dir: shared_fixtures_dir(),
            ..Self::default()
        }
    }
}

/// The shared fixtures directory: `$TOLLGATE_SHARED_DIR/fixtures` when the variable is set,
/// else `<workspace root>/../shared/fixtures` when it exists.
pub fn shared_fixtures_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TOLLGATE_SHARED_DIR") {
        return Some(PathBuf::from(d).join("fixtures"));
    }
    let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    ws.is_dir().then_some(ws)
}

/// A running mock. Dropping it stops the server (like [`MockHandle::shutdown`] without waiting).
pub struct MockHandle {
    addr: SocketAddr,
    state: Arc<state::State>,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl MockHandle {
    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` (no trailing slash, no `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Copy of the observation log, oldest first (does not drain).
    pub fn observations(&self) -> Vec<Observation> {
        self.state.recorder.snapshot(false)
    }

    /// Take and clear the observation log, oldest first.
    pub fn drain_observations(&self) -> Vec<Observation> {
        self.state.recorder.snapshot(true)
    }

    /// Queue behaviours / set a sticky default for a deployment or model (as `POST /__script`).
    pub fn script(&self, req: ScriptRequest) {
        self.state.scripts.add(req);
    }

    /// Remove all scripts (as `DELETE /__script`).
    pub fn clear_scripts(&self) {
        self.state.scripts.clear(None);
    }

    /// Number of requests received so far (including unrecorded ones).
    pub fn request_count(&self) -> u64 {
        self.state.request_count()
    }

    /// Stop accepting, close every open connection and wait for the server task to end.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for MockHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Bind and start serving on the current tokio runtime.
///
/// Errors: [`MockError::Bind`] if the address cannot be bound, [`MockError::Fixtures`] if the
/// fixtures directory cannot be read.
pub async fn start(config: MockConfig) -> Result<MockHandle, MockError> {
    let fixtures = match &config.fixtures_dir {
        Some(d) => fixtures::Fixtures::load(d)?,
        None => fixtures::Fixtures::empty(),
    };
    let addr_str = format!("{}:{}", config.host, config.port);
    let listener = tokio::net::TcpListener::bind(addr_str.as_str())
        .await
        .map_err(|source| MockError::Bind {
            addr: addr_str.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| MockError::Bind {
        addr: addr_str,
        source,
    })?;
    let state = Arc::new(state::State::new(config, fixtures));
    let cancel = CancellationToken::new();
    let task = tokio::spawn(server::serve(listener, state.clone(), cancel.clone()));
    Ok(MockHandle {
        addr,
        state,
        cancel,
        task: Some(task),
    })
}
