//! `tollgate check-config PATH [--connect]`: what the gateway would run with, read from a config
//! without serving it. Prints the model groups and deployments (secrets masked), the settings
//! and routing settings in effect with where each came from, the governance store and where
//! prices come from (every deployment that would record $0 named: [`crate::gate::unpriced`]); with
//! `--connect` it also tries the store (connects; for Postgres that also proves the database
//! exists and the credentials are accepted), nothing created or written.
//!
//! Exit codes (from the binary): 0 valid, 2 invalid config, 1 the store cannot be reached.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use tollgate_config::LoadedConfig;
use tollgate_governance::store::probe::{probe_postgres, probe_sqlite};

use crate::errors::StartupError;
use crate::gate::StoreChoice;
use crate::state::AppState;

/// Longest wait for the store with `--connect`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The refusal of a config whose deployments name LiteLLM providers Tollgate does not serve
/// (`azure/`, `bedrock/`...): one line per deployment, each `file:line:col: key path: ...`,
/// all at once, after the served prefixes. `None` when every deployment is served.
pub fn unserved_refusal(loaded: &LoadedConfig) -> Option<String> {
    let n = loaded.unserved.len();
    if n == 0 {
        return None;
    }
    let mut s = format!(
        "{n} deployment{} name{} a provider Tollgate does not serve yet (served: {}; README \"Providers today\"):",
        if n == 1 { "" } else { "s" },
        if n == 1 { "s" } else { "" },
        tollgate_config::KNOWN_PROVIDERS.join(", ")
    );
    for e in &loaded.unserved {
        let _ = write!(s, "\n  {e}");
    }
    Some(s)
}

/// Loads the config at `path` as serving and `check-config` both do, and refuses one whose
/// deployments name a provider Tollgate does not serve ([`unserved_refusal`]).
///
/// Errors: [`StartupError::InvalidConfig`] (exit code 2) with the loader's message.
pub fn load(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, StartupError> {
    let loaded = tollgate_config::load_path(path, env).map_err(StartupError::config)?;
    match unserved_refusal(&loaded) {
        None => Ok(loaded),
        Some(refusal) => Err(StartupError::InvalidConfig(refusal)),
    }
}

/// Runs `check-config` on a config loaded (and found servable: [`unserved_refusal`]) from
/// `path`: builds the gateway's state as the server would (deployments, router), prints
/// [`report`], with `connect` tries the store ([`try_store`]), then `config OK: PATH`.
///
/// Errors: [`StartupError::InvalidConfig`] (exit code 2) for an invalid config,
/// [`StartupError::StoreConnection`] (1) for a store that cannot be used.
#[expect(
    clippy::print_stdout,
    reason = "the check-config report is the command's output"
)]
pub fn run(
    loaded: &LoadedConfig,
    path: &Path,
    connect: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), StartupError> {
    let state = AppState::build(loaded, env).map_err(StartupError::config)?;
    let (text, store) = report(loaded, path, env).map_err(StartupError::InvalidConfig)?;
    print!("{text}");
    // prices matter only where spend is metered (governance on)
    if store.is_some() {
        let router = state.router.load();
        let prices = crate::gate::unpriced::check_config_section(&loaded.config, &router, env)
            .map_err(StartupError::config)?;
        print!("{prices}");
    }
    if connect {
        let tried = match &store {
            None => Ok("nothing to connect to (governance is off)".to_owned()),
            Some(choice) => match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(try_store(choice)),
                Err(e) => Err(format!("cannot start the runtime: {e}")),
            },
        };
        let found = tried.map_err(StartupError::StoreConnection)?;
        println!("Store connection: OK: {found}");
    }
    println!("config OK: {}", path.display());
    Ok(())
}

/// What `check-config` prints before its verdict: [`tollgate_config::Config::describe`], the
/// routing settings in effect (`num_retries: 1 (router_settings)`, `cooldown_time: 5 s
/// (default)`, ...), the store, the governance settings in effect
/// ([`crate::check_governance::describe`]), and the load warnings.
///
/// Errors: an unusable `database_url` scheme or routing setting (the message to print).
pub fn report(
    loaded: &LoadedConfig,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, Option<StoreChoice>), String> {
    let config = &loaded.config;
    let mut s = config.describe();
    let routing =
        tollgate_router::settings_in_effect(&config.router_settings, &config.litellm_settings)
            .map_err(|e| format!("router_settings: {e}"))?;
    s.push_str(
        "Routing settings in effect (a deployment's own timeout, stream_timeout and max_retries win):\n",
    );
    for r in routing {
        let _ = writeln!(s, "  {r}");
    }
    let choice = match loaded.master_key {
        None => {
            s.push_str(
                "Store: none (no master key: governance is off, nothing is metered or stored)\n",
            );
            None
        }
        Some(_) => {
            let (choice, source) = StoreChoice::from_config_with_source(config, path, env)
                .map_err(|e| format!("general_settings.{e}"))?;
            let _ = writeln!(s, "Store: {} ({source})", choice.masked());
            if let StoreChoice::Postgres(url) = &choice {
                let _ = writeln!(s, "  {}", crate::gate::storage::pool_in_effect(config, url));
            }
            Some(choice)
        }
    };
    s.push_str(&crate::check_governance::describe(loaded));
    for w in &loaded.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    Ok((s, choice))
}

