//! [`Config`]: the whole config.yaml.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::extra::Extra;
use crate::lenient;
use crate::model::ModelEntry;
use crate::redact::redact_str;
use crate::settings::{GeneralSettings, LitellmSettings, RouterSettings};

/// A LiteLLM proxy config.yaml (model `ConfigYAML` in `litellm/proxy/_types.py`), after
/// `os.environ/` substitution. Every section is optional; a null section is its default.
///
/// `Debug` and `Serialize` mask credentials (typed [`crate::Secret`]s, credential-like keys of
/// free-form maps, header values such as `Authorization`, all `environment_variables` values);
/// serializing is for display and inspection, not for writing the file back.
#[serde_with::skip_serializing_none]
#[derive(Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Config {
    /// Deployments, in file order.
    #[serde(default, deserialize_with = "lenient::null_default")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model_list: Vec<ModelEntry>,
    /// `litellm_settings`.
    #[serde(default, deserialize_with = "lenient::null_default")]
    #[serde(skip_serializing_if = "is_default")]
    pub litellm_settings: LitellmSettings,
    /// `general_settings`.
    #[serde(default, deserialize_with = "lenient::null_default")]
    #[serde(skip_serializing_if = "is_default")]
    pub general_settings: GeneralSettings,
    /// `router_settings`.
    #[serde(default, deserialize_with = "lenient::null_default")]
    #[serde(skip_serializing_if = "is_default")]
    pub router_settings: RouterSettings,
    /// `environment_variables`: exported to the process environment by the binary; they are
    /// visible to `os.environ/` references of the same file. Values may be credentials:
    /// `Debug` masks them.
    #[serde(default, deserialize_with = "lenient::string_map")]
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "crate::redact::serialize_masked_map"
    )]
    pub environment_variables: BTreeMap<String, String>,
    /// Other top-level keys (`guardrails`, `mcp_servers`, `credential_list`...).
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Config {
    /// The deployments of model group `model_name`, in file order.
    pub fn deployments<'a>(&'a self, model_name: &'a str) -> impl Iterator<Item = &'a ModelEntry> {
        self.model_list
            .iter()
            .filter(move |e| e.model_name == model_name)
    }

    /// Model group names in order of first appearance.
    pub fn model_groups(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for e in &self.model_list {
            if !out.contains(&e.model_name.as_str()) {
                out.push(&e.model_name);
            }
        }
        out
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: BTreeMap<&str, String> = self
            .environment_variables
            .iter()
            // Every value is masked: env files are where people put raw keys.
            .map(|(k, v)| (k.as_str(), redact_str("key", v)))
            .collect();
        f.debug_struct("Config")
            .field("model_list", &self.model_list)
            .field("litellm_settings", &self.litellm_settings)
            .field("general_settings", &self.general_settings)
            .field("router_settings", &self.router_settings)
            .field("environment_variables", &env)
            .field("extra", &self.extra)
            .finish()
    }
}

impl Config {
    /// A setting the environment gives: the file's `environment_variables` first, then the
    /// process's `env` (LiteLLM loads the file's variables into its environment at start).
    pub fn env_var(&self, name: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        self.environment_variables
            .get(name)
            .cloned()
            .or_else(|| env(name))
    }
}

impl Config {
    /// Dotted names of keys present in this config that Tollgate does not act on yet, in file
    /// section order: whole unknown top-level sections (`guardrails`), section keys
    /// (`litellm_settings.callbacks`, `router_settings.redis_host`), and per-deployment keys
    /// (`model_list[].model_info.access_groups`, `model_list[].litellm_params.max_budget`).
    /// The lists of implemented keys live in [`crate::implemented`].
    pub fn unimplemented_keys(&self) -> Vec<String> {
        crate::implemented::unimplemented_keys(self)
    }
}
