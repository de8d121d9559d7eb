//! [`RedisSettings`]: the one Redis server (or Redis Cluster, or Sentinel-watched primary) a
//! fleet of replicas shares, resolved from LiteLLM's keys, read unchanged.
//!
//! # Sources
//!
//! | source | keys |
//! |---|---|
//! | environment (`environment_variables:` of the file first, then the process) | `REDIS_URL`; `REDIS_HOST`, `REDIS_PORT`, `REDIS_USERNAME`, `REDIS_PASSWORD`, `REDIS_SSL`; `REDIS_CLUSTER_NODES` (JSON list of `{"host", "port"}`); `REDIS_SENTINEL_NODES` (JSON list of `[host, port]` pairs or `{"host", "port"}`) + `REDIS_SERVICE_NAME` |
//! | `router_settings` | `redis_url`, `redis_host`, `redis_port`, `redis_password` |
//! | `litellm_settings.cache_params`, when its `type` is `redis` | `url`, `host`, `port`, `username`, `password`, `ssl`, `redis_startup_nodes` (or `startup_nodes`), `sentinel_nodes`, `service_name` |
//!
//! # Precedence
//!
//! Key by key, later rows of the table win over earlier ones: the environment gives the base and
//! the file overrides it (LiteLLM builds its Redis client from `{**env_kwargs, **explicit_kwargs}`,
//! `litellm/_redis.py`), `cache_params` last because it is what LiteLLM's proxy counters (rate
//! limits, parallel requests) use. Within the merged keys, as LiteLLM decides: a URL wins (host,
//! port and password are then ignored), else cluster startup nodes, else Sentinel nodes, else
//! host and port (6379 by default). Empty values count as unset. Nothing naming a server gives
//! no settings, unless `cache_params` asks for Redis, which is then an error (LiteLLM: "Either
//! 'host' or 'url' must be specified for redis").
//!
//! Tollgate's own key: `TOLLGATE_REDIS_KEY_PREFIX` (environment; default `tollgate`), the
//! prefix of every key and channel the fleet shares ([`RedisSettings::key_prefix`]): fleets
//! that must not share counters on one Redis use different prefixes.
//!
//! Passwords are [`Secret`]s: masked in `Debug`, and URLs print with their password masked.

use std::fmt;

use serde_json::Value;

use crate::config::Config;
use crate::redact::redact_url_userinfo;
use crate::secret::Secret;

/// The default Redis port.
pub const DEFAULT_REDIS_PORT: u16 = 6379;

/// One `host:port` of a cluster or of a Sentinel set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisNode {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

/// Which server(s) to talk to.
#[derive(Clone, PartialEq)]
pub enum RedisTarget {
    /// A URL as given (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS).
    Url(Secret),
    /// One server.
    Node(RedisNode),
    /// Redis Cluster startup nodes (any subset of the cluster; the rest is discovered).
    Cluster(Vec<RedisNode>),
    /// Sentinels watching the primary named `service_name`.
    Sentinel {
        /// The Sentinel processes.
        nodes: Vec<RedisNode>,
        /// The monitored primary's name (`REDIS_SERVICE_NAME`).
        service_name: String,
    },
}

/// The resolved Redis settings (see the module docs for sources and precedence).
#[derive(Clone, PartialEq)]
pub struct RedisSettings {
    /// Where to connect.
    pub target: RedisTarget,
    /// ACL user (`REDIS_USERNAME`), for every target but a URL (which carries its own).
    pub username: Option<String>,
    /// Password, for every target but a URL.
    pub password: Option<Secret>,
    /// TLS (`REDIS_SSL`, `ssl`; a `rediss://` URL says so itself).
    pub tls: bool,
    /// The key the target came from: `REDIS_URL`, `router_settings.redis_host`,
    /// `litellm_settings.cache_params.redis_startup_nodes`...
    pub origin: String,
    /// Prefix of every shared key and pub/sub channel (`TOLLGATE_REDIS_KEY_PREFIX`, default
    /// [`DEFAULT_KEY_PREFIX`]); on Redis Cluster it is also the hash tag (`{prefix}:...`).
    pub key_prefix: String,
}

/// The default [`RedisSettings::key_prefix`].
pub const DEFAULT_KEY_PREFIX: &str = "tollgate";

/// A Redis setting that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RedisConfigError {
    /// A port that is not an integer in 1..=65535.
    #[error("{key}: invalid Redis port {value:?}: expected an integer from 1 to 65535")]
    Port {
        /// The key (`REDIS_PORT`, `router_settings.redis_port`...).
        key: String,
        /// The value as written.
        value: String,
    },
    /// A node list that is not a list of `{"host", "port"}` (or `[host, port]`).
    #[error("{key}: invalid Redis node list: {detail}")]
    Nodes {
        /// The key.
        key: String,
        /// What is wrong.
        detail: String,
    },
    /// Sentinel nodes without the name of the primary they watch.
    #[error(
        "{key} is set but REDIS_SERVICE_NAME (service_name) is not: Sentinel needs the primary's name"
    )]
    NoServiceName {
        /// The key the nodes came from.
        key: String,
    },
    /// `cache_params.type: redis` without any server.
    #[error(
        "litellm_settings.cache_params has type redis but no server: set url, host, redis_startup_nodes or sentinel_nodes (or REDIS_URL / REDIS_HOST)"
    )]
    NoServer,
}

