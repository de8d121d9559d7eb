//! How each OpenAI-compatible server says "the prompt does not fit the model's context
//! window", so that `context_window_fallbacks` (LiteLLM `ContextWindowExceededError`) fires
//! whichever server wrote the 400.
//!
//! Servers agree on the status (400, sometimes 413/422) but not on the words: OpenAI sends a
//! `context_length_exceeded` code, vLLM and SGLang only a message, llama.cpp an error `type`,
//! TGI a plain string. [`CONTEXT_WINDOW_WORDINGS`] keeps every wording in one table; a row's
//! `phrase` is matched, ASCII case-insensitively, against the error's `code` (or `type`) and
//! its `message`. LiteLLM keeps the same kind of list in
//! `ExceptionCheckers.is_error_str_context_window_exceeded` (`exception_mapping_utils.py`).

/// One way a provider words a context-window error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextWindowWording {
    /// The server or provider that writes it.
    pub provider: &'static str,
    /// What is matched: lower case, searched for in the lower-cased code and message.
    pub phrase: &'static str,
    /// A real error carrying the phrase, as the provider writes it, and where it was seen.
    pub example: &'static str,
    /// Where `example` comes from.
    pub source: &'static str,
}

/// Every known wording of a context-window error, one row per provider's phrase.
pub const CONTEXT_WINDOW_WORDINGS: &[ContextWindowWording] = &[
    ContextWindowWording {
        provider: "OpenAI (and Azure OpenAI, Groq: the error code)",
        phrase: "context_length_exceeded",
        example: "context_length_exceeded",
        source: "OpenAI error code (with type invalid_request_error), quoted in anomalyco/opencode#6071",
    },
    ContextWindowWording {
        provider: "OpenAI (Responses API and newer models)",
        phrase: "exceeds the context window",
        example: "Your input exceeds the context window of this model. Please adjust your input and try again.",
        source: "OpenAI error quoted in dyad-sh/dyad#1672",
    },
    ContextWindowWording {
        provider: "Azure OpenAI, vLLM (V0 engine), OpenAI's older message",
        phrase: "maximum context length",
        example: "This model's maximum context length is 4096 tokens. However, you requested 4201 tokens (3177 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
        source: "Azure OpenAI 400 quoted in Azure-Samples/azure-search-openai-demo#1199; vLLM's in vllm-project/vllm#20409",
    },
    ContextWindowWording {
        provider: "vLLM (V1 engine)",
        phrase: "longer than the maximum model length",
        example: "The decoder prompt (length 10127) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
        source: "vLLM 400 quoted in Gabesarch/grounded-rl#16",
    },
    ContextWindowWording {
        provider: "vLLM (multimodal prompt check)",
        phrase: "too long to fit into the model",
        example: "The prompt (total length 25938) is too long to fit into the model (context length 4096). Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
        source: "vLLM error quoted in vllm-project/vllm#12165",
    },
    ContextWindowWording {
        provider: "SGLang",
        phrase: "longer than the model's context length",
        example: "The input (61709 tokens) is longer than the model's context length (40960 tokens).",
        source: "SGLang 400 quoted in QwenLM/Qwen3#1321; LiteLLM's list has the same phrase",
    },
    ContextWindowWording {
        provider: "Hugging Face TGI",
        phrase: "`inputs` tokens + `max_new_tokens` must be",
        example: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1244 `inputs` tokens and 1000 `max_new_tokens`",
        source: "TGI validation error quoted in huggingface/text-generation-inference#628; in LiteLLM's list",
    },
    ContextWindowWording {
        provider: "Hugging Face TGI (input alone too long)",
        phrase: "`inputs` must have less than",
        example: "Input validation error: `inputs` must have less than 1024 tokens. Given: 1168",
        source: "TGI validation error quoted in huggingface/text-generation-inference#695",
    },
    ContextWindowWording {
        provider: "Ollama (embeddings and truncate: false)",
        phrase: "exceeds the context length",
        example: "the input length exceeds the context length",
        source: "Ollama 400 quoted in nano-step/nano-brain#208",
    },
    ContextWindowWording {
        provider: "Ollama (runner)",
        phrase: "exceeded max context length",
        example: "prompt too long; exceeded max context length by 4096 tokens",
        source: "Ollama's message as listed in the context-overflow tables of other open-source gateways",
    },
    ContextWindowWording {
        provider: "llama.cpp server",
        phrase: "exceeds the available context size",
        example: "the request exceeds the available context size. try increasing the context size or enable context shift",
        source: "llama.cpp 400 (type exceed_context_size_error) quoted in oobabooga/textgen#7257; in LiteLLM's list",
    },
    ContextWindowWording {
        provider: "llama.cpp server (error type)",
        phrase: "exceed_context_size_error",
        example: "exceed_context_size_error",
        source: "llama.cpp server error type, ggml-org/llama.cpp#15780",
    },
    ContextWindowWording {
        provider: "llama-cpp-python",
        phrase: "exceed context window",
        example: "Requested tokens (2285) exceed context window of 2048",
        source: "llama-cpp-python server error quoted in fedora-copr/logdetective-website#193",
    },
    ContextWindowWording {
        provider: "Mistral",
        phrase: "too large for model with",
        example: "Prompt contains 300000 tokens, too large for model with 131072 maximum context length",
        source: "Mistral 400 (docs.mistral.ai, known limitations), as listed by other gateways",
    },
    ContextWindowWording {
        provider: "Groq (message; the code is context_length_exceeded)",
        phrase: "please reduce the length of the messages or completion",
        example: "Please reduce the length of the messages or completion.",
        source: "Groq 400 quoted in thepersonalaicompany/amurex-backend#51",
    },
    ContextWindowWording {
        provider: "Anthropic",
        phrase: "prompt is too long",
        example: "prompt is too long: 208656 tokens > 200000 maximum",
        source: "Anthropic 400 invalid_request_error quoted in sojohnnysaid/project-guide#2",
    },
    ContextWindowWording {
        provider: "AWS Bedrock",
        phrase: "input is too long",
        example: "Input is too long for requested model.",
        source: "Bedrock ValidationException, AWS re:Post knowledge center (bedrock-validation-exception-errors)",
    },
];

