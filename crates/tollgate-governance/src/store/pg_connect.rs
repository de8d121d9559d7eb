//! How a [`super::PostgresStore`] connects: the pool bound and acquire timeout
//! (`general_settings.database_connection_pool_limit` / `database_connection_timeout`, or
//! Prisma's `connection_limit` / `pool_timeout` URL parameters that LiteLLM appends to
//! `DATABASE_URL`), and PgBouncer's transaction pooling mode (Prisma's `pgbouncer=true` URL
//! parameter).
//!
//! Defaults are LiteLLM's (`LiteLLMDatabaseConnectionPool` in `litellm/proxy/proxy_cli.py`):
//! 10 connections, 60 s. LiteLLM's limit is per worker process; Tollgate's is per process
//! (its serving threads share one pool), so a Tollgate replica holds at most
//! `database_connection_pool_limit` connections whatever `--num_workers` says.

use std::time::Duration;

/// Connections per pool when neither the config nor the URL bounds it (LiteLLM's default).
pub const DEFAULT_POOL_LIMIT: u32 = 10;

/// Seconds to wait for a free pool connection when neither the config nor the URL says
/// (LiteLLM's default `database_connection_timeout`).
pub const DEFAULT_POOL_TIMEOUT_SECS: f64 = 60.0;

/// Pool settings from the config (`general_settings`); `None` fields fall back to the URL's
/// Prisma parameters, then to the defaults ([`DEFAULT_POOL_LIMIT`],
/// [`DEFAULT_POOL_TIMEOUT_SECS`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PgPoolSettings {
    /// Most open connections (`database_connection_pool_limit`); 0 reads as 1.
    pub max_connections: Option<u32>,
    /// Longest wait for a free connection, seconds (`database_connection_timeout`); negative
    /// or non-finite values read as the default.
    pub acquire_timeout_secs: Option<f64>,
}

/// What a Postgres URL says beyond what sqlx reads: the URL without Prisma's parameters (sqlx
/// would warn "ignoring unrecognized connect parameter" for each) and their values.
#[derive(Debug, Clone, PartialEq)]
pub struct PgUrl {
    /// The URL for sqlx: every query parameter except `pgbouncer`, `connection_limit` and
    /// `pool_timeout`, in their order.
    pub url: String,
    /// `pgbouncer=true` (or `1`): the URL points at PgBouncer in transaction pooling mode.
    pub pgbouncer: bool,
    /// `connection_limit=N`.
    pub connection_limit: Option<u32>,
    /// `pool_timeout=S` (seconds).
    pub pool_timeout_secs: Option<f64>,
}

impl PgUrl {
    /// Splits Prisma's parameters off `url` (`postgres://u:p@host:port/db?a=1&pgbouncer=true`).
    /// A value that does not parse is dropped with the parameter (as if unset).
    pub fn parse(url: &str) -> PgUrl {
        let (head, query) = match url.split_once('?') {
            Some((h, q)) => (h, q),
            None => (url, ""),
        };
        let mut out = PgUrl {
            url: head.to_owned(),
            pgbouncer: false,
            connection_limit: None,
            pool_timeout_secs: None,
        };
        let mut kept: Vec<&str> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "pgbouncer" => out.pgbouncer = matches!(v, "true" | "1"),
                "connection_limit" => out.connection_limit = v.parse().ok(),
                "pool_timeout" => out.pool_timeout_secs = v.parse().ok(),
                _ => kept.push(pair),
            }
        }
        if !kept.is_empty() {
            out.url.push('?');
            out.url.push_str(&kept.join("&"));
        }
        out
    }
}

/// The pool a store opens: settings over URL parameters over defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PgPoolPlan {
    /// Most open connections (≥ 1).
    pub max_connections: u32,
    /// Longest wait for a free connection.
    pub acquire_timeout: Duration,
    /// PgBouncer transaction mode: no named prepared statements, each statement in a
    /// transaction (see `PostgresStore`).
    pub pgbouncer: bool,
}

impl PgPoolPlan {
    /// `settings` first, then `url`'s Prisma parameters, then the defaults.
    pub fn new(settings: &PgPoolSettings, url: &PgUrl) -> PgPoolPlan {
        let secs = settings
            .acquire_timeout_secs
            .or(url.pool_timeout_secs)
            .filter(|s| s.is_finite() && *s >= 0.0)
            .unwrap_or(DEFAULT_POOL_TIMEOUT_SECS);
        PgPoolPlan {
            max_connections: settings
                .max_connections
                .or(url.connection_limit)
                .unwrap_or(DEFAULT_POOL_LIMIT)
                .max(1),
            acquire_timeout: Duration::from_secs_f64(secs),
            pgbouncer: url.pgbouncer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prisma_parameters_are_split_off_the_url() {
        let u = PgUrl::parse(
            "postgres://u:p@db:6432/gw?sslmode=disable&pgbouncer=true&connection_limit=25&pool_timeout=5&application_name=tg",
        );
        assert_eq!(
            u,
            PgUrl {
                url: "postgres://u:p@db:6432/gw?sslmode=disable&application_name=tg".into(),
                pgbouncer: true,
                connection_limit: Some(25),
                pool_timeout_secs: Some(5.0),
            }
        );
        let plain = PgUrl::parse("postgres://u@db/gw");
        assert_eq!(plain.url, "postgres://u@db/gw");
        assert!(!plain.pgbouncer);
        let only = PgUrl::parse("postgres://u@db/gw?pgbouncer=false&connection_limit=x");
        assert_eq!(only.url, "postgres://u@db/gw");
        assert!(!only.pgbouncer);
        assert_eq!(only.connection_limit, None);
    }

    #[test]
    fn config_wins_over_the_url_which_wins_over_the_defaults() {
        let url = PgUrl::parse("postgres://db/gw?connection_limit=25&pool_timeout=5");
        let none = PgPoolSettings::default();
        let p = PgPoolPlan::new(&none, &PgUrl::parse("postgres://db/gw"));
        assert_eq!(p.max_connections, 10);
        assert_eq!(p.acquire_timeout, Duration::from_secs(60));
        let p = PgPoolPlan::new(&none, &url);
        assert_eq!(
            (p.max_connections, p.acquire_timeout),
            (25, Duration::from_secs(5))
        );
        let cfg = PgPoolSettings {
            max_connections: Some(3),
            acquire_timeout_secs: Some(1.5),
        };
        let p = PgPoolPlan::new(&cfg, &url);
        assert_eq!(
            (p.max_connections, p.acquire_timeout),
            (3, Duration::from_millis(1500))
        );
        let odd = PgPoolSettings {
            max_connections: Some(0),
            acquire_timeout_secs: Some(-1.0),
        };
        let p = PgPoolPlan::new(&odd, &PgUrl::parse("postgres://db/gw"));
        assert_eq!(
            (p.max_connections, p.acquire_timeout),
            (1, Duration::from_secs(60))
        );
    }
}
