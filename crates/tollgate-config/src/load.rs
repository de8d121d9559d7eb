//! The load pipeline: YAML → `os.environ/` substitution → typed [`Config`] → validation.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml_ng::Value;

use crate::config::Config;
use crate::env::{Substitution, key_string, substitute};
use crate::error::{ConfigError, ErrorKind};
use crate::include::{Reader, Sources, parse, resolve_includes};
use crate::locate::Mode;
use crate::model::{IdBasis, canonical_json};
use crate::path::KeyPath;
use crate::redact::is_sensitive_key;
use crate::secret::{Secret, mask};
use crate::validate::validate;

/// Credential values shorter than this are not scrubbed from messages (they would mangle
/// ordinary words and are not credentials worth the name).
const MIN_SCRUB_LEN: usize = 6;

/// Environment variable consulted when `general_settings.master_key` is not set.
pub const MASTER_KEY_ENV: &str = "LITELLM_MASTER_KEY";

/// A loaded config and what the loader noticed.
#[derive(Clone, Debug)]
pub struct LoadedConfig {
    /// The typed config, references substituted.
    pub config: Config,
    /// Human-readable warnings (unset optional `os.environ/` references, empty model list,
    /// providers not served yet, fallbacks to unknown groups...), each prefixed with
    /// `file:line:col: key.path:` when known. Print them at boot; they contain no credential
    /// values. Keys Tollgate does not act on are not repeated here: see
    /// [`Config::unimplemented_keys`].
    pub warnings: Vec<String>,
    /// One located error per deployment the gateway cannot serve, in file order, all at once:
    /// its provider is a LiteLLM provider Tollgate does not serve yet (`azure/`, `bedrock/`,
    /// `vertex_ai/`...; the config is valid LiteLLM) or an unknown prefix (`opnai/`, with the
    /// served name it is most likely a typo of). The config loads either way; the gateway
    /// refuses to serve it while this is not empty.
    pub unserved: Vec<ConfigError>,
    /// The master key in effect: `general_settings.master_key`, else env `LITELLM_MASTER_KEY`
    /// (the process env, or `environment_variables:` of the file). `None` means no-auth mode.
    pub master_key: Option<Secret>,
    /// Where [`LoadedConfig::master_key`] came from: `"general_settings.master_key"`,
    /// `"LITELLM_MASTER_KEY"`, or `None`.
    pub master_key_source: Option<&'static str>,
}

/// Reads and loads a config file. `env` looks up environment variables (pass
/// `&|k| std::env::var(k).ok()` in the binary; tests pass a closure over a map).
///
/// Errors: [`ErrorKind::Io`] when the file cannot be read, else as [`load_str`].
pub fn load_path(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new(
            ErrorKind::Io,
            &name,
            format!("cannot read config file: {e}"),
        )
    })?;
    load_str(&text, &name, env)
}