/// One key's value and the key it came from.
type Field<T> = Option<(T, String)>;

#[derive(Default)]
struct Layer {
    url: Field<String>,
    host: Field<String>,
    port: Field<String>,
    username: Field<String>,
    password: Field<String>,
    ssl: Field<String>,
    cluster: Field<Value>,
    sentinel: Field<Value>,
    service_name: Field<String>,
}

impl Layer {
    /// `self` with every key `over` sets replaced by `over`'s.
    fn under(self, over: Layer) -> Layer {
        Layer {
            url: over.url.or(self.url),
            host: over.host.or(self.host),
            port: over.port.or(self.port),
            username: over.username.or(self.username),
            password: over.password.or(self.password),
            ssl: over.ssl.or(self.ssl),
            cluster: over.cluster.or(self.cluster),
            sentinel: over.sentinel.or(self.sentinel),
            service_name: over.service_name.or(self.service_name),
        }
    }
}

fn field(value: Option<String>, key: &str) -> Field<String> {
    value
        .filter(|v| !v.trim().is_empty())
        .map(|v| (v, key.to_string()))
}

fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Layer, RedisConfigError> {
    let var = |name: &str| field(lookup(name), name);
    let json = |name: &str| -> Result<Field<Value>, RedisConfigError> {
        let Some((text, key)) = var(name) else {
            return Ok(None);
        };
        let v = serde_json::from_str(&text).map_err(|e| RedisConfigError::Nodes {
            key: key.clone(),
            detail: format!("not JSON ({e})"),
        })?;
        Ok(Some((v, key)))
    };
    Ok(Layer {
        url: var("REDIS_URL"),
        host: var("REDIS_HOST"),
        port: var("REDIS_PORT"),
        username: var("REDIS_USERNAME"),
        password: var("REDIS_PASSWORD"),
        ssl: var("REDIS_SSL"),
        cluster: json("REDIS_CLUSTER_NODES")?,
        sentinel: json("REDIS_SENTINEL_NODES")?,
        service_name: var("REDIS_SERVICE_NAME"),
    })
}

fn from_router(c: &Config) -> Layer {
    let r = &c.router_settings;
    let secret = |s: &Option<Secret>| s.as_ref().map(|s| s.expose().to_string());
    Layer {
        url: field(secret(&r.redis_url), "router_settings.redis_url"),
        host: field(r.redis_host.clone(), "router_settings.redis_host"),
        port: field(
            r.redis_port.map(|p| p.to_string()),
            "router_settings.redis_port",
        ),
        password: field(secret(&r.redis_password), "router_settings.redis_password"),
        ..Layer::default()
    }
}

/// A scalar of a free-form map as text (`port: 6380` and `port: "6380"` alike).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The `cache_params` layer, and whether it asks for Redis at all.
fn from_cache_params(c: &Config) -> (Layer, bool) {
    let Some(p) = c.litellm_settings.cache_params.as_ref() else {
        return (Layer::default(), false);
    };
    let is_redis = p
        .get("type")
        .and_then(scalar)
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("redis"));
    if !is_redis {
        return (Layer::default(), false);
    }
    let key = |k: &str| format!("litellm_settings.cache_params.{k}");
    let text = |k: &str| field(p.get(k).and_then(scalar), &key(k));
    let list = |k: &str| {
        p.get(k)
            .filter(|v| !v.is_null())
            .map(|v| (v.clone(), key(k)))
    };
    let layer = Layer {
        url: text("url"),
        host: text("host"),
        port: text("port"),
        username: text("username"),
        password: text("password"),
        ssl: text("ssl"),
        cluster: list("redis_startup_nodes").or_else(|| list("startup_nodes")),
        sentinel: list("sentinel_nodes"),
        service_name: text("service_name"),
    };
    (layer, true)
}

fn port(value: &str, key: &str) -> Result<u16, RedisConfigError> {
    let t = value.trim();
    let n = t
        .parse::<u16>()
        .ok()
        .or_else(|| {
            t.parse::<f64>()
                .ok()
                .filter(|f| f.fract() == 0.0 && (1.0..=65535.0).contains(f))
                .map(|f| f as u16)
        })
        .filter(|p| *p != 0);
    n.ok_or_else(|| RedisConfigError::Port {
        key: key.to_string(),
        value: value.to_string(),
    })
}

