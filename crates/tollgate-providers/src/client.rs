//! The upstream HTTP client. `https://` upstreams go through hyper-util's pooled client
//! (keep-alive, HTTP/2 where the upstream offers it over TLS by ALPN, TCP_NODELAY — without it
//! small requests wait for the peer's delayed ACK), one pool per distinct connect timeout (in
//! practice one). Plain `http://` upstreams use the gateway's own HTTP/1.1 exchange
//! ([`crate::h1`]), run by the request's own task.
//!
//! hyper-util directly rather than through `reqwest`: reqwest's layers (redirect and retry
//! policies, URL types) cost ~30 of the ~100 allocations of a forwarded request — header
//! maps cloned for a redirect or retry the gateway never makes, the URL formatted and parsed
//! again — (DHAT, bench/README.md 2026-11-30). Here a request is its pre-parsed [`Uri`], its
//! headers and its body, and nothing else.
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
use futures_util::future::Either;
use futures_util::{Stream, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri, header};
use http_body::Body as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::deployment::{Deployment, Timeouts};
use crate::egress::CheckedBase;
use crate::h1;
use crate::pinned::{ChosenPool, PinnedDns};

pub use crate::upstream_error::{TimeoutPhase, UpstreamError};

/// One pool: hyper-util's client over TLS-or-plain TCP, request bodies sent whole.
type Pool = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One shard: hyper-util pools for `https://` by connect timeout, and the idle connections
/// of the gateway's own HTTP/1.1 client for `http://`; apart from them, the connections to
/// client-chosen hosts (made to checked addresses only, see [`crate::egress`]), the TLS pool
/// built on first use.
#[derive(Debug, Clone)]
struct Shard {
    pools: BTreeMap<Duration, Pool>,
    plain: h1::Pool,
    chosen_plain: h1::Pool,
    chosen_tls: Arc<std::sync::OnceLock<Result<ChosenPool, String>>>,
}

/// The shared upstream client: per shard (worker thread), one pool per connect timeout.
#[derive(Debug, Clone)]
pub struct UpstreamClient {
    shards: Arc<[Shard]>,
    /// The checked addresses of client-chosen hosts, the only answers the chosen pools' resolver
    /// gives.
    pinned: PinnedDns,
}

/// A deployment's upstream URLs, parsed once per path: a URL parse was ~5 % of the gateway's
/// CPU per forwarded request (perf, bench/README.md 2026-11-30); a parsed [`Uri`] is cloned
/// by reference counts. Holds at most [`EndpointUrls::MAX`] paths; others are parsed per call.
#[derive(Debug, Default)]
pub struct EndpointUrls(std::sync::RwLock<Vec<(Box<str>, Uri)>>);

impl EndpointUrls {
    /// Paths kept per deployment (a deployment is called on a handful: chat, embeddings, ...;
    /// paths that carry an id, like a stored response's, would otherwise grow it).
    pub const MAX: usize = 8;

    /// `{base}{path}` parsed, from the cache when seen before.
    ///
    /// Errors: [`UpstreamError::Connect`] when the joined text is not an absolute `http`
    /// or `https` URL.
    fn get(&self, base: &str, path: &str) -> Result<Uri, UpstreamError> {
        if let Ok(cached) = self.0.read()
            && let Some((_, uri)) = cached.iter().find(|(p, _)| &**p == path)
        {
            return Ok(uri.clone());
        }
        let uri = parse_upstream_uri(crate::deployment::join_url(base, path))?;
        if let Ok(mut cached) = self.0.write()
            && cached.len() < Self::MAX
            && !cached.iter().any(|(p, _)| &**p == path)
        {
            cached.push((path.into(), uri.clone()));
        }
        Ok(uri)
    }
}

/// An absolute `http`/`https` URI with a host.
///
/// Errors: [`UpstreamError::Connect`] naming what is wrong (never the URL: it may carry a key
/// in its query, as some providers take one).
fn parse_upstream_uri(text: String) -> Result<Uri, UpstreamError> {
    let uri = Uri::try_from(text)
        .map_err(|e| UpstreamError::Connect(format!("invalid upstream URL: {e}")))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(h)) if !h.is_empty() => Ok(uri),
        (Some("http" | "https"), _) => Err(UpstreamError::Connect(
            "invalid upstream URL: no host".into(),
        )),
        _ => Err(UpstreamError::Connect(
            "invalid upstream URL: the scheme must be http or https".into(),
        )),
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

/// Where a response body is read from.
#[derive(Debug)]
pub(crate) enum ResponseBody {
    /// hyper's connection task (`https://`).
    Hyper(Incoming),
    /// The request's own task (`http://`).
    Own(h1::Body),
    /// An answer made in process ([`crate::upstream`]).
    Local(crate::upstream::LocalBody),
}

