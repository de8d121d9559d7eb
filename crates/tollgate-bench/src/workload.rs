//! Scenarios and the request bodies they send.
//!
//! Every body is built once before a run and shared (`Bytes` clones are
//! reference counts), so the driver's own cost per request stays constant.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The harness's scenarios, selectable by name on the command line and in
/// gateway capability lists (kebab-case: `forwarding`, `governed`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Short OpenAI chat body on `/v1/chat/completions`, no governance.
    Forwarding,
    /// Same body sent with a virtual key that has a budget and TPM/RPM limits.
    Governed,
    /// Streaming chat completion: time to first token and inter-event gaps.
    Streaming,
    /// Anthropic Messages body on `/v1/messages`.
    Anthropic,
    /// 50K/75K/100K-token prompts in equal shares (~4 characters per token).
    LargePrompts,
    /// 30-turn agent loop whose conversation grows every turn.
    Agentic,
    /// LiteLLM's published high-throughput profile: 50K/75K/100K-token prompts in equal
    /// shares, every other one streamed (with a usage chunk), `max_tokens: 16`, sent with a
    /// virtual key that has a budget (so admission counts the prompt's tokens and reserves).
    HighThroughput,
}

impl Scenario {
    /// All scenarios in report order.
    pub const ALL: [Scenario; 7] = [
        Scenario::Forwarding,
        Scenario::Governed,
        Scenario::Streaming,
        Scenario::Anthropic,
        Scenario::LargePrompts,
        Scenario::Agentic,
        Scenario::HighThroughput,
    ];

    /// Whether the scenario is sent with a virtual key made by the gateway definition's
    /// `[governed]` section.
    pub fn governed(self) -> bool {
        matches!(self, Scenario::Governed | Scenario::HighThroughput)
    }

    /// The kebab-case name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Forwarding => "forwarding",
            Scenario::Governed => "governed",
            Scenario::Streaming => "streaming",
            Scenario::Anthropic => "anthropic",
            Scenario::LargePrompts => "large-prompts",
            Scenario::Agentic => "agentic",
            Scenario::HighThroughput => "high-throughput",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
                format!(
                    "unknown scenario {s:?} (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Number of turns in one agentic session.
pub const AGENTIC_TURNS: usize = 30;
/// Prompt sizes of the large-prompts scenario, in tokens, sent in equal shares.
pub const LARGE_PROMPT_TOKENS: [u64; 3] = [50_000, 75_000, 100_000];
/// Characters per token assumed for synthetic text (OpenAI's rule of thumb for English).
pub const CHARS_PER_TOKEN: u64 = 4;

/// One prepared HTTP request; `headers` excludes `Host`, which the driver adds.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// HTTP method.
    pub method: Method,
    /// Path appended to the endpoint prefix, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers sent with every request (auth, content type, API version).
    pub headers: HeaderMap,
    /// Request body.
    pub body: Bytes,
    /// Estimated prompt size in tokens (characters / [`CHARS_PER_TOKEN`]).
    pub prompt_tokens: u64,
    /// Whether the response is an SSE stream to time event by event.
    pub stream: bool,
}

/// What one worker operation is.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Each operation is one request; the worker cycles through the templates
    /// (several for large prompts, to send the sizes, and streamed or not, in equal shares).
    Single {
        /// Templates sent in rotation.
        templates: Arc<Vec<RequestTemplate>>,
    },
    /// Each operation is a session: the turns are sent in order on one connection.
    Session {
        /// One template per turn; turn `k` carries the whole conversation so far.
        turns: Arc<Vec<RequestTemplate>>,
    },
}

/// Where requests go and how they authenticate.
#[derive(Debug, Clone)]
pub struct RequestStyle {
    /// Headers for every request (e.g. `authorization: Bearer ...`).
    pub headers: Vec<(String, String)>,
    /// Model name for OpenAI-format bodies.
    pub openai_model: String,
    /// Model name for Anthropic-format bodies.
    pub anthropic_model: String,
}

