//! End users / customers (litellm-surface §4.6): `POST /customer/new`, `/customer/update`,
//! `/customer/delete`, `/customer/block`, `/customer/unblock`, `GET /customer/info`,
//! `GET /customer/list`, and the same under `/end_user/*`. Admin only (reads: viewers too).
//!
//! A customer's limits live on its budget tier (`budget_id`), as in LiteLLM: `max_budget`
//! (USD), `soft_budget`, `budget_duration`, `tpm_limit` (tokens/min), `rpm_limit` (requests/min),
//! `max_parallel_requests`, `model_max_budget` given on `new`/`update` create the tier, or
//! change the linked one in place (LiteLLM's `update_end_user`): every customer (and key,
//! member, organization, tag) linked to it sees the change, and a first `budget_duration`
//! starts the window at 0 for each of them by the same rule ([`live::arm_tier`]). A customer
//! held to the default end-user budget (`max_end_user_budget`, `max_end_user_budget_id`) that
//! gets budget fields gets its own tier carrying that default's limits, the given fields on
//! top: a `budget_duration` alone starts a window under the same cap, never lifts it. An end
//! user is known from its first request (its row is created by the gateway), so these routes
//! find it at once. A blocked customer's requests are refused from the next request.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::admission::{ScopeKey, ScopeKind, WindowPlan};
use tollgate_governance::duration::BudgetDuration;
use tollgate_governance::runtime::{EndUserDefault, Entities, Governance, end_user_limits};
use tollgate_governance::store::{BudgetTier, EndUser};

use crate::error::{ApiError, ApiResult};
use crate::tier::{TierLimits, default_end_user_tier, tier_window, tier_with};
use crate::write::Batch;
use crate::{AdminContext, access, extract, live};

/// The customer routes, under `/customer` and `/end_user`.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    let mut r = Router::new();
    for p in ["/customer", "/end_user"] {
        r = r
            .route(&format!("{p}/new"), post(new))
            .route(&format!("{p}/update"), post(update))
            .route(&format!("{p}/delete"), post(delete))
            .route(&format!("{p}/block"), post(block))
            .route(&format!("{p}/unblock"), post(unblock))
            .route(&format!("{p}/info"), get(info))
            .route(&format!("{p}/list"), get(list));
    }
    r
}

fn scope(id: &str) -> ScopeKey {
    ScopeKey::new(ScopeKind::EndUser, id)
}

/// A customer as LiteLLM shows it: the `"LiteLLM_EndUserTable"` row with live `spend` (USD)
/// and `litellm_budget_table` (its tier or `null`).
async fn object(gov: &Governance, c: &EndUser) -> Result<Map<String, Value>, ApiError> {
    let mut m = extract::object(&live::end_user_row(gov, c).await?);
    let tier = gov.cache().read().budget(c.budget_id.as_deref()).cloned();
    m.insert(
        "litellm_budget_table".into(),
        tier.map_or(Value::Null, |t| Value::Object(extract::object(t.as_ref()))),
    );
    Ok(m)
}

/// Body of `/customer/new` and `/customer/update`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CustomerFields {
    user_id: Option<String>,
    alias: Option<String>,
    blocked: Option<bool>,
    budget_id: Option<String>,
    max_budget: Option<f64>,
    soft_budget: Option<f64>,
    budget_duration: Option<String>,
    tpm_limit: Option<i64>,
    rpm_limit: Option<i64>,
    max_parallel_requests: Option<i64>,
    model_max_budget: Option<Map<String, Value>>,
    allowed_model_region: Option<String>,
    default_model: Option<String>,
    /// The customer's model allow-list: omitted or `null` keeps it, `[]` clears it.
    models: Option<Vec<String>>,
}

impl CustomerFields {
    fn has_budget_fields(&self) -> bool {
        self.max_budget.is_some()
            || self.soft_budget.is_some()
            || self.budget_duration.is_some()
            || self.tpm_limit.is_some()
            || self.rpm_limit.is_some()
            || self.max_parallel_requests.is_some()
            || self.model_max_budget.is_some()
    }

