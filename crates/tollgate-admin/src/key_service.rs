//! `POST /key/service-account/generate` (LiteLLM's `generate_service_account_key_fn`,
//! litellm/proxy/management_endpoints/key_management_endpoints.py): a key owned by a team and
//! by no user, so deleting a user never deletes it and only the team's limits (not a
//! member's) apply to it. Admin only, as `/key/generate`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use http::HeaderMap;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::key_fields::KeyFields;
use crate::{AdminContext, access, extract, keys};

/// The service-account route.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new().route("/key/service-account/generate", post(generate))
}

/// `POST /key/service-account/generate` `{"team_id", …the /key/generate fields}`: the key as
/// `/key/generate` makes it, with `user_id` dropped (LiteLLM ignores it here). Returns
/// `/key/generate`'s answer. Errors: 400 `team_id is required for service account keys. …`
/// without `team_id`, 400 `team_id does not exist in the database. …` for an unknown team
/// (LiteLLM's `validate_team_id_used_in_service_account_request` words), then as
/// `/key/generate`: 400, 401, 403, 500.
async fn generate(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/key/service-account/generate")?;
    let mut req: KeyFields = extract::body(&body)?;
    let Some(team) = req.team_id.as_deref() else {
        return Err(ApiError::bad_request(
            "team_id is required for service account keys. Please specify `team_id` in the request body.",
        ));
    };
    if !ctx.gov.cache().read().teams.contains_key(team) {
        return Err(ApiError::bad_request(
            "team_id does not exist in the database. Please specify a valid `team_id` in the request body.",
        ));
    }
    req.user_id = None;
    keys::issue(&ctx, &who, &req).await
}
