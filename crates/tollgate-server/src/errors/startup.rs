//! [`StartupError`]: why `tollgate` (serving, or `check-config`) could not start or went on
//! no further, and the exit code that says so. The binary prints `error: {message}` once, to
//! stderr, and exits with [`StartupError::exit_code`].

use std::net::SocketAddr;

/// Exit code of a usage or config error (the config must change).
pub const EXIT_CONFIG: u8 = 2;
/// Exit code of a failure of the environment (a socket, the store, the runtime).
pub const EXIT_FAILURE: u8 = 1;

/// A failure before or while serving. Messages name the setting or flag to fix; none carries
/// a secret (config errors are already redacted by the loader).
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// `check-config` without a path.
    #[error(
        "no config file to check: tollgate check-config PATH (or --config PATH, or CONFIG_FILE_PATH)"
    )]
    NoConfigToCheck,
    /// Serving without a config.
    #[error("no config given: pass --config PATH (or set CONFIG_FILE_PATH)")]
    NoConfig,
    /// The config cannot be served (unreadable, invalid, a provider not served, a bad setting).
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// `--host`/`--port` name no address.
    #[error(
        "invalid --host/--port: {host}:{port} (give an IP address, e.g. 127.0.0.1 or ::, or a name that resolves, e.g. localhost)"
    )]
    ListenAddress {
        /// `--host`.
        host: String,
        /// `--port`.
        port: u16,
    },
    /// The async runtime could not be built.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The listening socket could not be bound or handed to the runtime.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The governance store could not be opened.
    #[error("governance store ({store}): {error}")]
    Store {
        /// The store ([`crate::gate::StoreChoice::describe`]).
        store: String,
        /// Why.
        error: crate::gate::GateError,
    },
    /// The Redis named for the counters a fleet shares (budgets, limits) cannot be used: not
    /// reached within the connection timeout, the credentials or TLS refused, or a server
    /// older than Redis 7. Named by its own target, not by the database's.
    #[error(transparent)]
    SharedCounters(crate::gate::shared::SharedCountersError),
    /// The deployments stored through `/model/new` could not be read.
    #[error("stored models ({store}): {error}")]
    StoredModels {
        /// The store.
        store: String,
        /// Why.
        error: crate::gate::GateError,
    },
    /// `check-config --connect`: the store cannot be used.
    #[error("store connection failed: {0}")]
    StoreConnection(String),
    /// The serving workers could not be started.
    #[error("cannot start {workers} workers: {source}")]
    Workers {
        /// How many were asked for.
        workers: usize,
        /// Why.
        source: std::io::Error,
    },
    /// Serving stopped with an error.
    #[error("server failed: {0}")]
    Serve(#[source] std::io::Error),
}

impl StartupError {
    /// The process exit code: [`EXIT_CONFIG`] (2) when the command line or config must change,
    /// [`EXIT_FAILURE`] (1) when the environment failed (`check-config`'s documented codes).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::NoConfigToCheck
            | Self::NoConfig
            | Self::InvalidConfig(_)
            | Self::ListenAddress { .. } => EXIT_CONFIG,
            Self::Runtime(_)
            | Self::Listen { .. }
            | Self::Store { .. }
            | Self::SharedCounters(_)
            | Self::StoredModels { .. }
            | Self::StoreConnection(_)
            | Self::Workers { .. }
            | Self::Serve(_) => EXIT_FAILURE,
        }
    }

    /// An invalid config, from any error that describes it.
    pub fn config(e: impl std::fmt::Display) -> Self {
        Self::InvalidConfig(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::ErrorKind) -> std::io::Error {
        std::io::Error::new(kind, "boom")
    }

    #[test]
    fn config_and_usage_errors_exit_2_environment_failures_exit_1() {
        let addr: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let cases = [
            (
                StartupError::NoConfigToCheck,
                2,
                "no config file to check: tollgate check-config PATH (or --config PATH, or CONFIG_FILE_PATH)",
            ),
            (
                StartupError::NoConfig,
                2,
                "no config given: pass --config PATH (or set CONFIG_FILE_PATH)",
            ),
            (
                StartupError::config("model_list[0]: missing model"),
                2,
                "invalid config: model_list[0]: missing model",
            ),
            (
                StartupError::ListenAddress {
                    host: "nowhere.invalid".into(),
                    port: 4000,
                },
                2,
                "invalid --host/--port: nowhere.invalid:4000 (give an IP address, e.g. 127.0.0.1 or ::, or a name that resolves, e.g. localhost)",
            ),
            (
                StartupError::Runtime(io(std::io::ErrorKind::Other)),
                1,
                "cannot start the runtime: boom",
            ),
            (
                StartupError::Listen {
                    addr,
                    source: io(std::io::ErrorKind::AddrInUse),
                },
                1,
                "cannot listen on 127.0.0.1:4000: boom",
            ),
            (
                StartupError::StoreConnection("connection refused".into()),
                1,
                "store connection failed: connection refused",
            ),
            (
                StartupError::Workers {
                    workers: 3,
                    source: io(std::io::ErrorKind::Other),
                },
                1,
                "cannot start 3 workers: boom",
            ),
            (
                StartupError::Serve(io(std::io::ErrorKind::Other)),
                1,
                "server failed: boom",
            ),
        ];
        for (e, code, message) in cases {
            assert_eq!(e.exit_code(), code, "{e}");
            assert_eq!(e.to_string(), message);
        }
    }

    #[test]
    fn loading_a_config_that_cannot_be_served_is_a_config_error() {
        let dir = std::env::temp_dir().join(format!("tollgate-startup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.yaml");
        let e = crate::check_config::load(&missing, &|_| None).unwrap_err();
        assert_eq!(e.exit_code(), EXIT_CONFIG);
        assert!(e.to_string().starts_with("invalid config: "), "{e}");
        let unserved = dir.join("unserved.yaml");
        std::fs::write(
            &unserved,
            "model_list:\n  - model_name: m\n    litellm_params:\n      model: bedrock/anthropic.claude\n",
        )
        .unwrap();
        let e = crate::check_config::load(&unserved, &|_| None).unwrap_err();
        assert_eq!(e.exit_code(), EXIT_CONFIG);
        assert!(
            e.to_string().starts_with(
                "invalid config: 1 deployment names a provider Tollgate does not serve yet"
            ),
            "{e}"
        );
        let served = dir.join("served.yaml");
        std::fs::write(
            &served,
            "model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/gpt-4o\n      api_key: sk-x\n",
        )
        .unwrap();
        let loaded = crate::check_config::load(&served, &|_| None).unwrap();
        assert_eq!(loaded.config.model_list.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