/// A response whose headers have arrived; the body is read or streamed next.
#[derive(Debug)]
pub struct UpstreamResponse {
    /// Upstream status.
    pub status: StatusCode,
    /// Upstream headers.
    pub headers: HeaderMap,
    pub(crate) body: ResponseBody,
    pub(crate) timeouts: Timeouts,
    pub(crate) started: tokio::time::Instant,
}

impl UpstreamClient {
    /// Builds one shard: one pool per distinct connect timeout among `deployments`.
    ///
    /// Errors: [`UpstreamError::Build`] when TLS cannot be set up (no usable verifier).
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
            pinned: PinnedDns::default(),
        })
    }

    /// The same client with `n` (at least 1) shards, each with its own pools for the same
    /// connect timeouts; a worker thread picks its shard with [`bind_thread_to_shard`].
    ///
    /// Errors: [`UpstreamError::Build`] when TLS cannot be set up.
    pub fn with_shards(self, n: usize) -> Result<Self, UpstreamError> {
        let timeouts: Vec<Duration> = self.shards[0].pools.keys().copied().collect();
        let mut shards = Vec::with_capacity(n.max(1));
        shards.push(self.shards[0].clone());
        for _ in 1..n {
            shards.push(build_shard(timeouts.iter().copied())?);
        }
        Ok(Self {
            shards: Arc::from(shards),
            pinned: self.pinned,
        })
    }

    /// How many shards there are.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The pool for `connect`: its own when one was built for it, else the one with the
    /// nearest longer connect timeout (the default 5 s pool always exists and every
    /// deployment's connect timeout is at most that), so a deployment added at runtime or a
    /// per-request timeout is never cut short by a shorter connect limit; the first-byte limit
    /// still bounds the whole exchange.
    fn pool(&self, connect: Duration) -> Result<&Pool, UpstreamError> {
        pick(&self.shard().pools, connect).ok_or_else(|| UpstreamError::Build("no client".into()))
    }

    /// The calling thread's shard.
    fn shard(&self) -> &Shard {
        &self.shards[SHARD.with(Cell::get) % self.shards.len()]
    }

    /// POSTs `body` (JSON) to `{base_url}{path}` with the deployment's headers plus `extra`
    /// (per-request headers such as a client's `anthropic-beta`; one replaces the deployment's
    /// header of the same name), waiting at most the first-byte limit for the response head.
    /// A per-request copy with a client-chosen base
    /// ([`Deployment::with_client_credentials`]) connects only to that base's checked
    /// addresses, on connections kept apart from the deployments' own. No redirect is
    /// followed: a 3xx is the response.
    ///
    /// Errors: [`UpstreamError::Connect`] (unreachable, TLS, bad URL), [`UpstreamError::Timeout`]
    /// with [`TimeoutPhase::FirstByte`].
    pub async fn post_json(
        &self,
        deployment: &Deployment,
        path: &str,
        body: Bytes,
        timeouts: Timeouts,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Result<UpstreamResponse, UpstreamError> {
        let uri = deployment.urls.get(&deployment.base_url, path)?;
        let own = deployment
            .headers
            .iter()
            .filter(|(n, _)| !extra.iter().any(|(e, _)| e == n));
        let pinned = deployment.pinned.as_ref();
        if uri.scheme_str() == Some("http") {
            let fields = std::iter::once((&CONTENT_TYPE, &APPLICATION_JSON))
                .chain(own.chain(extra).map(|(n, v)| (n, v)));
            return self
                .send_plain(&Method::POST, &uri, fields, body, timeouts, pinned)
                .await;
        }
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = uri;
        let h = req.headers_mut();
        h.reserve(deployment.headers.len() + extra.len() + 1);
        h.insert(header::CONTENT_TYPE, APPLICATION_JSON.clone());
        for (name, value) in own.chain(extra) {
            h.append(name.clone(), value.clone());
        }
        match pinned {
            Some(p) => self.send_chosen(req, timeouts, p).await,
            None => self.send(req, timeouts).await,
        }
    }

    /// GETs `{base_url}{path}` with the deployment's headers (e.g. retrieving a stored
    /// Responses API object), bounded by the first-byte limit for the head.
    ///
    /// Errors: as [`UpstreamClient::post_json`].
    pub async fn get(
        &self,
        deployment: &Deployment,
        path: &str,
        timeouts: Timeouts,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let uri = parse_upstream_uri(crate::deployment::join_url(&deployment.base_url, path))?;
        let pinned = deployment.pinned.as_ref();
        if uri.scheme_str() == Some("http") {
            let fields = deployment.headers.iter().map(|(n, v)| (n, v));
            return self
                .send_plain(&Method::GET, &uri, fields, Bytes::new(), timeouts, pinned)
                .await;
        }
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = uri;
        let h = req.headers_mut();
        for (name, value) in &deployment.headers {
            h.append(name.clone(), value.clone());
        }
        match pinned {
            Some(p) => self.send_chosen(req, timeouts, p).await,
            None => self.send(req, timeouts).await,
        }
    }

    /// One exchange with a plain `http://` upstream on the gateway's own HTTP/1.1 client,
    /// bounded by the first-byte limit until the response head; to a client-chosen host
    /// (`pinned`), on its own connections to its checked addresses.
    async fn send_plain<'a>(
        &self,
        method: &'a Method,
        uri: &'a Uri,
        fields: impl Iterator<Item = (&'a HeaderName, &'a HeaderValue)>,
        body: Bytes,
        timeouts: Timeouts,
        pinned: Option<&'a CheckedBase>,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let started = tokio::time::Instant::now();
        let out = h1::Outgoing {
            method,
            uri,
            fields,
            body,
            addrs: pinned.map(CheckedBase::addrs),
        };
        let shard = self.shard();
        let pool = if pinned.is_some() {
            &shard.chosen_plain
        } else {
            &shard.plain
        };
        let exchange = h1::send(pool, out, timeouts.connect);
        let (head, body) = match tokio::time::timeout(timeouts.first_byte, exchange).await {
            Err(_) => {
                return Err(UpstreamError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                    limit_ms: timeouts.first_byte.as_millis(),
                });
            }
            Ok(r) => r.map_err(UpstreamError::from_exchange)?,
        };
        Ok(UpstreamResponse {
            status: head.status,
            headers: head.headers,
            body: ResponseBody::Own(body),
            timeouts,
            started,
        })
    }

    /// One exchange with a client-chosen `https://` host: its checked addresses are pinned for
    /// the chosen pool's resolver, then the exchange runs on that pool.
    async fn send_chosen(
        &self,
        req: Request<Full<Bytes>>,
        timeouts: Timeouts,
        pinned: &CheckedBase,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let pool = self.shard().chosen_tls.get_or_init(|| {
            build_with(
                HttpConnector::new_with_resolver(self.pinned.clone()),
                crate::deployment::DEFAULT_CONNECT_TIMEOUT,
            )
            .map_err(|e| e.to_string())
        });
        let pool = pool.as_ref().map_err(|e| UpstreamError::Build(e.clone()))?;
        self.pinned.pin(&pinned.host, &pinned.addrs);
        exchange(pool, req, timeouts).await
    }

    /// One exchange on hyper-util's client (`https://`), bounded by the first-byte limit
    /// until the response head.
    async fn send(
        &self,
        req: Request<Full<Bytes>>,
        timeouts: Timeouts,
    ) -> Result<UpstreamResponse, UpstreamError> {
        exchange(self.pool(timeouts.connect)?, req, timeouts).await
    }
}