/// `[{"host": h, "port": p}, ...]` or `[[h, p], ...]` (redis-py's Sentinel form).
fn nodes(v: &Value, key: &str) -> Result<Vec<RedisNode>, RedisConfigError> {
    let bad = |detail: String| RedisConfigError::Nodes {
        key: key.to_string(),
        detail,
    };
    let Value::Array(items) = v else {
        return Err(bad("expected a list of {\"host\", \"port\"}".into()));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (host, p) = match item {
            Value::Object(m) => (m.get("host").and_then(scalar), m.get("port")),
            Value::Array(pair) if pair.len() == 2 => (scalar(&pair[0]), pair.get(1)),
            _ => (None, None),
        };
        let host = host
            .filter(|h| !h.trim().is_empty())
            .ok_or_else(|| bad(format!("item {i} has no host")))?;
        let p = match p.and_then(scalar) {
            Some(p) => port(&p, &format!("{key}[{i}].port"))?,
            None => DEFAULT_REDIS_PORT,
        };
        out.push(RedisNode { host, port: p });
    }
    if out.is_empty() {
        return Err(bad("the list is empty".into()));
    }
    Ok(out)
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "true" | "1" | "yes" | "on"
    )
}

/// Resolves the Redis settings of `config` and the environment `env` (see the module docs).
/// `Ok(None)` when nothing names a Redis server.
///
/// # Errors
/// [`RedisConfigError`]: an invalid port or node list, Sentinel nodes without a service name,
/// or `cache_params.type: redis` without a server.
pub fn redis_settings(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<RedisSettings>, RedisConfigError> {
    let lookup = |name: &str| config.env_var(name, env);
    let (cache, wants_redis) = from_cache_params(config);
    let m = from_env(&lookup)?.under(from_router(config)).under(cache);
    let username = m.username.map(|(u, _)| u);
    let password = m.password.map(|(p, _)| Secret::new(p));
    let tls = m.ssl.is_some_and(|(s, _)| truthy(&s));
    let key_prefix = lookup("TOLLGATE_REDIS_KEY_PREFIX")
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_KEY_PREFIX.to_owned());
    let (target, origin) = if let Some((url, key)) = m.url {
        return Ok(Some(RedisSettings {
            target: RedisTarget::Url(Secret::new(url)),
            username: None,
            password: None,
            tls: false,
            origin: key,
            key_prefix,
        }));
    } else if let Some((v, key)) = m.cluster {
        (RedisTarget::Cluster(nodes(&v, &key)?), key)
    } else if let Some((v, key)) = m.sentinel {
        let service_name = m
            .service_name
            .map(|(s, _)| s)
            .ok_or_else(|| RedisConfigError::NoServiceName { key: key.clone() })?;
        let nodes = nodes(&v, &key)?;
        (
            RedisTarget::Sentinel {
                nodes,
                service_name,
            },
            key,
        )
    } else if let Some((host, key)) = m.host {
        let p = match m.port {
            Some((p, pk)) => port(&p, &pk)?,
            None => DEFAULT_REDIS_PORT,
        };
        (RedisTarget::Node(RedisNode { host, port: p }), key)
    } else if wants_redis {
        return Err(RedisConfigError::NoServer);
    } else {
        return Ok(None);
    };
    Ok(Some(RedisSettings {
        target,
        username,
        password,
        tls,
        origin,
        key_prefix,
    }))
}

/// Percent-encodes a URL userinfo part (RFC 3986 unreserved characters pass).
fn userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl RedisSettings {
    /// The URL of one node with these settings' scheme and credentials:
    /// `redis[s]://[user][:password@]host:port`.
    pub fn node_url(&self, node: &RedisNode) -> Secret {
        let scheme = if self.tls { "rediss" } else { "redis" };
        let user = self.username.as_deref().map(userinfo).unwrap_or_default();
        let auth = match &self.password {
            Some(p) => format!("{user}:{}@", userinfo(p.expose())),
            None if !user.is_empty() => format!("{user}@"),
            None => String::new(),
        };
        Secret::new(format!("{scheme}://{auth}{}:{}", node.host, node.port))
    }

    /// The URLs to connect to: the one server's (a URL as given, or built from host and port),
    /// every cluster startup node's, or every Sentinel's.
    pub fn urls(&self) -> Vec<Secret> {
        match &self.target {
            RedisTarget::Url(u) => vec![u.clone()],
            RedisTarget::Node(n) => vec![self.node_url(n)],
            RedisTarget::Cluster(nodes) | RedisTarget::Sentinel { nodes, .. } => {
                nodes.iter().map(|n| self.node_url(n)).collect()
            }
        }
    }
}

impl fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisTarget::Url(u) => write!(f, "Url({})", redact_url_userinfo(u.expose())),
            RedisTarget::Node(n) => write!(f, "Node({}:{})", n.host, n.port),
            RedisTarget::Cluster(nodes) => f.debug_tuple("Cluster").field(nodes).finish(),
            RedisTarget::Sentinel {
                nodes,
                service_name,
            } => f
                .debug_struct("Sentinel")
                .field("nodes", nodes)
                .field("service_name", service_name)
                .finish(),
        }
    }
}

impl fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSettings")
            .field("target", &self.target)
            .field("username", &self.username)
            .field("password", &self.password)
            .field("tls", &self.tls)
            .field("origin", &self.origin)
            .field("key_prefix", &self.key_prefix)
            .finish()
    }
}

#[cfg(test)]
mod tests;