    /// Applies the fields; returns the tier to write (created or changed) and the window
    /// change of the scopes that follow it ([`WindowPlan`], from the window the customer was
    /// counted under: its tier's, else the default end-user budget's; already applied to
    /// `c.spend`). `window_end` is when the customer's window in force ends (its counter), kept
    /// on a tier that carries the default's window on unchanged.
    /// Errors: 400 (bad region, unknown `budget_id`, `budget_id` together with budget fields,
    /// bad duration or `model_max_budget`).
    fn apply(
        &self,
        e: &Entities,
        default: &EndUserDefault,
        c: &mut EndUser,
        window_end: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
        by: &str,
    ) -> ApiResult<Change> {
        let before = end_user_limits(e, Some(c), default).budget_duration;
        let change = self.apply_fields(e, default, c, before, window_end, now, by)?;
        if change.window.is_some_and(|w| w.restart) {
            c.spend = 0.0;
        }
        Ok(change)
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one call site; the pieces are the route's state"
    )]
    fn apply_fields(
        &self,
        e: &Entities,
        default: &EndUserDefault,
        c: &mut EndUser,
        before: Option<BudgetDuration>,
        window_end: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
        by: &str,
    ) -> ApiResult<Change> {
        if let Some(r) = &self.allowed_model_region {
            if r != "eu" && r != "us" {
                return Err(ApiError::bad_request(format!(
                    "Invalid allowed_model_region={r}; expected 'eu' or 'us'"
                )));
            }
            c.allowed_model_region = Some(r.clone());
        }
        if let Some(v) = &self.alias {
            c.alias = Some(v.clone());
        }
        if let Some(v) = &self.default_model {
            c.default_model = Some(v.clone());
        }
        if let Some(b) = self.blocked {
            c.blocked = b;
        }
        if let Some(m) = &self.models {
            c.models = m.clone();
        }
        if let Some(id) = &self.budget_id {
            if self.has_budget_fields() {
                return Err(ApiError::bad_request(
                    "Pass either budget_id or budget fields (max_budget, budget_duration, tpm_limit, ...), not both",
                ));
            }
            let Some(tier) = e.budgets.get(id) else {
                return Err(ApiError::bad_request(format!(
                    "budget_id={id} does not exist; create it with /budget/new"
                )));
            };
            c.budget_id = Some(id.clone());
            let after = tier_window(Some(tier));
            return Ok(Change {
                tier: None,
                window: WindowPlan::for_update(before, after, now),
            });
        }
        if !self.has_budget_fields() {
            return Ok(Change::default());
        }
        let d = extract::duration("budget_duration", self.budget_duration.as_deref())?;
        if let Some(m) = &self.model_max_budget {
            extract::model_max_budget(m)?;
        }
        let limits = TierLimits {
            max_budget: self.max_budget,
            duration: d,
            tpm_limit: self.tpm_limit,
            rpm_limit: self.rpm_limit,
        };
        // the tier that governs the customer: its own, else a copy of the default it was held to
        let own = e.budget(c.budget_id.as_deref()).map(|t| t.as_ref());
        let copy = match own {
            Some(_) => None,
            None => default_end_user_tier(e, default, now, by),
        };
        let (mut t, window) = tier_with(own.or(copy.as_ref()), &limits, before, now, by);
        if own.is_none() && window.is_none() && t.limits().budget_duration.is_some() {
            // the default's window goes on under the customer's own tier
            t.budget_reset_at = window_end;
        }
        if let Some(v) = self.soft_budget {
            t.soft_budget = Some(v);
        }
        if let Some(v) = self.max_parallel_requests {
            t.max_parallel_requests = Some(v);
        }
        if let Some(m) = &self.model_max_budget {
            t.model_max_budget = Value::Object(m.clone());
        }
        c.budget_id = Some(t.budget_id.clone());
        Ok(Change {
            tier: Some(t),
            window,
        })
    }
}

/// What a customer write changes beyond its row.
#[derive(Debug, Default)]
struct Change {
    /// The customer's tier, created or changed in place (shared with whatever else links it).
    tier: Option<BudgetTier>,
    /// The window change: of every scope following `tier` when there is one, else (a
    /// `budget_id` switch) of the customer alone.
    window: Option<WindowPlan>,
}

/// Writes a customer (and its tier), then applies the window change: to every scope that
/// follows the tier written (it is shared, [`live::arm_tier`]), else to the customer alone.
async fn save(gov: &Governance, c: &EndUser, change: Change) -> ApiResult<()> {
    let Change { tier, window } = change;
    let tier_id = tier.as_ref().map(|t| t.budget_id.clone());
    Batch {
        end_users: vec![c.clone()],
        budgets: tier.into_iter().collect(),
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    match tier_id {
        Some(id) => live::arm_tier(gov, Some(&id), window.as_ref()).await?,
        None => live::arm(gov, &scope(&c.user_id), window.as_ref()).await?,
    }
    Ok(())
}

/// `POST /customer/new` `{"user_id", "alias"?, "blocked"?, "budget_id"? | "max_budget"?,
/// "budget_duration"?, "tpm_limit"?, "rpm_limit"?, …}` → the customer object. Errors: 400
/// (bad body, no `user_id`, existing customer), 401, 403, 500.
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/customer/new")?;
    let req: CustomerFields = extract::body(&body)?;
    let id = req
        .user_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("user_id is required"))?;
    let gov = &ctx.gov;
    let now = gov.admission().now();
    let mut c = EndUser {
        user_id: id.clone(),
        ..EndUser::default()
    };
    let window_end = live::spend(gov, &scope(&id)).await?.1;
    let change = {
        let e = gov.cache().read();
        if e.end_users.contains_key(&id) {
            return Err(ApiError::bad_request(format!(
                "Customer already exists, passed user_id={id}"
            )));
        }
        req.apply(
            &e,
            &gov.options().end_user_default,
            &mut c,
            window_end,
            now,
            &who.actor(),
        )?
    };
    save(gov, &c, change).await?;
    tracing::info!(end_user = %id, "customer created");
    Ok(Json(Value::Object(object(gov, &c).await?)))
}

