//! Content-free events at the start of a stream: what an upstream sends before the first thing
//! a client shows.
//!
//! A stream's first events often carry nothing but framing: OpenAI's role chunk
//! (`{"choices":[{"delta":{"role":"assistant","content":""}}]}`) and Azure's
//! `prompt_filter_results` chunk (`"choices": []`); Anthropic's `message_start`, `ping` and an
//! empty text or thinking `content_block_start`; Responses' `response.created`,
//! `response.in_progress`, `response.queued`, an opening message or reasoning
//! `response.output_item.added` and an empty `response.content_part.added`. An error after
//! them (Anthropic's own `overloaded_error` arrives right after `message_start`) has still
//! produced nothing the user can see, so [`super::first_event::peek`] holds these events and
//! lets the first event with content (or an error) decide the attempt.
//!
//! [`is_content_free`] is asked only about the events before the first content event of a
//! stream (one or two per stream in practice), never about the rest of it. Anything it does
//! not recognise counts as content: the stream is then committed as it was before.

use memchr::memmem;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::first_event::event_field;
use super::handlers::data_payload;

/// Whether the SSE event `raw` (with a `data:` line) carries nothing a client shows (see the
/// module docs). `false` for anything else, `[DONE]`, errors and unparseable data included.
pub fn is_content_free(raw: &[u8]) -> bool {
    let data = data_payload(raw);
    match event_field(raw) {
        b"" => openai_chunk_is_empty(data),
        b"ping"
        | b"message_start"
        | b"response.created"
        | b"response.in_progress"
        | b"response.queued" => true,
        b"content_block_start" => {
            parse::<BlockStart>(data).is_some_and(|e| e.content_block.is_empty())
        }
        b"response.output_item.added" => {
            parse::<ItemAdded>(data).is_some_and(|e| e.item.is_empty())
        }
        b"response.content_part.added" => {
            parse::<PartAdded>(data).is_some_and(|e| e.part.is_empty())
        }
        _ => false,
    }
}

fn parse<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Option<T> {
    serde_json::from_slice(data).ok()
}

/// An OpenAI chat or completions chunk whose every choice has an empty delta (members other
/// than `role` null, `""`, `[]` or `{}`), empty `text` and no `finish_reason`; `choices: []`
/// included. A content chunk without `"role"` or `[]` in it is told apart without parsing.
fn openai_chunk_is_empty(data: &[u8]) -> bool {
    if memmem::find(data, b"\"role\"").is_none() && memmem::find(data, b"[]").is_none() {
        return false;
    }
    parse::<Chunk>(data).is_some_and(|c| {
        c.choices.iter().all(|ch| {
            ch.delta.as_ref().is_none_or(|d| d.0)
                && ch.text.as_ref().is_none_or(|t| t.0)
                && !ch.finish_reason.0
        })
    })
}

#[derive(Deserialize)]
struct Chunk {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<EmptyDelta>,
    text: Option<Empty>,
    #[serde(default, deserialize_with = "is_set")]
    finish_reason: Set,
}

/// Whether a member is present and not `null`.
#[derive(Default)]
struct Set(bool);

fn is_set<'de, D: Deserializer<'de>>(d: D) -> Result<Set, D::Error> {
    Ok(Set(Option::<IgnoredAny>::deserialize(d)?.is_some()))
}

#[derive(Deserialize)]
struct BlockStart {
    content_block: Opened,
}

#[derive(Deserialize)]
struct ItemAdded {
    item: Opened,
}

#[derive(Deserialize)]
struct PartAdded {
    part: Opened,
}

/// A content block, output item or content part as it is opened: its `type` and the members
/// that would carry its content.
#[derive(Deserialize)]
struct Opened {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<Empty>,
    thinking: Option<Empty>,
    refusal: Option<Empty>,
    content: Option<Empty>,
    summary: Option<Empty>,
}

