//! The upstream HTTP client: one pooled `reqwest` client per distinct connect timeout (in
//! practice one), with keep-alive, HTTP/2 where the upstream offers it over TLS (ALPN), and
//! TCP_NODELAY (without it small requests wait for the peer's delayed ACK).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use http::{HeaderMap, StatusCode};

use crate::deployment::{Deployment, Timeouts};

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

impl UpstreamError {
    fn from_reqwest(e: reqwest::Error) -> Self {
        // reqwest's Display may include the URL; it never includes headers or keys.
        let msg = without_url(&e);
        if e.is_connect() || e.is_request() {
            UpstreamError::Connect(msg)
        } else {
            UpstreamError::Read(msg)
        }
    }
}

fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(url) = e.url() {
        s = s.replace(url.as_str(), "<upstream>");
    }
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// The shared upstream client.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    clients: BTreeMap<Duration, reqwest::Client>,
}

/// A response whose headers have arrived; the body is read or streamed next.
#[derive(Debug)]
pub struct UpstreamResponse {
    /// Upstream status.
    pub status: StatusCode,
    /// Upstream headers.
    pub headers: HeaderMap,
    inner: reqwest::Response,
    timeouts: Timeouts,
    started: tokio::time::Instant,
}

impl UpstreamClient {
    /// Builds one pooled client per distinct connect timeout among `deployments`.
    pub fn new<'a>(
        deployments: impl IntoIterator<Item = &'a Deployment>,
    ) -> Result<Self, UpstreamError> {
        let mut clients = BTreeMap::new();
        for d in deployments {
            let t = d.timeouts.connect;
            if let std::collections::btree_map::Entry::Vacant(e) = clients.entry(t) {
                e.insert(build(t)?);
            }
        }
        let default = crate::deployment::DEFAULT_CONNECT_TIMEOUT;
        if let std::collections::btree_map::Entry::Vacant(e) = clients.entry(default) {
            e.insert(build(default)?);
        }
        Ok(Self { clients })
    }

    /// The client for `connect`: its own when one was built for it, else the one with the
    /// nearest longer connect timeout (the default 5 s client always exists and every
    /// deployment's connect timeout is at most that), so a deployment added at runtime or a
    /// per-request timeout is never cut short by a shorter connect limit; the first-byte limit
    /// still bounds the whole exchange.
    fn client(&self, connect: Duration) -> Option<&reqwest::Client> {
        pick(&self.clients, connect)
    }

    /// POSTs `body` (JSON) to `{base_url}{path}` with the deployment's headers plus `extra`
    /// (per-request headers such as a client's `anthropic-beta`), waiting at most the
    /// first-byte limit for the response headers.
    pub async fn post_json(
        &self,
        deployment: &Deployment,
        path: &str,
        body: Bytes,
        timeouts: Timeouts,
        extra: &[(http::HeaderName, http::HeaderValue)],
    ) -> Result<UpstreamResponse, UpstreamError> {
        let client = self
            .client(timeouts.connect)
            .ok_or_else(|| UpstreamError::Build("no client".into()))?;
        let mut url = String::with_capacity(deployment.base_url.len() + path.len());
        url.push_str(&deployment.base_url);
        url.push_str(path);
        let mut req = client
            .post(url)
            .header(http::header::CONTENT_TYPE, "application/json");
        // A per-request header replaces the deployment's header of the same name.
        let own = deployment
            .headers
            .iter()
            .filter(|(n, _)| !extra.iter().any(|(e, _)| e == n));
        for (name, value) in own.chain(extra) {
            req = req.header(name, value);
        }
        let started = tokio::time::Instant::now();
        let send = req.body(body).send();
        let resp = match tokio::time::timeout(timeouts.first_byte, send).await {
            Err(_) => {
                return Err(UpstreamError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                    limit_ms: timeouts.first_byte.as_millis(),
                });
            }
            Ok(Err(e)) if e.is_timeout() => {
                return Err(UpstreamError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                    limit_ms: timeouts.connect.as_millis(),
                });
            }
            Ok(r) => r.map_err(UpstreamError::from_reqwest)?,
        };
        let mut resp = resp;
        Ok(UpstreamResponse {
            status: resp.status(),
            // Moved, not cloned: the body is read through `inner` without its headers.
            headers: std::mem::take(resp.headers_mut()),
            inner: resp,
            timeouts,
            started,
        })
    }
}

