//! Internal-user writes (litellm-surface §4.4): `POST /user/new`, `/user/update`
//! (`/user/delete` is in `user_delete.rs`, the reads in `user_reads.rs`).
//!
//! Units: `max_budget` USD, `tpm_limit` tokens per minute, `rpm_limit` requests per minute.
//! `user_role` decides management rights ([`crate::access`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::admission::{ScopeKey, ScopeKind, WindowPlan};
use tollgate_governance::runtime::{Entities, Governance};
use tollgate_governance::store::{SecretKey, Team, User, hash_key};

use crate::error::{ApiError, ApiResult};
use crate::key_fields::{KeyFields, new_row};
use crate::write::Batch;
use crate::{
    AdminContext, access, extract, key_view, live, members, team_join, team_member_budget,
};

/// The user routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/user/new", post(new))
        .route("/user/update", post(update))
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

/// The cached user, by `user_id` or else `user_email`; `None` when there is none. Errors: 400
/// without either.
fn lookup(gov: &Governance, id: Option<&str>, email: Option<&str>) -> ApiResult<Option<Arc<User>>> {
    let e = gov.cache().read();
    Ok(match (id, email) {
        (Some(id), _) => e.users.get(id).cloned(),
        (None, Some(em)) => e
            .users
            .values()
            .find(|u| u.user_email.as_deref() == Some(em))
            .cloned(),
        (None, None) => return Err(ApiError::bad_request("user_id or user_email is required")),
    })
}

/// The cached user, by `user_id` or else `user_email`. Errors: 400 without either, 404.
pub(crate) fn cached(
    gov: &Governance,
    id: Option<&str>,
    email: Option<&str>,
) -> ApiResult<Arc<User>> {
    lookup(gov, id, email)?.ok_or_else(|| {
        ApiError::not_found(format!(
            "User not found, passed user_id={}",
            id.or(email).unwrap_or_default()
        ))
    })
}

/// `POST /user/update` `{"user_id"|"user_email", …fields}`; in force on the next request.
/// A user that does not exist is created from the body, as LiteLLM's upsert does
/// (`_update_single_user_helper`, internal_user_endpoints.py: by `user_id` it keeps that id,
/// by `user_email` alone it gets a uuid; `user_role` only when given, `teams` empty).
/// Returns `{"user_id", "data": user}` either way. Errors: 400, 401, 403, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/user/update")?;
    let req: UserFields = extract::body(&body)?;
    let gov = &ctx.gov;
    let (mut user, creating) = match lookup(gov, req.user_id.as_deref(), req.user_email.as_deref())?
    {
        Some(old) => (live::user_row(gov, &old).await?, false),
        None => {
            let id = req.user_id.clone().unwrap_or_else(extract::new_id);
            let u = User {
                user_id: id,
                metadata: json!({}),
                model_spend: json!({}),
                model_max_budget: json!({}),
                ..User::default()
            };
            (u, true)
        }
    };
    let now = gov.admission().now();
    let window = req.apply(&gov.cache().read(), &mut user, now, creating)?;
    Batch {
        users: vec![user.clone()],
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    start_window(gov, &req, &user, window.as_ref()).await?;
    tracing::info!(user_id = %user.user_id, created = creating, "user updated");
    Ok(Json(
        json!({"user_id": user.user_id, "data": object(gov, &user).await?}),
    ))
}
