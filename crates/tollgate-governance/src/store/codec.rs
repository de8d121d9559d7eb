//! Dialect-neutral row values: entities turn into [`Val`] lists in their table's column order
//! ([`ToRow`]) and are read back through the [`GetCol`] accessor each backend implements.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::StoreError;
use super::entities::*;
use super::schema::{self, Table};

/// One column value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// Text.
    Text(Option<String>),
    /// Float.
    Float(Option<f64>),
    /// Integer.
    Int(Option<i64>),
    /// Boolean.
    Bool(Option<bool>),
    /// JSON (`Null` stored as SQL NULL).
    Json(Value),
    /// Text array.
    Arr(Vec<String>),
    /// Timestamp.
    Time(Option<DateTime<Utc>>),
}

/// Reads typed columns from a backend row. Missing or NULL columns read as `None` / empty.
pub trait GetCol {
    /// Text column.
    fn text(&self, col: &str) -> Result<Option<String>, StoreError>;
    /// Float column.
    fn float(&self, col: &str) -> Result<Option<f64>, StoreError>;
    /// Integer column.
    fn int(&self, col: &str) -> Result<Option<i64>, StoreError>;
    /// Boolean column.
    fn boolean(&self, col: &str) -> Result<Option<bool>, StoreError>;
    /// JSON column (`Value::Null` when NULL).
    fn json(&self, col: &str) -> Result<Value, StoreError>;
    /// Text-array column.
    fn arr(&self, col: &str) -> Result<Vec<String>, StoreError>;
    /// Timestamp column.
    fn time(&self, col: &str) -> Result<Option<DateTime<Utc>>, StoreError>;
}

/// An entity stored in one table.
pub trait ToRow: Sized {
    /// Its table.
    const TABLE: &'static Table;
    /// Values in the table's column order.
    fn to_row(&self) -> Vec<Val>;
    /// Reads it back.
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError>;
}

fn s(v: &Option<String>) -> Val {
    Val::Text(v.clone())
}

fn t(v: &str) -> Val {
    Val::Text(Some(v.to_owned()))
}

/// A JSON-object column LiteLLM's schema defaults to `'{}'`: a NULL (a row
/// written by hand, or by a SQLite store before it wrote `{}`) reads as `{}`, so an entity
/// answers the same whichever store it came from and across restarts.
fn obj(r: &dyn GetCol, col: &str) -> Result<Value, StoreError> {
    Ok(match r.json(col)? {
        Value::Null => Value::Object(serde_json::Map::new()),
        v => v,
    })
}

fn req(r: &dyn GetCol, col: &str) -> Result<String, StoreError> {
    Ok(r.text(col)?.unwrap_or_default())
}

impl ToRow for VerificationToken {
    const TABLE: &'static Table = &schema::VERIFICATION_TOKEN;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.token),
            s(&self.key_name),
            s(&self.key_alias),
            Val::Float(Some(self.spend)),
            Val::Float(self.max_budget),
            s(&self.budget_duration),
            Val::Time(self.budget_reset_at),
            Val::Time(self.expires),
            Val::Arr(self.models.clone()),
            Val::Json(self.aliases.clone()),
            Val::Json(self.config.clone()),
            s(&self.user_id),
            s(&self.team_id),
            s(&self.organization_id),
            s(&self.budget_id),
            Val::Json(self.permissions.clone()),
            Val::Int(self.max_parallel_requests),
            Val::Int(self.tpm_limit),
            Val::Int(self.rpm_limit),
            Val::Json(self.model_max_budget.clone()),
            Val::Json(self.model_spend.clone()),
            Val::Json(self.metadata.clone()),
            Val::Bool(self.blocked),
            s(&self.key_type),
            Val::Time(self.created_at),
            s(&self.created_by),
            Val::Time(self.updated_at),
            s(&self.updated_by),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            token: req(r, "token")?,
            key_name: r.text("key_name")?,
            key_alias: r.text("key_alias")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            max_budget: r.float("max_budget")?,
            budget_duration: r.text("budget_duration")?,
            budget_reset_at: r.time("budget_reset_at")?,
            expires: r.time("expires")?,
            models: r.arr("models")?,
            aliases: obj(r, "aliases")?,
            config: obj(r, "config")?,
            user_id: r.text("user_id")?,
            team_id: r.text("team_id")?,
            organization_id: r.text("organization_id")?,
            budget_id: r.text("budget_id")?,
            permissions: obj(r, "permissions")?,
            max_parallel_requests: r.int("max_parallel_requests")?,
            tpm_limit: r.int("tpm_limit")?,
            rpm_limit: r.int("rpm_limit")?,
            model_max_budget: obj(r, "model_max_budget")?,
            model_spend: obj(r, "model_spend")?,
            metadata: obj(r, "metadata")?,
            blocked: r.boolean("blocked")?,
            key_type: r.text("key_type")?,
            created_at: r.time("created_at")?,
            created_by: r.text("created_by")?,
            updated_at: r.time("updated_at")?,
            updated_by: r.text("updated_by")?,
        })
    }
}