impl UpstreamClient {
    /// GETs `{base_url}{path}` with the deployment's headers (e.g. retrieving a stored
    /// Responses API object), bounded by the first-byte limit for the head.
    pub async fn get(
        &self,
        deployment: &Deployment,
        path: &str,
        timeouts: Timeouts,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let client = self
            .client(timeouts.connect)
            .ok_or_else(|| UpstreamError::Build("no client".into()))?;
        let mut req = client.get(format!("{}{}", deployment.base_url, path));
        for (name, value) in &deployment.headers {
            req = req.header(name, value);
        }
        let started = tokio::time::Instant::now();
        let resp = match tokio::time::timeout(timeouts.first_byte, req.send()).await {
            Err(_) => {
                return Err(UpstreamError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                    limit_ms: timeouts.first_byte.as_millis(),
                });
            }
            Ok(r) => r.map_err(UpstreamError::from_reqwest)?,
        };
        let mut resp = resp;
        Ok(UpstreamResponse {
            status: resp.status(),
            // Moved, not cloned: the body is read through `inner` without its headers.
            headers: std::mem::take(resp.headers_mut()),
            inner: resp,
            timeouts,
            started,
        })
    }
}

/// The value for `connect`, else the one of the nearest longer key, else the longest.
fn pick<V>(m: &BTreeMap<Duration, V>, connect: Duration) -> Option<&V> {
    m.range(connect..)
        .next()
        .map(|(_, v)| v)
        .or_else(|| m.values().next_back())
}

fn build(connect: Duration) -> Result<reqwest::Client, UpstreamError> {
    reqwest::Client::builder()
        .connect_timeout(connect)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(1024)
        .http2_adaptive_window(true)
        .no_proxy()
        .build()
        .map_err(|e| UpstreamError::Build(e.to_string()))
}

impl UpstreamResponse {
    /// Reads the whole body, bounded by `limit` bytes and by what is left of the total limit.
    pub async fn read_body(self, limit: usize) -> Result<Bytes, UpstreamError> {
        let total = self.timeouts.total;
        let deadline = self.started + total;
        let mut inner = self.inner;
        let read = async move {
            if let Some(len) = inner.content_length()
                && len as usize > limit
            {
                return Err(UpstreamError::TooLarge { limit });
            }
            let mut buf = BytesMut::new();
            while let Some(chunk) = inner.chunk().await.map_err(UpstreamError::from_reqwest)? {
                if buf.len() + chunk.len() > limit {
                    return Err(UpstreamError::TooLarge { limit });
                }
                if buf.is_empty() && inner.content_length() == Some(chunk.len() as u64) {
                    return Ok(chunk);
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(buf.freeze())
        };
        match tokio::time::timeout_at(deadline, read).await {
            Ok(r) => r,
            Err(_) => Err(UpstreamError::Timeout {
                phase: TimeoutPhase::Total,
                limit_ms: total.as_millis(),
            }),
        }
    }

    /// The body as a stream of network reads. The caller applies the idle limit
    /// ([`Timeouts::idle`]); dropping the stream closes the upstream connection.
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, UpstreamError>> + Send + 'static {
        self.inner
            .bytes_stream()
            .map(|r| r.map_err(UpstreamError::from_reqwest))
    }

    /// The limits this exchange runs under.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }
}

#[cfg(test)]
mod pick_tests {
    use super::*;

    #[test]
    fn a_missing_connect_timeout_uses_the_nearest_longer_client() {
        let s = Duration::from_secs;
        let m = BTreeMap::from([(s(1), "1s"), (s(5), "5s")]);
        assert_eq!(pick(&m, s(1)), Some(&"1s"));
        assert_eq!(pick(&m, Duration::from_millis(300)), Some(&"1s"));
        assert_eq!(pick(&m, s(2)), Some(&"5s"));
        assert_eq!(pick(&m, s(9)), Some(&"5s"));
        assert_eq!(pick(&BTreeMap::<Duration, u8>::new(), s(1)), None);
    }
}
