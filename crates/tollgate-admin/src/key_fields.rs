//! The fields of `/key/generate`, `/key/update` and `/key/regenerate` (LiteLLM's
//! `GenerateKeyRequest` / `UpdateKeyRequest`, litellm-surface §4.3) and how they land on a
//! `"LiteLLM_VerificationToken"` row.
//!
//! Units: budgets in USD, `tpm_limit` in tokens (input + output) per minute, `rpm_limit` in
//! requests per minute. `model_rpm_limit`, `model_tpm_limit`, `tags`, `tag_rpm_limit`
//! (requests per minute per request tag) and `temp_budget_increase` / `temp_budget_expiry`
//! are kept in `metadata` as LiteLLM does (`LiteLLM_ManagementEndpoint_MetadataFields`,
//! `litellm/proxy/_types.py`); `soft_budget` lives on a budget tier (`budget_id`), created for the key when
//! it has none. Absent fields leave the row as it is; `null` clears `max_budget`, `tpm_limit`,
//! `rpm_limit` and `max_parallel_requests` (no limit), as LiteLLM lets `/key/update` remove a
//! budget; negative values are refused. `budget_duration: null` is "not given": the window
//! stays as it is, as in LiteLLM, whose `prepare_key_update_data` acts on a non-empty
//! `budget_duration` string only (and whose UI sends `null` for the fields left alone).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};
use tollgate_governance::admission::WindowPlan;
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::Entities;
use tollgate_governance::store::key_extras::{self, TempBudgetExpiry};
use tollgate_governance::store::{BudgetTier, ModelBudget, VerificationToken};

use crate::error::{ApiError, ApiResult};
use crate::extract;
use crate::tier::{TierLimits, tier_window, tier_with};

/// Body of the key routes. No `Debug`: `key` / `new_key` may hold a plaintext key.
#[derive(Default, Deserialize)]
#[serde(default)]
pub(crate) struct KeyFields {
    /// `/key/generate`: a custom `sk-…` key; other routes: the key or its hash.
    pub key: Option<String>,
    /// `/key/regenerate`: a custom new key.
    pub new_key: Option<String>,
    pub key_alias: Option<String>,
    /// Expiry from now (`30s` … `1mo`); `"-1"` = never.
    pub duration: Option<String>,
    pub models: Option<Vec<String>>,
    pub aliases: Option<BTreeMap<String, String>>,
    pub config: Option<Map<String, Value>>,
    pub permissions: Option<Map<String, Value>>,
    pub spend: Option<f64>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    pub max_budget: Option<Option<f64>>,
    pub soft_budget: Option<f64>,
    /// Absent or `null`: the window is left as it is (LiteLLM's rule, see the module docs).
    pub budget_duration: Option<String>,
    pub budget_id: Option<String>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    pub tpm_limit: Option<Option<i64>>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    pub rpm_limit: Option<Option<i64>>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    pub max_parallel_requests: Option<Option<i64>>,
    pub model_max_budget: Option<Map<String, Value>>,
    pub model_rpm_limit: Option<BTreeMap<String, u64>>,
    pub model_tpm_limit: Option<BTreeMap<String, u64>>,
    pub metadata: Option<Map<String, Value>>,
    pub blocked: Option<bool>,
    pub user_id: Option<String>,
    pub team_id: Option<String>,
    pub organization_id: Option<String>,
    pub tags: Option<Vec<String>>,
    pub key_type: Option<String>,
    /// USD added to `max_budget` until `temp_budget_expiry`; only with it.
    pub temp_budget_increase: Option<f64>,
    /// ISO 8601 date or date-time ending the increase; only with `temp_budget_increase`.
    pub temp_budget_expiry: Option<String>,
    /// `{"<request tag>": <requests per minute>}` for this key.
    pub tag_rpm_limit: Option<BTreeMap<String, u64>>,
}

/// What applying the fields needs beyond the row.
#[derive(Debug, Default)]
pub(crate) struct KeyPlan {
    /// A budget tier to write with the key (its `soft_budget`).
    pub tier: Option<BudgetTier>,
    /// The key's budget window change (its own `budget_duration`, else its tier's), already
    /// written into the row's `spend` / `budget_reset_at`; applied to the counters once saved.
    pub window: Option<WindowPlan>,
    /// Window changes of per-model budgets (`model_max_budget` entries given a first or a
    /// different `time_period`), by model group.
    pub model_windows: Vec<(String, WindowPlan)>,
}

/// The budget window a key is counted under: its own `budget_duration`, else its tier's.
pub(crate) fn key_window(
    e: &Entities,
    row: &VerificationToken,
    new_tier: Option<&BudgetTier>,
) -> Option<BudgetDuration> {
    row.limits().budget_duration.or_else(|| {
        let tier = match new_tier {
            Some(t) if row.budget_id.as_deref() == Some(t.budget_id.as_str()) => Some(t),
            _ => e.budget(row.budget_id.as_deref()).map(|t| t.as_ref()),
        };
        tier_window(tier)
    })
}

