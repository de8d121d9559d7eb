//! Organizations (litellm-surface §4.4): `POST /organization/new`, `PATCH /organization/update`
//! (POST too), `DELETE /organization/delete` (POST too), `GET /organization/info`,
//! `GET /organization/list`. Writes are admin only; reads admins and viewers.
//!
//! An organization always has a budget tier (`budget_id`), as in LiteLLM: `max_budget` (USD),
//! `budget_duration`, `tpm_limit`, `rpm_limit` on `new`/`update` set it (a tier without limits
//! is created when none is given). Keys and teams with this `organization_id` are counted
//! against it from the next request; spend is live from the organization's admission counter.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::admission::{ScopeKey, ScopeKind};
use tollgate_governance::runtime::Governance;
use tollgate_governance::store::Organization;

use crate::error::{ApiError, ApiResult};
use crate::tags::{TierFields, save_tier, tier_json};
use crate::{AdminContext, access, extract, live};

/// The organization routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/organization/new", post(new))
        .route("/organization/update", patch(update).post(update))
        .route(
            "/organization/delete",
            axum::routing::delete(delete).post(delete),
        )
        .route("/organization/info", get(info))
        .route("/organization/list", get(list))
}

fn scope(id: &str) -> ScopeKey {
    ScopeKey::new(ScopeKind::Organization, id)
}

/// An organization as LiteLLM shows it: the `"LiteLLM_OrganizationTable"` row with live
/// `spend` (USD) and `litellm_budget_table` (its tier).
async fn object(gov: &Governance, o: &Organization) -> Result<Map<String, Value>, ApiError> {
    let mut m = extract::object(o);
    m.insert(
        "spend".into(),
        json!(live::spend(gov, &scope(&o.organization_id)).await?.0),
    );
    m.insert(
        "litellm_budget_table".into(),
        tier_json(gov, o.budget_id.as_deref()),
    );
    Ok(m)
}

/// Body of `/organization/new` and `/organization/update`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OrgFields {
    organization_id: Option<String>,
    organization_alias: Option<String>,
    models: Option<Vec<String>>,
    metadata: Option<Map<String, Value>>,
    #[serde(flatten)]
    tier: TierFields,
}

/// The cached organization. Errors: 404.
fn cached(gov: &Governance, id: &str) -> ApiResult<Arc<Organization>> {
    gov.cache()
        .read()
        .organizations
        .get(id)
        .cloned()
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Organization not found, passed organization_id={id}"
            ))
        })
}

/// Applies `req` to `o` and writes tier, then organization (store, cache), then the window.
async fn save(
    ctx: &AdminContext,
    who: &str,
    req: &OrgFields,
    mut o: Organization,
) -> ApiResult<Organization> {
    let gov = &ctx.gov;
    if let Some(v) = &req.organization_alias {
        o.organization_alias = Some(v.clone());
    }
    if let Some(v) = &req.models {
        o.models = v.clone();
    }
    if let Some(v) = &req.metadata {
        o.metadata = Value::Object(v.clone());
    }
    let now = gov.admission().now();
    o.updated_at = Some(now);
    o.updated_by = Some(who.to_owned());
    let tier = req
        .tier
        .apply(&gov.cache().read(), o.budget_id.as_deref(), true, now, who)?;
    if let Some((b, _)) = &tier {
        o.budget_id = Some(b.budget_id.clone());
    }
    let window = save_tier(gov, tier).await?;
    o.spend = live::spend(gov, &scope(&o.organization_id)).await?.0;
    if window.is_some_and(|w| w.restart) {
        o.spend = 0.0;
    }
    gov.store().upsert_organization(&o).await?;
    gov.cache().update(|e| {
        e.organizations
            .insert(o.organization_id.clone(), Arc::new(o.clone()))
    });
    live::arm_tier(gov, o.budget_id.as_deref(), window.as_ref()).await?;
    Ok(o)
}