/// The row whose phrase occurs in `code` or `message` (ASCII case-insensitive), if any.
/// Allocates two lower-cased copies: called only for upstream errors.
pub fn context_window_wording(
    code: Option<&str>,
    message: &str,
) -> Option<&'static ContextWindowWording> {
    let code = code.unwrap_or("").to_ascii_lowercase();
    let message = message.to_ascii_lowercase();
    CONTEXT_WINDOW_WORDINGS
        .iter()
        .find(|w| code.contains(w.phrase) || message.contains(w.phrase))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FailureClass;

    /// The row that `example` is (code, message), as the provider sends them.
    fn classify(code: Option<&str>, message: &str) -> FailureClass {
        FailureClass::from_upstream(400, code, message)
    }

    fn row(provider_prefix: &str) -> &'static ContextWindowWording {
        CONTEXT_WINDOW_WORDINGS
            .iter()
            .find(|w| w.provider.starts_with(provider_prefix))
            .unwrap_or_else(|| panic!("no row for {provider_prefix}"))
    }

    fn assert_row(provider_prefix: &str, code: Option<&str>, message: &str) {
        let w = row(provider_prefix);
        assert!(
            w.example.to_ascii_lowercase().contains(w.phrase),
            "{}: the example carries the phrase",
            w.provider
        );
        assert_eq!(
            classify(code, message),
            FailureClass::ContextWindowExceeded,
            "{}: {message}",
            w.provider
        );
        let hay = format!("{} {}", code.unwrap_or(""), message).to_ascii_lowercase();
        assert!(hay.contains(w.phrase), "{}: {message}", w.provider);
    }

    #[test]
    fn openai_code() {
        assert_row(
            "OpenAI (and Azure",
            Some("context_length_exceeded"),
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
        );
        // The code alone decides, whatever the message.
        assert_eq!(
            classify(Some("context_length_exceeded"), "x"),
            FailureClass::ContextWindowExceeded
        );
    }

    #[test]
    fn openai_responses_message() {
        assert_row("OpenAI (Responses", None, row("OpenAI (Responses").example);
    }

    #[test]
    fn azure_openai() {
        assert_row(
            "Azure OpenAI",
            Some("invalid_request_error"),
            row("Azure OpenAI").example,
        );
    }

    #[test]
    fn vllm_v0() {
        // vLLM's body is {"object":"error","message":...,"type":"BadRequestError","code":400}:
        // the numeric code is not a string, so the type is what the gateway passes as code.
        assert_row(
            "Azure OpenAI, vLLM",
            Some("BadRequestError"),
            "This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.",
        );
    }

    #[test]
    fn vllm_v1() {
        assert_row("vLLM (V1", Some("BadRequestError"), row("vLLM (V1").example);
    }

    #[test]
    fn vllm_multimodal() {
        assert_row(
            "vLLM (multi",
            Some("BadRequestError"),
            row("vLLM (multi").example,
        );
    }

    #[test]
    fn sglang() {
        assert_row("SGLang", Some("BadRequestError"), row("SGLang").example);
    }

    #[test]
    fn tgi_total() {
        assert_row("Hugging Face TGI", None, row("Hugging Face TGI").example);
    }

    #[test]
    fn tgi_inputs() {
        assert_row(
            "Hugging Face TGI (input",
            None,
            row("Hugging Face TGI (input").example,
        );
    }

    #[test]
    fn ollama_embeddings() {
        assert_row(
            "Ollama (embeddings",
            None,
            row("Ollama (embeddings").example,
        );
    }

    #[test]
    fn ollama_runner() {
        assert_row("Ollama (runner", None, row("Ollama (runner").example);
    }

    #[test]
    fn llama_cpp_message() {
        assert_row(
            "llama.cpp server",
            Some("exceed_context_size_error"),
            row("llama.cpp server").example,
        );
    }

    #[test]
    fn llama_cpp_type() {
        // The type alone (a message in another language, or none) decides.
        assert_row(
            "llama.cpp server (error",
            Some("exceed_context_size_error"),
            "",
        );
    }

    #[test]
    fn llama_cpp_python() {
        assert_row("llama-cpp-python", None, row("llama-cpp-python").example);
    }

    #[test]
    fn mistral() {
        assert_row(
            "Mistral",
            Some("invalid_request_error"),
            row("Mistral").example,
        );
    }

    #[test]
    fn groq() {
        assert_row("Groq", Some("context_length_exceeded"), row("Groq").example);
        // Without its code the message alone still decides.
        assert_eq!(
            classify(Some("invalid_request_error"), row("Groq").example),
            FailureClass::ContextWindowExceeded
        );
    }

    #[test]
    fn anthropic() {
        assert_row(
            "Anthropic",
            Some("invalid_request_error"),
            row("Anthropic").example,
        );
    }

    #[test]
    fn bedrock() {
        assert_row(
            "AWS Bedrock",
            Some("ValidationException"),
            row("AWS Bedrock").example,
        );
    }

    #[test]
    fn matching_ignores_ascii_case() {
        assert_eq!(
            classify(None, "PROMPT IS TOO LONG: 5 tokens > 4 maximum"),
            FailureClass::ContextWindowExceeded
        );
        assert_eq!(
            classify(Some("Context_Length_Exceeded"), ""),
            FailureClass::ContextWindowExceeded
        );
    }

    #[test]
    fn every_row_has_a_lower_case_phrase_and_a_source() {
        for w in CONTEXT_WINDOW_WORDINGS {
            assert_eq!(w.phrase, w.phrase.to_ascii_lowercase(), "{}", w.provider);
            assert!(
                !w.phrase.is_empty() && !w.source.is_empty(),
                "{}",
                w.provider
            );
            assert!(
                w.example.to_ascii_lowercase().contains(w.phrase),
                "{}",
                w.provider
            );
        }
    }

    /// Other 400s, including ones about lengths that are not the context window, are not
    /// context-window errors (LiteLLM excludes the `user` length error the same way).
    #[test]
    fn unrelated_400s_do_not_match() {
        for (code, message) in [
            (
                Some("invalid_request_error"),
                "Invalid value for 'temperature': expected a value <= 2, but got 3 instead.",
            ),
            (
                Some("string_above_max_length"),
                "Invalid 'user': string too long. Expected a string with maximum length 64, but got a string with length 80 instead.",
            ),
            (
                Some("invalid_value"),
                "max_tokens is too large: 50000. This model supports at most 16384 completion tokens, whereas you provided 50000.",
            ),
            (
                Some("BadRequestError"),
                "[{'type': 'missing', 'loc': ('body', 'messages')}]",
            ),
            (
                None,
                "Input validation error: `temperature` must be strictly positive",
            ),
            (None, ""),
        ] {
            assert_eq!(context_window_wording(code, message), None, "{message}");
            assert_eq!(
                classify(code, message),
                FailureClass::BadRequest,
                "{message}"
            );
        }
    }
}
