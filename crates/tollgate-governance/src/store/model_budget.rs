//! Per-model budgets of a key: `model_max_budget`, in both shapes LiteLLM's `/key/generate`
//! accepts, and the per-model rate limits kept in its `metadata`.
//!
//! | entry | budget | window |
//! |---|---|---|
//! | `{"gpt-4o": 1.0}` | 1.0 USD | none: the model's spend on the key never resets (LiteLLM's original `model_max_budget`, checked against the key's `model_spend`) |
//! | `{"gpt-4o": {"budget_limit": 1.0, "time_period": "1d"}}` | 1.0 USD | `time_period`, a budget duration (LiteLLM's `BudgetConfig`; `_PROXY_VirtualKeyModelMaxBudgetLimiter`) |
//!
//! `max_budget` / `budget_duration` are accepted for `budget_limit` / `time_period` (the field
//! names of LiteLLM's `BudgetConfig`, whose aliases the API shows).
//!
//! **Amounts**, in either shape: a JSON number, or a string holding one (`"0.5"`, `"1e-7"`,
//! surrounding spaces allowed), finite and `>= 0` USD. One rule for both shapes: LiteLLM's
//! CRUD endpoints convert `budget_limit` with Python's `float()` and its `BudgetConfig` reads a
//! numeric string as a float, so a string amount means the same as the number.
//!
//! **Which entry governs a request** ([`ModelNames`], [`model_scopes`]): the first of these
//! names that has an entry, most specific first: the model name the client sent (`w/x` through
//! a wildcard group `w/*`, as LiteLLM keys these budgets by the requested model), the name a
//! key or team alias maps it to, then the model group that serves it (`w/*`, shared by every
//! name it serves). A fallback attempt is counted under its own group's entry. LiteLLM also
//! tries the requested name's last path segment (`gpt-4o` for `openai/gpt-4o`); Tollgate does
//! not, so an entry applies only to names a model group serves, which the key routes can check
//! (they answer an entry for a name nothing serves with a warning). The counter is keyed by the
//! entry's name (`model_per_key` scope `<key hash>/<entry>`), and the entry's spend in its
//! window is kept in the key's `model_spend` column under that name (`{"w/x": <USD>}`).
//! `model_rpm_limit` / `model_tpm_limit` (in `metadata`) are resolved the same way, on their
//! own.

use serde_json::Value;

use crate::admission::Limits;
use crate::duration::BudgetDuration;

/// Why a `model_max_budget` entry is refused (400 on the management API).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelBudgetError {
    /// Neither an amount nor an object, or a negative, non-finite or non-numeric amount.
    #[error(
        "Invalid model_max_budget[{0}]: expected an amount >= 0 (USD, a number or a string holding one) or {{\"budget_limit\": <USD>, \"time_period\": \"<duration>\"}}"
    )]
    Shape(String),
    /// `budget_limit` is not an amount `>= 0`.
    #[error(
        "Invalid model_max_budget[{0}].budget_limit: expected an amount >= 0 (USD, a number or a string holding one)"
    )]
    Limit(String),
    /// `time_period` is not a duration.
    #[error(
        "Invalid model_max_budget[{0}].time_period: expected a duration such as \"30s\", \"1h\", \"1d\", \"1mo\""
    )]
    Period(String),
}

/// One parsed `model_max_budget` entry.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelBudget {
    /// Cap, USD; `None` = no cap (an object without `budget_limit`).
    pub max_budget: Option<f64>,
    /// Window; `None` = the spend never resets.
    pub duration: Option<BudgetDuration>,
}

/// An amount: a JSON number or a string holding one (see the module docs), finite and `>= 0`.
fn amount(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }?;
    (x.is_finite() && x >= 0.0).then_some(x)
}

impl ModelBudget {
    /// Parses the entry of `model`. Errors: [`ModelBudgetError`].
    pub fn parse(model: &str, v: &Value) -> Result<ModelBudget, ModelBudgetError> {
        let limit = |x: &Value| match x {
            Value::Null => Ok(None),
            x => amount(x)
                .map(Some)
                .ok_or_else(|| ModelBudgetError::Limit(model.to_owned())),
        };
        match v {
            Value::Object(o) => {
                let max_budget = match o.get("budget_limit").or_else(|| o.get("max_budget")) {
                    None => None,
                    Some(x) => limit(x)?,
                };
                let duration = match o.get("time_period").or_else(|| o.get("budget_duration")) {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(
                        s.parse::<BudgetDuration>()
                            .map_err(|_| ModelBudgetError::Period(model.to_owned()))?,
                    ),
                    Some(_) => return Err(ModelBudgetError::Period(model.to_owned())),
                };
                Ok(ModelBudget {
                    max_budget,
                    duration,
                })
            }
            Value::Number(_) | Value::String(_) => Ok(ModelBudget {
                max_budget: Some(
                    amount(v).ok_or_else(|| ModelBudgetError::Shape(model.to_owned()))?,
                ),
                duration: None,
            }),
            _ => Err(ModelBudgetError::Shape(model.to_owned())),
        }
    }

