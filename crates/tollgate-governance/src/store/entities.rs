//! Governance entities, shaped like LiteLLM's Prisma models (litellm-surface §6.2) so rows map
//! one-to-one onto `"LiteLLM_*"` tables and serialize to LiteLLM's JSON field names.
//! Money is USD (`f64`), limits are per 60 s window, times are UTC.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::admission::Limits;
use crate::duration::BudgetDuration;

/// Parses an optional LiteLLM duration string; an invalid one is treated as absent.
fn duration(s: &Option<String>) -> Option<BudgetDuration> {
    s.as_deref().and_then(|d| d.parse().ok())
}

/// `"LiteLLM_VerificationToken"`: a virtual key. `token` is the hex SHA-256 of the key; the
/// plaintext is never stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VerificationToken {
    /// Hex SHA-256 of the full `sk-...` key (primary key).
    pub token: String,
    /// Masked key, `sk-...abcd`.
    pub key_name: Option<String>,
    /// Human alias.
    pub key_alias: Option<String>,
    /// Spend in the current budget window, USD.
    pub spend: f64,
    /// Cap, USD.
    pub max_budget: Option<f64>,
    /// Window of `max_budget` (`30s` … `1mo`).
    pub budget_duration: Option<String>,
    /// Next reset of `spend`.
    pub budget_reset_at: Option<DateTime<Utc>>,
    /// Expiry; `None` = never.
    pub expires: Option<DateTime<Utc>>,
    /// Allowed model names / access groups / wildcards (`[]` = everything the owner may use).
    pub models: Vec<String>,
    /// `{"alias": "model group"}`.
    pub aliases: Value,
    /// Free-form config JSON.
    pub config: Value,
    /// Owning internal user.
    pub user_id: Option<String>,
    /// Owning team.
    pub team_id: Option<String>,
    /// Owning organization.
    pub organization_id: Option<String>,
    /// Linked budget tier (`"LiteLLM_BudgetTable".budget_id`).
    pub budget_id: Option<String>,
    /// Permissions JSON.
    pub permissions: Value,
    /// Requests in flight at once.
    pub max_parallel_requests: Option<i64>,
    /// Tokens per minute.
    pub tpm_limit: Option<i64>,
    /// Requests per minute.
    pub rpm_limit: Option<i64>,
    /// Per-model budgets, as given: `{"model": 1.0}` or
    /// `{"model": {"budget_limit": 1.0, "time_period": "1d"}}` ([`super::model_budget`]).
    pub model_max_budget: Value,
    /// `{"model": <USD>}`: each budgeted model's spend in its window (written behind).
    pub model_spend: Value,
    /// Metadata JSON (LiteLLM keeps `model_rpm_limit` / `model_tpm_limit` here too).
    pub metadata: Value,
    /// Blocked keys are refused with 401.
    pub blocked: Option<bool>,
    /// `llm_api`, `management`, `read_only`, `default`.
    pub key_type: Option<String>,
    /// Creation time.
    pub created_at: Option<DateTime<Utc>>,
    /// Creator (user id or `litellm-proxy-master-key` alias, never a key).
    pub created_by: Option<String>,
    /// Last update.
    pub updated_at: Option<DateTime<Utc>>,
    /// Last updater.
    pub updated_by: Option<String>,
}

impl VerificationToken {
    /// The key's own limits (merge with its budget tier via [`Limits::tighter`]).
    pub fn limits(&self) -> Limits {
        Limits {
            max_budget: self.max_budget,
            budget_duration: duration(&self.budget_duration),
            tpm_limit: self.tpm_limit.and_then(|v| u64::try_from(v).ok()),
            rpm_limit: self.rpm_limit.and_then(|v| u64::try_from(v).ok()),
            max_parallel_requests: self
                .max_parallel_requests
                .and_then(|v| u64::try_from(v).ok()),
        }
    }

    /// True when `expires` is set and not after `now`.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires.is_some_and(|e| e <= now)
    }

    /// The per-model limits of this key for `model_group`: its `model_max_budget` entry
    /// (either LiteLLM shape, see [`super::model_budget`]) and `metadata.model_rpm_limit` /
    /// `metadata.model_tpm_limit`; `None` when none names the group.
    pub fn model_limits_for(&self, model_group: &str) -> Option<Limits> {
        super::model_budget::model_limits_for(&self.model_max_budget, &self.metadata, model_group)
    }

    /// The per-model scopes of a request named `names` on this key: the governing
    /// `model_max_budget` entry (most specific name first) and per-model rate limits
    /// ([`super::model_budget::model_scopes`]).
    pub fn model_scopes<'a>(
        &self,
        names: &super::model_budget::ModelNames<'a>,
    ) -> [Option<super::model_budget::ModelScope<'a>>; 2] {
        super::model_budget::model_scopes(&self.model_max_budget, &self.metadata, names)
    }
}

