//! Human-readable summary for `tollgate check-config PATH`. Credentials are masked.

use std::fmt::Write;

use crate::config::Config;
use crate::load::LoadedConfig;
use crate::redact::{redact_str, redact_url_userinfo};

fn opt<T: std::fmt::Display>(v: &Option<T>, unit: &str) -> Option<String> {
    v.as_ref().map(|v| format!("{v}{unit}"))
}

impl Config {
    /// A text for `tollgate check-config`: the number of model groups (each distinct
    /// `model_name`, a wildcard group such as `bedrock/*` counted once, as the gateway's
    /// `groups=` at start counts them) and deployments, each model group with its deployments (id, provider,
    /// upstream model, api_base, masked api_key, timeouts in s, rpm/tpm...), the general
    /// settings in effect, and the keys not implemented yet (the routing settings in effect are
    /// tollgate-router's `settings_in_effect`). Never contains a credential value. The master
    /// key line shows `general_settings.master_key` only; [`LoadedConfig::describe`] also knows
    /// about `LITELLM_MASTER_KEY` and adds the load warnings.
    pub fn describe(&self) -> String {
        describe(self, None)
    }
}

impl LoadedConfig {
    /// [`Config::describe`] with the master key actually in effect (and where it came from),
    /// followed by the load warnings. Never contains a credential value.
    pub fn describe(&self) -> String {
        describe(&self.config, Some(self))
    }
}

