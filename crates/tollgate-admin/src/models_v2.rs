//! `GET /v2/model/info`: LiteLLM's paginated model list (`model_info_v2`,
//! litellm/proxy/proxy_server.py; its query parameters as LiteLLM's OpenAPI documents them):
//!
//! - `model`: only deployments whose `model_name` is exactly this, or, for a team deployment,
//!   whose `model_info.team_public_model_name` is (an admin finds a team's model by the name
//!   the team calls it, shown under its internal name with that field);
//! - `modelId`: only the deployment whose `model_info.id` is this;
//! - `search`: case-insensitive substring of `model_name` (or of
//!   `model_info.team_public_model_name`);
//! - `teamId`: only deployments that team may call: its own (`model_info.team_id`) and, of the
//!   others, those its `models` list allows (an unknown team: none);
//! - `sortBy` (`model_name`, `created_at`, `updated_at`, `costs` = input + output USD per
//!   token) and `sortOrder` (`asc`, default, or `desc`);
//! - `page` (from 1, default 1) and `size` (default 50);
//! - `user_models_only=true`: only deployments the caller added (`model_info.created_by` is
//!   the caller's user id, as `/model/new` writes it);
//! - `include_team_models=true`: each deployment gets `model_info.direct_access` and
//!   `model_info.access_via_team_ids`, and those the caller reaches neither way are left
//!   out ([`crate::model_teams::with_access`]).
//!
//! Answer: `{"data": [entries as /model/info], "total_count", "current_page", "size",
//! "total_pages"}`. Entries never carry credentials (the registry strips them). Admins and
//! viewers see every deployment; any other key only those it may call, as with `/model/info`
//! (its team's own under their public names).

use std::cmp::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_governance::runtime::list_allows;

use crate::error::{ApiError, ApiResult};
use crate::{AdminContext, access, extract, model_teams};

/// LiteLLM's default page size.
const DEFAULT_SIZE: u64 = 50;

/// The route.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new().route("/v2/model/info", get(info))
}

/// The query of `/v2/model/info` (LiteLLM's names).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Query {
    model: Option<String>,
    #[serde(rename = "modelId")]
    model_id: Option<String>,
    search: Option<String>,
    #[serde(rename = "teamId")]
    team_id: Option<String>,
    #[serde(rename = "sortBy")]
    sort_by: Option<String>,
    #[serde(rename = "sortOrder")]
    sort_order: Option<String>,
    page: Option<String>,
    size: Option<String>,
    user_models_only: Option<String>,
    include_team_models: Option<String>,
}

/// A positive integer query value. Errors: 400.
fn positive(field: &str, v: Option<&str>, default: u64) -> ApiResult<u64> {
    let Some(v) = v else { return Ok(default) };
    match v.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(ApiError::bad_request(format!(
            "{field} must be an integer >= 1, got {v}"
        ))),
    }
}

fn text<'a>(e: &'a Value, path: &str) -> &'a str {
    e.pointer(path).and_then(Value::as_str).unwrap_or("")
}

/// USD per input token plus per output token (from `model_info`, else `litellm_params`).
fn cost(e: &Value) -> f64 {
    let per = |k: &str| {
        e.pointer(&format!("/model_info/{k}"))
            .or_else(|| e.pointer(&format!("/litellm_params/{k}")))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    per("input_cost_per_token") + per("output_cost_per_token")
}

/// The order of `sortBy`. Errors: 400 for another field or order.
fn order(by: &str, desc: bool) -> ApiResult<impl Fn(&Value, &Value) -> Ordering> {
    let field = match by {
        "model_name" => "/model_name",
        "created_at" => "/model_info/created_at",
        "updated_at" => "/model_info/updated_at",
        "costs" => "",
        other => {
            return Err(ApiError::bad_request(format!(
                "Invalid sortBy={other}; expected one of model_name, created_at, updated_at, costs"
            )));
        }
    };
    Ok(move |a: &Value, b: &Value| {
        let o = if field.is_empty() {
            cost(a).total_cmp(&cost(b))
        } else {
            text(a, field).cmp(text(b, field))
        };
        if desc { o.reverse() } else { o }
    })
}

/// `GET /v2/model/info` (see the module doc). Errors: 400 (bad `page`, `size`, `sortBy`,
/// `sortOrder`), 401.
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let q: Query = extract::query(&uri)?;
    let page = positive("page", q.page.as_deref(), 1)?;
    let size = positive("size", q.size.as_deref(), DEFAULT_SIZE)?;
    let desc = match q.sort_order.as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(o) => {
            return Err(ApiError::bad_request(format!(
                "Invalid sortOrder={o}; expected asc or desc"
            )));
        }
    };
    let sort = q.sort_by.as_deref().map(|b| order(b, desc)).transpose()?;
    let groups = ctx.gov.access_groups();
    let team = q
        .team_id
        .as_ref()
        .map(|t| ctx.gov.cache().read().teams.get(t).cloned());
    let needle = q.search.as_ref().map(|s| s.to_lowercase());
    let mine =
        model_teams::flag("user_models_only", q.user_models_only.as_deref())?.then(|| who.actor());
    let with_teams = model_teams::flag("include_team_models", q.include_team_models.as_deref())?;
    let mut data: Vec<Value> = ctx
        .models
        .list()
        .into_iter()
        .filter_map(|d| model_teams::visible(&who, d, &groups))
        .filter_map(|d| {
            if with_teams {
                model_teams::with_access(&who, d, &groups)
            } else {
                Some(d)
            }
        })
        .filter(|d| {
            let name = text(d, "/model_name");
            let owner = d.pointer("/model_info/team_id").and_then(Value::as_str);
            let for_team = match &team {
                None => true,
                Some(None) => false,
                Some(Some(t)) => match owner {
                    Some(o) => o == t.team_id,
                    None => list_allows(&t.models, name, &groups),
                },
            };
            for_team
                && mine
                    .as_deref()
                    .is_none_or(|me| text(d, "/model_info/created_by") == me)
                && q.model
                    .as_deref()
                    .is_none_or(|m| m == name || m == text(d, "/model_info/team_public_model_name"))
                && q.model_id
                    .as_deref()
                    .is_none_or(|id| id == text(d, "/model_info/id"))
                && needle.as_deref().is_none_or(|n| {
                    name.to_lowercase().contains(n)
                        || text(d, "/model_info/team_public_model_name")
                            .to_lowercase()
                            .contains(n)
                })
        })
        .collect();
    if let Some(s) = sort {
        data.sort_by(s);
    }
    let total = data.len() as u64;
    let start = usize::try_from((page - 1).saturating_mul(size)).unwrap_or(usize::MAX);
    let take = usize::try_from(size).unwrap_or(usize::MAX);
    let data: Vec<Value> = data.into_iter().skip(start).take(take).collect();
    Ok(Json(json!({
        "data": data,
        "total_count": total,
        "current_page": page,
        "size": size,
        "total_pages": total.div_ceil(size),
    })))
}
