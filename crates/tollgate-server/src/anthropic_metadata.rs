//! What of a `/v1/messages` request's `metadata` reaches an Anthropic deployment.
//!
//! `metadata` is Anthropic's own field there, with one key, `user_id` (an opaque end-user id;
//! Anthropic refuses any other key: "metadata.tags: Extra inputs are not permitted"). LiteLLM
//! clients also put the gateway's keys in it (`tags`, `trace_id`, `generation_name`, ...):
//! those are the gateway's and stay out. The same `user_id` counts as the end user for
//! governance (`gate::facts::end_user`).

use serde::Deserialize;
use serde_json::value::RawValue;

/// The `metadata` JSON text to forward: `{"user_id":<the client's string, bytes as sent>}`
/// when `raw` is an object whose `user_id` is a non-empty string; `None` (send no `metadata`)
/// otherwise: no `user_id`, a `null` one, another type, or `raw` not an object.
pub fn forwarded(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Metadata<'a> {
        #[serde(borrow)]
        user_id: Option<&'a RawValue>,
    }
    let user_id = serde_json::from_str::<Metadata<'_>>(raw.get())
        .ok()?
        .user_id?
        .get();
    // A JSON string literal other than "".
    (user_id.starts_with('"') && user_id.len() > 2).then(|| format!("{{\"user_id\":{user_id}}}"))
}

#[cfg(test)]
mod tests {
    use super::forwarded;

    fn fwd(json: &str) -> Option<String> {
        forwarded(&serde_json::from_str::<Box<serde_json::value::RawValue>>(json).unwrap())
    }

    #[test]
    fn only_a_string_user_id_is_forwarded() {
        assert_eq!(
            fwd(r#"{"tags":["a"],"user_id":"u-1","trace_id":"t","generation_name":"g"}"#)
                .as_deref(),
            Some(r#"{"user_id":"u-1"}"#)
        );
        // Escapes kept as the client wrote them.
        assert_eq!(
            fwd(r#"{"user_id" : "caf\u00e9 \"x\""}"#).as_deref(),
            Some(r#"{"user_id":"caf\u00e9 \"x\""}"#)
        );
        for none in [
            r#"{"tags":["a"]}"#,
            r#"{"user_id":null}"#,
            r#"{"user_id":""}"#,
            r#"{"user_id":7}"#,
            r#"{"user_id":{"id":"x"}}"#,
            r#""u-1""#,
            "[]",
            "null",
        ] {
            assert_eq!(fwd(none), None, "{none}");
        }
    }
}
