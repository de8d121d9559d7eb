//! A primary found through Redis Sentinel, followed across failovers.
//!
//! The Sentinels are asked for the primary of the service at connect; calls then go to it on
//! one multiplexed `ConnectionManager`. When the primary stops being one, the Sentinels are
//! asked again and the connection is replaced:
//!
//! - a `READONLY` reply (the old primary was demoted to a replica) or a refused connection
//!   means the call did not run: it is sent again, once, to the new primary;
//! - a connection lost mid-call may or may not have run it: the primary is looked up again for
//!   the next call, and this one fails (a reservation that did run is released by its lease).
//!   A demoted primary closes its clients' connections, so after a failover the first call
//!   usually fails this way and the next runs on the new primary (tested with a forced
//!   `SENTINEL FAILOVER`).

use std::sync::Arc;

use arc_swap::ArcSwap;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{Cmd, Pipeline, RedisConnectionInfo, RedisError, TlsMode, Value};
use tokio::sync::Mutex;

/// How to log in to the primary the Sentinels name (the Sentinels' own URLs carry theirs).
#[derive(Clone, Default)]
pub struct SentinelAuth {
    /// ACL user of the primary.
    pub username: Option<String>,
    /// Password of the primary.
    pub password: Option<String>,
    /// Connect to the primary with TLS (rustls, certificates verified).
    pub tls: bool,
}

impl std::fmt::Debug for SentinelAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelAuth")
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "****"))
            .field("tls", &self.tls)
            .finish()
    }
}

/// The primary of one Sentinel service.
pub(super) struct SentinelPrimary {
    sentinel: Mutex<SentinelClient>,
    primary: ArcSwap<ConnectionManager>,
    config: ConnectionManagerConfig,
}

impl SentinelPrimary {
    /// Asks `sentinels` (`redis://host:port` each) for the primary of `service_name` and
    /// connects to it.
    pub(super) async fn connect(
        sentinels: &[String],
        service_name: &str,
        auth: &SentinelAuth,
        config: ConnectionManagerConfig,
    ) -> Result<Self, RedisError> {
        let mut info = RedisConnectionInfo::default();
        if let Some(u) = &auth.username {
            info = info.set_username(u);
        }
        if let Some(p) = &auth.password {
            info = info.set_password(p);
        }
        let mut node = SentinelNodeConnectionInfo::default()
            .set_redis_connection_info(info)
            .set_tcp_settings(super::tcp::tcp_settings());
        if auth.tls {
            node = node.set_tls_mode(TlsMode::Secure);
        }
        let mut client = SentinelClient::build(
            sentinels.iter().map(String::as_str).collect(),
            service_name,
            Some(node),
            SentinelServerType::Master,
        )?;
        let primary =
            ConnectionManager::new_with_config(client.async_get_client().await?, config.clone())
                .await?;
        Ok(Self {
            sentinel: Mutex::new(client),
            primary: ArcSwap::from_pointee(primary),
            config,
        })
    }

    /// Replaces the connection `seen` by one to the primary the Sentinels name now, unless
    /// another call already did.
    async fn follow(&self, seen: &Arc<ConnectionManager>) -> Result<(), RedisError> {
        let mut sentinel = self.sentinel.lock().await;
        if !Arc::ptr_eq(&self.primary.load(), seen) {
            return Ok(());
        }
        let client = sentinel.async_get_client().await?;
        let primary = ConnectionManager::new_with_config(client, self.config.clone()).await?;
        self.primary.store(Arc::new(primary));
        Ok(())
    }

    /// Sends `cmd` to the primary (see the module docs for failovers).
    pub(super) async fn send(&self, cmd: &Cmd) -> Result<Value, RedisError> {
        let seen = self.primary.load_full();
        match cmd.query_async(&mut (*seen).clone()).await {
            Err(e) if e.code() == Some("READONLY") || e.is_connection_refusal() => {
                self.follow(&seen).await?;
                let now = self.primary.load_full();
                cmd.query_async(&mut (*now).clone()).await
            }
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                // the next call goes to whichever primary the Sentinels name by then
                let _ = self.follow(&seen).await;
                Err(e)
            }
            r => r,
        }
    }

    /// Sends `pipe` to the primary, following a failover as [`Self::send`] does.
    pub(super) async fn send_pipe(&self, pipe: &Pipeline) -> Result<Vec<Value>, RedisError> {
        let seen = self.primary.load_full();
        match pipe.query_async(&mut (*seen).clone()).await {
            Err(e) if e.code() == Some("READONLY") || e.is_connection_refusal() => {
                self.follow(&seen).await?;
                let now = self.primary.load_full();
                pipe.query_async(&mut (*now).clone()).await
            }
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                let _ = self.follow(&seen).await;
                Err(e)
            }
            r => r,
        }
    }
}
