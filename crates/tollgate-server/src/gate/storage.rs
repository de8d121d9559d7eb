//! Where governance state lives: the embedded SQLite file by default, Postgres (LiteLLM's
//! tables) when `general_settings.database_url` or `DATABASE_URL` names one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tollgate_config::Config;
use tollgate_governance::store::{
    GovernanceStore, PgPoolPlan, PgPoolSettings, PgUrl, PostgresStore, SqliteStore, StoreError,
};

/// The database chosen from the config and environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// An SQLite file (created if missing).
    Sqlite(PathBuf),
    /// A Postgres URL (`postgres://…`; never logged: it may carry a password).
    Postgres(String),
}

impl StoreChoice {
    /// `general_settings.database_url`, else env `DATABASE_URL`: `postgres://` / `postgresql://`
    /// → Postgres, `sqlite://PATH` / `sqlite:PATH` → that file. Without either: env
    /// `TOLLGATE_DB_PATH`, else `tollgate.db` beside the config file.
    ///
    /// Errors: a URL with another scheme (message names the scheme only).
    pub fn from_config(
        config: &Config,
        config_path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        Self::from_config_with_source(config, config_path, env).map(|(c, _)| c)
    }

    /// [`StoreChoice::from_config`] and where the choice came from:
    /// `general_settings.database_url`, `env DATABASE_URL`, `env TOLLGATE_DB_PATH` or
    /// `default: beside the config file`.
    ///
    /// Errors: as [`StoreChoice::from_config`].
    pub fn from_config_with_source(
        config: &Config,
        config_path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Self, &'static str), String> {
        let url = config
            .general_settings
            .database_url
            .as_ref()
            .map(|s| (s.expose().to_owned(), "general_settings.database_url"))
            .filter(|(s, _)| !s.is_empty())
            .or_else(|| {
                env("DATABASE_URL")
                    .filter(|s| !s.is_empty())
                    .map(|s| (s, "env DATABASE_URL"))
            });
        if let Some((url, source)) = url {
            if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                return Ok((StoreChoice::Postgres(url), source));
            }
            if let Some(p) = url
                .strip_prefix("sqlite://")
                .or_else(|| url.strip_prefix("sqlite:"))
            {
                return Ok((StoreChoice::Sqlite(PathBuf::from(p)), source));
            }
            let scheme = url.split(':').next().unwrap_or("");
            return Err(format!(
                "database_url: unsupported scheme `{scheme}` (use postgres:// or sqlite://PATH)"
            ));
        }
        if let Some(p) = env("TOLLGATE_DB_PATH").filter(|s| !s.is_empty()) {
            return Ok((
                StoreChoice::Sqlite(PathBuf::from(p)),
                "env TOLLGATE_DB_PATH",
            ));
        }
        let dir = config_path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Ok((
            StoreChoice::Sqlite(dir.join("tollgate.db")),
            "default: beside the config file",
        ))
    }

    /// The store as `check-config` names it: `embedded SQLite file PATH` or `Postgres
    /// postgres://user:****@host:port/db` (the password, and credential-like query
    /// parameters, masked).
    pub fn masked(&self) -> String {
        match self {
            StoreChoice::Sqlite(p) => format!("embedded SQLite file {}", p.display()),
            StoreChoice::Postgres(url) => format!(
                "Postgres {}",
                tollgate_config::redact::redact_url_userinfo(url)
            ),
        }
    }

    /// What to print at start (the Postgres URL without credentials).
    pub fn describe(&self) -> String {
        match self {
            StoreChoice::Sqlite(p) => format!("sqlite {}", p.display()),
            StoreChoice::Postgres(url) => {
                let host = url.rsplit('@').next().unwrap_or("");
                let host = host.split_once("://").map_or(host, |(_, h)| h);
                format!("postgres {host}")
            }
        }
    }

    /// Opens the store; a Postgres pool follows `pool` ([`pool_settings`]; the URL's
    /// `connection_limit` / `pool_timeout` / `pgbouncer=true` where the config is silent).
    ///
    /// Errors: the database's.
    pub async fn open(
        &self,
        pool: &PgPoolSettings,
    ) -> Result<Arc<dyn GovernanceStore>, StoreError> {
        Ok(match self {
            StoreChoice::Sqlite(p) => Arc::new(SqliteStore::open(&p.to_string_lossy()).await?),
            StoreChoice::Postgres(url) => Arc::new(PostgresStore::connect_pooled(url, pool).await?),
        })
    }
}

