//! LiteLLM's proxy-budget user, `litellm-proxy-budget` (its `LITELLM_PROXY_BUDGET_NAME`): with
//! `litellm_settings.max_budget` set, LiteLLM writes a `"LiteLLM_UserTable"` row of that id at
//! start (`ProxyStartupEvent._add_proxy_budget_to_db`, litellm/proxy/proxy_server.py:
//! `max_budget`, `budget_duration`, no key) and adds every request's cost to its `spend`, so
//! `/user/info?user_id=litellm-proxy-budget` shows the whole proxy's spend against its budget.
//!
//! Tollgate keeps that budget in its proxy-wide counter and shows this user from it: the row
//! the database has (a LiteLLM database brings one) or a new one, with `max_budget` and
//! `budget_duration` from the config and `spend` / `budget_reset_at` from the counter. It
//! writes no row: the counter is the truth, and a row would only go stale.

use serde_json::{Map, Value, json};
use tollgate_governance::admission::ScopeKey;
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::User;

use crate::error::ApiResult;
use crate::{extract, live};

/// The proxy-budget user's id.
pub(crate) const PROXY_BUDGET_USER_ID: &str = "litellm-proxy-budget";

/// The proxy-budget user object (`stored`: its cached row, if any), or `None` without a
/// proxy `max_budget`. `spend` is USD in the proxy's current window. Errors: 503 (counters).
pub(crate) async fn object(
    gov: &Governance,
    stored: Option<&User>,
) -> ApiResult<Option<Map<String, Value>>> {
    let global = &gov.options().global;
    let Some(max) = global.max_budget else {
        return Ok(None);
    };
    let mut u = stored.cloned().unwrap_or_else(|| User {
        user_id: PROXY_BUDGET_USER_ID.to_owned(),
        metadata: json!({}),
        model_spend: json!({}),
        model_max_budget: json!({}),
        ..User::default()
    });
    u.max_budget = Some(max);
    u.budget_duration = global.budget_duration.map(|d| d.to_string());
    let (spend, reset) = live::window(gov, &ScopeKey::global(), global.budget_duration).await?;
    u.spend = spend;
    u.budget_reset_at = reset;
    let mut m = extract::object(&u);
    m.insert("spend".into(), Value::from(spend));
    if let Some(at) = reset {
        m.insert("budget_reset_at".into(), extract::time(at));
    }
    Ok(Some(m))
}
