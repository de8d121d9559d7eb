//! Deployments whose spend would be recorded as $0: no `input_cost_per_token` /
//! `output_cost_per_token` (or `input_cost_per_request`) in their `litellm_params` or
//! `model_info`, and their model (`model_info.base_model` when set) in no price table (the
//! built-in one, or the LiteLLM-format map of `LITELLM_MODEL_COST_MAP_URL`). Budgets never trip
//! on such a deployment (its admission estimate is $0 too), so the gateway names each one at
//! start and `check-config` lists them.
//!
//! Left out: wildcard deployments (`openai/*`: priced per requested model, at request time)
//! and deployments answered in process (`mock/`, `mock_response`), which call no provider.

use std::fmt;

use tollgate_config::Config;
use tollgate_governance::pricing::PriceTable;
use tollgate_providers::Deployment;
use tollgate_router::Router;

/// One deployment no price source covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpriced {
    /// `model_name` (the model group).
    pub model_name: String,
    /// `model_info.id` (or the generated deployment id).
    pub deployment_id: String,
    /// `provider/model` as it would be priced (`openai/gpt-4o-2024-08-06`).
    pub model: String,
}

impl fmt::Display for Unpriced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "model_name {:?} (deployment {}): {}",
            self.model_name, self.deployment_id, self.model
        )
    }
}

/// Every deployment of `router` that `priced` finds no price for, in config order.
pub fn unpriced(router: &Router, priced: impl Fn(&Deployment) -> bool) -> Vec<Unpriced> {
    router
        .groups()
        .flat_map(|g| g.deployments.iter().map(move |d| (g, d)))
        .filter(|(_, d)| !d.deployment.is_wildcard() && d.deployment.mock.is_none())
        .filter(|(_, d)| !priced(&d.deployment))
        .map(|(g, d)| Unpriced {
            model_name: g.name.clone(),
            deployment_id: d.deployment.id.clone(),
            model: format!(
                "{}/{}",
                d.deployment.provider.name, d.deployment.upstream_model
            ),
        })
        .collect()
}

/// The warning naming `list` (one line; `None` when it is empty).
pub fn warning(list: &[Unpriced]) -> Option<String> {
    if list.is_empty() {
        return None;
    }
    let names: Vec<String> = list.iter().map(Unpriced::to_string).collect();
    Some(format!(
        "{} deployment{} no price: spend through {} is recorded as $0 and budgets never trip \
         (set input_cost_per_token / output_cost_per_token in litellm_params or model_info, or \
         give the full LiteLLM price map with LITELLM_MODEL_COST_MAP_URL=<file>): {}",
        list.len(),
        if list.len() == 1 { " has" } else { "s have" },
        if list.len() == 1 { "it" } else { "them" },
        names.join("; ")
    ))
}

/// `check-config`'s prices section for `config` (routed as `router`): where prices come from,
/// then the [`warning`] of the unpriced deployments, if any. Reads the LiteLLM map named by
/// `LITELLM_MODEL_COST_MAP_URL` (from `env`, else the config's `environment_variables`) as the
/// server does at start, so a map the server could not read fails here too.
///
/// Errors: the map cannot be read or parsed (the message names it).
pub fn check_config_section(
    config: &Config,
    router: &Router,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut prices = PriceTable::builtin();
    let mut s = format!("Prices: built-in table ({} names)", prices.len());
    let var = "LITELLM_MODEL_COST_MAP_URL";
    let source = env(var)
        .or_else(|| config.environment_variables.get(var).cloned())
        .filter(|v| !v.is_empty());
    if let Some(src) = source {
        let map = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?
            .block_on(super::load_price_map(&src))
            .map_err(|e| e.to_string())?;
        s.push_str(&format!(", then {var}={src} ({} names)", map.len()));
        prices.merge(map);
    }
    s.push_str(", then each deployment's *_cost_per_token\n");
    let pricing = super::config_pricing(config);
    let list = unpriced(router, |d| {
        super::price_with(&prices, pricing.get(&d.id), d, &d.upstream_model).is_some()
    });
    if let Some(w) = warning(&list) {
        s.push_str(&format!("warning: {w}\n"));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(yaml: &str) -> (tollgate_config::LoadedConfig, crate::state::AppState) {
        let loaded =
            tollgate_config::load_str(yaml, "config.yaml", &|_| None).expect("config loads");
        let state = crate::state::AppState::build(&loaded, &|_| None).expect("state builds");
        (loaded, state)
    }

    const DEPLOYMENTS: &str = "model_list:
  - model_name: dated
    litellm_params: {model: openai/gpt-4o-2024-08-06, api_key: k}
  - model_name: local
    litellm_params: {model: openai/local-llama, api_base: 'http://127.0.0.1:9/v1', api_key: k}
    model_info: {id: dep-local}
  - model_name: own-price
    litellm_params: {model: openai/local-llama, api_base: 'http://127.0.0.1:9/v1', api_key: k, input_cost_per_token: 0.000001}
  - model_name: based
    litellm_params: {model: openai/my-alias, api_base: 'http://127.0.0.1:9/v1', api_key: k}
    model_info: {base_model: gpt-4o-mini}
  - model_name: claude
    litellm_params: {model: anthropic/claude-next-preview, api_key: k}
    model_info: {id: dep-claude}
  - model_name: any/*
    litellm_params: {model: openai/*, api_key: k}
  - model_name: mocked
    litellm_params: {model: openai/unpriced-mock, mock_response: hi, api_key: k}
";

    #[test]
    fn names_each_deployment_no_price_covers() {
        let (loaded, state) = state(DEPLOYMENTS);
        let text = check_config_section(&loaded.config, &state.router.load(), &|_| None)
            .expect("no map to read");
        assert!(text.starts_with("Prices: built-in table ("), "{text}");
        assert!(
            text.contains(
                "warning: 2 deployments have no price: spend through them is recorded as $0"
            ),
            "{text}"
        );
        assert!(
            text.ends_with(
                ": model_name \"local\" (deployment dep-local): openai/local-llama; model_name \"claude\" (deployment dep-claude): anthropic/claude-next-preview\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_litellm_map_prices_what_the_table_does_not() {
        let dir = std::env::temp_dir().join(format!("tollgate-unpriced-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let map = dir.join("prices.json");
        std::fs::write(
            &map,
            r#"{"local-llama": {"input_cost_per_token": 1e-7, "output_cost_per_token": 2e-7, "litellm_provider": "openai"},
                "anthropic/claude-next-preview": {"input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5}}"#,
        )
        .expect("write map");
        let (loaded, state) = state(DEPLOYMENTS);
        let path = map.to_string_lossy().into_owned();
        let env = move |k: &str| (k == "LITELLM_MODEL_COST_MAP_URL").then(|| path.clone());
        let text = check_config_section(&loaded.config, &state.router.load(), &env)
            .expect("the map reads");
        assert!(text.contains(" (2 names)"), "{text}");
        assert!(!text.contains("warning"), "{text}");
        // a map that cannot be read fails as the server's start would
        let missing = |k: &str| {
            (k == "LITELLM_MODEL_COST_MAP_URL").then(|| "/nonexistent/prices.json".to_owned())
        };
        let err = check_config_section(&loaded.config, &state.router.load(), &missing)
            .expect_err("missing map");
        assert!(err.contains("/nonexistent/prices.json"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
