//! [`RedisCounterStore`]: connections, options, and the [`AsyncCounterStore`] operations, each
//! one `FCALL` (or one `HMGET`) on the wire.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisError, Value};

use super::super::money::usd_to_units;
use super::super::scope::ScopeKey;
use super::super::store::{Actual, Denial, ReserveRequest, ScopeSpend, SpendSnapshot, Ticket};
use super::super::store_async::{AsyncCounterStore, CounterStoreError, Reserved};
use super::keys::KeySpace;
use super::library::{self, function};
use super::reply::{self, ReserveOutcome};
use super::sentinel::{SentinelAuth, SentinelPrimary};
use crate::admission::DEFAULT_RATE_WINDOW_MS;
use crate::duration::BudgetDuration;

/// How a [`RedisCounterStore`] names its keys and bounds its calls.
#[derive(Debug, Clone)]
pub struct RedisStoreOptions {
    /// Every key is `{<key_prefix>}:...`: the prefix is the hash tag (default, and when empty,
    /// `tollgate`; braces are dropped from it).
    /// Gateways that must not share counters on one Redis use different prefixes.
    pub key_prefix: String,
    /// RPM/TPM window, ms (LiteLLM: 60 000; at least 1).
    pub rate_window_ms: i64,
    /// How long a reservation may stay in flight before the next reservation of any replica
    /// releases it (its replica died, or lost its connection, before settling). Default 2 h,
    /// above LiteLLM's default request timeout of 6000 s; a request that outlives it is still
    /// charged its actual usage when it settles, once.
    pub lease: Duration,
    /// Longest wait for one reply; a slower Redis is an error, not a hang (default 1 s).
    pub response_timeout: Duration,
    /// Longest wait for one connection attempt (default 2 s).
    pub connection_timeout: Duration,
}

impl Default for RedisStoreOptions {
    fn default() -> Self {
        Self {
            key_prefix: "tollgate".to_string(),
            rate_window_ms: DEFAULT_RATE_WINDOW_MS,
            lease: Duration::from_secs(2 * 3600),
            response_timeout: Duration::from_secs(1),
            connection_timeout: Duration::from_secs(2),
        }
    }
}

/// One connection, multiplexed: concurrent calls from every task of the replica are written
/// back to back on it and their replies matched in order (auto-pipelining), so a replica needs
/// no pool. `ConnectionManager` reconnects by itself; the cluster connection follows slot
/// moves and failovers; the Sentinel primary follows failovers (`sentinel.rs`).
#[derive(Clone)]
pub(super) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(Arc<SentinelPrimary>),
}

impl Conn {
    pub(super) async fn send(&self, cmd: &Cmd) -> Result<Value, RedisError> {
        match self {
            Conn::Single(c) => cmd.query_async(&mut c.clone()).await,
            Conn::Cluster(c) => cmd.query_async(&mut c.clone()).await,
            Conn::Sentinel(s) => s.send(cmd).await,
        }
    }

    /// Sends `pipe` as one write and reads its replies: one round trip for all its commands.
    pub(super) async fn send_pipe(&self, pipe: &Pipeline) -> Result<Vec<Value>, RedisError> {
        match self {
            Conn::Single(c) => pipe.query_async(&mut c.clone()).await,
            Conn::Cluster(c) => pipe.query_async(&mut c.clone()).await,
            Conn::Sentinel(s) => s.send_pipe(pipe).await,
        }
    }
}

/// Budgets and rate-limit counters shared by every replica through Redis (or Redis Cluster).
/// Cheap to clone (one shared connection).
#[derive(Clone)]
pub struct RedisCounterStore {
    pub(super) conn: Conn,
    pub(super) keys: Arc<KeySpace>,
    pub(super) opts: Arc<RedisStoreOptions>,
}

impl std::fmt::Debug for RedisCounterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCounterStore")
            .field("key_prefix", &self.opts.key_prefix)
            .field(
                "connection",
                &match self.conn {
                    Conn::Single(_) => "single",
                    Conn::Cluster(_) => "cluster",
                    Conn::Sentinel(_) => "sentinel",
                },
            )
            .finish_non_exhaustive()
    }
}

