//! `POST /user/delete` (litellm-surface §4.4; LiteLLM's
//! `litellm/proxy/management_endpoints/internal_user_endpoints.py`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_governance::store::Team;

use crate::error::{ApiError, ApiResult};
use crate::write::Batch;
use crate::{AdminContext, access, extract, live};

/// The user delete route.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new().route("/user/delete", post(delete))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    user_ids: Vec<String>,
}

/// `POST /user/delete` `{"user_ids": [...]}`: deletes the users with their keys and
/// memberships and removes them from their teams' `members_with_roles`. Returns the number of
/// users deleted as a JSON integer (what LiteLLM's client asserts). Errors: 400 (empty list),
/// 404 (none of the users exists), 401, 403, 500.
async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/user/delete")?;
    let req: DeleteBody = extract::body(&body)?;
    if req.user_ids.is_empty() {
        return Err(ApiError::bad_request("user_ids is required"));
    }
    let gov = &ctx.gov;
    let mut batch = Batch {
        deleted_by: Some(who.actor()),
        ..Batch::default()
    };
    {
        let e = gov.cache().read();
        let mut ids: Vec<String> = req
            .user_ids
            .iter()
            .filter(|u| e.users.contains_key(*u))
            .cloned()
            .collect();
        ids.sort();
        ids.dedup();
        if ids.is_empty() {
            return Err(ApiError::not_found(format!(
                "User not found, passed user_ids={:?}",
                req.user_ids
            )));
        }
        let gone = |u: Option<&String>| u.is_some_and(|u| ids.contains(u));
        batch.delete_keys = e
            .keys
            .values()
            .filter(|k| gone(k.user_id.as_ref()))
            .map(|k| k.token.clone())
            .collect();
        batch.delete_memberships = e
            .memberships
            .keys()
            .filter(|(_, u)| ids.contains(u))
            .cloned()
            .collect();
        for t in e.teams.values() {
            if t.members_with_roles
                .iter()
                .any(|m| gone(m.user_id.as_ref()))
            {
                let mut t = Team::clone(t);
                t.members_with_roles.retain(|m| !gone(m.user_id.as_ref()));
                batch.teams.push(t);
            }
        }
        batch.delete_users = ids;
    }
    // live spend read after the cache's guard is dropped (no guard is held across an await)
    for t in &mut batch.teams {
        *t = live::team_row(gov, t).await?;
    }
    let n = batch.delete_users.len();
    batch.commit(gov).await?;
    tracing::info!(count = n, "users deleted");
    Ok(Json(json!(n)))
}
