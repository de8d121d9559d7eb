//! Virtual key reads: `GET /key/info` and `GET /key/list` (litellm-surface §4.3).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_governance::store::VerificationToken;

use crate::error::{ApiError, ApiResult};
use crate::keys::key_hash;
use crate::{AdminContext, access, extract, key_view, live};

/// The key routes that read.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/key/info", get(info))
        .route("/key/list", get(list))
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct InfoQuery {
    key: Option<String>,
}

/// `GET /key/info?key=<sk-… or hash>`; without `key`, the calling key. Returns
/// `{"key": <hash>, "info": {row fields, live spend (USD), litellm_budget_table, …}}`; a
/// deleted key gives `{"key", "info": {"status": "deleted"}}`. `key` in the answer is the hash,
/// never the plaintext. A non-admin caller may read itself and the keys of its own user
/// (another key: 403).
/// Errors: 400, 401, 403, 404, 500.
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let q: InfoQuery = extract::query(&uri)?;
    let hash = match (&q.key, &who.principal) {
        (Some(k), _) => key_hash(k)?,
        (None, Some(p)) => p.key.token.clone(),
        (None, None) => {
            return Err(ApiError::bad_request(
                "key is required (the master key is not a virtual key)",
            ));
        }
    };
    let itself = who.principal.as_ref().map(|p| p.key.token.as_str()) == Some(&hash);
    if !who.reads_all() && !itself {
        // The caller's user may read its user's keys (LiteLLM's `_can_user_query_key_info`).
        let user = who
            .principal
            .as_ref()
            .and_then(|p| p.key.user_id.as_deref());
        let owner = ctx
            .gov
            .cache()
            .read()
            .keys
            .get(&hash)
            .and_then(|k| k.user_id.clone());
        if user.is_none() || owner.as_deref() != user {
            return Err(ApiError::forbidden(
                "Only the key's owner or a proxy admin can view this key. Route=/key/info",
            ));
        }
    }
    ctx.gov.load_missing_key(&hash).await;
    let row = ctx.gov.cache().read().keys.get(&hash).cloned();
    match row {
        Some(r) => {
            let mut info = key_view::object(&ctx.gov, &r).await?;
            info.remove("token");
            Ok(Json(json!({"key": hash, "info": info})))
        }
        None if ctx.gov.store().is_deleted_key(&hash).await? => {
            Ok(Json(json!({"key": hash, "info": {"status": "deleted"}})))
        }
        None => Err(ApiError::not_found(format!("Key not found. token={hash}"))),
    }
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct ListQuery {
    user_id: Option<String>,
    team_id: Option<String>,
    organization_id: Option<String>,
    key_alias: Option<String>,
    page: Option<u64>,
    size: Option<u64>,
    return_full_object: Option<String>,
}

/// FastAPI's bool parsing (`true`/`1`/`yes`/`on`, any case).
fn truthy(v: Option<&str>) -> bool {
    v.is_some_and(|s| matches!(s.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"))
}

/// `GET /key/list?user_id&team_id&organization_id&key_alias&page=1&size=10&return_full_object`:
/// `{"keys": [hashes, or key objects with return_full_object], "total_count", "current_page",
/// "total_pages"}`, newest first. Admins and viewers see every key; anyone else only the keys
/// of its own user (LiteLLM's `validate_key_list_check`,
/// `litellm/proxy/management_endpoints/key_management_endpoints.py`: `user_id` defaults to the
/// caller's, another user's is refused). Errors: 400 (`page` < 1, `size` not in 1..=100), 401,
/// 403 (a caller without a user, or asking for another user's keys).
async fn list(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let mut q: ListQuery = extract::query(&uri)?;
    if !who.reads_all() {
        let own = who.principal.as_ref().and_then(|p| p.key.user_id.clone());
        match own {
            Some(u) if q.user_id.as_ref().is_none_or(|asked| *asked == u) => q.user_id = Some(u),
            Some(_) => {
                return Err(ApiError::forbidden(
                    "You are not allowed to check another user's keys. Route=/key/list",
                ));
            }
            None => return Err(access::denied(&who, "/key/list")),
        }
    }
    let page = q.page.unwrap_or(1);
    let size = q.size.unwrap_or(10);
    if page < 1 || !(1..=100).contains(&size) {
        return Err(ApiError::bad_request(
            "page must be >= 1 and size between 1 and 100",
        ));
    }
    let eq = |want: &Option<String>, have: &Option<String>| {
        want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
    };
    let mut keys: Vec<Arc<VerificationToken>> = ctx
        .gov
        .cache()
        .read()
        .keys
        .values()
        .filter(|k| {
            eq(&q.user_id, &k.user_id)
                && eq(&q.team_id, &k.team_id)
                && eq(&q.organization_id, &k.organization_id)
                && eq(&q.key_alias, &k.key_alias)
        })
        .cloned()
        .collect();
    keys.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| a.token.cmp(&b.token))
    });
    let total = keys.len() as u64;
    let full = truthy(q.return_full_object.as_deref());
    let start = usize::try_from((page - 1).saturating_mul(size)).unwrap_or(usize::MAX);
    let page_keys = keys
        .iter()
        .skip(start)
        .take(usize::try_from(size).unwrap_or(100));
    let gov = &ctx.gov;
    let shown: Vec<Value> = live::each(page_keys, |k| async move {
        Ok(if full {
            Value::Object(key_view::object(gov, k).await?)
        } else {
            Value::from(k.token.clone())
        })
    })
    .await?;
    Ok(Json(json!({
        "keys": shown,
        "total_count": total,
        "current_page": page,
        "total_pages": total.div_ceil(size),
    })))
}
