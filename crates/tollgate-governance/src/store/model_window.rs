//! Where each per-model budget window of a key ends: `"tollgate_model_budget_window"`, one row
//! per (key hash, budget model) whose `model_max_budget` entry has a `time_period`.
//!
//! LiteLLM keeps these windows in its cache only (a restart without Redis starts every one
//! again at 0), and its tables have no column for them; the window's spend itself stays in the
//! key's `model_spend` (`{"<budget model>": <USD>}`), which LiteLLM and its tools read as plain
//! numbers. This table, Tollgate's own (LiteLLM never reads it), adds the one fact a restart
//! needs: the end of the window that spend belongs to. Both are written behind in the same
//! transaction from the same counter snapshot, so the start-up seed ([`crate::runtime`]) takes
//! the window's spend from `model_spend` while that window has not ended, and 0 once it has,
//! without summing spend logs. Should the table be gone (a LiteLLM `prisma db push` may drop
//! tables its schema does not know), the next start's migration creates it again, and a
//! windowed entry without a row is re-derived once from its spend logs.

use chrono::{DateTime, Utc};

use super::StoreError;
use super::codec::{GetCol, ToRow, Val};
use super::schema::{ColType, Table};

/// `"tollgate_model_budget_window"`: `token` (key hash), `model` (the `model_max_budget` entry
/// name), `budget_reset_at` (UTC).
pub const MODEL_BUDGET_WINDOW: Table = Table {
    name: "tollgate_model_budget_window",
    primary_key: &["token", "model"],
    columns: &[
        ("token", ColType::Text, ""),
        ("model", ColType::Text, ""),
        ("budget_reset_at", ColType::Time, ""),
    ],
};

/// One row of [`MODEL_BUDGET_WINDOW`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelBudgetWindow {
    /// Hex SHA-256 of the key.
    pub token: String,
    /// The budget model: the name of the key's `model_max_budget` entry.
    pub model: String,
    /// When the window whose spend `model_spend[model]` holds ends.
    pub budget_reset_at: Option<DateTime<Utc>>,
}

impl ToRow for ModelBudgetWindow {
    const TABLE: &'static Table = &MODEL_BUDGET_WINDOW;
    fn to_row(&self) -> Vec<Val> {
        vec![
            Val::Text(Some(self.token.clone())),
            Val::Text(Some(self.model.clone())),
            Val::Time(self.budget_reset_at),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(ModelBudgetWindow {
            token: r.text("token")?.unwrap_or_default(),
            model: r.text("model")?.unwrap_or_default(),
            budget_reset_at: r.time("budget_reset_at")?,
        })
    }
}

/// The window row a per-model counter snapshot writes: `Some` for a scope with a window end
/// (`model_per_key` scope of a windowed entry), `None` otherwise.
pub(crate) fn window_row(
    scope: &crate::admission::ScopeKey,
    budget_reset_at: Option<DateTime<Utc>>,
) -> Option<ModelBudgetWindow> {
    let (token, model) = super::model_spend_target(scope)?;
    budget_reset_at.map(|at| ModelBudgetWindow {
        token: token.to_owned(),
        model: model.to_owned(),
        budget_reset_at: Some(at),
    })
}