pub(super) fn unavailable(e: RedisError) -> CounterStoreError {
    CounterStoreError::Unavailable(e.to_string())
}

impl RedisCounterStore {
    /// Connects to one Redis server (`redis://[user:password@]host:port[/db]`, `rediss://` for
    /// TLS through rustls) and loads the function library.
    ///
    /// # Errors
    /// [`CounterStoreError::Unavailable`] when the URL is invalid, the server cannot be reached
    /// or refuses the credentials, or the library does not load (a server older than Redis 7).
    pub async fn connect(url: &str, opts: RedisStoreOptions) -> Result<Self, CounterStoreError> {
        let client = super::tcp::client(url).map_err(unavailable)?;
        // One attempt first, bounded by the timeouts: the manager below retries a failed first
        // connect with backoff (redis-rs: 6 retries by default), which leaves a start against
        // a closed port, a wrong password or a TLS mismatch silent for many seconds.
        let once = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(opts.connection_timeout))
            .set_response_timeout(Some(opts.response_timeout));
        drop(
            client
                .get_multiplexed_async_connection_with_config(&once)
                .await
                .map_err(unavailable)?,
        );
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(opts.response_timeout))
            .set_connection_timeout(Some(opts.connection_timeout));
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(unavailable)?;
        Self::start(Conn::Single(conn), opts).await
    }

    /// Connects to a Redis Cluster through its startup nodes (`redis://host:port` each) and
    /// loads the function library on every primary.
    ///
    /// # Errors
    /// As [`Self::connect`].
    pub async fn connect_cluster(
        nodes: &[String],
        opts: RedisStoreOptions,
    ) -> Result<Self, CounterStoreError> {
        let client = ClusterClient::builder(nodes.iter().map(String::as_str))
            .connection_timeout(opts.connection_timeout)
            .response_timeout(opts.response_timeout)
            .tcp_settings(super::tcp::tcp_settings())
            .build()
            .map_err(unavailable)?;
        let conn = client.get_async_connection().await.map_err(unavailable)?;
        Self::start(Conn::Cluster(conn), opts).await
    }

    /// Asks the Sentinels (`redis://host:port` each) for the primary of `service_name`,
    /// connects to it with `auth`, loads the function library, and follows the primary across
    /// failovers.
    ///
    /// # Errors
    /// As [`Self::connect`]; also when no Sentinel answers or none knows the service.
    pub async fn connect_sentinel(
        sentinels: &[String],
        service_name: &str,
        auth: &SentinelAuth,
        opts: RedisStoreOptions,
    ) -> Result<Self, CounterStoreError> {
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(opts.response_timeout))
            .set_connection_timeout(Some(opts.connection_timeout));
        let primary = SentinelPrimary::connect(sentinels, service_name, auth, config)
            .await
            .map_err(unavailable)?;
        Self::start(Conn::Sentinel(Arc::new(primary)), opts).await
    }

    async fn start(conn: Conn, mut opts: RedisStoreOptions) -> Result<Self, CounterStoreError> {
        // a window or lease of 0 would restart at every call, never limiting anything
        opts.rate_window_ms = opts.rate_window_ms.max(1);
        opts.lease = opts.lease.max(Duration::from_millis(1));
        let store = Self {
            conn,
            keys: Arc::new(KeySpace::new(&opts.key_prefix)),
            opts: Arc::new(opts),
        };
        store.load_library().await?;
        Ok(store)
    }

    /// `FUNCTION LOAD REPLACE` of [`library::LIBRARY_NAME`] (on every primary of a cluster).
    pub(super) async fn load_library(&self) -> Result<(), CounterStoreError> {
        let mut cmd = redis::cmd("FUNCTION");
        cmd.arg("LOAD").arg("REPLACE").arg(library::SOURCE);
        self.conn.send(&cmd).await.map_err(unavailable)?;
        Ok(())
    }

    /// One `FCALL`; when the server has lost the library, loads it and sends the call again,
    /// once.
    async fn fcall(
        &self,
        name: &str,
        keys: &[String],
        args: &[String],
    ) -> Result<Value, CounterStoreError> {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(name).arg(keys.len()).arg(keys).arg(args);
        match self.conn.send(&cmd).await {
            Err(e) if library::is_missing(&e) => {
                self.load_library().await?;
                self.conn.send(&cmd).await.map_err(unavailable)
            }
            r => r.map_err(unavailable),
        }
    }

    /// The RPM/TPM window, ms (what a local fallback counts with too).
    pub fn rate_window_ms(&self) -> i64 {
        self.opts.rate_window_ms
    }

    /// The server's standardised budget reset after `at` for `duration`, computed by the
    /// library (what `reserve` and `reset_spend` use), to check it against
    /// [`BudgetDuration::next_reset`].
    ///
    /// # Errors
    /// As any call: [`CounterStoreError`].
    pub async fn server_next_reset(
        &self,
        duration: BudgetDuration,
        at: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, CounterStoreError> {
        let args = [duration.to_string(), at.timestamp_millis().to_string()];
        let v = self.fcall(function::NEXT_RESET, &[], &args).await?;
        let ms = reply::int(&v).ok_or_else(|| reply::bad("next_reset", &v))?;
        Ok((ms >= 0).then(|| reply::time(ms)).flatten())
    }

    /// One `tollgate_v2_reserve` call; with `check_marker`, a missing fleet marker answers
    /// [`ReserveOutcome::Unseeded`] and reserves nothing.
    pub(super) async fn reserve_call(
        &self,
        req: &ReserveRequest<'_>,
        check_marker: bool,
    ) -> Result<ReserveOutcome, CounterStoreError> {
        // Each distinct scope once, at its first position (what the in-process store does).
        let mut unique: Vec<usize> = Vec::with_capacity(req.scopes.len());
        for (i, s) in req.scopes.iter().enumerate() {
            if !unique.iter().any(|&u| req.scopes[u].key == s.key) {
                unique.push(i);
            }
        }
        let mut keys = Vec::with_capacity(4 + unique.len());
        keys.push(self.keys.ticket(req.request_id, req.attempt));
        keys.push(self.keys.dirty());
        keys.push(self.keys.leases());
        keys.push(self.keys.fleet());
        keys.extend(unique.iter().map(|&i| self.keys.scope(&req.scopes[i].key)));
        let mut args = Vec::with_capacity(6 + 5 * unique.len());
        args.push(self.opts.rate_window_ms.to_string());
        args.push(self.opts.lease.as_millis().to_string());
        args.push(req.cost_units.to_string());
        args.push(req.prompt_tokens.to_string());
        args.push(req.reserve_tokens.to_string());
        args.push(if check_marker { "1" } else { "0" }.to_string());
        for &i in &unique {
            let l = &req.scopes[i].limits;
            args.push(opt(l.finite_budget().map(usd_to_units)));
            args.push(opt(l.budget_duration));
            args.push(opt(l.rpm_limit));
            args.push(opt(l.tpm_limit));
            args.push(opt(l.max_parallel_requests));
        }
        let v = self.fcall(function::RESERVE, &keys, &args).await?;
        reply::reserved(&v, req, &unique)
    }

    /// The ticket, dirty set and leases keys, then `scopes`' keys.
    fn call_keys<'a>(
        &self,
        request_id: &str,
        attempt: u32,
        scopes: impl Iterator<Item = &'a ScopeKey>,
    ) -> Vec<String> {
        let mut keys = vec![
            self.keys.ticket(request_id, attempt),
            self.keys.dirty(),
            self.keys.leases(),
        ];
        keys.extend(scopes.map(|s| self.keys.scope(s)));
        keys
    }

    async fn finish(
        &self,
        ticket: &Ticket,
        actual: Actual,
        name: &str,
    ) -> Result<Value, CounterStoreError> {
        let keys = self.call_keys(&ticket.request_id, ticket.attempt, ticket.scopes.iter());
        let mut args = vec![
            self.opts.rate_window_ms.to_string(),
            ticket.cost_units.to_string(),
            ticket.tokens.to_string(),
        ];
        if name == function::SETTLE {
            args.push(actual.cost_units.to_string());
            args.push(actual.tokens.to_string());
        }
        self.fcall(name, &keys, &args).await
    }

    async fn write_scope(
        &self,
        name: &str,
        scope: &ScopeKey,
        args: &[String],
    ) -> Result<Value, CounterStoreError> {
        let keys = [self.keys.scope(scope), self.keys.dirty()];
        self.fcall(name, &keys, args).await
    }
}

