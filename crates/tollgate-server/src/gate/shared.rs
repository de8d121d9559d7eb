//! Where the governance counters (budgets, RPM/TPM/parallel limits) live: in this process by
//! default, in Redis when the config names one (LiteLLM's keys, resolved by
//! [`tollgate_config::redis_settings`]), so every replica of a fleet counts against the same
//! budgets and windows ([`shared_counters`] builds them: one reservation awaited per request,
//! settlements of many requests batched into one pipeline, the Redis-down policy, reseeding
//! from the database after Redis lost its data; see `tollgate_governance::admission::fleet`).

use std::sync::Arc;

use tollgate_config::redact::redact_url_userinfo;
use tollgate_config::{RedisNode, RedisSettings, RedisTarget};
use tollgate_governance::admission::CounterStoreError;
use tollgate_governance::admission::fleet::{BatchedOptions, BatchedRedis, ReseedSource};
use tollgate_governance::admission::redis::{
    FailurePolicy, RedisCounterStore, RedisStoreOptions, SentinelAuth,
};

/// The shared counters could not be started.
#[derive(Debug, thiserror::Error)]
#[error("Redis {target} (from {origin}) cannot be used for the governance counters: {detail}")]
pub struct SharedCountersError {
    /// Where, password masked ([`describe`]).
    pub target: String,
    /// The config key the target came from.
    pub origin: String,
    /// Why (connection refused, authentication, a server older than Redis 7...), with any
    /// password the settings carry masked.
    pub detail: String,
}

/// Connects the counters a fleet shares to the Redis of `settings` (a server by URL or host,
/// a Redis Cluster through its startup nodes, or the primary Sentinel names), with its
/// credentials and TLS, every key under `{<settings.key_prefix>}:`, loads the counter
/// functions and starts the settlement batcher. `source` seeds Redis again when it has lost
/// its counters (call [`seed_if_empty`] once the database is migrated); `policy` says what a
/// request meets while Redis fails. Needs a Tokio runtime.
///
/// # Errors
/// [`SharedCountersError`] naming the target (password masked) when Redis cannot be reached,
/// refuses the credentials or cannot load the functions.
pub async fn shared_counters(
    settings: &RedisSettings,
    source: Arc<dyn ReseedSource>,
    policy: FailurePolicy,
) -> Result<Arc<BatchedRedis>, SharedCountersError> {
    let opts = RedisStoreOptions {
        key_prefix: settings.key_prefix.clone(),
        ..RedisStoreOptions::default()
    };
    // said before the first attempt, so a start that waits on Redis says on what
    tracing::info!(target_redis = %describe(settings), origin = %settings.origin, "connecting to Redis for the shared counters");
    let store = match &settings.target {
        RedisTarget::Url(u) => RedisCounterStore::connect(u.expose(), opts).await,
        RedisTarget::Node(n) => {
            RedisCounterStore::connect(settings.node_url(n).expose(), opts).await
        }
        RedisTarget::Cluster(nodes) => {
            let urls: Vec<String> = nodes
                .iter()
                .map(|n| settings.node_url(n).expose().to_owned())
                .collect();
            RedisCounterStore::connect_cluster(&urls, opts).await
        }
        RedisTarget::Sentinel {
            nodes,
            service_name,
        } => {
            // The Sentinels are asked without the primary's credentials; those log in to the
            // primary they name.
            let urls: Vec<String> = nodes.iter().map(|n| plain_url(settings.tls, n)).collect();
            let auth = SentinelAuth {
                username: settings.username.clone(),
                password: settings.password.as_ref().map(|p| p.expose().to_owned()),
                tls: settings.tls,
            };
            RedisCounterStore::connect_sentinel(&urls, service_name, &auth, opts).await
        }
    };
    let store = store.map_err(|e| SharedCountersError {
        target: describe(settings),
        origin: settings.origin.clone(),
        detail: with_tls_hint(settings, masked(settings, &e)),
    })?;
    let batched = BatchedRedis::start(store, source, policy, BatchedOptions::default());
    Ok(Arc::new(batched))
}

/// Seeds a fresh (or emptied) Redis from the database now, once for the fleet, rather than by
/// the first request that finds it empty.
///
/// # Errors
/// [`SharedCountersError`] when the database or Redis fails while seeding.
pub async fn seed_if_empty(
    settings: &RedisSettings,
    batched: &BatchedRedis,
) -> Result<(), SharedCountersError> {
    batched
        .ensure_seeded()
        .await
        .map_err(|e| SharedCountersError {
            target: describe(settings),
            origin: settings.origin.clone(),
            detail: format!("seeding the counters from the database: {e}"),
        })
}

