//! Responses message items and content parts → chat messages and parts, `cache_control`
//! kept where the client put it (toward Anthropic; [`super::request`] strips it otherwise).

use serde_json::{Value, json};

use crate::TranslateError;
use crate::images::{anthropic_image_source, check_data_url};

/// Appends the chat message for one Responses `message` item: user content as parts, other
/// roles' text joined into one string (kept as text parts when one carries `cache_control`);
/// the item's own `cache_control` goes on the chat message. Errors: an unknown role, and those
/// of [`content_part`].
pub(super) fn message(
    item: &Value,
    path: &str,
    anthropic: bool,
    out: &mut Vec<Value>,
) -> Result<(), TranslateError> {
    let role = item.get("role").and_then(Value::as_str).unwrap_or("user");
    if !matches!(role, "user" | "assistant" | "system" | "developer") {
        return Err(TranslateError::invalid(
            format!("{path}.role"),
            format!("unknown role `{role}`"),
        ));
    }
    let mut msg = match item.get("content") {
        Some(Value::String(s)) => json!({"role": role, "content": s}),
        Some(Value::Array(parts)) => {
            let mut converted = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                if let Some(c) = content_part(part, &format!("{path}.content[{j}]"), anthropic)? {
                    converted.push(c);
                }
            }
            if role == "user" {
                json!({"role": role, "content": converted})
            } else if converted.iter().any(|c| c.get("cache_control").is_some()) {
                // Text parts kept apart so each keeps its cache breakpoint.
                converted.retain(|c| c["type"] == "text");
                json!({"role": role, "content": converted})
            } else {
                // System, developer and assistant turns carry text only: join it.
                let text: Vec<&str> = converted
                    .iter()
                    .filter_map(|c| c["text"].as_str())
                    .collect();
                json!({"role": role, "content": text.concat()})
            }
        }
        _ => return Ok(()),
    };
    if let Some(cc) = cache_control(item) {
        msg["cache_control"] = cc.clone();
    }
    out.push(msg);
    Ok(())
}

/// The client's `cache_control` on an item, part or tool, when it is an object.
pub(super) fn cache_control(v: &Value) -> Option<&Value> {
    v.get("cache_control").filter(|c| c.is_object())
}

/// Removes `cache_control` from a chat message and its content parts.
pub(super) fn strip_cache_control(m: &mut Value) {
    if let Some(obj) = m.as_object_mut() {
        obj.remove("cache_control");
    }
    if let Some(parts) = m.get_mut("content").and_then(Value::as_array_mut) {
        for p in parts.iter_mut().filter_map(Value::as_object_mut) {
            p.remove("cache_control");
        }
    }
}

/// One Responses content part → one chat content part, its `cache_control` kept. A `data:`
/// image URL must be well formed (toward Anthropic also of an accepted media type): a 400
/// naming `<path>.image_url` otherwise.
pub(super) fn content_part(
    part: &Value,
    path: &str,
    anthropic: bool,
) -> Result<Option<Value>, TranslateError> {
    let mut converted = content_part_inner(part, path, anthropic)?;
    if let (Some(c), Some(cc)) = (converted.as_mut(), cache_control(part)) {
        c["cache_control"] = cc.clone();
    }
    Ok(converted)
}

fn content_part_inner(
    part: &Value,
    path: &str,
    anthropic: bool,
) -> Result<Option<Value>, TranslateError> {
    let ty = part.get("type").and_then(Value::as_str).unwrap_or_default();
    Ok(match ty {
        "input_text" | "output_text" | "text" => Some(
            json!({"type": "text", "text": part.get("text").and_then(Value::as_str).unwrap_or_default()}),
        ),
        "refusal" => Some(
            json!({"type": "text", "text": part.get("refusal").and_then(Value::as_str).unwrap_or_default()}),
        ),
        "input_image" => {
            let Some(url) = part.get("image_url").and_then(Value::as_str) else {
                return Err(TranslateError::unsupported(
                    format!("{path}.file_id"),
                    "image file references cannot be resolved for a Chat Completions deployment",
                ));
            };
            let field = format!("{path}.image_url");
            if anthropic {
                anthropic_image_source(url, &field)?;
            } else {
                check_data_url(url, &field)?;
            }
            let mut iu = json!({"url": url});
            if let Some(d) = part.get("detail").filter(|d| d.is_string()) {
                iu["detail"] = d.clone();
            }
            Some(json!({"type": "image_url", "image_url": iu}))
        }
        "input_file" => {
            let Some(data) = part.get("file_data").and_then(Value::as_str) else {
                return Err(TranslateError::unsupported(
                    format!("{path}.file_id"),
                    "only inline file_data can be sent to a Chat Completions deployment",
                ));
            };
            let mut f = json!({"file_data": data});
            if let Some(n) = part.get("filename").filter(|n| n.is_string()) {
                f["filename"] = n.clone();
            }
            Some(json!({"type": "file", "file": f}))
        }
        other => {
            return Err(TranslateError::unsupported(
                format!("{path}.type"),
                format!("content part `{other}` has no Chat Completions equivalent"),
            ));
        }
    })
}
