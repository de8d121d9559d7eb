//! The gate's check of the model names a request carries: its `model`, the names in its
//! `fallbacks`, and a model taken from a URL path (`GET /v1/models/{id}`). A name that
//! [`tollgate_protocol::model_name::check`] refuses (`a/../b`, `a//b`, a control character,
//! `%2e%2e`, ...) is answered with a 400 before any alias, access check or routing sees it.

use tollgate_protocol::model_name;

use crate::errors::{GatewayError, GatewayFailure};

/// 400 `invalid_model_name` naming `param` (`model`, `fallbacks`) and the rule broken, when
/// `name` is not a name the gateway accepts.
///
/// Errors: the 400 as a [`GatewayError`] (rendered in the client's dialect by the caller).
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
pub fn check(name: &str, param: &'static str) -> Result<(), GatewayError> {
    model_name::check(name)
        .map_err(|why| GatewayFailure::InvalidModelName { name, param, why }.into())
}

/// The request's own `fallbacks`, each name checked as [`check`] does.
///
/// Errors: the 400 for the first refused name.
#[expect(clippy::result_large_err, reason = "the refusal path is cold")]
pub fn checked_fallbacks(names: Option<Vec<String>>) -> Result<Option<Vec<String>>, GatewayError> {
    for n in names.iter().flatten() {
        check(n, "fallbacks")?;
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_field_and_the_rule() {
        let e = check("bedrock/../admin", "model").unwrap_err().envelope;
        assert_eq!(e.status, 400);
        assert_eq!(e.param.as_deref(), Some("model"));
        assert_eq!(e.code.as_deref(), Some("invalid_model_name"));
        assert!(
            e.message.starts_with(
                "Invalid model name 'bedrock/../admin' in `model`: the model name has a `.` or `..` path segment."
            ),
            "{}",
            e.message
        );
        // Control characters are shown escaped, never raw.
        let e = check("a\nb", "model").unwrap_err().envelope;
        assert!(e.message.contains("'a\\nb'"), "{}", e.message);
        assert!(check("ollama_chat/llama3.1:8b", "model").is_ok());
        let e = checked_fallbacks(Some(vec!["ok".into(), "x//y".into()]))
            .unwrap_err()
            .envelope;
        assert_eq!(e.param.as_deref(), Some("fallbacks"));
        assert_eq!(
            checked_fallbacks(Some(vec!["a/b".into()])).unwrap(),
            Some(vec!["a/b".to_owned()])
        );
    }
}
