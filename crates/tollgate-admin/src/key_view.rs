//! The JSON of a virtual key in responses: the `"LiteLLM_VerificationToken"` row's fields
//! (`token` is the hash), with live `spend` (USD), `budget_reset_at` and `model_spend`
//! (`{"<model group>": USD}` for each per-model budget, in its window) from the admission
//! counters, `model_max_budget` as stored, `litellm_budget_table` (the linked tier or `null`), `soft_budget` (the tier's), and
//! `model_rpm_limit` / `model_tpm_limit` / `tags` lifted out of `metadata` as LiteLLM shows them.
//! Never the plaintext key, except `key` in the one response that creates it.

use serde_json::{Map, Value};
use tollgate_governance::admission::ScopeKey;
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::{SecretKey, VerificationToken};

use crate::error::ApiError;
use crate::extract;
use crate::key_fields::{key_window, tier_of};
use crate::live;

/// A key row as LiteLLM's key object (see the module docs).
pub(crate) async fn object(
    gov: &Governance,
    row: &VerificationToken,
) -> Result<Map<String, Value>, ApiError> {
    let mut m = extract::object(row);
    let period = key_window(&gov.cache().read(), row, None);
    let (spend, reset) = live::window(gov, &ScopeKey::key(&row.token), period).await?;
    m.insert("spend".into(), Value::from(spend));
    m.insert("model_spend".into(), live::model_spend(gov, row).await?);
    if let Some(at) = reset {
        m.insert("budget_reset_at".into(), extract::time(at));
    }
    let tier = tier_of(&gov.cache().read(), row.budget_id.as_deref());
    m.insert(
        "soft_budget".into(),
        tier.as_ref()
            .and_then(|t| t.soft_budget)
            .map_or(Value::Null, Value::from),
    );
    m.insert(
        "litellm_budget_table".into(),
        tier.map_or(Value::Null, |t| Value::Object(extract::object(t.as_ref()))),
    );
    for field in ["model_rpm_limit", "model_tpm_limit", "tags"] {
        m.insert(
            field.into(),
            row.metadata.get(field).cloned().unwrap_or(Value::Null),
        );
    }
    Ok(m)
}

/// LiteLLM's `GenerateKeyResponse`: the key object plus `key` (the plaintext, shown once),
/// `token_id` (its hash) and `duration` as requested. `token` is left out (LiteLLM puts the
/// plaintext there; `token_id` carries the hash).
pub(crate) async fn generated(
    gov: &Governance,
    row: &VerificationToken,
    secret: &SecretKey,
    duration: Option<&str>,
) -> Result<Map<String, Value>, ApiError> {
    let mut m = object(gov, row).await?;
    m.remove("token");
    m.insert("key".into(), Value::from(secret.expose()));
    m.insert("token_id".into(), Value::from(row.token.clone()));
    m.insert("duration".into(), duration.map_or(Value::Null, Value::from));
    Ok(m)
}
