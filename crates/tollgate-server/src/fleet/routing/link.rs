//! The routing sync's connections to the fleet's Redis, from [`RedisSettings`]: one
//! multiplexed command connection (a single server, a Redis Cluster, or the primary the
//! Sentinels name) and one pub/sub connection for the cooldown channel.
//!
//! A failed call is not retried here: the sync task drops the link and connects again with
//! back-off, which also asks the Sentinels for the primary again after a failover. On a
//! cluster the channel is subscribed on one startup node: a cluster delivers every `PUBLISH`
//! to every node.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubStream};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{Client, Cmd, FromRedisValue, RedisConnectionInfo, RedisError, TlsMode};
use tollgate_config::{RedisSettings, RedisTarget};
use tollgate_governance::admission::redis as redis_tcp;

use super::wire;

/// How long a connection attempt and a call may take before they count as failed.
const TIMEOUT: Duration = Duration::from_secs(1);

/// A command connection.
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// The connections of one replica's routing sync.
pub(super) struct Link {
    conn: Conn,
    /// Cooldown messages of the other replicas (and this one's own).
    pub(super) messages: PubSubStream,
}

impl Link {
    /// Connects as `settings` say (the `attempt`-th startup node of a cluster carries the
    /// subscription), loads the function library and subscribes to `channel`.
    ///
    /// # Errors
    /// Any connection, authentication or library-load failure.
    pub(super) async fn connect(
        settings: &RedisSettings,
        channel: &str,
        attempt: usize,
    ) -> Result<Link, RedisError> {
        let urls = settings.urls();
        let (conn, sub) = match &settings.target {
            RedisTarget::Cluster(_) => {
                let client = ClusterClient::builder(urls.iter().map(|u| u.expose().to_owned()))
                    .connection_timeout(TIMEOUT)
                    .response_timeout(TIMEOUT)
                    .tcp_settings(redis_tcp::tcp_settings())
                    .build()?;
                let conn = Conn::Cluster(client.get_async_connection().await?);
                let node = urls
                    .get(attempt % urls.len().max(1))
                    .map(|u| u.expose().to_owned())
                    .unwrap_or_default();
                (conn, redis_tcp::client(&node)?)
            }
            RedisTarget::Sentinel { service_name, .. } => {
                let client = sentinel_primary(settings, service_name, &urls).await?;
                (single(client.clone()).await?, client)
            }
            RedisTarget::Url(_) | RedisTarget::Node(_) => {
                let url = urls
                    .first()
                    .map(|u| u.expose().to_owned())
                    .unwrap_or_default();
                let client = redis_tcp::client(&url)?;
                (single(client.clone()).await?, client)
            }
        };
        let mut pubsub = tokio::time::timeout(TIMEOUT, sub.get_async_pubsub())
            .await
            .map_err(|_| timed_out())??;
        pubsub.subscribe(channel).await?;
        let mut link = Link {
            conn,
            messages: pubsub.into_on_message(),
        };
        let mut load = redis::cmd("FUNCTION");
        load.arg("LOAD").arg("REPLACE").arg(wire::LIBRARY);
        link.send::<redis::Value>(&load).await?;
        Ok(link)
    }

    /// Sends `cmd` and reads its reply as `T`.
    pub(super) async fn send<T: FromRedisValue>(&mut self, cmd: &Cmd) -> Result<T, RedisError> {
        match &mut self.conn {
            Conn::Single(c) => cmd.query_async(c).await,
            Conn::Cluster(c) => cmd.query_async(c).await,
        }
    }
}

fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "connecting took over 1 s",
    ))
}

async fn single(client: Client) -> Result<Conn, RedisError> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT))
        .set_number_of_retries(1);
    Ok(Conn::Single(
        ConnectionManager::new_with_config(client, config).await?,
    ))
}

/// A client of the primary the Sentinels (`urls`) name for `service_name`.
async fn sentinel_primary(
    settings: &RedisSettings,
    service_name: &str,
    urls: &[tollgate_config::Secret],
) -> Result<Client, RedisError> {
    let mut info = RedisConnectionInfo::default();
    if let Some(u) = &settings.username {
        info = info.set_username(u);
    }
    if let Some(p) = &settings.password {
        info = info.set_password(p.expose());
    }
    let mut node = SentinelNodeConnectionInfo::default()
        .set_redis_connection_info(info)
        .set_tcp_settings(redis_tcp::tcp_settings());
    if settings.tls {
        node = node.set_tls_mode(TlsMode::Secure);
    }
    let mut sentinel = SentinelClient::build(
        urls.iter().map(|u| u.expose().to_owned()).collect(),
        service_name,
        Some(node),
        SentinelServerType::Master,
    )?;
    sentinel.async_get_client().await
}
