//! Identities across replicas: with Redis settings ([`tollgate_config::redis_settings`]),
//! every management write this replica's database accepts is announced on
//! `<key_prefix>:changes`, and what the other replicas announce is applied here within a
//! second; a periodic full reconcile bounds what a lost announcement leaves stale.
//!
//! [`start`] wires the pieces of `tollgate_governance::runtime` together (the governance crate
//! decides; this module only connects):
//!
//! | task | job |
//! |---|---|
//! | `feed_redis::publish_changes` | sends the changes [`Governance::announce_writes`] queues |
//! | `feed_redis::subscribe_changes` | hears the other replicas' changes, raises refreshes |
//! | `feed_apply::apply_changes` | coalesces them (50 ms), refreshes identities ([`Governance::reload_identities`]) and stored deployments ([`ModelRegistry::reload`]); full reconcile every `TOLLGATE_IDENTITY_RECONCILE_SECONDS` (default 30, 0 = off) |
//!
//! Without Redis settings nothing starts and nothing changes: no task, the management API
//! writes to the plain store, the request path is the same in both cases (it only reads the
//! cache).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tollgate_admin::{AdminContext, ModelRegistry};
use tollgate_config::{Config, RedisSettings, RedisTarget, redis_settings};
use tollgate_governance::admission::redis::SentinelAuth;
use tollgate_governance::runtime::Governance;
use tollgate_governance::runtime::feed::{ChangeFeed, FEED_QUEUE, FeedStats, channel};
use tollgate_governance::runtime::feed_apply::{
    ApplyOptions, RefreshError, RefreshRequests, RefreshTarget, apply_changes,
};
use tollgate_governance::runtime::feed_redis::{FeedEndpoint, publish_changes, subscribe_changes};

/// The variable holding the reconcile period, seconds (`environment_variables:` of the config
/// first, then the process).
pub const RECONCILE_VAR: &str = "TOLLGATE_IDENTITY_RECONCILE_SECONDS";

/// The default reconcile period.
pub const DEFAULT_RECONCILE: Duration = Duration::from_secs(30);

/// Why the feed cannot start.
#[derive(Debug, thiserror::Error)]
pub enum IdentityFeedError {
    /// The Redis settings are invalid.
    #[error(transparent)]
    Redis(#[from] tollgate_config::RedisConfigError),
    /// The reconcile period is not a number of seconds.
    #[error("{RECONCILE_VAR}: expected a number of seconds (0 = off), got {0:?}")]
    Reconcile(String),
}

/// A running feed: its counters.
#[derive(Debug, Clone)]
pub struct IdentityFeed {
    /// What was emitted, published, received and refreshed.
    pub stats: Arc<FeedStats>,
    /// The channel, `<key_prefix>:changes`.
    pub channel: String,
}

/// The reconcile period `value` names: seconds (a fraction allowed), `0` = off, unset or blank
/// = [`DEFAULT_RECONCILE`].
///
/// Errors: [`IdentityFeedError::Reconcile`] for anything else.
pub fn reconcile_period(value: Option<&str>) -> Result<Option<Duration>, IdentityFeedError> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Some(DEFAULT_RECONCILE));
    };
    match v.parse::<f64>() {
        Ok(0.0) => Ok(None),
        Ok(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        _ => Err(IdentityFeedError::Reconcile(v.to_owned())),
    }
}

/// Where the feed connects for `s`: the one server, any cluster node (tried in turn), or the
/// primary the Sentinels name (the Sentinels themselves without credentials, the primary with
/// the settings' user, password and TLS).
pub fn endpoint(s: &RedisSettings) -> FeedEndpoint {
    match &s.target {
        RedisTarget::Sentinel {
            nodes,
            service_name,
        } => FeedEndpoint::Sentinel {
            sentinels: nodes
                .iter()
                .map(|n| format!("redis://{}:{}", n.host, n.port))
                .collect(),
            service_name: service_name.clone(),
            auth: SentinelAuth {
                username: s.username.clone(),
                password: s.password.as_ref().map(|p| p.expose().to_owned()),
                tls: s.tls,
            },
        },
        _ => FeedEndpoint::Nodes(s.urls().iter().map(|u| u.expose().to_owned()).collect()),
    }
}