/// The Postgres pool settings of `config`: `general_settings.database_connection_pool_limit`
/// (connections) and `database_connection_timeout` (seconds), LiteLLM's keys.
pub fn pool_settings(config: &Config) -> PgPoolSettings {
    let g = &config.general_settings;
    PgPoolSettings {
        max_connections: g.database_connection_pool_limit,
        acquire_timeout_secs: g.database_connection_timeout,
    }
}

/// The Postgres pool `check-config` reports for `url` under `config`: `Postgres pool: at most
/// 10 connections (default), waits up to 60 s for one (default), PgBouncer transaction mode:
/// off`, each value with where it came from (`general_settings.<key>`, the URL's Prisma
/// parameter, or the default).
pub fn pool_in_effect(config: &Config, url: &str) -> String {
    let g = &config.general_settings;
    let u = PgUrl::parse(url);
    let plan = PgPoolPlan::new(&pool_settings(config), &u);
    let from = |cfg: bool, in_url: bool, key: &str, param: &str| {
        if cfg {
            format!("general_settings.{key}")
        } else if in_url {
            format!("URL {param}")
        } else {
            "default".to_owned()
        }
    };
    format!(
        "Postgres pool: at most {} connections ({}), waits up to {} s for one ({}), PgBouncer transaction mode: {}",
        plan.max_connections,
        from(
            g.database_connection_pool_limit.is_some(),
            u.connection_limit.is_some(),
            "database_connection_pool_limit",
            "connection_limit",
        ),
        plan.acquire_timeout.as_secs_f64(),
        from(
            g.database_connection_timeout.is_some(),
            u.pool_timeout_secs.is_some(),
            "database_connection_timeout",
            "pool_timeout",
        ),
        if plan.pgbouncer {
            "on (URL pgbouncer=true)"
        } else {
            "off"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_settings_come_from_general_settings() {
        let mut c = Config::default();
        assert_eq!(pool_settings(&c), PgPoolSettings::default());
        c.general_settings.database_connection_pool_limit = Some(25);
        c.general_settings.database_connection_timeout = Some(5.0);
        assert_eq!(
            pool_settings(&c),
            PgPoolSettings {
                max_connections: Some(25),
                acquire_timeout_secs: Some(5.0),
            }
        );
    }

    #[test]
    fn the_pool_in_effect_names_its_sources() {
        let mut c = Config::default();
        assert_eq!(
            pool_in_effect(&c, "postgres://db/gw"),
            "Postgres pool: at most 10 connections (default), waits up to 60 s for one (default), PgBouncer transaction mode: off"
        );
        c.general_settings.database_connection_pool_limit = Some(4);
        assert_eq!(
            pool_in_effect(&c, "postgres://db:6432/gw?pgbouncer=true&pool_timeout=2.5"),
            "Postgres pool: at most 4 connections (general_settings.database_connection_pool_limit), waits up to 2.5 s for one (URL pool_timeout), PgBouncer transaction mode: on (URL pgbouncer=true)"
        );
    }

    #[test]
    fn choice_rules() {
        let c = Config::default();
        let none = |_: &str| None;
        assert_eq!(
            StoreChoice::from_config(&c, Path::new("/etc/tg/config.yaml"), &none).unwrap(),
            StoreChoice::Sqlite(PathBuf::from("/etc/tg/tollgate.db"))
        );
        let pg = |k: &str| (k == "DATABASE_URL").then(|| "postgres://u:pw@db:5432/x".to_owned());
        let choice = StoreChoice::from_config(&c, Path::new("c.yaml"), &pg).unwrap();
        assert_eq!(choice.describe(), "postgres db:5432/x");
        let bad = |k: &str| (k == "DATABASE_URL").then(|| "mysql://x".to_owned());
        assert!(
            StoreChoice::from_config(&c, Path::new("c.yaml"), &bad)
                .unwrap_err()
                .contains("`mysql`")
        );
        assert_eq!(
            choice.masked(),
            "Postgres postgres://u:****@db:5432/x",
            "the password never shows"
        );
        assert_eq!(
            StoreChoice::from_config_with_source(&c, Path::new("c.yaml"), &pg)
                .unwrap()
                .1,
            "env DATABASE_URL"
        );
        let lite = |k: &str| (k == "DATABASE_URL").then(|| "sqlite:///tmp/a.db".to_owned());
        assert_eq!(
            StoreChoice::from_config(&c, Path::new("c.yaml"), &lite).unwrap(),
            StoreChoice::Sqlite(PathBuf::from("/tmp/a.db"))
        );
    }
}