/// Builds the workload of a scenario. `Governed` uses the forwarding body;
/// for governed scenarios ([`Scenario::governed`]) the caller supplies the virtual key in
/// `style.headers`.
///
/// Errors: a header name or value that is not valid HTTP.
pub fn build(scenario: Scenario, style: &RequestStyle) -> Result<Workload, String> {
    let mut headers = HeaderMap::new();
    for (k, v) in &style.headers {
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k}: {e}"))?;
        let value = HeaderValue::from_str(v).map_err(|e| format!("header {k}: {e}"))?;
        headers.insert(name, value);
    }
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let chat = |body: serde_json::Value, tokens: u64| RequestTemplate {
        method: Method::POST,
        path: "/v1/chat/completions".into(),
        headers: headers.clone(),
        stream: body["stream"] == true,
        body: Bytes::from(body.to_string()),
        prompt_tokens: tokens,
    };
    let short = "Summarise the benefits of keep-alive connections in one sentence.";
    let short_tokens = estimate_tokens(short);
    Ok(match scenario {
        Scenario::Forwarding | Scenario::Governed => Workload::Single {
            templates: Arc::new(vec![chat(
                json!({"model": style.openai_model, "max_tokens": 32,
                       "messages": [{"role": "user", "content": short}]}),
                short_tokens,
            )]),
        },
        Scenario::Streaming => Workload::Single {
            templates: Arc::new(vec![chat(
                json!({"model": style.openai_model, "max_tokens": 64, "stream": true,
                       "stream_options": {"include_usage": true},
                       "messages": [{"role": "user", "content": short}]}),
                short_tokens,
            )]),
        },
        Scenario::Anthropic => {
            let mut h = headers.clone();
            h.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static("2023-06-01"),
            );
            Workload::Single {
                templates: Arc::new(vec![RequestTemplate {
                    method: Method::POST,
                    path: "/v1/messages".into(),
                    headers: h,
                    body: Bytes::from(
                        json!({"model": style.anthropic_model, "max_tokens": 32,
                               "messages": [{"role": "user", "content": short}]})
                        .to_string(),
                    ),
                    prompt_tokens: short_tokens,
                    stream: false,
                }]),
            }
        }
        Scenario::LargePrompts => Workload::Single {
            templates: Arc::new(
                LARGE_PROMPT_TOKENS
                    .iter()
                    .map(|&tokens| {
                        let text = synthetic_text(tokens);
                        chat(
                            json!({"model": style.openai_model, "max_tokens": 16,
                                   "messages": [{"role": "user", "content": text}]}),
                            tokens,
                        )
                    })
                    .collect(),
            ),
        },
        Scenario::HighThroughput => Workload::Single {
            templates: Arc::new(
                [false, true]
                    .into_iter()
                    .flat_map(|stream| LARGE_PROMPT_TOKENS.map(|tokens| (tokens, stream)))
                    .map(|(tokens, stream)| {
                        let mut body = json!({"model": style.openai_model, "max_tokens": 16,
                            "messages": [{"role": "user", "content": synthetic_text(tokens)}]});
                        if stream {
                            body["stream"] = json!(true);
                            body["stream_options"] = json!({"include_usage": true});
                        }
                        chat(body, tokens)
                    })
                    .collect(),
            ),
        },
        Scenario::Agentic => Workload::Session {
            turns: Arc::new(
                agentic_conversations(AGENTIC_TURNS)
                    .into_iter()
                    .map(|messages| {
                        let tokens = messages
                            .iter()
                            .map(|m| estimate_tokens(m["content"].as_str().unwrap_or("")))
                            .sum();
                        chat(
                            json!({"model": style.openai_model, "max_tokens": 64,
                                   "messages": messages}),
                            tokens,
                        )
                    })
                    .collect(),
            ),
        },
    })
}

/// Token estimate of a text: characters / [`CHARS_PER_TOKEN`], rounded up.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(CHARS_PER_TOKEN)
}

/// Deterministic English-like text of exactly `tokens * 4` characters made of
/// three-letter words and spaces (each `" xyz"` is one BPE token in cl100k).
pub fn synthetic_text(tokens: u64) -> String {
    const WORDS: [&str; 16] = [
        "the", "cat", "sat", "map", "run", "sun", "ice", "key", "box", "net", "pay", "log", "row",
        "fan", "gem", "oak",
    ];
    let len = (tokens * CHARS_PER_TOKEN) as usize;
    let mut s = String::with_capacity(len + 4);
    let mut i = 0usize;
    while s.len() < len {
        s.push_str(WORDS[(i * 7 + i / 16) % WORDS.len()]);
        s.push(' ');
        i += 1;
    }
    s.truncate(len);
    s
}