pub(super) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

pub(super) fn ms(at: Option<DateTime<Utc>>) -> String {
    opt(at.map(|t| t.timestamp_millis()))
}

#[async_trait]
impl AsyncCounterStore for RedisCounterStore {
    async fn reserve(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<Result<Reserved, Denial>, CounterStoreError> {
        match self.reserve_call(req, false).await? {
            ReserveOutcome::Granted(r) => Ok(Ok(r)),
            ReserveOutcome::Denied(d) => Ok(Err(d)),
            ReserveOutcome::Unseeded => Err(CounterStoreError::BadReply {
                operation: "reserve",
                detail: "fleet marker reported missing on an unchecked call".to_string(),
            }),
        }
    }

    async fn settle(
        &self,
        ticket: &Ticket,
        actual: Actual,
    ) -> Result<Option<Vec<f64>>, CounterStoreError> {
        let v = self.finish(ticket, actual, function::SETTLE).await?;
        reply::settled(&v)
    }

    async fn release(&self, ticket: &Ticket) -> Result<bool, CounterStoreError> {
        let v = self
            .finish(ticket, Actual::default(), function::RELEASE)
            .await?;
        Ok(reply::int(&v).ok_or_else(|| reply::bad("release", &v))? == 1)
    }

    async fn set_spend(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
    ) -> Result<(), CounterStoreError> {
        self.seed(scope, spend_usd, budget_reset_at, None).await
    }

    async fn seed(
        &self,
        scope: &ScopeKey,
        spend_usd: f64,
        budget_reset_at: Option<DateTime<Utc>>,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        let args = [
            usd_to_units(spend_usd).to_string(),
            ms(budget_reset_at),
            opt(duration),
        ];
        self.write_scope(function::SET_SPEND, scope, &args).await?;
        Ok(())
    }

    async fn reset_spend(
        &self,
        scope: &ScopeKey,
        duration: Option<BudgetDuration>,
    ) -> Result<(), CounterStoreError> {
        self.write_scope(function::RESET_SPEND, scope, &[opt(duration)])
            .await?;
        Ok(())
    }

    async fn set_window(
        &self,
        scope: &ScopeKey,
        duration: BudgetDuration,
        reset_at: DateTime<Utc>,
        restart: bool,
    ) -> Result<(), CounterStoreError> {
        let args = [
            duration.to_string(),
            reset_at.timestamp_millis().to_string(),
            if restart { "1" } else { "0" }.to_string(),
        ];
        self.write_scope(function::SET_WINDOW, scope, &args).await?;
        Ok(())
    }

    async fn spend(&self, scope: &ScopeKey) -> Result<Option<ScopeSpend>, CounterStoreError> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.keys.scope(scope))
            .arg(&reply::SPEND_FIELDS[..]);
        let v = self.conn.send(&cmd).await.map_err(unavailable)?;
        reply::scope_spend(&v)
    }

    async fn drain_dirty(&self) -> Result<Vec<SpendSnapshot>, CounterStoreError> {
        let v = self
            .fcall(function::DRAIN, &[self.keys.dirty()], &[])
            .await?;
        reply::drained(&v, &self.keys)
    }
}
