//! What admission reads from a request besides its identity: the end user, the tags, the
//! prompt's token count and the output bound.

use http::{HeaderMap, HeaderName};
use serde_json::Value;
use tollgate_governance::tokens::{self, Encoding};

use crate::request::{Endpoint, ParsedRequest};

/// The end user id, in LiteLLM's order (litellm-surface §4.6, `get_end_user_id_from_request_body`
/// in LiteLLM's `proxy/auth/auth_utils.py`): headers `x-litellm-customer-id` /
/// `x-litellm-end-user-id`, then the `general_settings.user_header_name` header (`custom`),
/// then the body's `user`, `litellm_metadata.user`, `metadata.user_id` (Anthropic's own field
/// on `/v1/messages`), `safety_identifier`. `litellm_metadata` and `metadata` are read as an
/// object or as a JSON string holding one; a numeric id reads as its digits. Empty values are
/// skipped.
pub fn end_user(
    headers: &HeaderMap,
    req: &ParsedRequest<'_>,
    custom: Option<&HeaderName>,
) -> Option<String> {
    let standard = ["x-litellm-customer-id", "x-litellm-end-user-id"];
    for h in standard.into_iter().chain(custom.map(HeaderName::as_str)) {
        if let Some(v) = headers.get(h).and_then(|v| v.to_str().ok()) {
            let v = v.trim();
            if !v.is_empty() {
                return Some(v.to_owned());
            }
        }
    }
    let s = |field: &'static str| {
        req.body
            .typed_field::<String>(field, "a string")
            .ok()
            .flatten()
    };
    // `metadata` / `litellm_metadata` may come as an object or as a JSON string holding one
    // (multipart forms, `extra_body`); LiteLLM reads both, so a string cannot hide the end user
    let nested = |field: &'static str, key: &str| {
        let v = req.body.typed_field::<Value>(field, "an object").ok()??;
        let parsed;
        let object = match &v {
            Value::String(text) => {
                parsed = serde_json::from_str::<Value>(text).ok()?;
                &parsed
            }
            v => v,
        };
        match object.get(key)? {
            Value::String(s) => Some(s.clone()),
            n @ Value::Number(_) => Some(n.to_string()),
            _ => None,
        }
    };
    s("user")
        .or_else(|| nested("litellm_metadata", "user"))
        .or_else(|| nested("metadata", "user_id"))
        .or_else(|| s("safety_identifier"))
        .filter(|u| !u.is_empty())
}

/// Request tags: body `tags`, else `metadata.tags`, plus header `x-litellm-tags`
/// (comma-separated). Duplicates removed, order kept.
pub fn tags(headers: &HeaderMap, req: &ParsedRequest<'_>) -> Vec<String> {
    let mut out: Vec<String> = req
        .body
        .typed_field::<Vec<String>>("tags", "a list of strings")
        .ok()
        .flatten()
        .or_else(|| {
            req.body
                .typed_field::<Value>("metadata", "an object")
                .ok()
                .flatten()
                .and_then(|m| {
                    m.get("tags").and_then(Value::as_array).map(|a| {
                        a.iter()
                            .filter_map(|t| t.as_str().map(str::to_owned))
                            .collect()
                    })
                })
        })
        .unwrap_or_default();
    if let Some(h) = headers.get("x-litellm-tags").and_then(|v| v.to_str().ok()) {
        out.extend(
            h.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
        );
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|t| seen.insert(t.clone()));
    out
}

/// Prompt tokens for admission, counted with the model's BPE when it has one (OpenAI family)
/// and bytes/4 otherwise ([`tokens::Encoding::for_model`]): chat `messages` + `tools`,
/// Anthropic `system` + `messages` + `tools`, Responses `instructions` + `input`, completions
/// `prompt`, embeddings `input`.
pub fn prompt_tokens(req: &ParsedRequest<'_>, endpoint: Endpoint, upstream_model: &str) -> u64 {
    let enc = Encoding::for_model(upstream_model);
    let field = |name: &str| -> Value {
        req.body
            .get(name)
            .and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or(Value::Null)
    };
    let mut buf = String::new();
    match endpoint {
        Endpoint::ChatCompletions | Endpoint::Messages | Endpoint::CountTokens => {
            let mut n = tokens::count_chat_messages(enc, &field("messages"))
                + tokens::count_tools(enc, &field("tools"));
            if endpoint != Endpoint::ChatCompletions {
                n += tokens::count_content(enc, &field("system"), &mut buf);
            }
            n
        }
        Endpoint::Responses => {
            let input = field("input");
            let n = if input.is_array() {
                tokens::count_chat_messages(enc, &input)
            } else {
                tokens::count_content(enc, &input, &mut buf)
            };
            n + tokens::count_content(enc, &field("instructions"), &mut buf)
                + tokens::count_tools(enc, &field("tools"))
        }
        Endpoint::Completions => tokens::count_content(enc, &field("prompt"), &mut buf),
        Endpoint::Embeddings => tokens::count_content(enc, &field("input"), &mut buf),
    }
}

