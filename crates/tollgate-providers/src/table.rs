//! The provider table: what differs between providers that speak OpenAI's dialect.
//!
//! Sources: each provider's API documentation for its base URL and auth header, and LiteLLM's
//! provider list (prefix → env var names), so configs written for LiteLLM resolve the same way.

/// How a provider expects the API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStyle {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `api-key: <key>` (Azure OpenAI).
    ApiKeyHeader,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
}

/// The request/response dialect a provider speaks on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDialect {
    /// OpenAI REST (`/chat/completions`, `/completions`, `/embeddings`).
    OpenAi,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// Answered in process by the gateway's built-in `mock/` provider; no network.
    InProcessMock,
}

/// Defaults for one provider prefix.
#[derive(Debug)]
pub struct ProviderSpec {
    /// The `provider/` prefix in `litellm_params.model`.
    pub name: &'static str,
    /// Base URL used when the deployment sets no `api_base` (`None` = `api_base` required).
    pub default_api_base: Option<&'static str>,
    /// Env vars that may hold the base URL, checked in order when `api_base` is unset.
    pub api_base_env: &'static [&'static str],
    /// Env vars that may hold the API key, checked in order when `api_key` is unset.
    pub api_key_env: &'static [&'static str],
    /// Auth header style.
    pub auth: AuthStyle,
    /// Whether calls without any key are allowed (local servers).
    pub key_optional: bool,
    /// Wire dialect.
    pub dialect: WireDialect,
    /// Path appended to an `api_base` that lacks it (e.g. Ollama's OpenAI endpoint is `/v1`).
    pub base_suffix: &'static str,
    /// Top-level request fields the provider rejects; removed before forwarding.
    pub unsupported_fields: &'static [&'static str],
}

const fn openai_compatible(
    name: &'static str,
    base: Option<&'static str>,
    key_env: &'static [&'static str],
    base_env: &'static [&'static str],
) -> ProviderSpec {
    ProviderSpec {
        name,
        default_api_base: base,
        api_base_env: base_env,
        api_key_env: key_env,
        auth: AuthStyle::Bearer,
        key_optional: false,
        dialect: WireDialect::OpenAi,
        base_suffix: "",
        unsupported_fields: &[],
    }
}

