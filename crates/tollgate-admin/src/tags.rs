//! Tags (litellm-surface §4.5): `POST /tag/new`, `/tag/update`, `/tag/delete`, `/tag/info`,
//! `GET /tag/list`. Writes are admin only; reads admins and viewers.
//!
//! A tag's limits live on its linked budget tier (`budget_id`), as a customer's do:
//! `max_budget` (USD), `budget_duration`, `tpm_limit` (tokens/min), `rpm_limit` (requests/min)
//! given on `new`/`update` create the tier or change the linked one ([`TierFields`], shared
//! with `organizations.rs`). Requests carrying the tag (`tags`, `metadata.tags`,
//! `x-litellm-tags`) are counted against it from the next request; spend is live from the
//! tag's admission counter.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::admission::{ScopeKey, ScopeKind, WindowPlan};
use tollgate_governance::runtime::{Entities, Governance};
use tollgate_governance::store::{BudgetTier, Tag};

use crate::error::{ApiError, ApiResult};
use crate::tier::{TierLimits, tier_window, tier_with};
use crate::{AdminContext, access, extract, live};

/// The tag routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/tag/new", post(new))
        .route("/tag/update", post(update))
        .route("/tag/delete", post(delete))
        .route("/tag/info", post(info))
        .route("/tag/list", get(list))
}

/// Budget fields of a tag or organization body, kept on the linked [`BudgetTier`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TierFields {
    /// Cap, USD.
    pub max_budget: Option<f64>,
    /// Window (`30s` … `1mo`).
    pub budget_duration: Option<String>,
    /// Tokens per minute.
    pub tpm_limit: Option<i64>,
    /// Requests per minute.
    pub rpm_limit: Option<i64>,
}

impl TierFields {
    fn any(&self) -> bool {
        self.max_budget.is_some()
            || self.budget_duration.is_some()
            || self.tpm_limit.is_some()
            || self.rpm_limit.is_some()
    }

    /// The tier to write: the linked tier `current` changed, or a new one (when none is linked)
    /// if any field is given or `always`. `None` when there is nothing to write. With it, the
    /// window change of the scope that follows the tier ([`WindowPlan`]: a first window starts
    /// at 0, the same one again is untouched). Errors: 400 (bad duration).
    pub(crate) fn apply(
        &self,
        e: &Entities,
        current: Option<&str>,
        always: bool,
        now: DateTime<Utc>,
        by: &str,
    ) -> ApiResult<Option<(BudgetTier, Option<WindowPlan>)>> {
        let linked = e.budget(current);
        let create = always && linked.is_none();
        if !self.any() && !create {
            return Ok(None);
        }
        let d = extract::duration("budget_duration", self.budget_duration.as_deref())?;
        let limits = TierLimits {
            max_budget: self.max_budget,
            duration: d,
            tpm_limit: self.tpm_limit,
            rpm_limit: self.rpm_limit,
        };
        let linked = linked.map(|t| t.as_ref());
        Ok(Some(tier_with(
            linked,
            &limits,
            tier_window(linked),
            now,
            by,
        )))
    }
}

/// The tier linked by `budget_id` as JSON (`null` when none).
pub(crate) fn tier_json(gov: &Governance, budget_id: Option<&str>) -> Value {
    gov.cache()
        .read()
        .budget(budget_id)
        .map_or(Value::Null, |t| Value::Object(extract::object(t.as_ref())))
}

/// Writes `tier` to the store, then the cache; returns its window change (the caller applies
/// it to the scopes following the tier with [`live::arm_tier`] once the entity is written).
/// Errors: 500.
pub(crate) async fn save_tier(
    gov: &Governance,
    tier: Option<(BudgetTier, Option<WindowPlan>)>,
) -> ApiResult<Option<WindowPlan>> {
    let Some((t, window)) = tier else {
        return Ok(None);
    };
    gov.store().upsert_budget(&t).await?;
    gov.cache()
        .update(|e| e.budgets.insert(t.budget_id.clone(), Arc::new(t)));
    Ok(window)
}

fn scope(name: &str) -> ScopeKey {
    ScopeKey::new(ScopeKind::Tag, name)
}

/// A tag as LiteLLM's `TagConfig`: `{"name", "description", "models", "budget_id",
/// "spend" (live, USD), "litellm_budget_table" (its tier or `null`)}`.
async fn object(gov: &Governance, t: &Tag) -> Result<Value, ApiError> {
    Ok(json!({
        "name": t.tag_name,
        "description": t.description,
        "models": t.models,
        "budget_id": t.budget_id,
        "spend": live::spend(gov, &scope(&t.tag_name)).await?.0,
        "litellm_budget_table": tier_json(gov, t.budget_id.as_deref()),
    }))
}

/// Body of `/tag/new` and `/tag/update`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TagFields {
    name: Option<String>,
    description: Option<String>,
    models: Option<Vec<String>>,
    #[serde(flatten)]
    tier: TierFields,
}

