//! Deployments the gateway cannot serve: those whose provider is one of LiteLLM's that
//! Tollgate does not serve yet ([`crate::LITELLM_PROVIDERS_NOT_SERVED`]: `azure/`, `bedrock/`,
//! `vertex_ai/`, `gemini/`...), and those whose provider is no provider at all (an unknown
//! prefix such as `opnai/`, most likely a typo).
//!
//! A config naming LiteLLM providers is valid for LiteLLM, so it loads (a library reading
//! LiteLLM configs must accept it), and so does one with an unknown prefix, so that both kinds
//! are reported together: [`crate::LoadedConfig::unserved`] lists every such deployment at
//! once, in file order, each located by file, line and key path, for the binary to refuse the
//! config with the whole list instead of one deployment per attempt.

use crate::config::Config;
use crate::error::{ConfigError, ErrorKind};
use crate::load::Ctx;
use crate::locate::Mode;
use crate::path::KeyPath;
use crate::providers::{KNOWN_PROVIDERS, ProviderSupport, provider_support};
use crate::validate::near_miss;

/// One located error per `model_list` entry the gateway cannot serve, in file order:
/// `config.yaml:4:14: model_list[0].litellm_params.model: provider 'azure' (model
/// 'azure/gpt-4o', model group 'a') is not served by Tollgate yet`, or for an unknown prefix
/// `... unknown provider prefix 'opnai' in model 'opnai/gpt-4o' (model group 'b'): did you mean
/// 'openai'?`. The path is `custom_llm_provider` when that key chose the provider.
pub(crate) fn unserved_deployments(cfg: &Config, ctx: &Ctx) -> Vec<ConfigError> {
    cfg.model_list
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let p = &e.litellm_params;
            let provider = p.provider();
            let support = provider_support(provider);
            if !matches!(
                support,
                ProviderSupport::LitellmOnly | ProviderSupport::Unknown
            ) {
                return None;
            }
            let by_key = p.custom_llm_provider.as_deref().is_some_and(|c| !c.is_empty());
            let key = if by_key {
                "custom_llm_provider"
            } else {
                "model"
            };
            let message = if support == ProviderSupport::LitellmOnly {
                format!(
                    "provider '{provider}' (model '{}', model group '{}') is not served by Tollgate yet",
                    p.model, e.model_name
                )
            } else {
                let what = if by_key {
                    "custom_llm_provider"
                } else {
                    "provider prefix"
                };
                let hint = match near_miss(provider, KNOWN_PROVIDERS) {
                    Some(meant) => format!("did you mean '{meant}'?"),
                    None => "it is neither a provider Tollgate serves nor one of LiteLLM's".to_owned(),
                };
                format!(
                    "unknown {what} '{provider}' in model '{}' (model group '{}'): {hint}",
                    p.model, e.model_name
                )
            };
            let path = KeyPath::root()
                .key("model_list")
                .index(i)
                .key("litellm_params")
                .key(key);
            Some(ctx.bounded_error(ErrorKind::Invalid, path, Mode::Value, message))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    fn unserved(yaml: &str) -> Vec<String> {
        crate::load_str(yaml, "c.yaml", &|_| None)
            .expect("a config naming LiteLLM providers loads")
            .unserved
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn every_unserved_deployment_is_listed_with_its_line() {
        let got = unserved(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: azure/gpt-4o\n      api_base: https://x.openai.azure.com\n  - model_name: ok\n    litellm_params:\n      model: openai/gpt-4o\n  - model_name: b\n    litellm_params:\n      model: bedrock/anthropic.claude-3\n  - model_name: c\n    litellm_params:\n      model: gemini-pro\n      custom_llm_provider: vertex_ai\n",
        );
        assert_eq!(
            got,
            [
                "c.yaml:4:14: model_list[0].litellm_params.model: provider 'azure' (model 'azure/gpt-4o', model group 'a') is not served by Tollgate yet",
                "c.yaml:11:14: model_list[2].litellm_params.model: provider 'bedrock' (model 'bedrock/anthropic.claude-3', model group 'b') is not served by Tollgate yet",
                "c.yaml:15:28: model_list[3].litellm_params.custom_llm_provider: provider 'vertex_ai' (model 'gemini-pro', model group 'c') is not served by Tollgate yet",
            ]
        );
    }

    /// Unknown prefixes (typos) are listed with the unserved ones, in file order.
    #[test]
    fn unknown_prefixes_are_listed_with_the_unserved_ones() {
        let got = unserved(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: opnai/gpt-4o\n  - model_name: b\n    litellm_params:\n      model: azure/gpt-4o\n  - model_name: c\n    litellm_params:\n      model: nosuchprovider/x\n  - model_name: d\n    litellm_params:\n      model: x\n      custom_llm_provider: antropic\n",
        );
        assert_eq!(
            got,
            [
                "c.yaml:4:14: model_list[0].litellm_params.model: unknown provider prefix 'opnai' in model 'opnai/gpt-4o' (model group 'a'): did you mean 'openai'?",
                "c.yaml:7:14: model_list[1].litellm_params.model: provider 'azure' (model 'azure/gpt-4o', model group 'b') is not served by Tollgate yet",
                "c.yaml:10:14: model_list[2].litellm_params.model: unknown provider prefix 'nosuchprovider' in model 'nosuchprovider/x' (model group 'c'): it is neither a provider Tollgate serves nor one of LiteLLM's",
                "c.yaml:14:28: model_list[3].litellm_params.custom_llm_provider: unknown custom_llm_provider 'antropic' in model 'x' (model group 'd'): did you mean 'anthropic'?",
            ]
        );
    }

    #[test]
    fn a_deployment_from_an_included_file_is_located_in_that_file() {
        let read = |p: &std::path::Path| -> std::io::Result<String> {
            assert!(p.ends_with("more.yaml"), "{}", p.display());
            Ok("model_list:\n  - model_name: g\n    litellm_params:\n      model: gemini/gemini-pro\n".into())
        };
        let l = crate::load::load_with_reader(
            "include: [more.yaml]\nmodel_list:\n  - model_name: a\n    litellm_params:\n      model: openai/x\n",
            "root.yaml",
            &|_| None,
            &read,
        )
        .unwrap();
        let got: Vec<String> = l.unserved.iter().map(ToString::to_string).collect();
        assert_eq!(
            len_and_first(&got),
            (
                1,
                "more.yaml:4:14: model_list[1].litellm_params.model: provider 'gemini' (model 'gemini/gemini-pro', model group 'g') is not served by Tollgate yet"
            )
        );
    }

    fn len_and_first(v: &[String]) -> (usize, &str) {
        (v.len(), v.first().map_or("", String::as_str))
    }

    #[test]
    fn served_and_wildcard_deployments_are_not_listed() {
        let got = unserved(
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: anthropic/claude\n  - model_name: '*'\n    litellm_params:\n      model: '*'\n  - model_name: m\n    litellm_params:\n      model: mock/x\n",
        );
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn the_served_list_has_no_litellm_only_provider() {
        for p in crate::KNOWN_PROVIDERS {
            assert_eq!(
                crate::provider_support(p),
                crate::ProviderSupport::Served,
                "{p}"
            );
        }
        for p in [
            "azure",
            "azure_ai",
            "bedrock",
            "vertex_ai",
            "gemini",
            "cohere",
        ] {
            assert_eq!(
                crate::provider_support(p),
                crate::ProviderSupport::LitellmOnly,
                "{p}"
            );
        }
    }
}