/// The window of each per-model budget of a `model_max_budget` map, by model group.
fn model_windows(m: &Value) -> BTreeMap<String, Option<BudgetDuration>> {
    m.as_object()
        .map(|o| {
            o.keys()
                .map(|k| (k.clone(), ModelBudget::of(m, k).and_then(|b| b.duration)))
                .collect()
        })
        .unwrap_or_default()
}

/// `key_type` values LiteLLM accepts.
const KEY_TYPES: [&str; 4] = ["llm_api", "management", "read_only", "default"];

/// An empty JSON object (LiteLLM's default for the key's JSON columns).
pub(crate) fn empty() -> Value {
    Value::Object(Map::new())
}

/// A new key row with LiteLLM's defaults.
pub(crate) fn new_row(
    token: String,
    key_name: String,
    now: DateTime<Utc>,
    by: &str,
) -> VerificationToken {
    VerificationToken {
        token,
        key_name: Some(key_name),
        aliases: empty(),
        config: empty(),
        permissions: empty(),
        model_max_budget: empty(),
        model_spend: empty(),
        metadata: empty(),
        created_at: Some(now),
        created_by: Some(by.to_owned()),
        updated_at: Some(now),
        updated_by: Some(by.to_owned()),
        ..VerificationToken::default()
    }
}