/// The message lists of an agent loop: entry `k` (0-based) holds a system
/// prompt, `k` earlier user/assistant exchanges (tool output ~200 tokens,
/// assistant reply ~50 tokens) and the new user turn.
pub fn agentic_conversations(turns: usize) -> Vec<Vec<serde_json::Value>> {
    let system = json!({"role": "system",
        "content": "You are a coding agent. Use the tool output to decide the next step."});
    let mut history = vec![system];
    let mut out = Vec::with_capacity(turns);
    for k in 0..turns {
        let user = json!({"role": "user",
            "content": format!("Step {k} tool output: {}", synthetic_text(200))});
        history.push(user);
        out.push(history.clone());
        history.push(json!({"role": "assistant",
            "content": format!("Step {k}: {}", synthetic_text(50))}));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn style() -> RequestStyle {
        RequestStyle {
            headers: vec![("authorization".into(), "Bearer sk-test".into())],
            openai_model: "bench-gpt".into(),
            anthropic_model: "bench-claude".into(),
        }
    }

    #[test]
    fn scenario_names_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(s.name().parse::<Scenario>().unwrap(), s);
        }
        assert!("nope".parse::<Scenario>().is_err());
    }

    #[test]
    fn synthetic_text_has_four_chars_per_token() {
        let t = synthetic_text(50_000);
        assert_eq!(t.len(), 200_000);
        assert_eq!(estimate_tokens(&t), 50_000);
    }

    #[test]
    fn large_prompts_rotate_three_sizes() {
        let Workload::Single { templates } = build(Scenario::LargePrompts, &style()).unwrap()
        else {
            panic!("single expected")
        };
        assert!(templates.iter().all(|t| !t.stream));
        let tokens: Vec<u64> = templates.iter().map(|t| t.prompt_tokens).collect();
        assert_eq!(tokens, vec![50_000, 75_000, 100_000]);
        let body: serde_json::Value = serde_json::from_slice(&templates[2].body).unwrap();
        assert_eq!(
            body["messages"][0]["content"].as_str().unwrap().len(),
            400_000
        );
        assert_eq!(body["model"], "bench-gpt");
    }

    #[test]
    fn high_throughput_sends_three_sizes_streamed_and_not_in_equal_shares() {
        let Workload::Single { templates } = build(Scenario::HighThroughput, &style()).unwrap()
        else {
            panic!("single expected")
        };
        let shape: Vec<(u64, bool)> = templates
            .iter()
            .map(|t| (t.prompt_tokens, t.stream))
            .collect();
        assert_eq!(
            shape,
            vec![
                (50_000, false),
                (75_000, false),
                (100_000, false),
                (50_000, true),
                (75_000, true),
                (100_000, true)
            ]
        );
        for t in templates.iter() {
            let body: serde_json::Value = serde_json::from_slice(&t.body).unwrap();
            assert_eq!(body["max_tokens"], 16);
            let content = body["messages"][0]["content"].as_str().unwrap();
            assert_eq!(estimate_tokens(content), t.prompt_tokens);
            assert_eq!(body["stream"] == true, t.stream);
            assert_eq!(body["stream_options"]["include_usage"] == true, t.stream);
        }
        assert!(Scenario::HighThroughput.governed() && Scenario::Governed.governed());
        assert!(!Scenario::LargePrompts.governed());
    }

    #[test]
    fn agentic_conversation_grows_each_turn() {
        let Workload::Session { turns } = build(Scenario::Agentic, &style()).unwrap() else {
            panic!("session expected")
        };
        assert_eq!(turns.len(), AGENTIC_TURNS);
        for (k, t) in turns.iter().enumerate() {
            let body: serde_json::Value = serde_json::from_slice(&t.body).unwrap();
            // system + k exchanges (2 messages each) + the new user turn
            assert_eq!(body["messages"].as_array().unwrap().len(), 2 + 2 * k);
        }
        assert!(turns[29].prompt_tokens > turns[0].prompt_tokens * 20);
    }

    #[test]
    fn anthropic_goes_to_messages_with_version() {
        let Workload::Single { templates, .. } = build(Scenario::Anthropic, &style()).unwrap()
        else {
            panic!()
        };
        let t = &templates[0];
        assert_eq!(t.path, "/v1/messages");
        assert_eq!(t.headers["anthropic-version"], "2023-06-01");
        assert_eq!(t.headers["authorization"], "Bearer sk-test");
        let body: serde_json::Value = serde_json::from_slice(&t.body).unwrap();
        assert_eq!(body["model"], "bench-claude");
    }

    #[test]
    fn streaming_asks_for_usage() {
        let Workload::Single { templates } = build(Scenario::Streaming, &style()).unwrap() else {
            panic!()
        };
        assert!(templates[0].stream);
        let body: serde_json::Value = serde_json::from_slice(&templates[0].body).unwrap();
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
    }
}