/// Loads config text. `source_name` prefixes error and warning locations (a file name).
///
/// Steps: parse YAML (with `<<` merge keys) → substitute `os.environ/` references in
/// `environment_variables` (from `env`), then everywhere else (from those variables first,
/// then `env`) → deserialize into [`Config`] → validate. An empty document is a valid empty
/// config (with a warning).
///
/// Errors ([`ConfigError`], located by line/column and key path): [`ErrorKind::Syntax`] for
/// invalid YAML, [`ErrorKind::Type`] for wrong types and missing `model`/`model_name`,
/// [`ErrorKind::UnsetEnv`] for an unset variable in a required key (see
/// [`crate::env::REQUIRED_PATTERNS`]), [`ErrorKind::Invalid`] for failed validation.
pub fn load_str(
    text: &str,
    source_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, ConfigError> {
    load_with_reader(text, source_name, env, &|p: &Path| {
        std::fs::read_to_string(p)
    })
}

/// [`load_str`] with the file reader for `include:` injected.
pub(crate) fn load_with_reader(
    text: &str,
    source_name: &str,
    env: &dyn Fn(&str) -> Option<String>,
    read: Reader,
) -> Result<LoadedConfig, ConfigError> {
    let mut ctx = Ctx {
        sources: Sources::single(source_name, text),
        scrub: Vec::new(),
        located_warnings: std::cell::Cell::new(0),
    };
    let (root, root_dups) = parse(text, source_name)?;
    ctx.sources.duplicates = root_dups.into_iter().map(|d| (0, d)).collect();
    let mut warnings = Vec::new();
    if root.is_null() {
        warnings.push(format!(
            "{source_name}: config is empty: no model_list, the gateway serves no models"
        ));
        return Ok(finish(Config::default(), warnings, Vec::new(), env));
    }
    if !root.is_mapping() {
        return Err(ConfigError::new(
            ErrorKind::Type,
            source_name,
            "the top level must be a mapping (model_list:, litellm_settings:, ...)",
        )
        .at(Some((1, 1))));
    }
    let mut root = resolve_includes(root, &mut ctx.sources, read)?;
    for (file, path) in &ctx.sources.duplicates {
        let (name, loc) = ctx.sources.locate_in(*file, path, Mode::Key);
        let loc = loc.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default();
        warnings.push(format!(
            "{name}{loc}: {path}: key appears more than once in its mapping; the last value is used (as LiteLLM's YAML loader does)"
        ));
    }
    let id_bases = id_bases(&root);

    // 1. environment_variables, resolved against the process environment only. The section
    // is taken out (its slot left null, so key order is kept) while the rest is substituted.
    let mut subst = Substitution::default();
    let env_key = Value::from("environment_variables");
    let mut env_section = root
        .get_mut(&env_key)
        .map(std::mem::take)
        .unwrap_or(Value::Null);
    substitute(
        &mut env_section,
        &KeyPath::root().key("environment_variables"),
        env,
        &mut subst,
    );
    let file_env: BTreeMap<String, String> = match &env_section {
        Value::Mapping(m) => m
            .iter()
            .filter_map(|(k, v)| scalar_text(v).map(|v| (key_string(k), v)))
            .collect(),
        _ => BTreeMap::new(),
    };
    let lookup = |name: &str| file_env.get(name).cloned().or_else(|| env(name));

    // 2. Everything else.
    substitute(&mut root, &KeyPath::root(), &lookup, &mut subst);
    if let Some(slot) = root.get_mut(&env_key) {
        *slot = env_section;
    }
    collect_sensitive(&root, false, &mut ctx.scrub);
    ctx.scrub.extend(file_env.values().cloned());
    ctx.scrub.extend(
        subst
            .resolved
            .iter()
            .filter(|(var, _)| is_sensitive_key(var))
            .map(|(_, v)| v.clone()),
    );
    ctx.scrub.retain(|s| s.len() >= MIN_SCRUB_LEN);
    ctx.scrub.sort_by_key(|s| std::cmp::Reverse(s.len()));

    if let Some(u) = subst.unset.iter().find(|u| u.required) {
        return Err(ctx.error(
            ErrorKind::UnsetEnv,
            u.path.clone(),
            Mode::Value,
            format!(
                "environment variable {} (from os.environ/{}) is not set",
                u.var, u.var
            ),
        ));
    }
    // One warning per variable (configs reuse OPENAI_API_KEY across many deployments), at its
    // first use.
    let mut by_var: Vec<(&str, Vec<&KeyPath>)> = Vec::new();
    for u in &subst.unset {
        match by_var.iter_mut().find(|(v, _)| *v == u.var) {
            Some((_, paths)) => paths.push(&u.path),
            None => by_var.push((&u.var, vec![&u.path])),
        }
    }
    for (var, paths) in by_var {
        let more = match paths.len() {
            1 => String::new(),
            n => format!(" (and {} more key{})", n - 1, if n == 2 { "" } else { "s" }),
        };
        warnings.push(ctx.warning(
            paths[0],
            format!(
                "environment variable {var} (from os.environ/{var}) is not set; the key is left unset{more}"
            ),
        ));
    }

    // 3. Types.
    let mut config: Config = serde_path_to_error::deserialize(root).map_err(|e| {
        let path = KeyPath::from_serde(e.path());
        let msg = e.inner().to_string();
        let mode = if msg.starts_with("missing field") {
            Mode::Key
        } else {
            Mode::Value
        };
        ctx.error(ErrorKind::Type, path, mode, msg)
    })?;

    for (entry, basis) in config.model_list.iter_mut().zip(id_bases) {
        entry.id_basis = basis.map(IdBasis);
    }
    if config.model_list.is_empty() {
        warnings.push(format!(
            "{source_name}: no model_list entries: the gateway serves no models"
        ));
    }
    // 4. Validation.
    warnings.extend(validate(&config, &ctx)?);
    let unserved = crate::unserved::unserved_deployments(&config, &ctx);
    Ok(finish(config, warnings, unserved, &lookup))
}

fn finish(
    config: Config,
    warnings: Vec<String>,
    unserved: Vec<ConfigError>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> LoadedConfig {
    let (master_key, master_key_source) = match &config.general_settings.master_key {
        Some(k) if !k.is_empty() => (Some(k.clone()), Some("general_settings.master_key")),
        _ => match lookup(MASTER_KEY_ENV).filter(|v| !v.is_empty()) {
            Some(v) => (Some(Secret::new(v)), Some(MASTER_KEY_ENV)),
            None => (None, None),
        },
    };
    LoadedConfig {
        config,
        warnings,
        unserved,
        master_key,
        master_key_source,
    }
}

/// For each `model_list` item, the canonical JSON of its `litellm_params` as written (see
/// [`crate::ModelEntry::hashed_id`]); `None` where it cannot be expressed as JSON.
fn id_bases(root: &Value) -> Vec<Option<String>> {
    let Some(Value::Sequence(items)) = root.get("model_list") else {
        return Vec::new();
    };
    items
        .iter()
        .map(|item| {
            let params = item.get("litellm_params")?;
            let json = serde_json::to_value(params).ok()?;
            Some(canonical_json(&json))
        })
        .collect()
}

/// Text of a scalar (numbers and booleans as written).
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Every string under a credential-like key (to scrub from messages).
fn collect_sensitive(v: &Value, under_sensitive: bool, out: &mut Vec<String>) {
    match v {
        Value::String(s) if under_sensitive => out.push(s.clone()),
        Value::Sequence(items) => {
            for i in items {
                collect_sensitive(i, under_sensitive, out);
            }
        }
        Value::Mapping(m) => {
            for (k, val) in m {
                let sens = under_sensitive || is_sensitive_key(&key_string(k));
                collect_sensitive(val, sens, out);
            }
        }
        Value::Tagged(t) => collect_sensitive(&t.value, under_sensitive, out),
        _ => {}
    }
}

/// What error and warning builders need: the text (to locate paths) and values to scrub.
pub(crate) struct Ctx {
    sources: Sources,
    /// Credential values, longest first.
    scrub: Vec<String>,
    /// Warnings located so far (each location re-parses the text; see [`MAX_LOCATED_WARNINGS`]).
    located_warnings: std::cell::Cell<usize>,
}

/// Warnings beyond this many carry their key path but no line: locating one re-parses the
/// file, and a config with thousands of deployments can produce thousands of warnings.
const MAX_LOCATED_WARNINGS: usize = 50;

impl Ctx {
    fn scrubbed(&self, msg: String) -> String {
        let mut m = msg;
        for s in &self.scrub {
            if m.contains(s.as_str()) {
                m = m.replace(s.as_str(), &mask(s));
            }
        }
        m
    }

    /// An error at `path` (located in the text with `mode`).
    pub(crate) fn error(
        &self,
        kind: ErrorKind,
        path: KeyPath,
        mode: Mode,
        message: impl Into<String>,
    ) -> ConfigError {
        let (file, loc) = self.sources.locate(&path, mode);
        ConfigError::new(kind, file, self.scrubbed(message.into()))
            .at(loc)
            .with_path(path)
    }

    /// A warning line `file:line:col: path: message`.
    pub(crate) fn warning(&self, path: &KeyPath, message: String) -> String {
        let (file, loc) = self.bounded_locate(path, Mode::Key);
        let loc = match loc {
            Some((l, c)) => format!(":{l}:{c}"),
            None => String::new(),
        };
        format!("{file}{loc}: {path}: {}", self.scrubbed(message))
    }

    /// An error at `path` that is one of possibly many reported together (located like a
    /// warning: past [`MAX_LOCATED_WARNINGS`] located messages, file and key path only).
    pub(crate) fn bounded_error(
        &self,
        kind: ErrorKind,
        path: KeyPath,
        mode: Mode,
        message: impl Into<String>,
    ) -> ConfigError {
        let (file, loc) = self.bounded_locate(&path, mode);
        ConfigError::new(kind, file, self.scrubbed(message.into()))
            .at(loc)
            .with_path(path)
    }

    /// The file and position of `path`, the position only while fewer than
    /// [`MAX_LOCATED_WARNINGS`] messages were located.
    fn bounded_locate(&self, path: &KeyPath, mode: Mode) -> (&str, Option<(usize, usize)>) {
        let n = self.located_warnings.get();
        if n < MAX_LOCATED_WARNINGS {
            self.located_warnings.set(n + 1);
            self.sources.locate(path, mode)
        } else {
            (self.sources.file_of(path), None)
        }
    }
}
