//! tollgate-config: reads the LiteLLM proxy's `config.yaml` unchanged.
//!
//! ```no_run
//! let loaded = tollgate_config::load_path(
//!     std::path::Path::new("config.yaml"),
//!     &|name| std::env::var(name).ok(),
//! )?;
//! for w in &loaded.warnings {
//!     eprintln!("warning: {w}");
//! }
//! for d in &loaded.config.model_list {
//!     println!("{} -> {} {}", d.model_name, d.litellm_params.provider(), d.deployment_id());
//! }
//! # Ok::<(), tollgate_config::ConfigError>(())
//! ```
//!
//! - [`load_path`] / [`load_str`] return a [`LoadedConfig`]: the typed [`Config`], the
//!   `warnings` to print at boot, and the master key in effect (`general_settings.master_key`,
//!   else env `LITELLM_MASTER_KEY`).
//! - Every string value `os.environ/NAME` is replaced by the variable's value (entries of
//!   `environment_variables:` first, then the injected `env` lookup), at any depth, in mappings
//!   and lists alike. An unset variable leaves the key unset with a warning, as LiteLLM's `None`
//!   does, except in `model`, `model_name` and `general_settings.master_key`, where it is an
//!   error ([`env::REQUIRED_PATTERNS`]; for the master key, silently falling back to no-auth
//!   mode would be the dangerous outcome). The binary should export
//!   `config.environment_variables` to its process environment.
//! - Scalars are read the way PyYAML + LiteLLM accept them: numeric strings for numbers
//!   (`timeout: "30"`), YAML 1.1 booleans (`yes`/`on`), a single string for a list
//!   (`callbacks: prometheus`), `<<` merge keys.
//! - Providers: a bare model name means `openai`; a prefix in [`KNOWN_PROVIDERS`] is served; a
//!   LiteLLM provider Tollgate does not serve yet (`azure`, `bedrock`...) and an unknown prefix
//!   (a typo such as `opnai`) load, and every such deployment is listed, located, in
//!   [`LoadedConfig::unserved`] (the gateway refuses the config while it is not empty).
//! - `include: [other.yaml]` pulls in more files as LiteLLM does (lists such as `model_list`
//!   are concatenated, other top-level values replaced); errors name the file they come from.
//! - Errors ([`ConfigError`]) print `file:line:col: key.path[2].x: message`.
//! - Unknown keys never fail a load: each struct keeps them in its `extra` map, and
//!   [`Config::unimplemented_keys`] lists what Tollgate does not act on yet (the lists are in
//!   [`implemented`]).
//! - Credentials are [`Secret`]s: masked in `Debug`, `Display`, `Serialize`, error messages and
//!   [`Config::describe`] / [`LoadedConfig::describe`]. Free-form maps mask values under
//!   credential-like keys and URL passwords ([`redact`]).
//! - [`ModelEntry::deployment_id`]: `model_info.id`, else a hash of the params as written.
//!
//! Layout: `load.rs` (pipeline) → `include.rs` (files) → `env.rs` (substitution) →
//! `config.rs` / `model.rs` / `settings.rs` (types, with `lenient.rs` field parsers) →
//! `validate.rs` + `providers.rs` + `unserved.rs` → `implemented.rs` (the one list of implemented keys);
//! `locate.rs` maps key paths to lines; `describe.rs` renders `check-config` output.
//!
//! No async, no network: a library for the server binary and `tollgate check-config`.

mod config;
mod describe;
pub mod env;
mod error;
mod extra;
pub mod implemented;
mod include;
mod lenient;
mod load;
mod locate;
mod model;
mod path;
mod providers;
pub mod redact;
mod redis;
mod secret;
mod settings;
mod unserved;
mod validate;
mod yaml_value;

pub use config::Config;
pub use error::{ConfigError, ErrorKind};
pub use extra::Extra;
pub use load::{LoadedConfig, MASTER_KEY_ENV, load_path, load_str};
pub use model::{DEFAULT_PROVIDER, LitellmParams, ModelEntry, ModelInfo};
pub use path::{KeyPath, Segment};
pub use providers::{
    KNOWN_PROVIDERS, LITELLM_PROVIDERS_NOT_SERVED, PROVIDERS_REQUIRING_API_BASE, ProviderSupport,
    provider_support,
};
pub use redis::{
    DEFAULT_REDIS_PORT, RedisConfigError, RedisNode, RedisSettings, RedisTarget, redis_settings,
};
pub use secret::{Secret, mask};
pub use settings::{
    DEFAULT_BODY_LIMIT_MB, Fallbacks, GeneralSettings, LitellmSettings, ModelGroupAlias,
    RouterSettings, fallbacks_for,
};