fn describe(c: &Config, loaded: Option<&LoadedConfig>) -> String {
    {
        let mut s = String::new();
        let groups = c.model_groups();
        let wildcards: Vec<&str> = groups.iter().copied().filter(|g| g.contains('*')).collect();
        let _ = write!(
            s,
            "Model groups: {} ({} deployment{}",
            groups.len(),
            c.model_list.len(),
            if c.model_list.len() == 1 { "" } else { "s" }
        );
        if !wildcards.is_empty() {
            let _ = write!(
                s,
                "; {} of the groups {} wildcard group{}, counted once each: {}",
                wildcards.len(),
                if wildcards.len() == 1 { "is a" } else { "are" },
                if wildcards.len() == 1 { "" } else { "s" },
                wildcards.join(", ")
            );
        }
        s.push_str(")\n");
        for g in &groups {
            let deps: Vec<_> = c.deployments(g).collect();
            let _ = writeln!(
                s,
                "  {g}  ({} deployment{})",
                deps.len(),
                if deps.len() == 1 { "" } else { "s" }
            );
            for e in deps {
                let p = &e.litellm_params;
                let _ = writeln!(
                    s,
                    "    - id {}  provider {}  upstream {}",
                    e.deployment_id(),
                    p.provider(),
                    p.upstream_model()
                );
                let mut fields: Vec<String> = Vec::new();
                let mut push = |k: &str, v: Option<String>| {
                    if let Some(v) = v {
                        fields.push(format!("{k} {v}"));
                    }
                };
                push("api_base", p.api_base.as_deref().map(redact_url_userinfo));
                push("api_key", p.api_key.as_ref().map(|k| k.masked()));
                push("api_version", p.api_version.clone());
                push("timeout", opt(&p.timeout, " s"));
                push("stream_timeout", opt(&p.stream_timeout, " s"));
                push("max_retries", opt(&p.max_retries, ""));
                push("rpm", opt(&p.rpm, ""));
                push("tpm", opt(&p.tpm, ""));
                push("weight", opt(&p.weight, ""));
                push("order", opt(&p.order, ""));
                push("input_cost_per_token", opt(&p.input_cost_per_token, " USD"));
                push(
                    "output_cost_per_token",
                    opt(&p.output_cost_per_token, " USD"),
                );
                push("mode", e.model_info.mode.clone());
                push("max_input_tokens", opt(&e.model_info.max_input_tokens, ""));
                if !p.tags.is_empty() {
                    push("tags", Some(p.tags.join(",")));
                }
                if p.mock_response.is_some() {
                    push("mock_response", Some("yes".into()));
                }
                for (k, _) in p.secrets().iter().filter(|(k, _)| *k != "api_key") {
                    push(k, Some("(set)".into()));
                }
                if !p.extra_headers.is_empty() {
                    let h: Vec<String> = p
                        .extra_headers
                        .iter()
                        .map(|(k, v)| format!("{k}: {}", redact_str(k, v)))
                        .collect();
                    push("extra_headers", Some(format!("{{{}}}", h.join(", "))));
                }
                let defaults = p.request_defaults();
                if !defaults.is_empty() {
                    let keys: Vec<&str> = defaults.keys().map(String::as_str).collect();
                    push("request defaults", Some(keys.join(",")));
                }
                if !fields.is_empty() {
                    let _ = writeln!(s, "      {}", fields.join("  "));
                }
            }
        }

        let _ = writeln!(s, "Settings in effect:");
        let ls = &c.litellm_settings;
        let _ = writeln!(
            s,
            "  litellm_settings.request_timeout = {}",
            ls.request_timeout
                .map(|t| format!("{t} s"))
                .unwrap_or_else(|| "600 s (default; LiteLLM's is 6000 s)".into())
        );
        let gs = &c.general_settings;
        let master = match loaded {
            Some(l) => match (&l.master_key, l.master_key_source) {
                (Some(k), Some(src)) => format!("{} (from {src})", k.masked()),
                _ => "unset: no authentication (every request is admitted)".into(),
            },
            None => match &gs.master_key {
                Some(k) => format!("{} (from general_settings.master_key)", k.masked()),
                None => format!(
                    "not in general_settings (env {} is used if set; else no authentication)",
                    crate::load::MASTER_KEY_ENV
                ),
            },
        };
        let _ = writeln!(s, "  master_key = {master}");
        let _ = writeln!(
            s,
            "  general_settings.max_request_size_mb = {}",
            gs.max_request_size_mb
                .map(|v| format!("{v} MB"))
                .unwrap_or_else(|| format!(
                    "{} MB (default)",
                    crate::settings::DEFAULT_BODY_LIMIT_MB
                ))
        );
        let _ = writeln!(
            s,
            "  general_settings.max_response_size_mb = {}",
            gs.max_response_size_mb
                .map(|v| format!("{v} MB"))
                .unwrap_or_else(|| format!(
                    "{} MB (default)",
                    crate::settings::DEFAULT_BODY_LIMIT_MB
                ))
        );
        if !c.environment_variables.is_empty() {
            let names: Vec<&str> = c.environment_variables.keys().map(String::as_str).collect();
            let _ = writeln!(
                s,
                "  environment_variables (values hidden): {}",
                names.join(", ")
            );
        }

        let unimpl = c.unimplemented_keys();
        if !unimpl.is_empty() {
            let _ = writeln!(s, "Not implemented yet (present in the file, ignored):");
            for k in unimpl {
                let _ = writeln!(s, "  {k}");
            }
        }
        if let Some(l) = loaded.filter(|l| !l.warnings.is_empty()) {
            let _ = writeln!(s, "Warnings:");
            for w in &l.warnings {
                let _ = writeln!(s, "  {w}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    fn described(yaml: &str) -> String {
        crate::load_str(yaml, "c.yaml", &|_| None)
            .expect("valid config")
            .config
            .describe()
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        let one = described(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/x\n",
        );
        assert!(one.starts_with("Model groups: 1 (1 deployment)\n"), "{one}");
        assert!(one.contains("\n  a  (1 deployment)\n"), "{one}");
        let two = described(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/x\n  - model_name: a\n    litellm_params:\n      model: openai/y\n",
        );
        assert!(
            two.starts_with("Model groups: 1 (2 deployments)\n"),
            "{two}"
        );
        assert!(two.contains("\n  a  (2 deployments)\n"), "{two}");
        let wild = described(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/x\n  - model_name: 'bedrock/*'\n    litellm_params:\n      model: 'openai/*'\n  - model_name: 'byok/*'\n    litellm_params:\n      model: 'openai/*'\n",
        );
        assert!(
            wild.starts_with("Model groups: 3 (3 deployments; 2 of the groups are wildcard groups, counted once each: bedrock/*, byok/*)\n"),
            "{wild}"
        );
    }
}
