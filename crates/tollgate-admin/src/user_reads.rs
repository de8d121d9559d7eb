//! Internal-user reads (litellm-surface §4.4): `GET /user/info`, `GET /user/list`
//! (LiteLLM's `litellm/proxy/management_endpoints/internal_user_endpoints.py`).

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_governance::store::{Team, User, VerificationToken};

use crate::error::{ApiError, ApiResult};
use crate::users::{cached, object};
use crate::{AdminContext, access, extract, key_view, live, proxy_budget_user, team_reads, teams};

/// The user routes that read.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/user/info", get(info))
        .route("/user/list", get(list))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InfoQuery {
    user_id: Option<String>,
}

/// `GET /user/info?user_id=` (default: the calling key's user) →
/// `{"user_id", "user_info": user object, "keys": [key objects], "teams": [team objects]}`;
/// each team object carries, as LiteLLM's `TeamListResponseObject` (its `list_team`,
/// team_endpoints.py), the team's `keys` and `team_memberships`: this user's membership rows
/// (`spend` live, USD, and `litellm_budget_table`, the member's tier or `null`).
/// `litellm-proxy-budget` with a proxy `max_budget` is the proxy's budget
/// ([`proxy_budget_user`]). A non-admin may read its own user only (403). Errors: 400, 401,
/// 403, 404.
async fn info(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let q: InfoQuery = extract::query(&uri)?;
    let own = who.principal.as_ref().and_then(|p| p.key.user_id.clone());
    let id = q
        .user_id
        .or_else(|| own.clone())
        .ok_or_else(|| ApiError::bad_request("user_id is required"))?;
    if !who.reads_all() && own.as_deref() != Some(id.as_str()) {
        return Err(ApiError::forbidden(
            "Only the user itself or a proxy admin can view this user. Route=/user/info",
        ));
    }
    let gov = &ctx.gov;
    if id == proxy_budget_user::PROXY_BUDGET_USER_ID {
        let stored = gov.cache().read().users.get(&id).cloned();
        if let Some(user_info) = proxy_budget_user::object(gov, stored.as_deref()).await? {
            return Ok(Json(json!({
                "user_id": id, "user_info": user_info, "keys": [], "teams": [],
            })));
        }
    }
    let user = cached(gov, Some(&id), None)?;
    let (mut keys, mut teams): (Vec<Arc<VerificationToken>>, Vec<Arc<Team>>) = {
        let e = gov.cache().read();
        (
            e.keys
                .values()
                .filter(|k| k.user_id.as_deref() == Some(id.as_str()))
                .cloned()
                .collect(),
            e.teams
                .values()
                .filter(|t| {
                    user.teams.contains(&t.team_id)
                        || t.members_with_roles
                            .iter()
                            .any(|m| m.user_id.as_deref() == Some(id.as_str()))
                })
                .cloned()
                .collect(),
        )
    };
    keys.sort_by(|a, b| a.token.cmp(&b.token));
    teams.sort_by(|a, b| a.team_id.cmp(&b.team_id));
    let keys: Vec<Value> = live::each(keys.iter(), |k| async move {
        Ok(Value::Object(key_view::object(gov, k).await?))
    })
    .await?;
    let user_id = id.as_str();
    let teams: Vec<Value> = live::each(teams.iter(), |t| async move {
        let mut o = teams::object(gov, t).await?;
        let (keys, ms) = team_reads::keys_and_memberships(gov, &t.team_id, Some(user_id)).await?;
        o.insert("keys".into(), Value::from(keys));
        o.insert("team_memberships".into(), Value::from(ms));
        Ok(Value::Object(o))
    })
    .await?;
    Ok(Json(json!({
        "user_id": id,
        "user_info": object(gov, &user).await?,
        "keys": keys,
        "teams": teams,
    })))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ListQuery {
    page: Option<u64>,
    page_size: Option<u64>,
    role: Option<String>,
    /// Comma-separated user ids.
    user_ids: Option<String>,
    team: Option<String>,
}

/// `GET /user/list?page=1&page_size=25&role&user_ids=a,b&team` →
/// `{"users": [user objects], "total", "page", "page_size", "total_pages"}`, by `user_id`.
/// Admins and viewers. Errors: 400 (`page` < 1, `page_size` not in 1..=100), 401, 403.
async fn list(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/user/list")?;
    let q: ListQuery = extract::query(&uri)?;
    let page = q.page.unwrap_or(1);
    let size = q.page_size.unwrap_or(25);
    if page < 1 || !(1..=100).contains(&size) {
        return Err(ApiError::bad_request(
            "page must be >= 1 and page_size between 1 and 100",
        ));
    }
    let wanted: Option<Vec<&str>> = q.user_ids.as_deref().map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    });
    let gov = &ctx.gov;
    let mut users: Vec<Arc<User>> = gov
        .cache()
        .read()
        .users
        .values()
        .filter(|u| {
            wanted
                .as_ref()
                .is_none_or(|w| w.contains(&u.user_id.as_str()))
                && q.role
                    .as_ref()
                    .is_none_or(|r| u.user_role.as_ref() == Some(r))
                && q.team.as_ref().is_none_or(|t| u.teams.contains(t))
        })
        .cloned()
        .collect();
    users.sort_by(|a, b| a.user_id.cmp(&b.user_id));
    let total = users.len() as u64;
    let start = usize::try_from((page - 1).saturating_mul(size)).unwrap_or(usize::MAX);
    let page_users = users
        .iter()
        .skip(start)
        .take(usize::try_from(size).unwrap_or(100));
    let shown: Vec<Value> = live::each(page_users, |u| async move {
        Ok(Value::Object(object(gov, u).await?))
    })
    .await?;
    Ok(Json(json!({
        "users": shown,
        "total": total,
        "page": page,
        "page_size": size,
        "total_pages": total.div_ceil(size),
    })))
}