impl Opened {
    /// A text or thinking block, a message or reasoning item, or a text part, with nothing in it
    /// yet. A tool call opening (`tool_use`, `function_call`) names a tool: content.
    fn is_empty(&self) -> bool {
        let kind_ok = matches!(
            self.kind.as_deref(),
            Some(
                "text"
                    | "thinking"
                    | "message"
                    | "reasoning"
                    | "output_text"
                    | "refusal"
                    | "reasoning_text"
            )
        );
        let empty = |m: &Option<Empty>| m.as_ref().is_none_or(|e| e.0);
        kind_ok
            && empty(&self.text)
            && empty(&self.thinking)
            && empty(&self.refusal)
            && empty(&self.content)
            && empty(&self.summary)
    }
}

/// `true` for `null`, `""`, `[]` and `{}`; `false` for any other JSON value.
struct Empty(bool);

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EmptyVisitor).map(Empty)
    }
}

struct EmptyVisitor;

impl<'de> Visitor<'de> for EmptyVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
        Ok(s.is_empty())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut empty = true;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            empty = false;
        }
        Ok(empty)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut empty = true;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            empty = false;
        }
        Ok(empty)
    }
}

/// A chat delta with nothing but `role` set ([`Empty`] for every other member).
struct EmptyDelta(bool);

impl<'de> Deserialize<'de> for EmptyDelta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(DeltaVisitor).map(EmptyDelta)
    }
}

struct DeltaVisitor;

impl<'de> Visitor<'de> for DeltaVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a delta object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut empty = true;
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 {
                map.next_value::<IgnoredAny>()?;
            } else if !map.next_value::<Empty>()?.0 {
                empty = false;
            }
        }
        Ok(empty)
    }
}

/// A member name: `true` for `role`.
struct Key(bool);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = bool;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
                Ok(s == "role")
            }
        }
        d.deserialize_str(V).map(Key)
    }
}

#[cfg(test)]
mod tests {
    use super::is_content_free;

    fn ev(name: &str, data: &str) -> Vec<u8> {
        if name.is_empty() {
            format!("data: {data}\n\n").into_bytes()
        } else {
            format!("event: {name}\ndata: {data}\n\n").into_bytes()
        }
    }

    #[test]
    fn framing_events_of_every_dialect_are_content_free() {
        for (name, data) in [
            (
                "",
                r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            ),
            (
                "",
                r#"{"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}"#,
            ),
            (
                "",
                r#"{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[]},"finish_reason":null}],"usage":{"prompt_tokens":9,"completion_tokens":0}}"#,
            ),
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_1","content":[],"usage":{"input_tokens":9,"output_tokens":1}}}"#,
            ),
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            ),
            (
                "response.created",
                r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]},"sequence_number":0}"#,
            ),
            (
                "response.in_progress",
                r#"{"type":"response.in_progress","response":{"id":"resp_1"},"sequence_number":1}"#,
            ),
            (
                "response.output_item.added",
                r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]},"sequence_number":2}"#,
            ),
            (
                "response.content_part.added",
                r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]},"sequence_number":3}"#,
            ),
        ] {
            assert!(is_content_free(&ev(name, data)), "{name} {data}");
        }
    }

    #[test]
    fn anything_a_client_shows_is_content() {
        for (name, data) in [
            (
                "",
                r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":""}}]}}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hm"}}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":"stop"}]}"#,
            ),
            (
                "",
                r#"{"choices":[{"index":0,"text":"Hi","finish_reason":null}]}"#,
            ),
            ("", "[DONE]"),
            ("", "not json [] \"role\""),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            ),
            ("message_delta", r#"{"type":"message_delta","delta":{}}"#),
            (
                "response.output_item.added",
                r#"{"type":"response.output_item.added","item":{"type":"function_call","name":"f","arguments":""}}"#,
            ),
            (
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            ),
            ("response.completed", r#"{"type":"response.completed"}"#),
        ] {
            assert!(!is_content_free(&ev(name, data)), "{name} {data}");
        }
    }
}
