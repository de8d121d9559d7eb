//! `POST /team/delete` (litellm-surface §4.4, LiteLLM's `delete_team`,
//! litellm/proxy/management_endpoints/team_endpoints.py). Admin only.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_governance::store::User;

use crate::error::{ApiError, ApiResult};
use crate::write::Batch;
use crate::{AdminContext, access, extract, live};

/// The team delete route.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new().route("/team/delete", post(delete))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    team_ids: Vec<String>,
}

/// `POST /team/delete` `{"team_ids": [...]}`: deletes the teams with their keys and
/// memberships, and removes them from their users' `teams` (LiteLLM's `delete_team`).
/// Returns `{"deleted_teams": [ids]}`. All or nothing. Errors: 400 (empty list), 404 (a team
/// unknown), 401, 403, 500.
async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/team/delete")?;
    let req: DeleteBody = extract::body(&body)?;
    if req.team_ids.is_empty() {
        return Err(ApiError::bad_request("team_ids is required"));
    }
    let gov = &ctx.gov;
    let mut batch = Batch {
        deleted_by: Some(who.actor()),
        delete_teams: req.team_ids.clone(),
        ..Batch::default()
    };
    {
        let e = gov.cache().read();
        if let Some(missing) = req.team_ids.iter().find(|t| !e.teams.contains_key(*t)) {
            return Err(ApiError::not_found(format!(
                "Team not found, passed team_id={missing}"
            )));
        }
        let gone = |t: &Option<String>| t.as_ref().is_some_and(|t| req.team_ids.contains(t));
        batch.delete_keys = e
            .keys
            .values()
            .filter(|k| gone(&k.team_id))
            .map(|k| k.token.clone())
            .collect();
        batch.delete_memberships = e
            .memberships
            .keys()
            .filter(|(t, _)| req.team_ids.contains(t))
            .cloned()
            .collect();
        for u in e.users.values() {
            if u.teams.iter().any(|t| req.team_ids.contains(t)) {
                let mut u = User::clone(u);
                u.teams.retain(|t| !req.team_ids.contains(t));
                batch.users.push(u);
            }
        }
    }
    // live spend read after the cache's guard is dropped (no guard is held across an await)
    for u in &mut batch.users {
        *u = live::user_row(gov, u).await?;
    }
    batch.commit(gov).await?;
    tracing::info!(count = req.team_ids.len(), "teams deleted");
    Ok(Json(json!({"deleted_teams": req.team_ids})))
}
