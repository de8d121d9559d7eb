//! Internal users (litellm-surface §4.4): `POST /user/new`, `/user/update`, `/user/delete`,
//! `GET /user/info`, `GET /user/list`.
//!
//! Units: `max_budget` USD, `tpm_limit` tokens per minute, `rpm_limit` requests per minute.
//! `user_role` decides management rights ([`crate::access`]).

use std::collections::BTreeMap;
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
use tollgate_governance::runtime::{Entities, Governance};
use tollgate_governance::store::{SecretKey, Team, User, VerificationToken, hash_key};

use crate::error::{ApiError, ApiResult};
use crate::key_fields::{KeyFields, new_row};
use crate::write::Batch;
use crate::{
    AdminContext, access, extract, key_view, live, members, team_join, team_member_budget, teams,
};

/// The user routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/user/new", post(new))
        .route("/user/update", post(update))
        .route("/user/delete", post(delete))
        .route("/user/info", get(info))
        .route("/user/list", get(list))
}

/// `user_role` values (LiteLLM's `LitellmUserRoles`).
const ROLES: [&str; 7] = [
    "proxy_admin",
    "proxy_admin_viewer",
    "org_admin",
    "internal_user",
    "internal_user_viewer",
    "team",
    "customer",
];

/// A user as LiteLLM shows it: the `"LiteLLM_UserTable"` row with live `spend` (USD) and
/// `budget_reset_at`.
pub(crate) async fn object(gov: &Governance, u: &User) -> Result<Map<String, Value>, ApiError> {
    let mut m = extract::object(u);
    let scope = ScopeKey::new(ScopeKind::User, u.user_id.as_str());
    let (spend, reset) = live::window(gov, &scope, u.limits().budget_duration).await?;
    m.insert("spend".into(), Value::from(spend));
    if let Some(at) = reset {
        m.insert("budget_reset_at".into(), extract::time(at));
    }
    Ok(m)
}

/// Body of `/user/new` and `/user/update` (LiteLLM's `NewUserRequest` / `UpdateUserRequest`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct UserFields {
    user_id: Option<String>,
    user_email: Option<String>,
    user_alias: Option<String>,
    user_role: Option<String>,
    teams: Option<Vec<String>>,
    team_id: Option<String>,
    organization_id: Option<String>,
    models: Option<Vec<String>>,
    spend: Option<f64>,
    max_budget: Option<f64>,
    budget_duration: Option<String>,
    tpm_limit: Option<i64>,
    rpm_limit: Option<i64>,
    max_parallel_requests: Option<i64>,
    metadata: Option<Map<String, Value>>,
    model_max_budget: Option<Map<String, Value>>,
    /// `/user/new`: create a key for the user (default true).
    auto_create_key: Option<bool>,
    /// Fields of the auto-created key.
    key_alias: Option<String>,
    duration: Option<String>,
    aliases: Option<BTreeMap<String, String>>,
    /// The admin UI login password: stored hashed, never returned.
    password: Option<String>,
}