/// The cached customer. Errors: 404.
fn cached(gov: &Governance, id: &str) -> ApiResult<Arc<EndUser>> {
    gov.cache()
        .read()
        .end_users
        .get(id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Customer not found, passed user_id={id}")))
}

/// `POST /customer/update` `{"user_id", …fields}` → the customer object; in force on the next
/// request. Errors: 400, 401, 403, 404, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/customer/update")?;
    let req: CustomerFields = extract::body(&body)?;
    let id = req
        .user_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("user_id is required"))?;
    let gov = &ctx.gov;
    let mut c = live::end_user_row(gov, &*cached(gov, &id)?).await?;
    let now = gov.admission().now();
    let window_end = live::spend(gov, &scope(&id)).await?.1;
    let change = req.apply(
        &gov.cache().read(),
        &gov.options().end_user_default,
        &mut c,
        window_end,
        now,
        &who.actor(),
    )?;
    save(gov, &c, change).await?;
    tracing::info!(end_user = %id, "customer updated");
    Ok(Json(Value::Object(object(gov, &c).await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IdsBody {
    user_ids: Vec<String>,
}

/// `POST /customer/delete` `{"user_ids": [...]}` →
/// `{"deleted_customers": <count>, "message": "..."}`. All or nothing. Errors: 400 (empty
/// list), 404 (a customer unknown), 401, 403, 500.
async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/customer/delete")?;
    let req: IdsBody = extract::body(&body)?;
    if req.user_ids.is_empty() {
        return Err(ApiError::bad_request("user_ids is required"));
    }
    let gov = &ctx.gov;
    for id in &req.user_ids {
        cached(gov, id)?;
    }
    let n = req.user_ids.len();
    Batch {
        delete_end_users: req.user_ids.clone(),
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    tracing::info!(count = n, "customers deleted");
    Ok(Json(json!({
        "deleted_customers": n,
        "message": format!("Successfully deleted customers with ids: {:?}", req.user_ids),
    })))
}

async fn set_blocked(
    ctx: &AdminContext,
    headers: &HeaderMap,
    body: &[u8],
    blocked: bool,
) -> ApiResult<Json<Value>> {
    let route = if blocked {
        "/customer/block"
    } else {
        "/customer/unblock"
    };
    access::admin(ctx, headers, route)?;
    let req: IdsBody = extract::body(body)?;
    if req.user_ids.is_empty() {
        return Err(ApiError::bad_request("user_ids is required"));
    }
    let gov = &ctx.gov;
    let mut rows = Vec::new();
    for id in &req.user_ids {
        let row = match cached(gov, id) {
            Ok(c) => live::end_user_row(gov, &c).await?,
            // LiteLLM upserts on block: an end user can be blocked before its first request
            Err(_) if blocked => EndUser {
                user_id: id.clone(),
                ..EndUser::default()
            },
            Err(e) => return Err(e),
        };
        rows.push(EndUser { blocked, ..row });
    }
    Batch {
        end_users: rows.clone(),
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    tracing::info!(count = rows.len(), blocked, "customer block state changed");
    let out: Vec<Value> = live::each(rows.iter(), |c| async move {
        Ok(Value::Object(object(gov, c).await?))
    })
    .await?;
    let field = if blocked {
        "blocked_users"
    } else {
        "unblocked_users"
    };
    let mut m = Map::new();
    m.insert(field.to_owned(), Value::from(out));
    Ok(Json(Value::Object(m)))
}

/// `POST /customer/block` `{"user_ids": [...]}`: their requests are refused from the next one
/// (customers not seen yet are created blocked). Returns `{"blocked_users": [customers]}`.
/// Errors: 400, 401, 403, 500.
async fn block(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    set_blocked(&ctx, &headers, &body, true).await
}

/// `POST /customer/unblock` `{"user_ids": [...]}` → `{"unblocked_users": [customers]}`.
/// Errors: 400, 401, 403, 404 (unknown customer), 500.
async fn unblock(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    set_blocked(&ctx, &headers, &body, false).await
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InfoQuery {
    end_user_id: Option<String>,
}

/// `GET /customer/info?end_user_id=` → the customer object. Admins and viewers. Errors: 400,
/// 401, 403, 404.
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/customer/info")?;
    let q: InfoQuery = extract::query(&uri)?;
    let id = q
        .end_user_id
        .ok_or_else(|| ApiError::bad_request("end_user_id is required"))?;
    let c = cached(&ctx.gov, &id)?;
    Ok(Json(Value::Object(object(&ctx.gov, &c).await?)))
}

/// `GET /customer/list` → a list of customer objects, by `user_id`. Admins and viewers.
/// Errors: 401, 403.
async fn list(State(ctx): State<Arc<AdminContext>>, headers: HeaderMap) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/customer/list")?;
    let gov = &ctx.gov;
    let mut all: Vec<Arc<EndUser>> = gov.cache().read().end_users.values().cloned().collect();
    all.sort_by(|a, b| a.user_id.cmp(&b.user_id));
    let out: Vec<Value> = live::each(all.iter(), |c| async move {
        Ok(Value::Object(object(gov, c).await?))
    })
    .await?;
    Ok(Json(Value::from(out)))
}
