//! Error type of the benchmark harness.

use std::path::PathBuf;

/// Everything that can go wrong while preparing or running a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A URL given to the driver is not `http://host:port[/prefix]`.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A gateway definition file could not be read or parsed.
    #[error("gateway definition {path}: {reason}")]
    Definition {
        /// The definition file.
        path: PathBuf,
        /// Parse or validation error.
        reason: String,
    },
    /// A process under test could not be started or did not become healthy.
    #[error("process {name}: {reason}")]
    Process {
        /// Gateway or mock name.
        name: String,
        /// What failed (spawn error, health timeout, early exit).
        reason: String,
    },
    /// Filesystem error while reading configs or writing results.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A report (plot, CSV) could not be produced.
    #[error("report: {0}")]
    Report(String),
    /// Governed-scenario setup (virtual key creation) failed.
    #[error("governed setup for {name}: {reason}")]
    Governed {
        /// Gateway name.
        name: String,
        /// What failed.
        reason: String,
    },
}

impl BenchError {
    /// Wraps an I/O error with a short description of what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        BenchError::Io {
            context: context.into(),
            source,
        }
    }
}