/// One entry of `members_with_roles`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TeamMember {
    /// Member user id.
    pub user_id: Option<String>,
    /// Member e-mail.
    pub user_email: Option<String>,
    /// `admin` or `user`.
    pub role: String,
}

/// `"LiteLLM_TeamTable"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Team {
    /// Primary key.
    pub team_id: String,
    /// Alias.
    pub team_alias: Option<String>,
    /// Organization.
    pub organization_id: Option<String>,
    /// Admin user ids.
    pub admins: Vec<String>,
    /// Member user ids.
    pub members: Vec<String>,
    /// Members with roles.
    pub members_with_roles: Vec<TeamMember>,
    /// Metadata JSON (also carries `model_rpm_limit` / `model_tpm_limit`).
    pub metadata: Value,
    /// Cap, USD.
    pub max_budget: Option<f64>,
    /// Alert threshold, USD (alerts only).
    pub soft_budget: Option<f64>,
    /// Spend in the current window, USD.
    pub spend: f64,
    /// Allowed models / access groups.
    pub models: Vec<String>,
    /// Requests in flight.
    pub max_parallel_requests: Option<i64>,
    /// Tokens per minute.
    pub tpm_limit: Option<i64>,
    /// Requests per minute.
    pub rpm_limit: Option<i64>,
    /// Budget window.
    pub budget_duration: Option<String>,
    /// Next reset.
    pub budget_reset_at: Option<DateTime<Utc>>,
    /// Blocked teams' keys are refused.
    pub blocked: bool,
    /// `{"model": spend}`.
    pub model_spend: Value,
    /// Per-model budgets.
    pub model_max_budget: Value,
    /// Creation time.
    pub created_at: Option<DateTime<Utc>>,
    /// Last update.
    pub updated_at: Option<DateTime<Utc>>,
}

impl Team {
    /// The team's limits.
    pub fn limits(&self) -> Limits {
        Limits {
            max_budget: self.max_budget,
            budget_duration: duration(&self.budget_duration),
            tpm_limit: self.tpm_limit.and_then(|v| u64::try_from(v).ok()),
            rpm_limit: self.rpm_limit.and_then(|v| u64::try_from(v).ok()),
            max_parallel_requests: self
                .max_parallel_requests
                .and_then(|v| u64::try_from(v).ok()),
        }
    }
}

/// `"LiteLLM_UserTable"`: an internal user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct User {
    /// Primary key.
    pub user_id: String,
    /// Alias.
    pub user_alias: Option<String>,
    /// E-mail.
    pub user_email: Option<String>,
    /// `proxy_admin`, `proxy_admin_viewer`, `internal_user`, `internal_user_viewer`, ...
    pub user_role: Option<String>,
    /// Team ids.
    pub teams: Vec<String>,
    /// Organization.
    pub organization_id: Option<String>,
    /// Cap, USD.
    pub max_budget: Option<f64>,
    /// Spend in the current window, USD.
    pub spend: f64,
    /// Allowed models.
    pub models: Vec<String>,
    /// Metadata JSON.
    pub metadata: Value,
    /// Requests in flight.
    pub max_parallel_requests: Option<i64>,
    /// Tokens per minute.
    pub tpm_limit: Option<i64>,
    /// Requests per minute.
    pub rpm_limit: Option<i64>,
    /// Budget window.
    pub budget_duration: Option<String>,
    /// Next reset.
    pub budget_reset_at: Option<DateTime<Utc>>,
    /// `{"model": spend}`.
    pub model_spend: Value,
    /// Per-model budgets.
    pub model_max_budget: Value,
    /// The login password for the admin UI, hashed as LiteLLM's `hash_token` does (hex
    /// SHA-256, `litellm/proxy/_types.py`); never the password itself. Never serialized into
    /// an answer (`/user/info`, `/user/list`, ...).
    #[serde(skip_serializing)]
    pub password: Option<String>,
}

