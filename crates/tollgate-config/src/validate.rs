//! Checks beyond types: required `api_base`, unique deployment ids, ranges, near-miss keys
//! (providers Tollgate cannot serve are listed by `unserved.rs`).

use std::collections::HashMap;

use crate::config::Config;
use crate::error::{ConfigError, ErrorKind};
use crate::load::Ctx;
use crate::locate::Mode;
use crate::path::KeyPath;
use crate::providers::PROVIDERS_REQUIRING_API_BASE;

fn lp(i: usize) -> KeyPath {
    KeyPath::root()
        .key("model_list")
        .index(i)
        .key("litellm_params")
}

fn positive(
    ctx: &Ctx,
    path: KeyPath,
    v: Option<f64>,
    allow_zero: bool,
    unit: &str,
) -> Result<(), ConfigError> {
    let Some(v) = v else { return Ok(()) };
    let ok = v.is_finite() && if allow_zero { v >= 0.0 } else { v > 0.0 };
    if ok {
        return Ok(());
    }
    let rule = if allow_zero { ">= 0" } else { "> 0" };
    Err(ctx.error(
        ErrorKind::Invalid,
        path,
        Mode::Value,
        format!("must be {rule} {unit}, got {v}"),
    ))
}

/// Keys whose misspelling silently changes security or routing: a near miss is an error, not an
/// ignored unknown key (a misspelt `general_settings` would drop the master key and open the
/// gateway to everyone).
const GUARDED_TOP_LEVEL: &[&str] = &[
    "model_list",
    "litellm_settings",
    "general_settings",
    "router_settings",
    "environment_variables",
];
const GUARDED_GENERAL: &[&str] = &["master_key", "database_url"];

/// Levenshtein distance, for "did you mean" checks on short key names.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The first of `guarded` one or two edits away from `key` (and not `key` itself).
pub(crate) fn near_miss<'a>(key: &str, guarded: &[&'a str]) -> Option<&'a str> {
    guarded
        .iter()
        .copied()
        .find(|g| *g != key && distance(key, g) <= 2)
}