impl ToRow for Team {
    const TABLE: &'static Table = &schema::TEAM;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.team_id),
            s(&self.team_alias),
            s(&self.organization_id),
            Val::Arr(self.admins.clone()),
            Val::Arr(self.members.clone()),
            Val::Json(serde_json::to_value(&self.members_with_roles).unwrap_or(Value::Null)),
            Val::Json(self.metadata.clone()),
            Val::Float(self.max_budget),
            Val::Float(self.soft_budget),
            Val::Float(Some(self.spend)),
            Val::Arr(self.models.clone()),
            Val::Int(self.max_parallel_requests),
            Val::Int(self.tpm_limit),
            Val::Int(self.rpm_limit),
            s(&self.budget_duration),
            Val::Time(self.budget_reset_at),
            Val::Bool(Some(self.blocked)),
            Val::Json(self.model_spend.clone()),
            Val::Json(self.model_max_budget.clone()),
            Val::Time(self.created_at),
            Val::Time(self.updated_at),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        let members = r.json("members_with_roles")?;
        Ok(Self {
            team_id: req(r, "team_id")?,
            team_alias: r.text("team_alias")?,
            organization_id: r.text("organization_id")?,
            admins: r.arr("admins")?,
            members: r.arr("members")?,
            members_with_roles: serde_json::from_value(members).unwrap_or_default(),
            metadata: obj(r, "metadata")?,
            max_budget: r.float("max_budget")?,
            soft_budget: r.float("soft_budget")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            models: r.arr("models")?,
            max_parallel_requests: r.int("max_parallel_requests")?,
            tpm_limit: r.int("tpm_limit")?,
            rpm_limit: r.int("rpm_limit")?,
            budget_duration: r.text("budget_duration")?,
            budget_reset_at: r.time("budget_reset_at")?,
            blocked: r.boolean("blocked")?.unwrap_or(false),
            model_spend: obj(r, "model_spend")?,
            model_max_budget: obj(r, "model_max_budget")?,
            created_at: r.time("created_at")?,
            updated_at: r.time("updated_at")?,
        })
    }
}