    /// The entry for `model` in a `model_max_budget` map, if any and valid (an invalid stored
    /// entry is ignored, as LiteLLM's limiter skips entries it cannot validate).
    pub fn of(model_max_budget: &Value, model: &str) -> Option<ModelBudget> {
        let v = model_max_budget.as_object()?.get(model)?;
        ModelBudget::parse(model, v).ok()
    }
}

/// Checks every entry of a `model_max_budget` map. Errors: the first bad entry.
pub fn validate_model_max_budget(
    m: &serde_json::Map<String, Value>,
) -> Result<(), ModelBudgetError> {
    for (model, v) in m {
        ModelBudget::parse(model, v)?;
    }
    Ok(())
}

/// The per-model limits of `model` from a key's `model_max_budget` and its `metadata`
/// (`model_rpm_limit` / `model_tpm_limit` maps), or `None` when neither names it. On the
/// request path: a few map lookups, nothing allocated unless the model has limits.
pub fn model_limits_for(model_max_budget: &Value, metadata: &Value, model: &str) -> Option<Limits> {
    let budget = ModelBudget::of(model_max_budget, model);
    let rate = |field: &str| {
        metadata
            .get(field)
            .and_then(|m| m.get(model))
            .and_then(Value::as_u64)
    };
    let rpm = rate("model_rpm_limit");
    let tpm = rate("model_tpm_limit");
    if budget.is_none() && rpm.is_none() && tpm.is_none() {
        return None;
    }
    let b = budget.unwrap_or_default();
    Some(Limits {
        max_budget: b.max_budget,
        budget_duration: b.duration,
        rpm_limit: rpm,
        tpm_limit: tpm,
        max_parallel_requests: None,
    })
}

/// The names a request's per-model budgets may be keyed by (see the module docs for the
/// order). Borrowed from the request; nothing is allocated.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelNames<'a> {
    /// The model as the client sent it (`None` on a fallback attempt).
    pub requested: Option<&'a str>,
    /// The model group a key or team alias maps the requested name to, if any.
    pub routed: Option<&'a str>,
    /// The model group serving the attempt (a wildcard group's pattern, e.g. `w/*`).
    pub group: &'a str,
}

impl<'a> ModelNames<'a> {
    /// Requested name, alias target, group, each once, most specific first.
    pub fn candidates(&self) -> [Option<&'a str>; 3] {
        let mut out = [self.requested, self.routed, Some(self.group)];
        for i in 1..out.len() {
            if out[i].is_some() && out[..i].contains(&out[i]) {
                out[i] = None;
            }
        }
        out
    }
}

/// One per-model scope of a request: the entry name its counter is keyed by
/// (`<key hash>/<name>`) and the limits it enforces.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelScope<'a> {
    /// The `model_max_budget` (or `model_rpm_limit` / `model_tpm_limit`) entry's name.
    pub name: &'a str,
    /// Budget and window of the entry, and the per-model RPM/TPM named the same way.
    pub limits: Limits,
}