/// One exchange on a hyper-util pool, bounded by the first-byte limit until the response head.
async fn exchange<C>(
    pool: &Client<C, Full<Bytes>>,
    req: Request<Full<Bytes>>,
    timeouts: Timeouts,
) -> Result<UpstreamResponse, UpstreamError>
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    let started = tokio::time::Instant::now();
    let resp = match tokio::time::timeout(timeouts.first_byte, pool.request(req)).await {
        Err(_) => {
            return Err(UpstreamError::Timeout {
                phase: TimeoutPhase::FirstByte,
                limit_ms: timeouts.first_byte.as_millis(),
            });
        }
        Ok(r) => r.map_err(|e| UpstreamError::from_send(e, timeouts.connect))?,
    };
    let (parts, body) = resp.into_parts();
    Ok(UpstreamResponse {
        status: parts.status,
        headers: parts.headers,
        body: ResponseBody::Hyper(body),
        timeouts,
        started,
    })
}

/// GETs `url` (e.g. a remote price map) with a one-off pool: at most `limit` bytes within
/// `timeout`; a non-2xx status is an error.
///
/// Errors: [`UpstreamError::Connect`] (unreachable, bad URL, non-2xx — the message names the
/// status), [`UpstreamError::Timeout`], [`UpstreamError::TooLarge`], [`UpstreamError::Read`].
pub async fn fetch(url: &str, limit: usize, timeout: Duration) -> Result<Bytes, UpstreamError> {
    let pool = build(crate::deployment::DEFAULT_CONNECT_TIMEOUT)?;
    let uri = parse_upstream_uri(url.to_owned())?;
    let timeouts = Timeouts {
        connect: crate::deployment::DEFAULT_CONNECT_TIMEOUT.min(timeout),
        first_byte: timeout,
        idle: timeout,
        total: timeout,
    };
    let client = UpstreamClient {
        shards: Arc::from(vec![Shard {
            pools: BTreeMap::from([(timeouts.connect, pool)]),
            plain: h1::Pool::default(),
            chosen_plain: h1::Pool::default(),
            chosen_tls: Arc::default(),
        }]),
        pinned: PinnedDns::default(),
    };
    let resp = if uri.scheme_str() == Some("http") {
        client
            .send_plain(
                &Method::GET,
                &uri,
                std::iter::empty(),
                Bytes::new(),
                timeouts,
                None,
            )
            .await?
    } else {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = uri;
        client.send(req, timeouts).await?
    };
    if !resp.status.is_success() {
        return Err(UpstreamError::Connect(format!(
            "the server answered HTTP {}",
            resp.status.as_u16()
        )));
    }
    resp.read_body(limit).await
}

