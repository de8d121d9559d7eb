//! The governance settings in effect, for `tollgate check-config`: whether governance runs
//! (a master key), and the budgets, status code, spend logs and headers it runs with, each
//! with where its value came from, read back from the options the gateway starts governance
//! with ([`crate::gate::options`]) so that what is printed is what applies. Secrets are masked.

use std::fmt::Write as _;

use tollgate_config::LoadedConfig;

/// The lines `check-config` prints after the store, each `  name: value (source)`:
///
/// ```text
/// Governance in effect (master key set: virtual keys, budgets, limits and spend are enforced):
///   master_key: **** (general_settings.master_key)
///   max_budget: none (default: no proxy-wide budget)
///   max_end_user_budget: 5 USD (litellm_settings)
///   ...
/// ```
///
/// Without a master key, one line says governance is off and another names the governance
/// settings present in the file that are therefore ignored.
pub fn describe(loaded: &LoadedConfig) -> String {
    let c = &loaded.config;
    let ls = &c.litellm_settings;
    let gs = &c.general_settings;
    let mut s = String::new();
    let Some(master) = &loaded.master_key else {
        s.push_str(
            "Governance: off (no master key: no virtual keys, budgets, limits or spend logs; set general_settings.master_key or LITELLM_MASTER_KEY to turn it on)\n",
        );
        let present: Vec<&str> = [
            ("general_settings.database_url", gs.database_url.is_some()),
            ("litellm_settings.max_budget", ls.max_budget.is_some()),
            (
                "litellm_settings.budget_duration",
                ls.budget_duration.is_some(),
            ),
            (
                "litellm_settings.max_end_user_budget",
                ls.max_end_user_budget.is_some(),
            ),
            (
                "litellm_settings.max_end_user_budget_id",
                ls.max_end_user_budget_id.is_some(),
            ),
            (
                "general_settings.disable_spend_logs",
                gs.disable_spend_logs.is_some(),
            ),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect();
        if !present.is_empty() {
            let _ = writeln!(s, "  ignored without a master key: {}", present.join(", "));
        }
        return s;
    };
    let o = crate::gate::options(c);
    let from = |set: bool, key: &'static str| if set { key } else { "default" };
    s.push_str(
        "Governance in effect (master key set: virtual keys, budgets, limits and spend are enforced):\n",
    );
    let mut line = |name: &str, value: String, source: &str| {
        let _ = writeln!(s, "  {name}: {value} ({source})");
    };
    line(
        "master_key",
        master.masked(),
        loaded.master_key_source.unwrap_or("default"),
    );
    let (max_budget, budget_source) = match o.global.max_budget {
        Some(b) => (format!("{b} USD"), "litellm_settings"),
        None => ("none".to_owned(), "default: no proxy-wide budget"),
    };
    line("max_budget", max_budget, budget_source);
    line(
        "budget_duration",
        match (&o.global.budget_duration, &ls.budget_duration) {
            (Some(d), _) => format!("{d} (the proxy budget resets on LiteLLM's schedule)"),
            (None, Some(raw)) => format!("none: `{raw}` is not a budget duration, ignored"),
            (None, None) => "none: the proxy budget never resets".to_owned(),
        },
        from(o.global.budget_duration.is_some(), "litellm_settings"),
    );
    let eu = &o.end_user_default;
    line(
        "max_end_user_budget",
        match (eu.max_budget, ls.max_end_user_budget) {
            (Some(b), _) => format!("{b} USD for each end user without its own budget tier"),
            (None, Some(raw)) => format!("none: {raw} is not a budget in USD, ignored"),
            (None, None) => "none".to_owned(),
        },
        from(eu.max_budget.is_some(), "litellm_settings"),
    );
    line(
        "max_end_user_budget_id",
        match &eu.budget_id {
            Some(id) => format!(
                "{id}: the limits of budget tier `{id}` (created with /budget/new) apply to each end user without its own tier"
            ),
            None => "none".to_owned(),
        },
        from(eu.budget_id.is_some(), "litellm_settings"),
    );
    if eu.is_empty() {
        s.push_str("  (no default end-user budget: an end user without its own budget tier is not capped)\n");
    }
    let mut line = |name: &str, value: String, source: &str| {
        let _ = writeln!(s, "  {name}: {value} ({source})");
    };
    let status = o.admission.budget_exceeded_status;
    line(
        "budget_exceeded_status_code",
        match ls.budget_exceeded_status_code {
            Some(c) if c != status => {
                format!("{status}: {c} is not an HTTP error status (400-599), ignored")
            }
            _ => status.to_string(),
        },
        from(
            ls.budget_exceeded_status_code == Some(status),
            "litellm_settings",
        ),
    );
    line(
        "spend_logs",
        if o.spend_logs {
            "on: one LiteLLM_SpendLogs row per attempt".to_owned()
        } else {
            "off: spend is tracked, no LiteLLM_SpendLogs rows are written".to_owned()
        },
        from(
            gs.disable_spend_logs.is_some(),
            "general_settings.disable_spend_logs",
        ),
    );
    line(
        "user_header_name",
        gs.user_header_name
            .as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map_or_else(
                || "none: the end user comes from x-litellm-end-user-id / x-litellm-customer-id, the body's user or metadata.user_id".to_owned(),
                |h| format!("{h}: a header naming the end user"),
            ),
        from(
            gs.user_header_name.as_deref().is_some_and(|h| !h.trim().is_empty()),
            "general_settings",
        ),
    );
    line(
        "litellm_key_header_name",
        gs.litellm_key_header_name
            .as_deref()
            .filter(|h| !h.is_empty())
            .map_or_else(
                || {
                    "none: keys are read from x-litellm-api-key, Authorization, api-key, x-api-key"
                        .to_owned()
                },
                |h| format!("{h}, then x-litellm-api-key, Authorization, api-key, x-api-key"),
            ),
        from(
            gs.litellm_key_header_name
                .as_deref()
                .is_some_and(|h| !h.is_empty()),
            "general_settings",
        ),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(yaml: &str) -> String {
        describe(&tollgate_config::load_str(yaml, "c.yaml", &|_| None).unwrap())
    }

    #[test]
    fn the_settings_in_effect_with_their_sources() {
        let text = described(
            "general_settings:\n  master_key: sk-1234567890abcdef\n  disable_spend_logs: true\n  user_header_name: X-OpenWebUI-User-Id\nlitellm_settings:\n  max_budget: 100\n  budget_duration: 30d\n  max_end_user_budget: 2.5\n  max_end_user_budget_id: tier-free\n  budget_exceeded_status_code: 429\n",
        );
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "Governance in effect (master key set: virtual keys, budgets, limits and spend are enforced):",
                &format!(
                    "  master_key: {} (general_settings.master_key)",
                    tollgate_config::mask("sk-1234567890abcdef")
                ),
                "  max_budget: 100 USD (litellm_settings)",
                "  budget_duration: 30d (the proxy budget resets on LiteLLM's schedule) (litellm_settings)",
                "  max_end_user_budget: 2.5 USD for each end user without its own budget tier (litellm_settings)",
                "  max_end_user_budget_id: tier-free: the limits of budget tier `tier-free` (created with /budget/new) apply to each end user without its own tier (litellm_settings)",
                "  budget_exceeded_status_code: 429 (litellm_settings)",
                "  spend_logs: off: spend is tracked, no LiteLLM_SpendLogs rows are written (general_settings.disable_spend_logs)",
                "  user_header_name: X-OpenWebUI-User-Id: a header naming the end user (general_settings)",
                "  litellm_key_header_name: none: keys are read from x-litellm-api-key, Authorization, api-key, x-api-key (default)",
            ]
        );
        assert!(!text.contains("sk-1234567890abcdef"), "{text}");
    }

    #[test]
    fn defaults_and_ignored_values_say_so() {
        let text = described(
            "general_settings:\n  master_key: sk-1234\nlitellm_settings:\n  budget_duration: soon\n  budget_exceeded_status_code: 99\n",
        );
        for want in [
            "  max_budget: none (default: no proxy-wide budget)\n",
            "  budget_duration: none: `soon` is not a budget duration, ignored (default)\n",
            "  max_end_user_budget: none (default)\n",
            "  (no default end-user budget: an end user without its own budget tier is not capped)\n",
            "  budget_exceeded_status_code: 422: 99 is not an HTTP error status (400-599), ignored (default)\n",
            "  spend_logs: on: one LiteLLM_SpendLogs row per attempt (default)\n",
        ] {
            assert!(text.contains(want), "want {want:?} in:\n{text}");
        }
    }

    #[test]
    fn without_a_master_key_governance_is_off_and_its_settings_ignored() {
        let text = described(
            "litellm_settings:\n  max_end_user_budget: 1\ngeneral_settings:\n  database_url: postgres://u:pw-SECRET@db/x\n",
        );
        assert_eq!(
            text,
            "Governance: off (no master key: no virtual keys, budgets, limits or spend logs; set general_settings.master_key or LITELLM_MASTER_KEY to turn it on)\n  ignored without a master key: general_settings.database_url, litellm_settings.max_end_user_budget\n"
        );
    }
}
