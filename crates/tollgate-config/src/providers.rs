//! Provider names: the ones Tollgate serves, and the rest of LiteLLM's.

/// Provider prefixes Tollgate serves (`litellm_params.model: "<provider>/<id>"`): exactly the
/// names of tollgate-providers' provider table (a test in tollgate-server keeps the two equal),
/// plus `mock` (Tollgate's built-in test upstream). README "Providers today" lists them for
/// users.
pub const KNOWN_PROVIDERS: &[&str] = &[
    "openai",
    "text-completion-openai",
    "anthropic",
    "groq",
    "mistral",
    "ollama_chat",
    "hosted_vllm",
    "openrouter",
    "deepseek",
    "together_ai",
    "fireworks_ai",
    "xai",
    "perplexity",
    "cerebras",
    "deepinfra",
    "nvidia_nim",
    "lm_studio",
    "sambanova",
    "litellm_proxy",
    "mock",
];

/// Providers that have no default `api_base` (litellm-surface.md §2).
pub const PROVIDERS_REQUIRING_API_BASE: &[&str] = &["hosted_vllm"];

/// LiteLLM provider names (enum `LlmProviders` in `litellm/types/utils.py`, litellm 1.108.7)
/// that Tollgate does not serve yet. A config using one loads (LiteLLM's own configs load
/// unchanged), and lists each such deployment in [`crate::LoadedConfig::unserved`], which the
/// gateway refuses to serve; a name in neither list is an error (most likely a typo).
pub const LITELLM_PROVIDERS_NOT_SERVED: &[&str] = &[
    "azure",
    "azure_ai",
    "bedrock",
    "vertex_ai",
    "gemini",
    "cohere",
    "ollama",
    "databricks",
    "huggingface",
    "chatgpt",
    "openai_like",
    "jina_ai",
    "zai",
    "custom_openai",
    "cohere_chat",
    "clarifai",
    "anthropic_text",
    "bytez",
    "replicate",
    "reducto",
    "aws_textract",
    "runwayml",
    "aws_polly",
    "transcribe",
    "datarobot",
    "vertex_ai_beta",
    "ai21",
    "baseten",
    "black_forest_labs",
    "azure_text",
    "sagemaker",
    "sagemaker_chat",
    "sagemaker_nova",
    "vllm",
    "nlp_cloud",
    "petals",
    "oobabooga",
    "typesafe",
    "strands_decider",
    "laya",
    "bespoke",
    "milvus",
    "a2a",
    "gigachat",
    "nvidia_riva",
    "soniox",
    "nadir",
    "ai21_chat",
    "volcengine",
    "codestral",
    "text-completion-codestral",
    "dashscope",
    "qwencloud",
    "qwen_ai_platform",
    "modelscope",
    "moonshot",
    "publicai",
    "v0",
    "morph",
    "lambda_ai",
    "inception",
    "text-completion-inception",
    "maritalk",
    "voyage",
    "cloudflare",
    "xinference",
    "friendliai",
    "featherless_ai",
    "watsonx",
    "scaledown",
    "watsonx_text",
    "triton",
    "predibase",
    "databricks_agent",
    "empower",
    "github",
    "ragflow",
    "compactifai",
    "docker_model_runner",
    "custom",
    "tencent",
    "llamafile",
    "galadriel",
    "nebius",
    "infinity",
    "deepgram",
    "elevenlabs",
    "novita",
    "aiohttp_openai",
    "langfuse",
    "humanloop",
    "topaz",
    "sap",
    "assemblyai",
    "azure_speech",
    "charity_engine",
    "github_copilot",
    "snowflake",
    "gradient_ai",
    "meta_llama",
    "nscale",
    "pg_vector",
    "s3_vectors",
    "valkey",
    "mongodb",
    "helicone",
    "hyperbolic",
    "recraft",
    "fal_ai",
    "stability",
    "heroku",
    "aiml",
    "cometapi",
    "oci",
    "auto_router",
    "vercel_ai_gateway",
    "edenai",
    "dotprompt",
    "manus",
    "wandb",
    "ovhcloud",
    "scaleway",
    "lemonade",
    "amazon_nova",
    "a2a_agent",
    "langgraph",
    "langflow",
    "microsoft_365_copilot",
    "minimax",
    "synthetic",
    "apertis",
    "nano-gpt",
    "poe",
    "chutes",
    "neosantara",
    "parasail",
    "xiaomi_mimo",
    "tensormesh",
    "libertai",
    "pinstripes",
    "cognition",
    "coralbricks",
    "cortecs",
    "scx-ai",
    "prism",
    "inferenceapis",
    "darkbloom",
    "meta",
    "sail",
    "reka",
    "litellm_agent",
    "cursor",
    "bedrock_mantle",
    "gdc",
];

/// How Tollgate treats a provider name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderSupport {
    /// In [`KNOWN_PROVIDERS`].
    Served,
    /// `"*"`: the client's `provider/model` picks the provider per request.
    Wildcard,
    /// In [`LITELLM_PROVIDERS_NOT_SERVED`]: valid for LiteLLM, not served by Tollgate yet.
    LitellmOnly,
    /// Neither.
    Unknown,
}

/// Classifies a provider name (as returned by [`crate::LitellmParams::provider`]).
pub fn provider_support(provider: &str) -> ProviderSupport {
    if provider == "*" {
        ProviderSupport::Wildcard
    } else if KNOWN_PROVIDERS.contains(&provider) {
        ProviderSupport::Served
    } else if LITELLM_PROVIDERS_NOT_SERVED.contains(&provider) {
        ProviderSupport::LitellmOnly
    } else {
        ProviderSupport::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert_eq!(provider_support("anthropic"), ProviderSupport::Served);
        assert_eq!(provider_support("mock"), ProviderSupport::Served);
        assert_eq!(provider_support("sagemaker"), ProviderSupport::LitellmOnly);
        assert_eq!(
            provider_support("cohere_chat"),
            ProviderSupport::LitellmOnly
        );
        assert_eq!(provider_support("*"), ProviderSupport::Wildcard);
        assert_eq!(provider_support("opnai"), ProviderSupport::Unknown);
        for p in KNOWN_PROVIDERS {
            assert!(
                !LITELLM_PROVIDERS_NOT_SERVED.contains(p),
                "{p} in both lists"
            );
        }
    }
}