/// `POST /organization/new` `{"organization_id"? (default: a UUID), "organization_alias",
/// "models"?, "metadata"?, "max_budget"?, "budget_duration"?, "tpm_limit"?, "rpm_limit"?}` →
/// the organization object, with every NOT NULL column of LiteLLM's
/// `"LiteLLM_OrganizationTable"` written (`organization_alias`, `budget_id`, `created_by`,
/// `updated_at`, `updated_by`; litellm/proxy/schema.prisma). Errors: 400 (no alias, existing
/// id, bad duration), 401, 403, 500.
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/organization/new")?;
    let req: OrgFields = extract::body(&body)?;
    let id = req
        .organization_id
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(extract::new_id);
    // LiteLLM's `NewOrganizationRequest` requires it; its column is NOT NULL
    if req.organization_alias.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::bad_request("organization_alias is required"));
    }
    if ctx.gov.cache().read().organizations.contains_key(&id) {
        return Err(ApiError::bad_request(format!(
            "Organization already exists, passed organization_id={id}"
        )));
    }
    // LiteLLM's schema has these NOT NULL (litellm/proxy/schema.prisma,
    // LiteLLM_OrganizationTable); `created_at` is when the row is first written
    let o = Organization {
        organization_id: id.clone(),
        metadata: json!({}),
        created_at: Some(ctx.gov.admission().now()),
        created_by: Some(who.actor()),
        ..Organization::default()
    };
    let o = save(&ctx, &who.actor(), &req, o).await?;
    tracing::info!(organization = %id, "organization created");
    Ok(Json(Value::Object(object(&ctx.gov, &o).await?)))
}

/// `PATCH /organization/update` `{"organization_id", …fields}` → the organization object; in
/// force on the next request. Errors: 400 (no id, bad duration), 401, 403, 404, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/organization/update")?;
    let req: OrgFields = extract::body(&body)?;
    let id = req
        .organization_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("organization_id is required"))?;
    let o = Organization::clone(&*cached(&ctx.gov, &id)?);
    let o = save(&ctx, &who.actor(), &req, o).await?;
    tracing::info!(organization = %id, "organization updated");
    Ok(Json(Value::Object(object(&ctx.gov, &o).await?)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IdsBody {
    organization_ids: Vec<String>,
}

/// `DELETE /organization/delete` `{"organization_ids": [...]}` → the deleted organization
/// objects. All or nothing; keys and teams linked to them are no longer counted against them
/// (their tiers are kept). Errors: 400 (empty list), 401, 403, 404 (one unknown), 500.
async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/organization/delete")?;
    let req: IdsBody = extract::body(&body)?;
    if req.organization_ids.is_empty() {
        return Err(ApiError::bad_request("organization_ids is required"));
    }
    let gov = &ctx.gov;
    let mut out = Vec::new();
    for id in &req.organization_ids {
        out.push(Value::Object(object(gov, &*cached(gov, id)?).await?));
    }
    gov.store()
        .delete_organizations(&req.organization_ids)
        .await?;
    gov.cache().update(|e| {
        for id in &req.organization_ids {
            e.organizations.remove(id);
        }
    });
    tracing::info!(count = out.len(), "organizations deleted");
    Ok(Json(Value::from(out)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InfoQuery {
    organization_id: Option<String>,
}

/// `GET /organization/info?organization_id=` → the organization object plus `members` (always
/// `[]`: no organization membership table here) and `teams` (team rows with this
/// `organization_id`, by `team_id`). Errors: 400, 401, 403, 404.
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/organization/info")?;
    let q: InfoQuery = extract::query(&uri)?;
    let id = q
        .organization_id
        .ok_or_else(|| ApiError::bad_request("organization_id is required"))?;
    let gov = &ctx.gov;
    let o = cached(gov, &id)?;
    let mut teams: Vec<_> = gov
        .cache()
        .read()
        .teams
        .values()
        .filter(|t| t.organization_id.as_deref() == Some(id.as_str()))
        .cloned()
        .collect();
    teams.sort_by(|a, b| a.team_id.cmp(&b.team_id));
    let mut m = object(gov, &o).await?;
    m.insert("members".into(), json!([]));
    m.insert(
        "teams".into(),
        Value::from(
            live::each(teams.iter(), |t| async move {
                Ok(Value::Object(extract::object(
                    &live::team_row(gov, t).await?,
                )))
            })
            .await?,
        ),
    );
    Ok(Json(Value::Object(m)))
}

/// `GET /organization/list` → a list of organization objects, by `organization_id`.
/// Errors: 401, 403.
async fn list(State(ctx): State<Arc<AdminContext>>, headers: HeaderMap) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/organization/list")?;
    let gov = &ctx.gov;
    let mut all: Vec<Arc<Organization>> =
        gov.cache().read().organizations.values().cloned().collect();
    all.sort_by(|a, b| a.organization_id.cmp(&b.organization_id));
    Ok(Json(Value::from(
        live::each(all.iter(), |o| async move {
            Ok(Value::Object(object(gov, o).await?))
        })
        .await?,
    )))
}
