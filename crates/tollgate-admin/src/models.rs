//! The model catalogue (litellm-surface §4.5): `GET /model/info`, `GET /v1/model/info`,
//! `POST /model/new`, `POST /model/update` `{"model_info": {"id"}, …}` (also
//! `PATCH /model/{id}/update`), `POST /model/delete` `{"id"}`, over the server's
//! [`crate::ModelRegistry`].
//! Admins see every deployment; any other key sees the deployments of the model groups it may
//! call (LiteLLM filters `/model/info` by the key's access the same way), its team's own under
//! their public names. Writes: admin only, or for a deployment with `model_info.team_id` also
//! an admin of that team ([`crate::model_teams`]); a team deployment's public name is kept in
//! its team's `models` ([`crate::model_team_list`]).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::{AdminContext, ModelChangeError, access, extract, model_team_list, model_teams};

/// The model routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/model/info", get(info))
        .route("/v1/model/info", get(info))
        .route("/model/new", post(new))
        .route("/model/delete", post(delete))
        .route("/model/update", post(update))
        .route("/model/{id}/update", axum::routing::patch(update_by_path))
}

/// `GET /model/info`, `/v1/model/info` → `{"data": [{"model_name", "litellm_params" (no
/// secrets), "model_info": {"id", …}}]}`. Errors: 401.
async fn info(State(ctx): State<Arc<AdminContext>>, headers: HeaderMap) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let groups = ctx.gov.access_groups();
    let data: Vec<Value> = ctx
        .models
        .list()
        .into_iter()
        .filter_map(|d| model_teams::visible(&who, d, &groups))
        .collect();
    Ok(Json(json!({"data": data})))
}

/// `POST /model/new` `{"model_name", "litellm_params": {…}, "model_info": {…}}` → the stored
/// entry with its `model_info.id`. Errors: 400 (bad body, refused by the registry), 401, 403,
/// 500 (store).
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let entry: Value = extract::body(&body)?;
    let who = model_teams::writer(&ctx, &headers, "/model/new", model_teams::team_of(&entry))?;
    if !entry.is_object() {
        return Err(ApiError::bad_request(
            "Invalid request body: expected a JSON object",
        ));
    }
    let asked = model_team_list::owner(&entry);
    let stored = ctx
        .models
        .add(entry, &who.actor())
        .await
        .map_err(change_error)?;
    tracing::info!("model deployment added");
    model_team_list::follow(&ctx, None, model_team_list::owner(&stored).or(asked)).await?;
    Ok(Json(stored))
}

/// `POST /model/update`: the id in `model_info.id` (or `id`), the rest a patch.
/// Errors: 400 (no id, not a JSON object, a config-file deployment, an entry that cannot be
/// routed), 401, 403, 404 (unknown id), 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let patch: Value = extract::body(&body)?;
    let id = patch
        .pointer("/model_info/id")
        .or_else(|| patch.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request("model_info.id is required"))?;
    apply_update(&ctx, &headers, &id, patch).await
}

/// `PATCH /model/{id}/update`: as `/model/update`, the id in the path.
async fn update_by_path(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let patch: Value = extract::body(&body)?;
    apply_update(&ctx, &headers, &id, patch).await
}

async fn apply_update(
    ctx: &AdminContext,
    headers: &HeaderMap,
    id: &str,
    patch: Value,
) -> ApiResult<Json<Value>> {
    let who = model_teams::updater(ctx, headers, id, &patch)?;
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "Invalid request body: expected a JSON object",
        ));
    }
    let before = model_team_list::owner_of_id(ctx, id);
    let stored = ctx
        .models
        .update(id, patch, &who.actor())
        .await
        .map_err(change_error)?;
    tracing::info!(model_id = %id, "model deployment updated");
    let after = model_team_list::owner(&stored).or_else(|| model_team_list::owner_of_id(ctx, id));
    model_team_list::follow(ctx, before, after).await?;
    Ok(Json(stored))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    id: Option<String>,
}

/// `POST /model/delete` `{"id": "<model_info.id>"}` → `{"message": "Model: <id> deleted
/// successfully"}`. Errors: 400 (no id; a config-file deployment), 401, 403, 404 (unknown id),
/// 500 (store).
async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let req: DeleteBody = extract::body(&body)?;
    let id = req
        .id
        .ok_or_else(|| ApiError::bad_request("id is required"))?;
    let (_, team) = model_teams::stored_team(&ctx, &id);
    model_teams::writer(&ctx, &headers, "/model/delete", team.as_deref())?;
    let before = model_team_list::owner_of_id(&ctx, &id);
    ctx.models.delete(&id).await.map_err(change_error)?;
    tracing::info!(model_id = %id, "model deployment deleted");
    model_team_list::follow(&ctx, before, None).await?;
    Ok(Json(
        json!({"message": format!("Model: {id} deleted successfully")}),
    ))
}

/// The status of a refused or failed change: 400, 404 (`Model with id=<id> not found`), 500.
fn change_error(e: ModelChangeError) -> ApiError {
    match e {
        ModelChangeError::Invalid(m) => ApiError::bad_request(m),
        ModelChangeError::NotFound(id) => {
            ApiError::not_found(format!("Model with id={id} not found"))
        }
        ModelChangeError::Store(e) => ApiError::from(e),
    }
}
