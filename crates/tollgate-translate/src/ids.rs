//! Response ids in the client's dialect, derived (never random) so one answer has one id in
//! the unary body, every event of its stream and the spend log.

/// The Anthropic message id (`msg_...`) for an answer translated from an OpenAI-dialect
/// upstream, whose own id is a `chatcmpl-...` (OpenAI, vLLM, llama.cpp...) or anything else.
///
/// - `msg_` + `upstream_id` without its `chatcmpl-` / `cmpl-` / `msg_` prefix, keeping only
///   ASCII letters, digits and `_` (Anthropic ids are `msg_` + base62 text, e.g.
///   `msg_01XFDUDYJgAACzvnptvVoYEL`): `chatcmpl-B9MBs8Cj` → `msg_B9MBs8Cj`,
///   `chatcmpl-mock-7` → `msg_mock7`; an id already in Anthropic's form stays as it is.
/// - When that leaves nothing (the upstream sent no id), the same rule is applied to
///   `call_id` (the gateway's `x-litellm-call-id`, a UUID): `msg_` + its hex digits.
pub fn anthropic_message_id(upstream_id: &str, call_id: &str) -> String {
    let mut out = String::with_capacity(4 + upstream_id.len().max(call_id.len()));
    out.push_str("msg_");
    push_id_bytes(&mut out, strip_openai_prefix(upstream_id));
    if out.len() == 4 {
        push_id_bytes(&mut out, call_id);
    }
    out
}

fn strip_openai_prefix(id: &str) -> &str {
    ["chatcmpl-", "chatcmpl_", "cmpl-", "msg_"]
        .iter()
        .find_map(|p| id.strip_prefix(p))
        .unwrap_or(id)
}

fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn push_id_bytes(out: &mut String, s: &str) {
    out.extend(s.bytes().filter(|b| is_id_byte(*b)).map(char::from));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_ids_become_message_ids() {
        let call = "0b6c2a3e-6f1d-4a8e-9c1e-2f9d7a5b4c3d";
        assert_eq!(
            anthropic_message_id("chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", call),
            "msg_B9MBs8CjcvOU2jLn4n570S5qMJKcT"
        );
        assert_eq!(anthropic_message_id("chatcmpl-mock-7", call), "msg_mock7");
        assert_eq!(anthropic_message_id("cmpl-abc", call), "msg_abc");
        assert_eq!(anthropic_message_id("gen-12.34", call), "msg_gen1234");
        // Already Anthropic's form: unchanged (a chained answer is not re-prefixed).
        assert_eq!(anthropic_message_id("msg_01XFDUDY", call), "msg_01XFDUDY");
        // No usable upstream id: from the call id, the same way every time.
        let from_call = "msg_0b6c2a3e6f1d4a8e9c1e2f9d7a5b4c3d";
        assert_eq!(anthropic_message_id("", call), from_call);
        assert_eq!(anthropic_message_id("chatcmpl-", call), from_call);
        assert_eq!(
            anthropic_message_id("msg_", call),
            "msg_0b6c2a3e6f1d4a8e9c1e2f9d7a5b4c3d"
        );
        assert_eq!(anthropic_message_id("---", call), from_call);
    }
}
