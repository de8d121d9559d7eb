//! The upstream HTTP client: one pooled `reqwest` client per distinct connect timeout (in
//! practice one), with keep-alive, HTTP/2 where the upstream offers it over TLS (ALPN), and
//! TCP_NODELAY (without it small requests wait for the peer's delayed ACK).
//!
//! The gateway serves on one single-threaded runtime per worker thread; each worker has its
//! own set of pools (a *shard*, chosen by [`bind_thread_to_shard`]) so that an upstream
//! connection is driven by the same thread as the requests that use it — no cross-thread
//! wake-up per exchange.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;
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

/// The shared upstream client: per shard (worker thread), one pooled client per connect
/// timeout.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    shards: Arc<[BTreeMap<Duration, reqwest::Client>]>,
}

/// A deployment's upstream URLs, parsed once per path: a URL parse (with IDNA host
/// normalisation) was ~5 % of the gateway's CPU per forwarded request (perf, bench/README.md
/// 2026-11-30). Holds at most [`EndpointUrls::MAX`] paths; others are parsed per call.
#[derive(Debug, Default)]
pub struct EndpointUrls(std::sync::RwLock<Vec<(Box<str>, reqwest::Url)>>);

impl EndpointUrls {
    /// Paths kept per deployment (a deployment is called on a handful: chat, embeddings, ...;
    /// paths that carry an id, like a stored response's, would otherwise grow it).
    pub const MAX: usize = 8;

    /// `{base}{path}` parsed, from the cache when seen before.
    ///
    /// Errors: [`UpstreamError::Connect`] when the joined text is not a URL.
    fn get(&self, base: &str, path: &str) -> Result<reqwest::Url, UpstreamError> {
        if let Ok(cached) = self.0.read()
            && let Some((_, url)) = cached.iter().find(|(p, _)| &**p == path)
        {
            return Ok(url.clone());
        }
        let mut joined = String::with_capacity(base.len() + path.len());
        joined.push_str(base);
        joined.push_str(path);
        let url = reqwest::Url::parse(&joined)
            .map_err(|e| UpstreamError::Connect(format!("invalid upstream URL: {e}")))?;
        if let Ok(mut cached) = self.0.write()
            && cached.len() < Self::MAX
            && !cached.iter().any(|(p, _)| &**p == path)
        {
            cached.push((path.into(), url.clone()));
        }
        Ok(url)
    }
}

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(0) };
}

/// Makes the calling thread use shard `index` (modulo the number of shards) of every
/// [`UpstreamClient`]; threads that never call it use shard 0. Called once by each worker
/// thread before it serves.
pub fn bind_thread_to_shard(index: usize) {
    SHARD.with(|s| s.set(index));
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
    /// Builds one shard: one pooled client per distinct connect timeout among `deployments`.
    ///
    /// Errors: [`UpstreamError::Build`] when TLS cannot be set up.
    pub fn new<'a>(
        deployments: impl IntoIterator<Item = &'a Deployment>,
    ) -> Result<Self, UpstreamError> {
        let mut timeouts: std::collections::BTreeSet<Duration> = deployments
            .into_iter()
            .map(|d| d.timeouts.connect)
            .collect();
        timeouts.insert(crate::deployment::DEFAULT_CONNECT_TIMEOUT);
        let shard = build_shard(timeouts.into_iter())?;
        Ok(Self {
            shards: Arc::from(vec![shard]),
        })
    }

    /// The same client with `n` (at least 1) shards, each with its own pools for the same
    /// connect timeouts; a worker thread picks its shard with [`bind_thread_to_shard`].
    ///
    /// Errors: [`UpstreamError::Build`] when TLS cannot be set up.
    pub fn with_shards(self, n: usize) -> Result<Self, UpstreamError> {
        let timeouts: Vec<Duration> = self.shards[0].keys().copied().collect();
        let mut shards = Vec::with_capacity(n.max(1));
        shards.push(self.shards[0].clone());
        for _ in 1..n {
            shards.push(build_shard(timeouts.iter().copied())?);
        }
        Ok(Self {
            shards: Arc::from(shards),
        })
    }

    /// How many shards there are.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The client for `connect`: its own when one was built for it, else the one with the
    /// nearest longer connect timeout (the default 5 s client always exists and every
    /// deployment's connect timeout is at most that), so a deployment added at runtime or a
    /// per-request timeout is never cut short by a shorter connect limit; the first-byte limit
    /// still bounds the whole exchange.
    fn client(&self, connect: Duration) -> Option<&reqwest::Client> {
        let shard = SHARD.with(Cell::get) % self.shards.len();
        pick(&self.shards[shard], connect)
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
        let url = deployment.urls.get(&deployment.base_url, path)?;
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

fn build_shard(
    connect_timeouts: impl Iterator<Item = Duration>,
) -> Result<BTreeMap<Duration, reqwest::Client>, UpstreamError> {
    connect_timeouts.map(|t| Ok((t, build(t)?))).collect()
}

fn build(connect: Duration) -> Result<reqwest::Client, UpstreamError> {
    reqwest::Client::builder()
        .connect_timeout(connect)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(1024)
        .http2_adaptive_window(true)
        // A provider's redirect is the client's business (it is relayed as is, like the
        // official SDKs see it); following none also spares a copy of every request's
        // headers kept for a possible redirect.
        .redirect(reqwest::redirect::Policy::none())
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

    #[test]
    fn endpoint_urls_parse_once_per_path_and_stay_bounded() {
        let urls = EndpointUrls::default();
        let base = "http://127.0.0.1:9/v1";
        let a = urls.get(base, "/chat/completions").unwrap();
        assert_eq!(a.as_str(), "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(urls.get(base, "/chat/completions").unwrap(), a);
        assert_eq!(urls.0.read().unwrap().len(), 1);
        for i in 0..20 {
            let u = urls.get(base, &format!("/responses/resp_{i}")).unwrap();
            assert_eq!(u.path(), format!("/v1/responses/resp_{i}"));
        }
        assert_eq!(urls.0.read().unwrap().len(), EndpointUrls::MAX);
        assert!(matches!(
            urls.get("not a url", "/x"),
            Err(UpstreamError::Connect(_))
        ));
    }

    #[test]
    fn each_worker_thread_uses_its_own_shard() {
        let one = UpstreamClient::new(std::iter::empty()).unwrap();
        assert_eq!(one.shard_count(), 1);
        let three = one.with_shards(3).unwrap();
        assert_eq!(three.shard_count(), 3);
        let t = crate::deployment::DEFAULT_CONNECT_TIMEOUT;
        let on = |i: usize| {
            let c = three.clone();
            std::thread::spawn(move || {
                bind_thread_to_shard(i);
                let shard = SHARD.with(Cell::get) % c.shards.len();
                // The pick is the shard's own client object.
                std::ptr::eq(c.client(t).unwrap(), &c.shards[shard][&t]) as usize * 10 + shard
            })
            .join()
            .unwrap()
        };
        assert_eq!(on(0), 10);
        assert_eq!(on(2), 12);
        assert_eq!(on(4), 11);
    }
}