/// Starts the feed when `config` (with `env`) names a Redis server; `Ok(None)`, starting
/// nothing, when it does not. From then on `admin`'s management writes are announced, and
/// the other replicas' changes refresh `admin.gov`'s cache and `admin.models`' router until
/// `stop` turns true. Call once, before serving.
///
/// Errors: [`IdentityFeedError`] (invalid Redis settings or reconcile period). An unreachable
/// Redis is not one: the tasks keep reconnecting, and the reconcile runs regardless.
pub fn start(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
    admin: &Arc<AdminContext>,
    stop: watch::Receiver<bool>,
) -> Result<Option<IdentityFeed>, IdentityFeedError> {
    let Some(settings) = redis_settings(config, env)? else {
        return Ok(None);
    };
    let lookup = |k: &str| config.env_var(k, env);
    let reconcile = reconcile_period(lookup(RECONCILE_VAR).as_deref())?;
    let endpoint = endpoint(&settings);
    let channel = channel(&settings.key_prefix);
    let origin: Arc<str> = Arc::from(ChangeFeed::random_origin());
    let (feed, queue) = ChangeFeed::new(Arc::clone(&origin), FEED_QUEUE);
    let stats = Arc::clone(feed.stats());
    admin.gov.announce_writes(feed);
    // a key created through another replica a moment ago is looked up, not refused
    admin.gov.look_up_missing_keys();
    let requests = Arc::new(RefreshRequests::default());
    tokio::spawn(publish_changes(
        endpoint.clone(),
        channel.clone(),
        Arc::clone(&origin),
        queue,
        Arc::clone(&stats),
    ));
    tokio::spawn(subscribe_changes(
        endpoint,
        channel.clone(),
        origin,
        Arc::clone(&requests),
        Arc::clone(&stats),
        stop.clone(),
    ));
    let target = Arc::new(Replica {
        gov: Arc::clone(&admin.gov),
        models: Arc::clone(&admin.models),
    });
    tokio::spawn(apply_changes(
        target,
        requests,
        ApplyOptions {
            reconcile,
            ..ApplyOptions::default()
        },
        Arc::clone(&stats),
        stop,
    ));
    tracing::info!(
        %channel,
        reconcile_seconds = reconcile.map_or(0.0, |d| d.as_secs_f64()),
        redis = %settings.origin,
        "identity changes shared with the fleet"
    );
    Ok(Some(IdentityFeed { stats, channel }))
}

/// This replica as the refresh loop sees it.
struct Replica {
    gov: Arc<Governance>,
    models: Arc<dyn ModelRegistry>,
}

#[async_trait]
impl RefreshTarget for Replica {
    async fn refresh_identities(&self) -> Result<(), RefreshError> {
        let r = self
            .gov
            .reload_identities()
            .await
            .map_err(|e| RefreshError(e.to_string()))?;
        if r.changed + r.removed > 0 {
            tracing::debug!(
                changed = r.changed,
                removed = r.removed,
                keys = r.keys,
                "identities refreshed from the database"
            );
        }
        Ok(())
    }

    async fn refresh_models(&self) -> Result<(), RefreshError> {
        let rebuilt = self
            .models
            .reload()
            .await
            .map_err(|e| RefreshError(e.to_string()))?;
        if rebuilt {
            tracing::info!("stored deployments changed on another replica: router rebuilt");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_config::RedisNode;
    use tollgate_config::Secret;

    #[test]
    fn reconcile_period_defaults_to_30_s_and_0_turns_it_off() {
        assert_eq!(reconcile_period(None).unwrap(), Some(DEFAULT_RECONCILE));
        assert_eq!(
            reconcile_period(Some(" ")).unwrap(),
            Some(DEFAULT_RECONCILE)
        );
        assert_eq!(reconcile_period(Some("0")).unwrap(), None);
        assert_eq!(
            reconcile_period(Some("1.5")).unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert!(reconcile_period(Some("-1")).is_err());
        assert!(reconcile_period(Some("soon")).is_err());
    }

    fn settings(target: RedisTarget) -> RedisSettings {
        RedisSettings {
            target,
            username: Some("u".into()),
            password: Some(Secret::new("pw")),
            tls: false,
            origin: "REDIS_HOST".into(),
            key_prefix: "fleet-a".into(),
        }
    }

    #[test]
    fn endpoints_follow_the_target() {
        let node = |p| RedisNode {
            host: "10.0.0.1".into(),
            port: p,
        };
        match endpoint(&settings(RedisTarget::Cluster(vec![
            node(7000),
            node(7001),
        ]))) {
            FeedEndpoint::Nodes(urls) => assert_eq!(
                urls,
                vec!["redis://u:pw@10.0.0.1:7000", "redis://u:pw@10.0.0.1:7001"]
            ),
            other => panic!("{other:?}"),
        }
        match endpoint(&settings(RedisTarget::Sentinel {
            nodes: vec![node(26379)],
            service_name: "mymaster".into(),
        })) {
            FeedEndpoint::Sentinel {
                sentinels,
                service_name,
                auth,
            } => {
                assert_eq!(sentinels, vec!["redis://10.0.0.1:26379"]);
                assert_eq!(service_name, "mymaster");
                assert_eq!(auth.password.as_deref(), Some("pw"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(channel("fleet-a"), "fleet-a:changes");
    }
}
