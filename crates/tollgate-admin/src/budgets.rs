//! Budget tiers (`"LiteLLM_BudgetTable"`, litellm-surface §4.5): `POST /budget/new`,
//! `/budget/update`, `/budget/info` `{"budgets": [ids]}`, `/budget/delete` `{"id"}`,
//! `GET /budget/list`. Writes admin only; reads viewers too.
//!
//! A tier is referenced by `budget_id` from keys, customers, team memberships, organizations
//! and tags; its limits tighten theirs and keys without their own window inherit its
//! `budget_duration`. Units: `max_budget` / `soft_budget` USD, `tpm_limit` tokens per
//! minute, `rpm_limit` requests per minute.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value};
use tollgate_governance::admission::WindowPlan;
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::BudgetTier;

use crate::error::{ApiError, ApiResult};
use crate::write::Batch;
use crate::{AdminContext, access, extract, live};

/// The budget routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/budget/new", post(new))
        .route("/budget/update", post(update))
        .route("/budget/info", post(info))
        .route("/budget/list", get(list))
        .route("/budget/delete", post(delete))
}

/// Body of `/budget/new` and `/budget/update`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BudgetFields {
    budget_id: Option<String>,
    max_budget: Option<f64>,
    soft_budget: Option<f64>,
    max_parallel_requests: Option<i64>,
    tpm_limit: Option<i64>,
    rpm_limit: Option<i64>,
    budget_duration: Option<String>,
    model_max_budget: Option<Map<String, Value>>,
    budget_reset_at: Option<DateTime<Utc>>,
}

impl BudgetFields {
    /// Applies the fields; returns the window change of the scopes that follow the tier
    /// ([`WindowPlan`]: a first window starts at 0, the same one again is untouched, a
    /// different one keeps their spend; an explicit `budget_reset_at` moves the end of the
    /// window, keeping spend). Errors: 400.
    fn apply(
        &self,
        t: &mut BudgetTier,
        now: DateTime<Utc>,
        by: &str,
    ) -> ApiResult<Option<WindowPlan>> {
        let before = t.limits().budget_duration;
        let d = extract::duration("budget_duration", self.budget_duration.as_deref())?;
        if let Some(d) = d {
            t.budget_duration = Some(d.to_string());
        }
        let mut window = WindowPlan::for_update(before, d, now);
        if let Some(at) = self.budget_reset_at {
            window = t.limits().budget_duration.map(|duration| WindowPlan {
                duration,
                reset_at: at,
                restart: window.is_some_and(|w| w.restart),
            });
            t.budget_reset_at = Some(at);
        }
        if let Some(w) = &window {
            t.budget_reset_at = Some(w.reset_at);
        }
        if let Some(m) = &self.model_max_budget {
            extract::model_max_budget(m)?;
            t.model_max_budget = Value::Object(m.clone());
        }
        if let Some(v) = self.max_budget {
            t.max_budget = Some(v);
        }
        if let Some(v) = self.soft_budget {
            t.soft_budget = Some(v);
        }
        if let Some(v) = self.max_parallel_requests {
            t.max_parallel_requests = Some(v);
        }
        if let Some(v) = self.tpm_limit {
            t.tpm_limit = Some(v);
        }
        if let Some(v) = self.rpm_limit {
            t.rpm_limit = Some(v);
        }
        t.updated_at = Some(now);
        t.updated_by = Some(by.to_owned());
        Ok(window)
    }
}

fn row(t: &BudgetTier) -> Value {
    Value::Object(extract::object(t))
}

/// `POST /budget/new` → the tier row (`budget_id` a uuid when absent). Errors: 400 (bad
/// body, existing id), 401, 403, 500.
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/budget/new")?;
    let req: BudgetFields = extract::body(&body)?;
    let gov = &ctx.gov;
    let now = gov.admission().now();
    let by = who.actor();
    let mut t = BudgetTier {
        budget_id: req.budget_id.clone().unwrap_or_else(extract::new_id),
        model_max_budget: Value::Object(Map::new()),
        created_at: Some(now),
        created_by: Some(by.clone()),
        ..BudgetTier::default()
    };
    if gov.cache().read().budgets.contains_key(&t.budget_id) {
        return Err(ApiError::bad_request(format!(
            "Budget id = {} already exists",
            t.budget_id
        )));
    }
    req.apply(&mut t, now, &by)?;
    Batch {
        budgets: vec![t.clone()],
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    tracing::info!(budget_id = %t.budget_id, "budget tier created");
    Ok(Json(row(&t)))
}