/// Tries the store (`--connect`) for at most [`CONNECT_TIMEOUT`]: `Ok` with what was found
/// (`PostgreSQL 16.4: the database exists and accepts the credentials`), or the reason it
/// cannot be used, naming the store with its password masked.
pub async fn try_store(choice: &StoreChoice) -> Result<String, String> {
    let named = |e: String| format!("{}: {e}", choice.masked());
    let timed_out = || named(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()));
    match choice {
        StoreChoice::Postgres(url) => {
            match tokio::time::timeout(CONNECT_TIMEOUT, probe_postgres(url)).await {
                Err(_) => Err(timed_out()),
                Ok(Err(e)) => Err(named(e.to_string())),
                Ok(Ok(version)) => Ok(format!(
                    "PostgreSQL {version}: the database exists and accepts the credentials"
                )),
            }
        }
        StoreChoice::Sqlite(path) if path.exists() => {
            match tokio::time::timeout(CONNECT_TIMEOUT, probe_sqlite(path)).await {
                Err(_) => Err(timed_out()),
                Ok(Err(e)) => Err(named(e.to_string())),
                Ok(Ok(tables)) => Ok(format!("an SQLite database with {tables} tables")),
            }
        }
        StoreChoice::Sqlite(path) => {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() && !m.permissions().readonly() => Ok(format!(
                    "the file does not exist yet: the gateway creates it at start in {}",
                    dir.display()
                )),
                Ok(m) if m.is_dir() => Err(named(format!(
                    "directory {} is read-only: the gateway cannot create the file",
                    dir.display()
                ))),
                _ => Err(named(format!(
                    "directory {} does not exist: create it, or set TOLLGATE_DB_PATH or general_settings.database_url",
                    dir.display()
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(yaml: &str) -> LoadedConfig {
        tollgate_config::load_str(yaml, "c.yaml", &|_| None).unwrap()
    }

    /// The config crate's served list is the provider table's: what check-config accepts is
    /// exactly what the gateway can call.
    #[test]
    fn served_prefixes_are_the_provider_table() {
        let mut served: Vec<&str> = tollgate_config::KNOWN_PROVIDERS.to_vec();
        let mut table: Vec<&str> = tollgate_providers::table::PROVIDERS
            .iter()
            .map(|p| p.name)
            .collect();
        served.sort_unstable();
        table.sort_unstable();
        assert_eq!(served, table);
    }

    #[test]
    fn every_unserved_deployment_is_in_one_refusal() {
        let l = loaded(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: azure/x\n  - model_name: b\n    litellm_params:\n      model: bedrock/y\n",
        );
        let r = unserved_refusal(&l).unwrap();
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines.len(), 3, "{r}");
        assert!(
            lines[0].starts_with(
                "2 deployments name a provider Tollgate does not serve yet (served: openai, "
            ),
            "{r}"
        );
        assert!(
            lines[1]
                .starts_with("  c.yaml:4:14: model_list[0].litellm_params.model: provider 'azure'"),
            "{r}"
        );
        assert!(
            lines[2].starts_with(
                "  c.yaml:7:14: model_list[1].litellm_params.model: provider 'bedrock'"
            ),
            "{r}"
        );
        assert!(unserved_refusal(&loaded("model_list: []\n")).is_none());
    }

    #[test]
    fn the_report_names_the_store_with_its_password_masked() {
        let l = loaded(
            "general_settings:\n  master_key: sk-1234\n  database_url: postgres://tg:hunter22@db.internal:5432/gw\nrouter_settings:\n  num_retries: 1\n",
        );
        let (text, choice) = report(&l, Path::new("/etc/tg/c.yaml"), &|_| None).unwrap();
        assert!(
            text.contains("Store: Postgres postgres://tg:****@db.internal:5432/gw (general_settings.database_url)\n"),
            "{text}"
        );
        assert!(!text.contains("hunter22"), "{text}");
        assert!(
            text.contains("\n  num_retries: 1 (router_settings)\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  cooldown_time: 5 s (default)\n"),
            "{text}"
        );
        assert!(matches!(choice, Some(StoreChoice::Postgres(_))));

        let l = loaded("general_settings:\n  master_key: sk-1234\n");
        let (text, _) = report(&l, Path::new("/etc/tg/c.yaml"), &|_| None).unwrap();
        assert!(
            text.contains("Store: embedded SQLite file /etc/tg/tollgate.db (default: beside the config file)\n"),
            "{text}"
        );
        let (text, choice) =
            report(&loaded("model_list: []\n"), Path::new("c.yaml"), &|_| None).unwrap();
        assert!(text.contains("Store: none (no master key"), "{text}");
        assert!(choice.is_none());
    }

    #[tokio::test]
    async fn a_new_sqlite_file_is_fine_where_its_directory_exists() {
        let ok = try_store(&StoreChoice::Sqlite(
            std::env::temp_dir().join("tg-not-there.db"),
        ))
        .await
        .unwrap();
        assert!(ok.starts_with("the file does not exist yet"), "{ok}");
        let e = try_store(&StoreChoice::Sqlite("/nonexistent-dir-tg/x.db".into()))
            .await
            .unwrap_err();
        assert_eq!(
            e,
            "embedded SQLite file /nonexistent-dir-tg/x.db: directory /nonexistent-dir-tg does not exist: create it, or set TOLLGATE_DB_PATH or general_settings.database_url"
        );
    }
}