impl User {
    /// The user's limits.
    pub fn limits(&self) -> Limits {
        Limits {
            max_budget: self.max_budget,
            budget_duration: duration(&self.budget_duration),
            tpm_limit: self.tpm_limit.and_then(|v| u64::try_from(v).ok()),
            rpm_limit: self.rpm_limit.and_then(|v| u64::try_from(v).ok()),
            max_parallel_requests: self
                .max_parallel_requests
                .and_then(|v| u64::try_from(v).ok()),
        }
    }
}

/// `"LiteLLM_EndUserTable"`: an end user / customer. Limits come from its budget tier.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EndUser {
    /// Primary key (the request's `user` / `x-litellm-end-user-id`).
    pub user_id: String,
    /// Alias.
    pub alias: Option<String>,
    /// Spend, USD.
    pub spend: f64,
    /// `eu` / `us`.
    pub allowed_model_region: Option<String>,
    /// Model used when the request names none.
    pub default_model: Option<String>,
    /// Budget tier.
    pub budget_id: Option<String>,
    /// Blocked end users are refused.
    pub blocked: bool,
    /// The models this end user may call (same entries as a key's `models`: names, access
    /// groups, wildcards); empty allows every model the key allows. LiteLLM's customer
    /// allow-list (`customer_model_access_denied`).
    pub models: Vec<String>,
}

/// `"LiteLLM_BudgetTable"`: a budget tier, referenced by `budget_id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BudgetTier {
    /// Primary key.
    pub budget_id: String,
    /// Cap, USD.
    pub max_budget: Option<f64>,
    /// Alert threshold, USD.
    pub soft_budget: Option<f64>,
    /// Requests in flight.
    pub max_parallel_requests: Option<i64>,
    /// Tokens per minute.
    pub tpm_limit: Option<i64>,
    /// Requests per minute.
    pub rpm_limit: Option<i64>,
    /// Per-model budgets.
    pub model_max_budget: Value,
    /// Budget window, inherited by keys without their own.
    pub budget_duration: Option<String>,
    /// Next reset.
    pub budget_reset_at: Option<DateTime<Utc>>,
    /// Creator.
    pub created_by: Option<String>,
    /// Last updater.
    pub updated_by: Option<String>,
    /// Creation time.
    pub created_at: Option<DateTime<Utc>>,
    /// Last update.
    pub updated_at: Option<DateTime<Utc>>,
}

impl BudgetTier {
    /// The tier's limits.
    pub fn limits(&self) -> Limits {
        Limits {
            max_budget: self.max_budget,
            budget_duration: duration(&self.budget_duration),
            tpm_limit: self.tpm_limit.and_then(|v| u64::try_from(v).ok()),
            rpm_limit: self.rpm_limit.and_then(|v| u64::try_from(v).ok()),
            max_parallel_requests: self
                .max_parallel_requests
                .and_then(|v| u64::try_from(v).ok()),
        }
    }
}

/// `"LiteLLM_TeamMembership"`: a user in a team, with its own spend and budget tier.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TeamMembership {
    /// User.
    pub user_id: String,
    /// Team.
    pub team_id: String,
    /// Spend in the team, USD.
    pub spend: f64,
    /// Per-member budget tier.
    pub budget_id: Option<String>,
}

/// `"LiteLLM_OrganizationTable"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Organization {
    /// Primary key.
    pub organization_id: String,
    /// Alias.
    pub organization_alias: Option<String>,
    /// Budget tier (required by LiteLLM).
    pub budget_id: Option<String>,
    /// Allowed models.
    pub models: Vec<String>,
    /// Spend, USD.
    pub spend: f64,
    /// Metadata JSON.
    pub metadata: Value,
    /// Creation time (`NOT NULL` in LiteLLM's schema, default now).
    pub created_at: Option<DateTime<Utc>>,
    /// Creator: a user id or the master-key alias (`NOT NULL` in LiteLLM's schema).
    pub created_by: Option<String>,
    /// Last update (`NOT NULL` in LiteLLM's schema, no default: Prisma's `@updatedAt`).
    pub updated_at: Option<DateTime<Utc>>,
    /// Last updater (`NOT NULL` in LiteLLM's schema).
    pub updated_by: Option<String>,
}

/// `"LiteLLM_TagTable"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tag {
    /// Primary key.
    pub tag_name: String,
    /// Description.
    pub description: Option<String>,
    /// Models the tag routes to.
    pub models: Vec<String>,
    /// Spend, USD.
    pub spend: f64,
    /// Budget tier.
    pub budget_id: Option<String>,
}