impl KeyFields {
    /// Applies the fields to `row` at `now`, checking references against the cache.
    /// `creating` = `/key/generate` (metadata replaced rather than merged).
    ///
    /// Errors: 400 for a bad duration, an unknown `team_id` / `budget_id` /
    /// `organization_id`, a `key_alias` another key has, an unknown `key_type`, a bad
    /// `model_max_budget`.
    pub fn apply(
        &self,
        e: &Entities,
        row: &mut VerificationToken,
        now: DateTime<Utc>,
        by: &str,
        creating: bool,
    ) -> ApiResult<KeyPlan> {
        let mut plan = KeyPlan::default();
        let window_before = key_window(e, row, None);
        let models_before = model_windows(&row.model_max_budget);
        if let Some(a) = &self.key_alias {
            if e.keys
                .values()
                .any(|k| k.token != row.token && k.key_alias.as_deref() == Some(a.as_str()))
            {
                return Err(ApiError::bad_request(format!(
                    "Unique key aliases across all keys are required. key_alias={a} already exists"
                )));
            }
            row.key_alias = Some(a.clone());
        }
        match self.duration.as_deref() {
            None => {}
            Some("-1") => row.expires = None,
            Some(d) => {
                row.expires = extract::duration("duration", Some(d))?.map(|d| d.add_to(now));
            }
        }
        if let Some(d) = extract::duration("budget_duration", self.budget_duration.as_deref())? {
            row.budget_duration = Some(d.to_string());
        }
        if let Some(id) = &self.budget_id {
            // A key without its own window follows its tier's (planned below, so
            // `budget_reset_at` is known from the start)
            if !e.budgets.contains_key(id) {
                return Err(ApiError::bad_request(format!(
                    "budget_id={id} does not exist; create it with /budget/new"
                )));
            }
            row.budget_id = Some(id.clone());
        }
        if let Some(t) = &self.team_id {
            if !e.teams.contains_key(t) {
                return Err(ApiError::bad_request(format!(
                    "Team not found, passed team_id={t}"
                )));
            }
            row.team_id = Some(t.clone());
        }
        if let Some(o) = &self.organization_id {
            if !e.organizations.contains_key(o) {
                return Err(ApiError::bad_request(format!(
                    "Organization not found, passed organization_id={o}"
                )));
            }
            row.organization_id = Some(o.clone());
        }
        if let Some(t) = &self.key_type {
            if !KEY_TYPES.contains(&t.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "Invalid key_type={t}; expected one of {KEY_TYPES:?}"
                )));
            }
            row.key_type = Some(t.clone());
        }
        if let Some(m) = &self.model_max_budget {
            extract::model_max_budget(m)?;
            row.model_max_budget = Value::Object(m.clone());
        }
        if let Some(m) = &self.models {
            row.models = m.clone();
        }
        if let Some(a) = &self.aliases {
            row.aliases = Value::Object(
                a.iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect(),
            );
        }
        if let Some(c) = &self.config {
            row.config = Value::Object(c.clone());
        }
        if let Some(p) = &self.permissions {
            row.permissions = Value::Object(p.clone());
        }
        if let Some(s) = self.spend {
            row.spend = s;
        }
        extract::set_limit("max_budget", &mut row.max_budget, self.max_budget)?;
        extract::set_limit("tpm_limit", &mut row.tpm_limit, self.tpm_limit)?;
        extract::set_limit("rpm_limit", &mut row.rpm_limit, self.rpm_limit)?;
        extract::set_limit(
            "max_parallel_requests",
            &mut row.max_parallel_requests,
            self.max_parallel_requests,
        )?;
        if let Some(b) = self.blocked {
            row.blocked = Some(b);
        }
        if let Some(u) = &self.user_id {
            row.user_id = Some(u.clone());
        }
        let temp = self.temp_budget()?;
        row.metadata = self.metadata_onto(&row.metadata, creating, temp);
        if let Some(soft) = self.soft_budget {
            plan.tier = Some(soft_budget_tier(e, row, soft, now, by));
            row.budget_id = plan.tier.as_ref().map(|t| t.budget_id.clone());
        }
        let window_after = key_window(e, row, plan.tier.as_ref());
        plan.window = WindowPlan::for_update(window_before, window_after, now);
        if let Some(w) = &plan.window {
            // an explicit `spend` is the spend of the new window
            let mut spend = row.spend;
            w.apply_to(&mut spend, &mut row.budget_reset_at);
            if self.spend.is_none() {
                row.spend = spend;
            }
        }
        if self.model_max_budget.is_some() {
            for (model, after) in model_windows(&row.model_max_budget) {
                let before = models_before.get(&model).copied().flatten();
                if let Some(w) = WindowPlan::for_update(before, after, now) {
                    plan.model_windows.push((model, w));
                }
            }
        }
        row.updated_at = Some(now);
        row.updated_by = Some(by.to_owned());
        Ok(plan)
    }

    /// `temp_budget_increase` (USD) with `temp_budget_expiry` in its stored form (Python's
    /// `isoformat()`), or `None` when neither is given. LiteLLM's `UpdateKeyRequest` requires
    /// the two together (`validate_temp_budget`, `litellm/proxy/_types.py`).
    ///
    /// Errors: 400 for one without the other, an increase that is negative or not finite, an
    /// expiry that is not an ISO 8601 date or date-time.
    fn temp_budget(&self) -> ApiResult<Option<(f64, String)>> {
        let (inc, exp) = match (
            self.temp_budget_increase,
            self.temp_budget_expiry.as_deref(),
        ) {
            (None, None) => return Ok(None),
            (Some(i), Some(e)) => (i, e),
            _ => {
                return Err(ApiError::bad_request(
                    "temp_budget_increase and temp_budget_expiry must be set together",
                ));
            }
        };
        if !inc.is_finite() || inc < 0.0 {
            return Err(ApiError::bad_request(format!(
                "temp_budget_increase must be a finite amount >= 0 (USD), got {inc}"
            )));
        }
        let expiry =
            TempBudgetExpiry::parse(exp).map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(Some((inc, expiry.isoformat())))
    }

    /// The key's new metadata: the body's `metadata` (merged into the old one on updates, as
    /// LiteLLM's `prepare_metadata_fields`), then `model_rpm_limit`, `model_tpm_limit`, `tags`,
    /// `tag_rpm_limit`, `temp_budget_increase` and `temp_budget_expiry` (`temp`).
    fn metadata_onto(&self, old: &Value, creating: bool, temp: Option<(f64, String)>) -> Value {
        let mut m = match (creating, old) {
            (false, Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        if let Some(new) = &self.metadata {
            for (k, v) in new {
                m.insert(k.clone(), v.clone());
            }
        }
        let limits = |l: &BTreeMap<String, u64>| {
            Value::Object(
                l.iter()
                    .map(|(k, v)| (k.clone(), Value::from(*v)))
                    .collect(),
            )
        };
        if let Some(l) = &self.model_rpm_limit {
            m.insert("model_rpm_limit".into(), limits(l));
        }
        if let Some(l) = &self.model_tpm_limit {
            m.insert("model_tpm_limit".into(), limits(l));
        }
        if let Some(t) = &self.tags {
            m.insert("tags".into(), Value::from(t.clone()));
        }
        if let Some(l) = &self.tag_rpm_limit {
            m.insert(key_extras::TAG_RPM_LIMIT.into(), limits(l));
        }
        if let Some((inc, exp)) = temp {
            m.insert(key_extras::TEMP_BUDGET_INCREASE.into(), Value::from(inc));
            m.insert(key_extras::TEMP_BUDGET_EXPIRY.into(), Value::from(exp));
        }
        Value::Object(m)
    }
}

/// The tier holding a key's `soft_budget`: its linked tier with the new value, else a new one
/// (LiteLLM's `/key/generate` creates a `LiteLLM_BudgetTable` row for `soft_budget`).
fn soft_budget_tier(
    e: &Entities,
    row: &VerificationToken,
    soft: f64,
    now: DateTime<Utc>,
    by: &str,
) -> BudgetTier {
    let (mut t, _) = tier_with(
        e.budget(row.budget_id.as_deref()).map(|t| t.as_ref()),
        &TierLimits::default(),
        None,
        now,
        by,
    );
    t.soft_budget = Some(soft);
    t
}

/// The tier of a row, if linked (for `litellm_budget_table`).
pub(crate) fn tier_of(e: &Entities, budget_id: Option<&str>) -> Option<Arc<BudgetTier>> {
    e.budget(budget_id).cloned()
}