/// `detail` with a hint when TLS is on and the failure is what a TLS handshake against a
/// server without TLS gives: a plain Redis waits for a command it never gets, so the client
/// times out (or, with other servers, reads garbage as a TLS record).
fn with_tls_hint(settings: &RedisSettings, detail: String) -> String {
    let tls = settings.tls
        || matches!(&settings.target, RedisTarget::Url(u) if u.expose().starts_with("rediss://"));
    let lower = detail.to_ascii_lowercase();
    let handshake_like = [
        "timed out",
        "tls",
        "ssl",
        "certificate",
        "handshake",
        "corrupt",
    ]
    .iter()
    .any(|w| lower.contains(w));
    if tls && handshake_like {
        format!(
            "{detail} (TLS is on, by rediss:// or REDIS_SSL: does this server accept TLS connections?)"
        )
    } else {
        detail
    }
}

/// `redis[s]://host:port`, without credentials.
fn plain_url(tls: bool, n: &RedisNode) -> String {
    let scheme = if tls { "rediss" } else { "redis" };
    format!("{scheme}://{}:{}", n.host, n.port)
}

/// Where the counters live, for the start-up log and errors; never a password:
/// `redis://user:****@host:6379`, `host:6379`, `cluster a:7000, b:7001`,
/// `sentinel service mymaster at s1:26379`.
pub fn describe(settings: &RedisSettings) -> String {
    let nodes = |ns: &[RedisNode]| {
        ns.iter()
            .map(|n| format!("{}:{}", n.host, n.port))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let tls = if settings.tls { " (TLS)" } else { "" };
    match &settings.target {
        RedisTarget::Url(u) => redact_url_userinfo(u.expose()),
        RedisTarget::Node(n) => format!("{}:{}{tls}", n.host, n.port),
        RedisTarget::Cluster(ns) => format!("cluster {}{tls}", nodes(ns)),
        RedisTarget::Sentinel {
            nodes: ns,
            service_name,
        } => format!("sentinel service {service_name} at {}{tls}", nodes(ns)),
    }
}

/// The error's text with every password of `settings` masked (a client error may quote what
/// it was given).
fn masked(settings: &RedisSettings, e: &CounterStoreError) -> String {
    let mut text = e.to_string();
    let url_password = match &settings.target {
        RedisTarget::Url(u) => url_password(u.expose()),
        _ => None,
    };
    let passwords = settings
        .password
        .as_ref()
        .map(|p| p.expose().to_owned())
        .into_iter()
        .chain(url_password);
    for p in passwords.filter(|p| !p.is_empty()) {
        text = text.replace(&p, "****");
    }
    redact_url_userinfo(&text)
}

/// The password of `scheme://user:password@host...`, if any.
fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let userinfo = rest.split('/').next()?.rsplit_once('@')?.0;
    Some(userinfo.split_once(':')?.1.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_config::Secret;

    fn settings(target: RedisTarget) -> RedisSettings {
        RedisSettings {
            target,
            username: Some("u".into()),
            password: Some(Secret::new("CANARY-pw".to_owned())),
            tls: false,
            origin: "REDIS_HOST".into(),
            key_prefix: "tollgate".into(),
        }
    }

    #[test]
    fn descriptions_never_carry_a_password() {
        let url = settings(RedisTarget::Url(Secret::new(
            "redis://u:CANARY-url@h:6380/0".to_owned(),
        )));
        let d = describe(&url);
        assert!(!d.contains("CANARY"), "{d}");
        assert!(d.contains("h:6380"), "{d}");
        let node = settings(RedisTarget::Node(RedisNode {
            host: "h".into(),
            port: 6379,
        }));
        assert_eq!(describe(&node), "h:6379");
        let cluster = settings(RedisTarget::Cluster(vec![
            RedisNode {
                host: "a".into(),
                port: 7000,
            },
            RedisNode {
                host: "b".into(),
                port: 7001,
            },
        ]));
        assert_eq!(describe(&cluster), "cluster a:7000, b:7001");
        let e = CounterStoreError::Unavailable("auth CANARY-pw and CANARY-url refused".into());
        let m = masked(&url, &e);
        assert!(!m.contains("CANARY"), "{m}");
        assert_eq!(
            url_password("redis://u:CANARY-url@h:6380/0").as_deref(),
            Some("CANARY-url")
        );
        assert_eq!(url_password("redis://h:6380"), None);
    }

    #[tokio::test]
    async fn an_unreachable_redis_is_an_error_naming_it_without_its_password() {
        // a port nothing listens on: bind one, then free it
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let s = settings(RedisTarget::Node(RedisNode {
            host: "127.0.0.1".into(),
            port,
        }));
        let source = Arc::new(tollgate_governance::admission::fleet::NoSeeds);
        let Err(e) = shared_counters(&s, source, FailurePolicy::default()).await else {
            panic!("connected to a closed port");
        };
        let text = e.to_string();
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        assert!(text.contains("REDIS_HOST"), "{text}");
        assert!(!text.contains("CANARY"), "{text}");
    }
}