/// Every provider Tollgate can call today.
pub static PROVIDERS: &[ProviderSpec] = &[
    openai_compatible(
        "openai",
        Some("https://api.openai.com/v1"),
        &["OPENAI_API_KEY"],
        &["OPENAI_API_BASE", "OPENAI_BASE_URL"],
    ),
    openai_compatible(
        "text-completion-openai",
        Some("https://api.openai.com/v1"),
        &["OPENAI_API_KEY"],
        &["OPENAI_API_BASE", "OPENAI_BASE_URL"],
    ),
    ProviderSpec {
        key_optional: true,
        ..openai_compatible(
            "hosted_vllm",
            None,
            &["HOSTED_VLLM_API_KEY"],
            &["HOSTED_VLLM_API_BASE"],
        )
    },
    openai_compatible(
        "groq",
        Some("https://api.groq.com/openai/v1"),
        &["GROQ_API_KEY"],
        &["GROQ_API_BASE"],
    ),
    openai_compatible(
        "deepseek",
        Some("https://api.deepseek.com/v1"),
        &["DEEPSEEK_API_KEY"],
        &["DEEPSEEK_API_BASE"],
    ),
    openai_compatible(
        "mistral",
        Some("https://api.mistral.ai/v1"),
        &["MISTRAL_API_KEY"],
        &["MISTRAL_API_BASE"],
    ),
    openai_compatible(
        "together_ai",
        Some("https://api.together.xyz/v1"),
        &[
            "TOGETHERAI_API_KEY",
            "TOGETHER_AI_API_KEY",
            "TOGETHER_API_KEY",
        ],
        &["TOGETHERAI_API_BASE"],
    ),
    openai_compatible(
        "fireworks_ai",
        Some("https://api.fireworks.ai/inference/v1"),
        &["FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"],
        &["FIREWORKS_AI_API_BASE"],
    ),
    openai_compatible(
        "xai",
        Some("https://api.x.ai/v1"),
        &["XAI_API_KEY"],
        &["XAI_API_BASE"],
    ),
    openai_compatible(
        "openrouter",
        Some("https://openrouter.ai/api/v1"),
        &["OPENROUTER_API_KEY", "OR_API_KEY"],
        &["OPENROUTER_API_BASE"],
    ),
    ProviderSpec {
        key_optional: true,
        base_suffix: "/v1",
        ..openai_compatible(
            "ollama_chat",
            Some("http://localhost:11434"),
            &["OLLAMA_API_KEY"],
            &["OLLAMA_API_BASE"],
        )
    },
    openai_compatible(
        "perplexity",
        Some("https://api.perplexity.ai"),
        &["PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"],
        &["PERPLEXITY_API_BASE"],
    ),
    openai_compatible(
        "cerebras",
        Some("https://api.cerebras.ai/v1"),
        &["CEREBRAS_API_KEY"],
        &["CEREBRAS_API_BASE"],
    ),
    openai_compatible(
        "deepinfra",
        Some("https://api.deepinfra.com/v1/openai"),
        &["DEEPINFRA_API_KEY"],
        &["DEEPINFRA_API_BASE"],
    ),
    openai_compatible(
        "nvidia_nim",
        Some("https://integrate.api.nvidia.com/v1"),
        &["NVIDIA_NIM_API_KEY"],
        &["NVIDIA_NIM_API_BASE"],
    ),
    openai_compatible(
        "sambanova",
        Some("https://api.sambanova.ai/v1"),
        &["SAMBANOVA_API_KEY"],
        &["SAMBANOVA_API_BASE"],
    ),
    ProviderSpec {
        key_optional: true,
        ..openai_compatible(
            "lm_studio",
            Some("http://localhost:1234/v1"),
            &["LM_STUDIO_API_KEY"],
            &["LM_STUDIO_API_BASE"],
        )
    },
    openai_compatible(
        "litellm_proxy",
        None,
        &["LITELLM_PROXY_API_KEY"],
        &["LITELLM_PROXY_API_BASE"],
    ),
    ProviderSpec {
        name: "anthropic",
        default_api_base: Some("https://api.anthropic.com"),
        api_base_env: &["ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"],
        api_key_env: &["ANTHROPIC_API_KEY"],
        auth: AuthStyle::XApiKey,
        key_optional: false,
        dialect: WireDialect::Anthropic,
        base_suffix: "",
        unsupported_fields: &[],
    },
    ProviderSpec {
        name: "mock",
        default_api_base: None,
        api_base_env: &[],
        api_key_env: &[],
        auth: AuthStyle::Bearer,
        key_optional: true,
        dialect: WireDialect::InProcessMock,
        base_suffix: "",
        unsupported_fields: &[],
    },
];

/// The spec for a `provider/` prefix, if Tollgate can call it.
pub fn provider_spec(name: &str) -> Option<&'static ProviderSpec> {
    PROVIDERS.iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_findable() {
        for (i, p) in PROVIDERS.iter().enumerate() {
            assert!(
                PROVIDERS[i + 1..].iter().all(|q| q.name != p.name),
                "{}",
                p.name
            );
            assert!(std::ptr::eq(provider_spec(p.name).unwrap(), p));
        }
        assert!(provider_spec("nope").is_none());
    }

    #[test]
    fn defaults_match_provider_docs() {
        assert_eq!(
            provider_spec("groq").unwrap().default_api_base,
            Some("https://api.groq.com/openai/v1")
        );
        assert_eq!(provider_spec("hosted_vllm").unwrap().default_api_base, None);
        assert_eq!(provider_spec("ollama_chat").unwrap().base_suffix, "/v1");
        assert_eq!(provider_spec("openai").unwrap().auth, AuthStyle::Bearer);
        let a = provider_spec("anthropic").unwrap();
        assert_eq!(
            (a.auth, a.dialect),
            (AuthStyle::XApiKey, WireDialect::Anthropic)
        );
    }
}