impl ToRow for User {
    const TABLE: &'static Table = &schema::USER;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.user_id),
            s(&self.user_alias),
            s(&self.user_email),
            s(&self.user_role),
            Val::Arr(self.teams.clone()),
            s(&self.organization_id),
            Val::Float(self.max_budget),
            Val::Float(Some(self.spend)),
            Val::Arr(self.models.clone()),
            Val::Json(self.metadata.clone()),
            Val::Int(self.max_parallel_requests),
            Val::Int(self.tpm_limit),
            Val::Int(self.rpm_limit),
            s(&self.budget_duration),
            Val::Time(self.budget_reset_at),
            Val::Json(self.model_spend.clone()),
            Val::Json(self.model_max_budget.clone()),
            s(&self.password),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            user_id: req(r, "user_id")?,
            user_alias: r.text("user_alias")?,
            user_email: r.text("user_email")?,
            user_role: r.text("user_role")?,
            teams: r.arr("teams")?,
            organization_id: r.text("organization_id")?,
            max_budget: r.float("max_budget")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            models: r.arr("models")?,
            metadata: obj(r, "metadata")?,
            max_parallel_requests: r.int("max_parallel_requests")?,
            tpm_limit: r.int("tpm_limit")?,
            rpm_limit: r.int("rpm_limit")?,
            budget_duration: r.text("budget_duration")?,
            budget_reset_at: r.time("budget_reset_at")?,
            model_spend: obj(r, "model_spend")?,
            model_max_budget: obj(r, "model_max_budget")?,
            password: r.text("password")?,
        })
    }
}

impl ToRow for EndUser {
    const TABLE: &'static Table = &schema::END_USER;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.user_id),
            s(&self.alias),
            Val::Float(Some(self.spend)),
            s(&self.allowed_model_region),
            s(&self.default_model),
            s(&self.budget_id),
            Val::Bool(Some(self.blocked)),
            Val::Arr(self.models.clone()),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            user_id: req(r, "user_id")?,
            alias: r.text("alias")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            allowed_model_region: r.text("allowed_model_region")?,
            default_model: r.text("default_model")?,
            budget_id: r.text("budget_id")?,
            blocked: r.boolean("blocked")?.unwrap_or(false),
            models: r.arr("models")?,
        })
    }
}

impl ToRow for BudgetTier {
    const TABLE: &'static Table = &schema::BUDGET;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.budget_id),
            Val::Float(self.max_budget),
            Val::Float(self.soft_budget),
            Val::Int(self.max_parallel_requests),
            Val::Int(self.tpm_limit),
            Val::Int(self.rpm_limit),
            Val::Json(self.model_max_budget.clone()),
            s(&self.budget_duration),
            Val::Time(self.budget_reset_at),
            Val::Time(self.created_at),
            s(&self.created_by),
            Val::Time(self.updated_at),
            s(&self.updated_by),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            budget_id: req(r, "budget_id")?,
            max_budget: r.float("max_budget")?,
            soft_budget: r.float("soft_budget")?,
            max_parallel_requests: r.int("max_parallel_requests")?,
            tpm_limit: r.int("tpm_limit")?,
            rpm_limit: r.int("rpm_limit")?,
            model_max_budget: obj(r, "model_max_budget")?,
            budget_duration: r.text("budget_duration")?,
            budget_reset_at: r.time("budget_reset_at")?,
            created_at: r.time("created_at")?,
            created_by: r.text("created_by")?,
            updated_at: r.time("updated_at")?,
            updated_by: r.text("updated_by")?,
        })
    }
}

impl ToRow for TeamMembership {
    const TABLE: &'static Table = &schema::TEAM_MEMBERSHIP;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.user_id),
            t(&self.team_id),
            Val::Float(Some(self.spend)),
            s(&self.budget_id),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            user_id: req(r, "user_id")?,
            team_id: req(r, "team_id")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            budget_id: r.text("budget_id")?,
        })
    }
}

impl ToRow for Organization {
    const TABLE: &'static Table = &schema::ORGANIZATION;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.organization_id),
            s(&self.organization_alias),
            s(&self.budget_id),
            Val::Arr(self.models.clone()),
            Val::Float(Some(self.spend)),
            Val::Json(self.metadata.clone()),
            Val::Time(self.created_at),
            s(&self.created_by),
            Val::Time(self.updated_at),
            s(&self.updated_by),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            organization_id: req(r, "organization_id")?,
            organization_alias: r.text("organization_alias")?,
            budget_id: r.text("budget_id")?,
            models: r.arr("models")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            metadata: obj(r, "metadata")?,
            created_at: r.time("created_at")?,
            created_by: r.text("created_by")?,
            updated_at: r.time("updated_at")?,
            updated_by: r.text("updated_by")?,
        })
    }
}