impl UserFields {
    /// Applies the fields; returns the user's window change ([`WindowPlan`], already written
    /// into `u.spend` / `u.budget_reset_at`; an explicit `spend` is the new window's). Errors:
    /// 400.
    fn apply(
        &self,
        e: &Entities,
        u: &mut User,
        now: DateTime<Utc>,
        creating: bool,
    ) -> ApiResult<Option<WindowPlan>> {
        let before = u.limits().budget_duration;
        let d = extract::duration("budget_duration", self.budget_duration.as_deref())?;
        if let Some(d) = d {
            u.budget_duration = Some(d.to_string());
        }
        let window = WindowPlan::for_update(before, d, now);
        if let Some(w) = &window {
            w.apply_to(&mut u.spend, &mut u.budget_reset_at);
        }
        if let Some(r) = &self.user_role {
            if !ROLES.contains(&r.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "Invalid user_role={r}; expected one of {ROLES:?}"
                )));
            }
            u.user_role = Some(r.clone());
        }
        if let Some(o) = &self.organization_id {
            if !e.organizations.contains_key(o) {
                return Err(ApiError::bad_request(format!(
                    "Organization not found, passed organization_id={o}"
                )));
            }
            u.organization_id = Some(o.clone());
        }
        if let Some(m) = &self.model_max_budget {
            extract::model_max_budget(m)?;
            u.model_max_budget = Value::Object(m.clone());
        }
        if let Some(p) = &self.password {
            if p.is_empty() {
                return Err(ApiError::bad_request("password must not be empty"));
            }
            // LiteLLM's `hash_token`: the hex SHA-256, as its login compares it.
            u.password = Some(hash_key(p));
        }
        if let Some(v) = &self.user_email {
            u.user_email = Some(v.clone());
        }
        if let Some(v) = &self.user_alias {
            u.user_alias = Some(v.clone());
        }
        if let Some(v) = &self.models {
            u.models = v.clone();
        }
        if let Some(v) = self.spend {
            u.spend = v;
        }
        if let Some(v) = self.max_budget {
            u.max_budget = Some(v);
        }
        if let Some(v) = self.tpm_limit {
            u.tpm_limit = Some(v);
        }
        if let Some(v) = self.rpm_limit {
            u.rpm_limit = Some(v);
        }
        if let Some(v) = self.max_parallel_requests {
            u.max_parallel_requests = Some(v);
        }
        if let Some(new) = &self.metadata {
            let mut m = match (creating, &u.metadata) {
                (false, Value::Object(o)) => o.clone(),
                _ => Map::new(),
            };
            m.extend(new.clone());
            u.metadata = Value::Object(m);
        }
        Ok(window)
    }
}

/// Updates the user's counter after a write: the row's spend and window when the body set
/// `spend`, else the window change alone.
async fn start_window(
    gov: &Governance,
    req: &UserFields,
    u: &User,
    window: Option<&WindowPlan>,
) -> Result<(), ApiError> {
    let scope = ScopeKey::new(ScopeKind::User, u.user_id.as_str());
    if req.spend.is_some() {
        live::set(gov, &scope, u.spend, u.budget_reset_at).await
    } else {
        live::arm(gov, &scope, window).await
    }
}