/// The cached tag. Errors: 404.
fn cached(gov: &Governance, name: &str) -> ApiResult<Arc<Tag>> {
    gov.cache()
        .read()
        .tags
        .get(name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Tag {name} not found")))
}

/// Applies `req` to `t` and writes tier, then tag (store, cache), then the window.
async fn save(ctx: &AdminContext, who: &str, req: &TagFields, mut t: Tag) -> ApiResult<Tag> {
    let gov = &ctx.gov;
    if let Some(v) = &req.description {
        t.description = Some(v.clone());
    }
    if let Some(v) = &req.models {
        t.models = v.clone();
    }
    let now = gov.admission().now();
    let tier = req
        .tier
        .apply(&gov.cache().read(), t.budget_id.as_deref(), false, now, who)?;
    if let Some((b, _)) = &tier {
        t.budget_id = Some(b.budget_id.clone());
    }
    let window = save_tier(gov, tier).await?;
    t.spend = live::spend(gov, &scope(&t.tag_name)).await?.0;
    if window.is_some_and(|w| w.restart) {
        t.spend = 0.0;
    }
    gov.store().upsert_tag(&t).await?;
    gov.cache()
        .update(|e| e.tags.insert(t.tag_name.clone(), Arc::new(t.clone())));
    live::arm_tier(gov, t.budget_id.as_deref(), window.as_ref()).await?;
    Ok(t)
}

fn name_of(req: &TagFields) -> ApiResult<String> {
    req.name
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::bad_request("name is required"))
}

/// `POST /tag/new` `{"name", "description"?, "models"?, "max_budget"?, "budget_duration"?,
/// "tpm_limit"?, "rpm_limit"?}` → `{"message": "Tag <name> created successfully", "tag": <tag>}`.
/// Errors: 400 (no name, existing tag, bad duration), 401, 403, 500.
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/tag/new")?;
    let req: TagFields = extract::body(&body)?;
    let name = name_of(&req)?;
    if ctx.gov.cache().read().tags.contains_key(&name) {
        return Err(ApiError::bad_request(format!("Tag {name} already exists")));
    }
    let t = Tag {
        tag_name: name.clone(),
        ..Tag::default()
    };
    let t = save(&ctx, &who.actor(), &req, t).await?;
    tracing::info!(tag = %name, "tag created");
    Ok(Json(json!({
        "message": format!("Tag {name} created successfully"),
        "tag": object(&ctx.gov, &t).await?,
    })))
}

/// `POST /tag/update` `{"name", …fields}` → `{"message": "Tag <name> updated successfully",
/// "tag": <tag>}`; in force on the next request. Errors: 400, 401, 403, 404, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/tag/update")?;
    let req: TagFields = extract::body(&body)?;
    let name = name_of(&req)?;
    let t = Tag::clone(&*cached(&ctx.gov, &name)?);
    let t = save(&ctx, &who.actor(), &req, t).await?;
    tracing::info!(tag = %name, "tag updated");
    Ok(Json(json!({
        "message": format!("Tag {name} updated successfully"),
        "tag": object(&ctx.gov, &t).await?,
    })))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    name: Option<String>,
}

/// `POST /tag/delete` `{"name"}` → `{"message": "Tag <name> deleted successfully"}`. Requests
/// carrying the tag are no longer limited by its tier (the tier itself is kept). Errors: 400,
/// 401, 403, 404, 500.
async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/tag/delete")?;
    let req: DeleteBody = extract::body(&body)?;
    let name = req
        .name
        .ok_or_else(|| ApiError::bad_request("name is required"))?;
    let gov = &ctx.gov;
    cached(gov, &name)?;
    gov.store().delete_tags(std::slice::from_ref(&name)).await?;
    gov.cache().update(|e| e.tags.remove(&name));
    tracing::info!(tag = %name, "tag deleted");
    Ok(Json(
        json!({"message": format!("Tag {name} deleted successfully")}),
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InfoBody {
    names: Vec<String>,
}

/// `POST /tag/info` `{"names": [...]}` → `{"<name>": <tag>, …}`. Errors: 400 (empty list),
/// 401, 403, 404 (a tag unknown).
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/tag/info")?;
    let req: InfoBody = extract::body(&body)?;
    if req.names.is_empty() {
        return Err(ApiError::bad_request("names is required"));
    }
    let mut out = Map::new();
    for n in &req.names {
        let t = cached(&ctx.gov, n)?;
        out.insert(n.clone(), object(&ctx.gov, &t).await?);
    }
    Ok(Json(Value::Object(out)))
}

/// `GET /tag/list` → a list of tags, by name. Errors: 401, 403.
async fn list(State(ctx): State<Arc<AdminContext>>, headers: HeaderMap) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/tag/list")?;
    let gov = &ctx.gov;
    let mut all: Vec<Arc<Tag>> = gov.cache().read().tags.values().cloned().collect();
    all.sort_by(|a, b| a.tag_name.cmp(&b.tag_name));
    Ok(Json(Value::from(
        live::each(all.iter(), |t| object(gov, t)).await?,
    )))
}