/// The value for `connect`, else the one of the nearest longer key, else the longest.
fn pick<V>(m: &BTreeMap<Duration, V>, connect: Duration) -> Option<&V> {
    m.range(connect..)
        .next()
        .map(|(_, v)| v)
        .or_else(|| m.values().next_back())
}

fn build_shard(connect_timeouts: impl Iterator<Item = Duration>) -> Result<Shard, UpstreamError> {
    Ok(Shard {
        pools: connect_timeouts
            .map(|t| Ok((t, build(t)?)))
            .collect::<Result<_, UpstreamError>>()?,
        plain: h1::Pool::default(),
        chosen_plain: h1::Pool::default(),
        chosen_tls: Arc::default(),
    })
}

/// `content-type: application/json`, shared by every JSON request.
static CONTENT_TYPE: HeaderName = header::CONTENT_TYPE;
static APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// One pool. Idle connections are kept 90 s (most providers close theirs after 60–120 s of
/// silence), up to 1,024 per host. A provider's redirect is the client's business: none is
/// followed (it is relayed as is, as the official SDKs would see it).
fn build(connect: Duration) -> Result<Pool, UpstreamError> {
    build_with(HttpConnector::new(), connect)
}

/// A pool over `tcp` (its resolver decides which addresses are connected to), as [`build`].
fn build_with<R>(
    mut tcp: HttpConnector<R>,
    connect: Duration,
) -> Result<Client<HttpsConnector<HttpConnector<R>>, Full<Bytes>>, UpstreamError>
where
    R: tower_service::Service<hyper_util::client::legacy::connect::dns::Name>
        + Clone
        + Send
        + Sync
        + 'static,
    R::Response: Iterator<Item = std::net::SocketAddr>,
    R::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    R::Future: Send,
{
    tcp.set_connect_timeout(Some(connect));
    tcp.set_nodelay(true);
    // `https` URLs pass through to the TLS layer.
    tcp.enforce_http(false);
    let tls = hyper_rustls::HttpsConnectorBuilder::new()
        .try_with_platform_verifier()
        .map_err(|e| UpstreamError::Build(e.to_string()))?
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(tcp);
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(1024)
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .http2_adaptive_window(true)
        .build(tls))
}

impl UpstreamResponse {
    /// Reads the whole body, bounded by `limit` bytes and by what is left of the total limit.
    ///
    /// Errors: [`UpstreamError::TooLarge`] (checked against `content-length` first, then as
    /// bytes arrive), [`UpstreamError::Timeout`] with [`TimeoutPhase::Total`],
    /// [`UpstreamError::Read`].
    pub async fn read_body(self, limit: usize) -> Result<Bytes, UpstreamError> {
        let total = self.timeouts.total;
        let deadline = self.started + total;
        let exact = match &self.body {
            ResponseBody::Hyper(b) => b.size_hint().exact(),
            ResponseBody::Own(b) => b.exact_len(),
            ResponseBody::Local(b) => b.len,
        };
        let mut body = self.into_stream();
        let read = async move {
            if exact.is_some_and(|len| len > limit as u64) {
                return Err(UpstreamError::TooLarge { limit });
            }
            let mut buf = BytesMut::new();
            while let Some(chunk) = body.next().await {
                let chunk = chunk?;
                if buf.len() + chunk.len() > limit {
                    return Err(UpstreamError::TooLarge { limit });
                }
                // The usual case: the whole body in one read, relayed without a copy.
                if buf.is_empty() && exact == Some(chunk.len() as u64) {
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

    /// The body as a stream of network reads (trailers skipped). The caller applies the idle
    /// limit ([`Timeouts::idle`]); dropping the stream closes the upstream connection.
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, UpstreamError>> + Send + 'static {
        match self.body {
            ResponseBody::Hyper(b) => Either::Left(Either::Left(
                b.into_data_stream()
                    .map(|r| r.map_err(UpstreamError::from_read)),
            )),
            ResponseBody::Own(b) => Either::Left(Either::Right(
                b.map(|r| r.map_err(|e| UpstreamError::Read(e.to_string()))),
            )),
            ResponseBody::Local(b) => Either::Right(b.stream),
        }
    }

    /// The limits this exchange runs under.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
