//! Deployments whose provider is one of LiteLLM's that Tollgate does not serve yet
//! ([`crate::LITELLM_PROVIDERS_NOT_SERVED`]: `azure/`, `bedrock/`, `vertex_ai/`, `gemini/`...).
//!
//! Such a config is valid for LiteLLM, so it loads (a library reading LiteLLM configs must
//! accept it), but the gateway cannot serve it: [`crate::LoadedConfig::unserved`] lists every
//! such deployment at once, each located by file, line and key path, for the binary to refuse
//! the config with the whole list instead of one deployment per attempt.

use crate::config::Config;
use crate::error::{ConfigError, ErrorKind};
use crate::load::Ctx;
use crate::locate::Mode;
use crate::path::KeyPath;
use crate::providers::{ProviderSupport, provider_support};

/// One located error per `model_list` entry whose provider is a LiteLLM provider Tollgate does
/// not serve, in file order: `config.yaml:4:14: model_list[0].litellm_params.model: provider
/// 'azure' (model 'azure/gpt-4o', model group 'a') is not served by Tollgate yet`. The path is
/// `custom_llm_provider` when that key chose the provider.
pub(crate) fn unserved_deployments(cfg: &Config, ctx: &Ctx) -> Vec<ConfigError> {
    cfg.model_list
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let p = &e.litellm_params;
            let provider = p.provider();
            if provider_support(provider) != ProviderSupport::LitellmOnly {
                return None;
            }
            let key = match p.custom_llm_provider.as_deref() {
                Some(c) if !c.is_empty() => "custom_llm_provider",
                _ => "model",
            };
            let path = KeyPath::root()
                .key("model_list")
                .index(i)
                .key("litellm_params")
                .key(key);
            Some(ctx.bounded_error(
                ErrorKind::Invalid,
                path,
                Mode::Value,
                format!(
                    "provider '{provider}' (model '{}', model group '{}') is not served by Tollgate yet",
                    p.model, e.model_name
                ),
            ))
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