impl ToRow for Tag {
    const TABLE: &'static Table = &schema::TAG;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.tag_name),
            s(&self.description),
            Val::Arr(self.models.clone()),
            Val::Float(Some(self.spend)),
            s(&self.budget_id),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            tag_name: req(r, "tag_name")?,
            description: r.text("description")?,
            models: r.arr("models")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            budget_id: r.text("budget_id")?,
        })
    }
}

impl ToRow for SpendLogRow {
    const TABLE: &'static Table = &schema::SPEND_LOGS;
    fn to_row(&self) -> Vec<Val> {
        vec![
            t(&self.request_id),
            t(&self.call_type),
            t(&self.api_key),
            Val::Float(Some(self.spend)),
            Val::Int(Some(self.total_tokens)),
            Val::Int(Some(self.prompt_tokens)),
            Val::Int(Some(self.completion_tokens)),
            Val::Time(Some(self.start_time)),
            Val::Time(Some(self.end_time)),
            Val::Time(self.completion_start_time),
            t(&self.model),
            s(&self.model_id),
            s(&self.model_group),
            s(&self.custom_llm_provider),
            s(&self.api_base),
            s(&self.user),
            s(&self.team_id),
            s(&self.organization_id),
            s(&self.end_user),
            Val::Json(self.metadata.clone()),
            s(&self.cache_hit),
            s(&self.cache_key),
            Val::Json(self.request_tags.clone()),
            s(&self.requester_ip_address),
            s(&self.session_id),
            s(&self.status),
            s(&self.litellm_call_id),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            request_id: req(r, "request_id")?,
            call_type: req(r, "call_type")?,
            api_key: req(r, "api_key")?,
            spend: r.float("spend")?.unwrap_or(0.0),
            total_tokens: r.int("total_tokens")?.unwrap_or(0),
            prompt_tokens: r.int("prompt_tokens")?.unwrap_or(0),
            completion_tokens: r.int("completion_tokens")?.unwrap_or(0),
            start_time: r.time("startTime")?.unwrap_or_default(),
            end_time: r.time("endTime")?.unwrap_or_default(),
            completion_start_time: r.time("completionStartTime")?,
            model: req(r, "model")?,
            model_id: r.text("model_id")?,
            model_group: r.text("model_group")?,
            custom_llm_provider: r.text("custom_llm_provider")?,
            api_base: r.text("api_base")?,
            user: r.text("user")?,
            team_id: r.text("team_id")?,
            organization_id: r.text("organization_id")?,
            end_user: r.text("end_user")?,
            metadata: r.json("metadata")?,
            cache_hit: r.text("cache_hit")?,
            cache_key: r.text("cache_key")?,
            request_tags: r.json("request_tags")?,
            requester_ip_address: r.text("requester_ip_address")?,
            session_id: r.text("session_id")?,
            status: r.text("status")?,
            litellm_call_id: r.text("litellm_call_id")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_their_table_column_count() {
        assert_eq!(
            VerificationToken::default().to_row().len(),
            VerificationToken::TABLE.columns.len()
        );
        assert_eq!(Team::default().to_row().len(), Team::TABLE.columns.len());
        assert_eq!(User::default().to_row().len(), User::TABLE.columns.len());
        assert_eq!(
            EndUser::default().to_row().len(),
            EndUser::TABLE.columns.len()
        );
        assert_eq!(
            BudgetTier::default().to_row().len(),
            BudgetTier::TABLE.columns.len()
        );
        assert_eq!(
            TeamMembership::default().to_row().len(),
            TeamMembership::TABLE.columns.len()
        );
        assert_eq!(
            Organization::default().to_row().len(),
            Organization::TABLE.columns.len()
        );
        assert_eq!(Tag::default().to_row().len(), Tag::TABLE.columns.len());
        assert_eq!(
            SpendLogRow::default().to_row().len(),
            SpendLogRow::TABLE.columns.len()
        );
    }
}