/// The per-model scopes of a request on a key with `model_max_budget` and `metadata`: the
/// budget entry that governs it (the first of [`ModelNames::candidates`] with a valid entry,
/// with the rate limits of the same name), and the rate limits under another name when they
/// are keyed differently. Empty (and nothing looked up beyond two map probes) for a key
/// without per-model limits.
pub fn model_scopes<'a>(
    model_max_budget: &Value,
    metadata: &Value,
    names: &ModelNames<'a>,
) -> [Option<ModelScope<'a>>; 2] {
    let rpm_map = metadata.get("model_rpm_limit");
    let tpm_map = metadata.get("model_tpm_limit");
    let budgets = model_max_budget.as_object().filter(|m| !m.is_empty());
    if budgets.is_none() && rpm_map.is_none() && tpm_map.is_none() {
        return [None, None];
    }
    let rate = |m: Option<&Value>, n: &str| m.and_then(|m| m.get(n)).and_then(Value::as_u64);
    let rates_of = |n: &str| (rate(rpm_map, n), rate(tpm_map, n));
    let cands = names.candidates();
    let budget = budgets.and_then(|_| {
        cands
            .iter()
            .flatten()
            .find_map(|n| ModelBudget::of(model_max_budget, n).map(|b| (*n, b)))
    });
    let rates = cands.iter().flatten().find_map(|n| match rates_of(n) {
        (None, None) => None,
        (rpm, tpm) => Some((*n, rpm, tpm)),
    });
    let scope = |name, b: ModelBudget, (rpm, tpm): (Option<u64>, Option<u64>)| ModelScope {
        name,
        limits: Limits {
            max_budget: b.max_budget,
            budget_duration: b.duration,
            rpm_limit: rpm,
            tpm_limit: tpm,
            max_parallel_requests: None,
        },
    };
    match (budget, rates) {
        (Some((n, b)), Some((r, rpm, tpm))) if n == r => [Some(scope(n, b, (rpm, tpm))), None],
        (Some((n, b)), r) => [
            Some(scope(n, b, (None, None))),
            r.map(|(r, rpm, tpm)| scope(r, ModelBudget::default(), (rpm, tpm))),
        ],
        (None, r) => [
            r.map(|(r, rpm, tpm)| scope(r, ModelBudget::default(), (rpm, tpm))),
            None,
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_litellm_shapes_and_the_field_names() {
        let plain = ModelBudget::parse("gpt-4o", &json!(1.0)).unwrap();
        assert_eq!(
            plain,
            ModelBudget {
                max_budget: Some(1.0),
                duration: None
            }
        );
        let windowed =
            ModelBudget::parse("m", &json!({"budget_limit": 0.5, "time_period": "1d"})).unwrap();
        assert_eq!(windowed.max_budget, Some(0.5));
        assert_eq!(windowed.duration, Some(BudgetDuration::Days(1)));
        let names =
            ModelBudget::parse("m", &json!({"max_budget": 2, "budget_duration": "1h"})).unwrap();
        assert_eq!(names.max_budget, Some(2.0));
        assert_eq!(names.duration, Some(BudgetDuration::Hours(1)));
        let text = ModelBudget::parse("m", &json!({"budget_limit": "0.25"})).unwrap();
        assert_eq!((text.max_budget, text.duration), (Some(0.25), None));
    }

    /// One amount rule for both shapes: a number or a string holding one, finite, >= 0.
    #[test]
    fn string_amounts_follow_one_rule_in_both_shapes() {
        for (v, want) in [
            (json!("0.5"), 0.5),
            (json!(" 1e-7 "), 1e-7),
            (json!({"budget_limit": "0.0000001"}), 1e-7),
            (json!({"max_budget": "2"}), 2.0),
            (json!(0), 0.0),
        ] {
            assert_eq!(
                ModelBudget::parse("m", &v).unwrap().max_budget,
                Some(want),
                "{v}"
            );
        }
        for flat in [
            json!("-0.5"),
            json!("NaN"),
            json!("inf"),
            json!(""),
            json!("1,5"),
        ] {
            assert_eq!(
                ModelBudget::parse("m", &flat).unwrap_err(),
                ModelBudgetError::Shape("m".into()),
                "{flat}"
            );
            assert_eq!(
                ModelBudget::parse("m", &json!({"budget_limit": flat})).unwrap_err(),
                ModelBudgetError::Limit("m".into()),
                "{flat}"
            );
        }
    }

    #[test]
    fn bad_entries_name_the_model_and_the_field() {
        let e = ModelBudget::parse("gpt-4o", &json!("lots")).unwrap_err();
        assert_eq!(e, ModelBudgetError::Shape("gpt-4o".into()));
        assert!(
            e.to_string()
                .starts_with("Invalid model_max_budget[gpt-4o]")
        );
        assert_eq!(
            ModelBudget::parse("m", &json!(-1)).unwrap_err(),
            ModelBudgetError::Shape("m".into())
        );
        assert_eq!(
            ModelBudget::parse("m", &json!({"budget_limit": -1})).unwrap_err(),
            ModelBudgetError::Limit("m".into())
        );
        assert_eq!(
            ModelBudget::parse("m", &json!({"budget_limit": 1, "time_period": "1 day"}))
                .unwrap_err(),
            ModelBudgetError::Period("m".into())
        );
        assert_eq!(
            ModelBudget::parse("m", &json!({"budget_limit": true})).unwrap_err(),
            ModelBudgetError::Limit("m".into())
        );
        let m = json!({"ok": 1, "bad": [1]});
        assert_eq!(
            validate_model_max_budget(m.as_object().unwrap()).unwrap_err(),
            ModelBudgetError::Shape("bad".into())
        );
    }

    #[test]
    fn limits_for_one_model_merge_budget_and_rates() {
        let mmb = json!({"gpt-4o": {"budget_limit": 1.0, "time_period": "1d"}, "cheap": 0.1});
        let meta = json!({"model_rpm_limit": {"gpt-4o": 5, "other": 7}});
        let l = model_limits_for(&mmb, &meta, "gpt-4o").unwrap();
        assert_eq!(l.max_budget, Some(1.0));
        assert_eq!(l.budget_duration, Some(BudgetDuration::Days(1)));
        assert_eq!((l.rpm_limit, l.tpm_limit), (Some(5), None));
        let l = model_limits_for(&mmb, &meta, "cheap").unwrap();
        assert_eq!((l.max_budget, l.budget_duration), (Some(0.1), None));
        let l = model_limits_for(&mmb, &meta, "other").unwrap();
        assert_eq!((l.max_budget, l.rpm_limit), (None, Some(7)));
        assert_eq!(model_limits_for(&mmb, &meta, "none"), None);
        assert_eq!(model_limits_for(&json!({}), &json!({}), "gpt-4o"), None);
    }

    fn names<'a>(
        requested: Option<&'a str>,
        routed: Option<&'a str>,
        group: &'a str,
    ) -> ModelNames<'a> {
        ModelNames {
            requested,
            routed,
            group,
        }
    }

    #[test]
    fn candidates_run_from_the_requested_name_to_the_group() {
        let c = names(Some("w/x"), Some("w/x"), "w/*").candidates();
        assert_eq!(c, [Some("w/x"), None, Some("w/*")]);
        let c = names(Some("fast"), Some("gpt-4o"), "gpt-4o").candidates();
        assert_eq!(c, [Some("fast"), Some("gpt-4o"), None]);
        let c = names(None, None, "openai/gpt-4o").candidates();
        assert_eq!(c, [None, None, Some("openai/gpt-4o")]);
        let c = names(Some("m"), Some("m"), "m").candidates();
        assert_eq!(c, [Some("m"), None, None]);
    }

    #[test]
    fn the_most_specific_entry_governs_and_rates_resolve_on_their_own() {
        let mmb = json!({"w/x": 0.003, "w/*": {"budget_limit": 1, "time_period": "1d"}, "y": 5});
        let none = json!({});
        let [a, b] = model_scopes(&mmb, &none, &names(Some("w/x"), None, "w/*"));
        let a = a.unwrap();
        assert_eq!(
            (a.name, a.limits.max_budget, a.limits.budget_duration),
            ("w/x", Some(0.003), None)
        );
        assert_eq!(b, None);
        // another name through the same wildcard group: the group's entry
        let [a, _] = model_scopes(&mmb, &none, &names(Some("w/z"), None, "w/*"));
        let a = a.unwrap();
        assert_eq!(
            (a.name, a.limits.budget_duration),
            ("w/*", Some(BudgetDuration::Days(1)))
        );
        // not the last path segment (LiteLLM's provider-less name)
        assert_eq!(
            model_scopes(&mmb, &none, &names(Some("v/y"), None, "v/*")),
            [None, None]
        );
        // an alias target
        let [a, _] = model_scopes(&mmb, &none, &names(Some("fast"), Some("y"), "y"));
        assert_eq!(a.unwrap().name, "y");
        // nothing matches
        assert_eq!(
            model_scopes(&mmb, &none, &names(Some("q"), None, "q")),
            [None, None]
        );
        // rates named like the budget share its scope; named otherwise they get their own
        let meta = json!({"model_rpm_limit": {"w/x": 5}, "model_tpm_limit": {"w/*": 100}});
        let [a, b] = model_scopes(&mmb, &meta, &names(Some("w/x"), None, "w/*"));
        let a = a.unwrap();
        assert_eq!(
            (a.name, a.limits.rpm_limit, a.limits.max_budget),
            ("w/x", Some(5), Some(0.003))
        );
        assert_eq!(b, None);
        let [a, b] = model_scopes(&mmb, &meta, &names(Some("w/z"), None, "w/*"));
        let (a, b) = (a.unwrap(), b);
        assert_eq!(
            (a.name, a.limits.tpm_limit, a.limits.max_budget),
            ("w/*", Some(100), Some(1.0))
        );
        assert_eq!(b, None);
        let meta = json!({"model_rpm_limit": {"w/z": 7}});
        let [a, b] = model_scopes(&mmb, &meta, &names(Some("w/z"), None, "w/*"));
        assert_eq!(a.unwrap().name, "w/*");
        let b = b.unwrap();
        assert_eq!(
            (b.name, b.limits.rpm_limit, b.limits.max_budget),
            ("w/z", Some(7), None)
        );
        // rates only
        let [a, b] = model_scopes(&json!({}), &meta, &names(Some("w/z"), None, "w/*"));
        assert_eq!((a.unwrap().name, b), ("w/z", None));
    }
}