/// One `"LiteLLM_SpendLogs"` row (litellm-surface §6.3). `api_key` is the key **hash**.
/// Cached prompt tokens go to `metadata.additional_usage_values`
/// (`cache_read_input_tokens`, `cache_creation_input_tokens`), as LiteLLM has no column for them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpendLogRow {
    /// Primary key: the response id (`chatcmpl-…`) or the call id.
    pub request_id: String,
    /// `acompletion`, `aembedding`, `atext_completion`, `aresponses`, `anthropic_messages`, ...
    pub call_type: String,
    /// Hex SHA-256 of the key (never the key).
    pub api_key: String,
    /// Cost, USD.
    pub spend: f64,
    /// prompt + completion.
    pub total_tokens: i64,
    /// Prompt tokens, cached included.
    pub prompt_tokens: i64,
    /// Completion tokens.
    pub completion_tokens: i64,
    /// Request start.
    #[serde(rename = "startTime")]
    pub start_time: DateTime<Utc>,
    /// Request end.
    #[serde(rename = "endTime")]
    pub end_time: DateTime<Utc>,
    /// First token (time to first token).
    #[serde(rename = "completionStartTime")]
    pub completion_start_time: Option<DateTime<Utc>>,
    /// Upstream model.
    pub model: String,
    /// Deployment id (`model_info.id`).
    pub model_id: Option<String>,
    /// Public model group name.
    pub model_group: Option<String>,
    /// Provider.
    pub custom_llm_provider: Option<String>,
    /// Upstream base URL (no query string).
    pub api_base: Option<String>,
    /// Internal user id.
    pub user: Option<String>,
    /// Team id.
    pub team_id: Option<String>,
    /// Organization id.
    pub organization_id: Option<String>,
    /// End user id.
    pub end_user: Option<String>,
    /// Metadata JSON (`user_api_key_alias`, `additional_usage_values`, `status`, errors).
    pub metadata: Value,
    /// `"True"` / `"False"`.
    pub cache_hit: Option<String>,
    /// Cache key.
    pub cache_key: Option<String>,
    /// Tags, a JSON list.
    pub request_tags: Value,
    /// Caller IP.
    pub requester_ip_address: Option<String>,
    /// Session id.
    pub session_id: Option<String>,
    /// `success` / `failure`.
    pub status: Option<String>,
    /// The call id (`x-litellm-call-id`).
    pub litellm_call_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_limits_and_per_model_limits() {
        let k = VerificationToken {
            max_budget: Some(10.0),
            budget_duration: Some("1d".into()),
            tpm_limit: Some(1000),
            rpm_limit: Some(-1),
            model_max_budget: json!({"gpt-4o": {"max_budget": 2.5, "budget_duration": "1h"}}),
            metadata: json!({"model_rpm_limit": {"gpt-4o": 5, "claude": 7}, "model_tpm_limit": {"claude": 900}}),
            ..VerificationToken::default()
        };
        let l = k.limits();
        assert_eq!(l.max_budget, Some(10.0));
        assert_eq!(l.budget_duration, Some(BudgetDuration::Days(1)));
        assert_eq!((l.tpm_limit, l.rpm_limit), (Some(1000), None));
        let m = k.model_limits_for("gpt-4o").unwrap();
        assert_eq!(m.max_budget, Some(2.5));
        assert_eq!(m.budget_duration, Some(BudgetDuration::Hours(1)));
        assert_eq!(m.rpm_limit, Some(5));
        let c = k.model_limits_for("claude").unwrap();
        assert_eq!((c.rpm_limit, c.tpm_limit), (Some(7), Some(900)));
        assert_eq!(k.model_limits_for("other"), None);
    }

    #[test]
    fn expiry_and_litellm_json_names() {
        let now = Utc::now();
        let k = VerificationToken {
            expires: Some(now),
            ..VerificationToken::default()
        };
        assert!(k.is_expired(now));
        assert!(!VerificationToken::default().is_expired(now));
        let row = SpendLogRow {
            request_id: "chatcmpl-1".into(),
            ..SpendLogRow::default()
        };
        let v = serde_json::to_value(&row).unwrap();
        assert!(v.get("startTime").is_some() && v.get("completionStartTime").is_some());
    }
}