/// The output bound the client set: `max_completion_tokens`, `max_tokens`,
/// `max_output_tokens` (Responses); embeddings produce no output tokens (`Some(0)`).
pub fn max_output_tokens(req: &ParsedRequest<'_>, endpoint: Endpoint) -> Option<u64> {
    if endpoint == Endpoint::Embeddings {
        return Some(0);
    }
    ["max_completion_tokens", "max_tokens", "max_output_tokens"]
        .iter()
        .find_map(|f| req.body.typed_field::<u64>(f, "an integer").ok().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &'static str, e: Endpoint) -> ParsedRequest<'static> {
        ParsedRequest::parse(body.as_bytes(), e).unwrap()
    }

    #[test]
    fn end_user_order_and_tags() {
        let r = parse(
            r#"{"model":"m","messages":[{"role":"user","content":"x"}],"user":"body-user","metadata":{"tags":["a","b"]},"tags":["x"]}"#,
            Endpoint::ChatCompletions,
        );
        let mut h = HeaderMap::new();
        assert_eq!(end_user(&h, &r, None).as_deref(), Some("body-user"));
        h.insert("x-litellm-end-user-id", "hdr".parse().unwrap());
        assert_eq!(end_user(&h, &r, None).as_deref(), Some("hdr"));
        h.insert("x-litellm-tags", "y, x".parse().unwrap());
        assert_eq!(tags(&h, &r), vec!["x", "y"]);
        let r = parse(
            r#"{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"tags":["a"],"user_id":"u"}}"#,
            Endpoint::ChatCompletions,
        );
        assert_eq!(tags(&HeaderMap::new(), &r), vec!["a"]);
        assert_eq!(end_user(&HeaderMap::new(), &r, None).as_deref(), Some("u"));
        // The configured header: after the standard ones, before the body.
        let custom = HeaderName::from_static("x-openwebui-user-id");
        let mut h = HeaderMap::new();
        h.insert("x-openwebui-user-id", "webui-7".parse().unwrap());
        assert_eq!(end_user(&h, &r, Some(&custom)).as_deref(), Some("webui-7"));
        assert_eq!(end_user(&h, &r, None).as_deref(), Some("u"));
        h.insert("x-litellm-customer-id", "cust".parse().unwrap());
        assert_eq!(end_user(&h, &r, Some(&custom)).as_deref(), Some("cust"));
        h.remove("x-litellm-customer-id");
        h.insert("x-openwebui-user-id", " ".parse().unwrap());
        assert_eq!(end_user(&h, &r, Some(&custom)).as_deref(), Some("u"));
        // metadata fields given as JSON strings, and a numeric id
        let none = HeaderMap::new();
        let r = parse(
            r#"{"model":"m","messages":[{"role":"user","content":"x"}],"litellm_metadata":"{\"user\":\"lm-user\"}","metadata":{"user_id":"u"}}"#,
            Endpoint::ChatCompletions,
        );
        assert_eq!(end_user(&none, &r, None).as_deref(), Some("lm-user"));
        let r = parse(
            r#"{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":"{\"user_id\":42}"}"#,
            Endpoint::ChatCompletions,
        );
        assert_eq!(end_user(&none, &r, None).as_deref(), Some("42"));
        let r = parse(
            r#"{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":"not json"}"#,
            Endpoint::ChatCompletions,
        );
        assert_eq!(end_user(&none, &r, None), None);
    }

    #[test]
    fn token_counts_and_output_bounds() {
        let r = parse(
            r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hello world"}],"max_tokens":7}"#,
            Endpoint::ChatCompletions,
        );
        let n = prompt_tokens(&r, Endpoint::ChatCompletions, "gpt-4o");
        // "hello world" = 2 tokens + per-message and priming overhead
        assert!((2..20).contains(&n), "{n}");
        assert_eq!(max_output_tokens(&r, Endpoint::ChatCompletions), Some(7));
        let e = parse(r#"{"model":"e","input":"abcdefgh"}"#, Endpoint::Embeddings);
        assert_eq!(max_output_tokens(&e, Endpoint::Embeddings), Some(0));
        // not an OpenAI tokenizer: bytes / 4 of the text
        assert_eq!(
            prompt_tokens(&e, Endpoint::Embeddings, "some-local-model"),
            2
        );
    }
}