/// Validates `cfg`; returns warnings (things that load but look wrong).
pub(crate) fn validate(cfg: &Config, ctx: &Ctx) -> Result<Vec<String>, ConfigError> {
    let mut warnings = Vec::new();
    for k in cfg.extra.keys() {
        if let Some(meant) = near_miss(k, GUARDED_TOP_LEVEL) {
            return Err(ctx.error(
                ErrorKind::Invalid,
                KeyPath::root().key(k),
                Mode::Key,
                format!("unknown top-level key '{k}': did you mean '{meant}'?"),
            ));
        }
    }
    for k in cfg.general_settings.extra.keys() {
        if let Some(meant) = near_miss(k, GUARDED_GENERAL) {
            return Err(ctx.error(
                ErrorKind::Invalid,
                KeyPath::root().key("general_settings").key(k),
                Mode::Key,
                format!("unknown key '{k}': did you mean '{meant}'?"),
            ));
        }
    }
    // A key no settings struct knows that is one or two edits from a key Tollgate acts on is
    // most likely a typo that silently turns a setting off (`max_budgt`): say so.
    let sections = [
        (
            "litellm_settings",
            &cfg.litellm_settings.extra,
            crate::implemented::LITELLM_SETTINGS_IMPLEMENTED,
        ),
        (
            "general_settings",
            &cfg.general_settings.extra,
            crate::implemented::GENERAL_SETTINGS_IMPLEMENTED,
        ),
        (
            "router_settings",
            &cfg.router_settings.extra,
            crate::implemented::ROUTER_SETTINGS_IMPLEMENTED,
        ),
    ];
    for (section, extra, known) in sections {
        for k in extra.keys() {
            if let Some(meant) = near_miss(k, known) {
                warnings.push(ctx.warning(
                    &KeyPath::root().key(section).key(k),
                    format!("unknown key '{k}' (ignored): did you mean '{meant}'?"),
                ));
            }
        }
    }
    let mut explicit_ids: HashMap<&str, usize> = HashMap::new();
    let mut hashed_ids: HashMap<String, usize> = HashMap::new();

    for (i, e) in cfg.model_list.iter().enumerate() {
        let entry = KeyPath::root().key("model_list").index(i);
        if e.model_name.trim().is_empty() {
            return Err(ctx.error(
                ErrorKind::Invalid,
                entry.key("model_name"),
                Mode::Value,
                "must not be empty",
            ));
        }
        let p = &e.litellm_params;
        for k in p.extra.keys() {
            if crate::implemented::is_internal_litellm_param(k) {
                continue;
            }
            if let Some(meant) = near_miss(k, crate::implemented::LITELLM_PARAMS_TYPED) {
                warnings.push(ctx.warning(
                    &lp(i).key(k),
                    format!(
                        "unknown key '{k}' (sent upstream as a request parameter): did you mean '{meant}'?"
                    ),
                ));
            }
        }
        if p.model.trim().is_empty() {
            return Err(ctx.error(
                ErrorKind::Invalid,
                lp(i).key("model"),
                Mode::Value,
                "must not be empty",
            ));
        }
        // A provider that is unknown (most likely a typo) or one of LiteLLM's that Tollgate does
        // not serve is not an error here: every such deployment is listed at once in
        // `LoadedConfig::unserved` (unserved.rs), for the binary to refuse the config.
        let provider = p.provider();
        if PROVIDERS_REQUIRING_API_BASE.contains(&provider)
            && p.api_base.as_deref().is_none_or(|b| b.trim().is_empty())
        {
            return Err(ctx.error(
                ErrorKind::Invalid,
                lp(i).key("model"),
                Mode::Value,
                format!(
                    "provider '{provider}' has no default endpoint: set litellm_params.api_base"
                ),
            ));
        }
        positive(ctx, lp(i).key("timeout"), p.timeout, false, "seconds")?;
        positive(
            ctx,
            lp(i).key("stream_timeout"),
            p.stream_timeout,
            false,
            "seconds",
        )?;
        positive(ctx, lp(i).key("weight"), p.weight, true, "")?;
        for (k, v) in [
            ("input_cost_per_token", p.input_cost_per_token),
            ("output_cost_per_token", p.output_cost_per_token),
            ("cache_read_input_token_cost", p.cache_read_input_token_cost),
            (
                "cache_creation_input_token_cost",
                p.cache_creation_input_token_cost,
            ),
        ] {
            positive(ctx, lp(i).key(k), v, true, "USD per token")?;
        }
        let mi = entry.key("model_info");
        positive(
            ctx,
            mi.key("input_cost_per_token"),
            e.model_info.input_cost_per_token,
            true,
            "USD per token",
        )?;
        positive(
            ctx,
            mi.key("output_cost_per_token"),
            e.model_info.output_cost_per_token,
            true,
            "USD per token",
        )?;

        match e.model_info.id.as_deref().filter(|s| !s.is_empty()) {
            Some(id) => {
                if let Some(first) = explicit_ids.insert(id, i) {
                    return Err(ctx.error(
                        ErrorKind::Invalid,
                        mi.key("id"),
                        Mode::Value,
                        format!("duplicate deployment id '{id}' (also model_list[{first}])"),
                    ));
                }
            }
            None => {
                let id = e.hashed_id();
                if let Some(first) = hashed_ids.insert(id.clone(), i) {
                    warnings.push(ctx.warning(
                        &entry,
                        format!(
                            "identical to model_list[{first}]; both get deployment id {id}; set model_info.id to tell them apart"
                        ),
                    ));
                }
            }
        }
    }
    // An explicit id equal to another entry's hashed id would make ids ambiguous.
    for (id, i) in &explicit_ids {
        if let Some(j) = hashed_ids.get(*id) {
            return Err(ctx.error(
                ErrorKind::Invalid,
                KeyPath::root()
                    .key("model_list")
                    .index(*i)
                    .key("model_info")
                    .key("id"),
                Mode::Value,
                format!("deployment id '{id}' equals the generated id of model_list[{j}]"),
            ));
        }
    }

    let ls = KeyPath::root().key("litellm_settings");
    positive(
        ctx,
        ls.key("request_timeout"),
        cfg.litellm_settings.request_timeout,
        false,
        "seconds",
    )?;
    positive(
        ctx,
        ls.key("max_budget"),
        cfg.litellm_settings.max_budget,
        true,
        "USD",
    )?;
    let rs = KeyPath::root().key("router_settings");
    let r = &cfg.router_settings;
    positive(ctx, rs.key("timeout"), r.timeout, false, "seconds")?;
    positive(
        ctx,
        rs.key("stream_timeout"),
        r.stream_timeout,
        false,
        "seconds",
    )?;
    positive(
        ctx,
        rs.key("cooldown_time"),
        r.cooldown_time,
        true,
        "seconds",
    )?;
    positive(ctx, rs.key("retry_after"), r.retry_after, true, "seconds")?;
    let gs = KeyPath::root().key("general_settings");
    let g = &cfg.general_settings;
    positive(
        ctx,
        gs.key("max_request_size_mb"),
        g.max_request_size_mb,
        false,
        "MB",
    )?;
    positive(
        ctx,
        gs.key("max_response_size_mb"),
        g.max_response_size_mb,
        false,
        "MB",
    )?;
    positive(
        ctx,
        gs.key("proxy_batch_write_at"),
        g.proxy_batch_write_at,
        false,
        "seconds",
    )?;
    positive(
        ctx,
        gs.key("database_connection_pool_limit"),
        g.database_connection_pool_limit.map(f64::from),
        false,
        "connections",
    )?;
    positive(
        ctx,
        gs.key("database_connection_timeout"),
        g.database_connection_timeout,
        true,
        "seconds",
    )?;

    // Fallbacks to groups that do not exist load (LiteLLM does not check) but never work.
    let groups = cfg.model_groups();
    let has_wildcard = groups.iter().any(|g| g.contains('*'));
    let rule_sets = [
        (&ls, "fallbacks", &cfg.litellm_settings.fallbacks),
        (
            &ls,
            "context_window_fallbacks",
            &cfg.litellm_settings.context_window_fallbacks,
        ),
        (
            &ls,
            "content_policy_fallbacks",
            &cfg.litellm_settings.content_policy_fallbacks,
        ),
        (&rs, "fallbacks", &r.fallbacks),
        (&rs, "context_window_fallbacks", &r.context_window_fallbacks),
        (&rs, "content_policy_fallbacks", &r.content_policy_fallbacks),
    ];
    if !has_wildcard && !groups.is_empty() {
        for (section, key, rules) in rule_sets {
            for rule in rules.iter() {
                for (from, targets) in rule {
                    for t in targets {
                        if !groups.contains(&t.as_str()) {
                            warnings.push(ctx.warning(
                                &section.key(key),
                                format!("fallback '{from}' -> '{t}': no model group named '{t}'"),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod typo_tests {
    use super::*;

    #[test]
    fn near_misses_of_security_keys_are_errors() {
        assert_eq!(distance("general_setings", "general_settings"), 1);
        assert_eq!(
            near_miss("general_setings", GUARDED_TOP_LEVEL),
            Some("general_settings")
        );
        assert_eq!(near_miss("master_kay", GUARDED_GENERAL), Some("master_key"));
        assert_eq!(near_miss("guardrails", GUARDED_TOP_LEVEL), None);
        let err = crate::load_str(
            "model_list: []\ngeneral_setings:\n  master_key: sk-x\n",
            "c.yaml",
            &|_| None,
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("c.yaml:2:") && msg.contains("did you mean 'general_settings'"),
            "{msg}"
        );
        let err = crate::load_str("general_settings:\n  master_kay: sk-x\n", "c.yaml", &|_| {
            None
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("did you mean 'master_key'"),
            "{err}"
        );
    }

    /// The "did you mean" warnings of `yaml` loaded as `c.yaml`, asserting there are `n`.
    fn typo_warnings(yaml: &str, n: usize) -> Vec<String> {
        let loaded = crate::load_str(yaml, "c.yaml", &|_| None).unwrap();
        let typos: Vec<String> = loaded
            .warnings
            .iter()
            .filter(|w| w.contains("did you mean"))
            .cloned()
            .collect();
        assert_eq!(typos.len(), n, "{:?}", loaded.warnings);
        typos
    }

    #[test]
    fn near_misses_of_typed_litellm_params_are_warned() {
        let typos = typo_warnings(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/gpt-4o\n      api_bse: http://127.0.0.1:9/v1\n      timeut: 5\n      temperature: 0.2\n      max_budget: 3\n",
            2,
        );
        assert!(
            typos[0].starts_with("c.yaml:5:")
                && typos[0].contains("model_list[0].litellm_params.api_bse")
                && typos[0].ends_with("did you mean 'api_base'?"),
            "{}",
            typos[0]
        );
        assert!(
            typos[1].starts_with("c.yaml:6:") && typos[1].ends_with("did you mean 'timeout'?"),
            "{}",
            typos[1]
        );
    }

    /// Every key listed as typed is taken by a typed field (never left in `extra`, where it
    /// would be sent upstream); an unknown key is.
    #[test]
    fn typed_litellm_params_list_names_typed_fields() {
        for k in crate::implemented::LITELLM_PARAMS_TYPED {
            let v = serde_json::json!({ "model": "m", *k: null });
            if let Ok(p) = serde_json::from_value::<crate::LitellmParams>(v) {
                assert!(!p.extra.contains_key(*k), "{k} is not a typed field");
            }
        }
        let p: crate::LitellmParams =
            serde_json::from_value(serde_json::json!({"model": "m", "not_a_field": null})).unwrap();
        assert!(p.extra.contains_key("not_a_field"));
    }

    #[test]
    fn near_misses_inside_settings_sections_are_warned() {
        let typos = typo_warnings(
            "litellm_settings:\n  max_budgt: 1\n  drop_params: true\nrouter_settings:\n  num_retrie: 1\n",
            2,
        );
        assert!(
            typos[0].starts_with("c.yaml:2:")
                && typos[0].contains("litellm_settings.max_budgt")
                && typos[0].ends_with("did you mean 'max_budget'?"),
            "{}",
            typos[0]
        );
        assert!(
            typos[1].contains("router_settings.num_retrie")
                && typos[1].ends_with("did you mean 'num_retries'?"),
            "{}",
            typos[1]
        );
    }

    /// LiteLLM's pool keys are read (strings too, as LiteLLM's YAML allows), not warned about
    /// as unimplemented; a pool of 0 connections or a negative timeout is an error at its line.
    #[test]
    fn database_pool_settings_are_read_and_checked() {
        let loaded = crate::load_str(
            "general_settings:\n  database_connection_pool_limit: \"20\"\n  database_connection_timeout: 2.5\n",
            "c.yaml",
            &|_| None,
        )
        .unwrap();
        let g = &loaded.config.general_settings;
        assert_eq!(g.database_connection_pool_limit, Some(20));
        assert_eq!(g.database_connection_timeout, Some(2.5));
        assert!(
            !loaded
                .warnings
                .iter()
                .any(|w| w.contains("database_connection")),
            "{:?}",
            loaded.warnings
        );
        let err = crate::load_str(
            "general_settings:\n  database_connection_pool_limit: 0\n",
            "c.yaml",
            &|_| None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("c.yaml:2:") && err.contains("must be > 0 connections, got 0"),
            "{err}"
        );
        let err = crate::load_str(
            "general_settings:\n  database_connection_timeout: -1\n",
            "c.yaml",
            &|_| None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("must be >= 0 seconds, got -1"), "{err}");
    }
}