/// `POST /budget/update` `{"budget_id", …fields}` → the tier row; in force for every linked
/// key / customer / member on the next request; a first `budget_duration` starts their windows
/// at 0, the same one again leaves them as they are, a different one keeps their spend and
/// moves their reset. Errors: 400, 401, 403, 404, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/budget/update")?;
    let req: BudgetFields = extract::body(&body)?;
    let id = req
        .budget_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("budget_id is required"))?;
    let gov = &ctx.gov;
    let mut t = BudgetTier::clone(&*cached(gov, &id)?);
    let window = req.apply(&mut t, gov.admission().now(), &who.actor())?;
    Batch {
        budgets: vec![t.clone()],
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    live::arm_tier(gov, Some(&id), window.as_ref()).await?;
    tracing::info!(budget_id = %id, "budget tier updated");
    Ok(Json(row(&t)))
}

fn cached(gov: &Governance, id: &str) -> ApiResult<Arc<BudgetTier>> {
    gov.cache()
        .read()
        .budgets
        .get(id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Budget not found, passed budget_id={id}")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InfoBody {
    budgets: Vec<String>,
}

/// `POST /budget/info` `{"budgets": [ids]}` → a list of tier rows in that order. Errors: 400
/// (empty list), 404 (an id unknown), 401, 403.
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/budget/info")?;
    let req: InfoBody = extract::body(&body)?;
    if req.budgets.is_empty() {
        return Err(ApiError::bad_request("budgets is required"));
    }
    let out = req
        .budgets
        .iter()
        .map(|id| cached(&ctx.gov, id).map(|t| row(&t)))
        .collect::<ApiResult<Vec<Value>>>()?;
    Ok(Json(Value::from(out)))
}

/// `GET /budget/list` → every tier row, by `budget_id`. Errors: 401, 403.
async fn list(State(ctx): State<Arc<AdminContext>>, headers: HeaderMap) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/budget/list")?;
    let mut all: Vec<Arc<BudgetTier>> = ctx.gov.cache().read().budgets.values().cloned().collect();
    all.sort_by(|a, b| a.budget_id.cmp(&b.budget_id));
    Ok(Json(Value::from(
        all.iter().map(|t| row(t)).collect::<Vec<Value>>(),
    )))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    id: Option<String>,
}

/// `POST /budget/delete` `{"id"}` → the deleted tier row. A tier still linked from a key,
/// customer, membership, organization or tag is refused (400; LiteLLM's foreign keys refuse it
/// too) rather than silently lifting their limits. Errors: 400, 401, 403, 404, 500.
async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/budget/delete")?;
    let req: DeleteBody = extract::body(&body)?;
    let id = req
        .id
        .ok_or_else(|| ApiError::bad_request("id is required"))?;
    let gov = &ctx.gov;
    let t = cached(gov, &id)?;
    let users = {
        let e = gov.cache().read();
        let is = |b: &Option<String>| b.as_deref() == Some(id.as_str());
        e.keys.values().filter(|k| is(&k.budget_id)).count()
            + e.end_users.values().filter(|c| is(&c.budget_id)).count()
            + e.memberships.values().filter(|m| is(&m.budget_id)).count()
            + e.organizations
                .values()
                .filter(|o| is(&o.budget_id))
                .count()
            + e.tags.values().filter(|t| is(&t.budget_id)).count()
    };
    if users > 0 {
        return Err(ApiError::bad_request(format!(
            "Budget {id} is still linked from {users} key(s)/customer(s)/member(s)/organization(s)/tag(s); unlink them first"
        )));
    }
    Batch {
        delete_budgets: vec![id.clone()],
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    tracing::info!(budget_id = %id, "budget tier deleted");
    Ok(Json(row(&t)))
}