/// `POST /user/new`: a user (id generated when absent, role `internal_user` by default),
/// added to `teams` / `team_id`, and — unless `auto_create_key: false` — a key for it.
/// Returns LiteLLM's `NewUserResponse`: the generated key's fields (`key` shown once,
/// `token_id`, …) overlaid with the user's (`user_id`, `user_email`, `user_role`, `teams`,
/// `max_budget`, …); `key` is `null` without a key. Errors: 400 (bad body, existing user,
/// unknown team), 401, 403, 500.
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/user/new")?;
    let req: UserFields = extract::body(&body)?;
    let gov = &ctx.gov;
    let now = gov.admission().now();
    let by = who.actor();
    let user_id = req.user_id.clone().unwrap_or_else(extract::new_id);
    let mut user = members::new_user(user_id.clone(), None, "internal_user");
    let mut batch = Batch::default();
    let secret = req
        .auto_create_key
        .unwrap_or(true)
        .then(SecretKey::generate);
    let mut member_windows = Vec::new();
    let window = {
        let e = gov.cache().read();
        if e.users.contains_key(&user_id) {
            return Err(ApiError::bad_request(format!(
                "User with id={user_id} already exists"
            )));
        }
        let window = req.apply(&e, &mut user, now, true)?;
        let mut team_ids: Vec<String> = req.teams.clone().unwrap_or_default();
        team_ids.extend(req.team_id.clone());
        team_ids.sort();
        team_ids.dedup();
        for t in &team_ids {
            let team = e.teams.get(t).ok_or_else(|| {
                ApiError::bad_request(format!("Team not found, passed team_id={t}"))
            })?;
            let mut team = Team::clone(team);
            // a copy of the team's default member tier, as for any member added
            let default = team_member_budget::default_tier(&e, &team);
            let no_budget = members::MemberBudget::default();
            let tier = team_member_budget::member_tier(&no_budget, default.as_ref(), now, &by)?;
            let budget_id = tier.as_ref().map(|(t, _)| t.budget_id.clone());
            let m = members::join(&e, &mut team, &mut user, "user".into(), budget_id)?;
            if let Some((t, w)) = tier {
                member_windows.extend(w.map(|w| (m.clone(), w)));
                batch.budgets.push(t);
            }
            batch.memberships.push(m);
            batch.teams.push(team);
        }
        if let Some(s) = &secret {
            let mut key = new_row(s.hash(), s.masked(), now, &by);
            KeyFields {
                user_id: Some(user_id.clone()),
                team_id: req.team_id.clone(),
                models: req.models.clone(),
                key_alias: req.key_alias.clone(),
                duration: req.duration.clone(),
                aliases: req.aliases.clone(),
                ..KeyFields::default()
            }
            .apply(&e, &mut key, now, &by, true)?;
            batch.keys.push(key);
        }
        window
    };
    // live spend read after the cache's guard is dropped (no guard is held across an await)
    for t in &mut batch.teams {
        *t = live::team_row(gov, t).await?;
    }
    batch.users.push(user.clone());
    let key_row = batch.keys.first().cloned();
    batch.commit(gov).await?;
    start_window(gov, &req, &user, window.as_ref()).await?;
    for (m, w) in &member_windows {
        team_join::start_window(gov, m, w).await?;
    }
    tracing::info!(user_id = %user_id, "user created");
    let mut out = match (&key_row, &secret) {
        (Some(k), Some(s)) => key_view::generated(gov, k, s, req.duration.as_deref()).await?,
        _ => {
            let mut m = Map::new();
            m.insert("key".into(), Value::Null);
            m
        }
    };
    out.extend(object(gov, &user).await?);
    Ok(Json(Value::Object(out)))
}

/// The cached user, by `user_id` or else `user_email`. Errors: 400 without either, 404.
fn cached(gov: &Governance, id: Option<&str>, email: Option<&str>) -> ApiResult<Arc<User>> {
    let e = gov.cache().read();
    let found = match (id, email) {
        (Some(id), _) => e.users.get(id).cloned(),
        (None, Some(em)) => e
            .users
            .values()
            .find(|u| u.user_email.as_deref() == Some(em))
            .cloned(),
        (None, None) => return Err(ApiError::bad_request("user_id or user_email is required")),
    };
    found.ok_or_else(|| {
        ApiError::not_found(format!(
            "User not found, passed user_id={}",
            id.or(email).unwrap_or_default()
        ))
    })
}

/// `POST /user/update` `{"user_id"|"user_email", …fields}`; in force on the next request.
/// Returns `{"user_id", "data": user}`. Errors: 400, 401, 403, 404, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/user/update")?;
    let req: UserFields = extract::body(&body)?;
    let gov = &ctx.gov;
    let old = cached(gov, req.user_id.as_deref(), req.user_email.as_deref())?;
    let mut user = live::user_row(gov, &old).await?;
    let now = gov.admission().now();
    let window = req.apply(&gov.cache().read(), &mut user, now, false)?;
    Batch {
        users: vec![user.clone()],
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    start_window(gov, &req, &user, window.as_ref()).await?;
    tracing::info!(user_id = %user.user_id, "user updated");
    Ok(Json(
        json!({"user_id": user.user_id, "data": object(gov, &user).await?}),
    ))
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

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InfoQuery {
    user_id: Option<String>,
}

/// `GET /user/info?user_id=` (default: the calling key's user) →
/// `{"user_id", "user_info": user object, "keys": [key objects], "teams": [team objects]}`.
/// A non-admin may read its own user only (403). Errors: 400, 401, 403, 404.
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
    let teams: Vec<Value> = live::each(teams.iter(), |t| async move {
        Ok(Value::Object(teams::object(gov, t).await?))
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
