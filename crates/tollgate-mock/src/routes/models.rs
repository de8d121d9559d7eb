//! `GET /v1/models` and `GET /v1/models/{id}` (OpenAI list shape).

use serde_json::{Value, json};

use super::Reply;
use crate::fixtures::Fixtures;
use crate::synth::CREATED;

/// Model ids served when no `openai/models/list.json` fixture is loaded (same ids as the fixture).
pub const BUILTIN_MODELS: &[(&str, &str)] = &[
    ("mock-gpt-text", "mock-openai"),
    ("mock-gpt-tools", "mock-openai"),
    ("mock-gpt-unicode", "mock-openai"),
    ("mock-gpt-midstream-error", "mock-openai"),
    ("mock-gpt-echo", "mock-openai"),
    ("mock-gpt-rate-limited", "mock-openai"),
    ("mock-gpt-flaky", "mock-openai"),
    ("mock-gpt-slow", "mock-openai"),
    ("mock-embed", "mock-openai"),
    ("mock-claude-text", "mock-anthropic"),
    ("mock-claude-tools", "mock-anthropic"),
    ("mock-claude-thinking", "mock-anthropic"),
    ("mock-claude-unicode", "mock-anthropic"),
    ("mock-claude-midstream-error", "mock-anthropic"),
    ("mock-claude-echo", "mock-anthropic"),
    ("mock-claude-overloaded", "mock-anthropic"),
];

/// The model list: the fixture's JSON if loaded, else the built-in list.
pub(crate) fn list(fixtures: &Fixtures) -> Reply {
    if let Some(v) = fixtures
        .get("openai/models/list.json")
        .and_then(|f| serde_json::from_slice::<Value>(&f.bytes).ok())
    {
        return Reply::Json(200, v);
    }
    let data: Vec<Value> = BUILTIN_MODELS
        .iter()
        .map(|(id, owner)| json!({"id": id, "object": "model", "created": CREATED, "owned_by": owner}))
        .collect();
    Reply::Json(200, json!({"object": "list", "data": data}))
}

/// One model object for `/models/{id}` (any id is answered).
pub(crate) fn one(rest: &str) -> Reply {
    let id = rest.strip_prefix("/models/").unwrap_or(rest);
    Reply::Json(
        200,
        json!({"id": id, "object": "model", "created": CREATED, "owned_by": "mock"}),
    )
}
