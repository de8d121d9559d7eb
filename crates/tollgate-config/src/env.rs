//! `os.environ/NAME` substitution.
//!
//! LiteLLM (`litellm/proxy/proxy_server.py`, `_check_for_os_environ_vars` / `get_secret`) replaces
//! every string value that starts with `os.environ/` by the environment variable named by the
//! rest, recursively through mappings and the mappings inside lists. Tollgate also replaces
//! plain strings inside lists (a superset: such strings are never meant literally). Keys are
//! never substituted. The `environment_variables:` section is resolved first, against the
//! process environment only, and its entries are visible to every other reference.
//!
//! Unset variables: LiteLLM substitutes `None`. Tollgate does the same (the key is removed from
//! its mapping, or a list item becomes null, and a warning is recorded) except for keys that
//! cannot work without a value, where it fails with an error naming the key and line:
//! [`REQUIRED_PATTERNS`].

use serde_yaml_ng::Value;

use crate::path::KeyPath;

/// The prefix that marks an environment reference.
pub const ENV_PREFIX: &str = "os.environ/";

/// Keys whose `os.environ/` reference must resolve (`[]` = any list index).
/// `general_settings.master_key` is here because silently dropping it would turn on the
/// no-auth mode LiteLLM uses when no master key is set.
pub const REQUIRED_PATTERNS: &[&[&str]] = &[
    &["model_list", "[]", "model_name"],
    &["model_list", "[]", "litellm_params", "model"],
    &["general_settings", "master_key"],
];

/// An `os.environ/` reference that named an unset variable.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct UnsetRef {
    pub path: KeyPath,
    pub var: String,
    pub required: bool,
}

/// Result of substituting one tree.
#[derive(Default)]
pub(crate) struct Substitution {
    /// Unset references, in document order.
    pub unset: Vec<UnsetRef>,
    /// `(variable, value)` pairs read from the environment (values of credential-like
    /// variables are scrubbed from error messages).
    pub resolved: Vec<(String, String)>,
}

/// Replaces every `os.environ/NAME` string in `v` (found at `path`), in place.
pub(crate) fn substitute(
    v: &mut Value,
    path: &KeyPath,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut Substitution,
) {
    match v {
        Value::String(s) => {
            let Some(var) = s.strip_prefix(ENV_PREFIX) else {
                return;
            };
            match lookup(var) {
                Some(val) => {
                    out.resolved.push((var.to_string(), val.clone()));
                    *v = Value::String(val);
                }
                None => {
                    let required = REQUIRED_PATTERNS.iter().any(|p| path.matches(p));
                    out.unset.push(UnsetRef {
                        path: path.clone(),
                        var: var.to_string(),
                        required,
                    });
                    *v = Value::Null;
                }
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                substitute(item, &path.index(i), lookup, out);
            }
        }
        Value::Mapping(m) => {
            let mut unset_keys = Vec::new();
            for (k, val) in m.iter_mut() {
                let ks = key_string(k);
                let was_ref = matches!(val, Value::String(s) if s.starts_with(ENV_PREFIX));
                substitute(val, &path.key(ks), lookup, out);
                if was_ref && val.is_null() {
                    unset_keys.push(k.clone());
                }
            }
            // An unset reference leaves the key unset, as LiteLLM's None does.
            for k in unset_keys {
                m.shift_remove(&k);
            }
        }
        Value::Tagged(t) => substitute(&mut t.value, path, lookup, out),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The text of a mapping key as it appears in key paths.
pub(crate) fn key_string(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        _ => "?".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "A" => Some("alpha".into()),
            "B" => Some("beta".into()),
            _ => None,
        }
    }

    #[test]
    fn substitutes_nested_maps_and_lists() {
        let mut v: Value = serde_yaml_ng::from_str(
            "x: {y: [os.environ/A, plain, {z: os.environ/B}]}\nk: os.environ/A-not\nos.environ/A: key-untouched\n",
        )
        .unwrap();
        let mut s = Substitution::default();
        substitute(&mut v, &KeyPath::root(), &env, &mut s);
        assert_eq!(v["x"]["y"][0], Value::from("alpha"));
        assert_eq!(v["x"]["y"][1], Value::from("plain"));
        assert_eq!(v["x"]["y"][2]["z"], Value::from("beta"));
        assert!(v.get("k").is_none(), "unset reference removes the key");
        assert_eq!(v["os.environ/A"], Value::from("key-untouched"));
        assert_eq!(s.unset.len(), 1);
        assert_eq!(s.unset[0].path.to_string(), "k");
        assert_eq!(s.unset[0].var, "A-not");
        assert!(!s.unset[0].required);
        assert_eq!(
            s.resolved,
            vec![("A".into(), "alpha".into()), ("B".into(), "beta".into())]
        );
    }

    #[test]
    fn required_keys_are_flagged() {
        let mut v: Value = serde_yaml_ng::from_str(
            "model_list:\n  - model_name: m\n    litellm_params: {model: os.environ/NOPE, api_key: os.environ/NOPE2}\n",
        )
        .unwrap();
        let mut s = Substitution::default();
        substitute(&mut v, &KeyPath::root(), &env, &mut s);
        let req: Vec<_> = s
            .unset
            .iter()
            .map(|u| (u.path.to_string(), u.required))
            .collect();
        assert_eq!(
            req,
            vec![
                ("model_list[0].litellm_params.model".to_string(), true),
                ("model_list[0].litellm_params.api_key".to_string(), false)
            ]
        );
    }
}
