//! How an upstream exchange fails: [`UpstreamError`], and the conversions from hyper's,
//! hyper-util's and the own HTTP/1.1 exchange's errors (their causes joined, never a header,
//! key or URL).

use std::time::Duration;

use crate::h1;

/// Which limit expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// No response headers within the first-byte limit.
    FirstByte,
    /// A non-streamed body did not finish within the total limit.
    Total,
    /// A stream was silent for longer than the idle limit.
    Idle,
}

/// A failed upstream exchange. Messages never contain secrets.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// Could not connect (refused, DNS, TLS, reset before the response).
    #[error("could not reach the upstream: {0}")]
    Connect(String),
    /// A time limit expired.
    #[error("the upstream did not answer in time ({phase:?} limit of {limit_ms} ms)")]
    Timeout {
        /// Which limit.
        phase: TimeoutPhase,
        /// The limit, ms.
        limit_ms: u128,
    },
    /// The connection failed while reading the response.
    #[error("the upstream connection failed while reading the response: {0}")]
    Read(String),
    /// The response body exceeded the bound.
    #[error("the upstream response exceeded {limit} bytes")]
    TooLarge {
        /// Bound in bytes.
        limit: usize,
    },
    /// The client could not be built (TLS setup).
    #[error("could not build the HTTP client: {0}")]
    Build(String),
}

/// The error and its causes, `: `-joined (hyper's own Display is only "client error
/// (Connect)"). hyper's errors never carry headers, keys or the URL.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// Whether an I/O timeout is among `e`'s causes (the connector's connect limit).
fn timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut src = Some(e);
    while let Some(inner) = src {
        if inner
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        src = inner.source();
    }
    false
}

impl UpstreamError {
    /// A failed exchange before the response head: connect errors (refused, DNS, TLS, the
    /// connect limit) and failures while sending.
    pub(crate) fn from_send(e: hyper_util::client::legacy::Error, connect_limit: Duration) -> Self {
        if e.is_connect() && timed_out(&e) {
            return UpstreamError::Timeout {
                phase: TimeoutPhase::FirstByte,
                limit_ms: connect_limit.as_millis(),
            };
        }
        UpstreamError::Connect(chain(&e))
    }

    pub(crate) fn from_read(e: hyper::Error) -> Self {
        UpstreamError::Read(chain(&e))
    }

    pub(crate) fn from_exchange(e: h1::ExchangeError) -> Self {
        match e {
            h1::ExchangeError::ConnectTimeout(limit) => UpstreamError::Timeout {
                phase: TimeoutPhase::FirstByte,
                limit_ms: limit.as_millis(),
            },
            other => UpstreamError::Connect(other.to_string()),
        }
    }
}
