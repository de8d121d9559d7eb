//! Team writes (litellm-surface §4.4): `POST /team/new`, `/team/update`, `/team/delete`,
//! `/team/block`, `/team/unblock`. Admin only.
//!
//! Units: budgets USD, `tpm_limit` tokens per minute, `rpm_limit` requests per minute.
//! `model_aliases`, `model_rpm_limit`, `model_tpm_limit` and `tags` are kept in the team's
//! `metadata`, where the request path reads them (`Principal::alias`).

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
use tollgate_governance::store::{Team, User};

use crate::error::{ApiError, ApiResult};
use crate::members::{self, MemberIn};
use crate::write::Batch;
use crate::{AdminContext, access, extract, live};

/// The team routes that write.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/team/new", post(new))
        .route("/team/update", post(update))
        .route("/team/delete", post(delete))
        .route("/team/block", post(block))
        .route("/team/unblock", post(unblock))
}

/// A team as LiteLLM's team object: the `"LiteLLM_TeamTable"` row with live `spend` (USD)
/// and `budget_reset_at`.
pub(crate) async fn object(gov: &Governance, t: &Team) -> Result<Map<String, Value>, ApiError> {
    let mut m = extract::object(t);
    let scope = ScopeKey::new(ScopeKind::Team, t.team_id.as_str());
    let (spend, reset) = live::window(gov, &scope, t.limits().budget_duration).await?;
    m.insert("spend".into(), Value::from(spend));
    if let Some(at) = reset {
        m.insert("budget_reset_at".into(), extract::time(at));
    }
    Ok(m)
}

/// The cached team. Errors: 404.
pub(crate) fn cached(gov: &Governance, id: &str) -> ApiResult<Arc<Team>> {
    gov.cache()
        .read()
        .teams
        .get(id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Team not found, passed team_id={id}")))
}

/// Body of `/team/new` and `/team/update` (LiteLLM's `NewTeamRequest` / `UpdateTeamRequest`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TeamFields {
    team_id: Option<String>,
    team_alias: Option<String>,
    organization_id: Option<String>,
    models: Option<Vec<String>>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    max_budget: Option<Option<f64>>,
    soft_budget: Option<f64>,
    budget_duration: Option<String>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    tpm_limit: Option<Option<i64>>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    rpm_limit: Option<Option<i64>>,
    /// Absent: unchanged; `null`: cleared (no limit).
    #[serde(deserialize_with = "extract::nullable")]
    max_parallel_requests: Option<Option<i64>>,
    model_max_budget: Option<Map<String, Value>>,
    model_rpm_limit: Option<BTreeMap<String, u64>>,
    model_tpm_limit: Option<BTreeMap<String, u64>>,
    model_aliases: Option<BTreeMap<String, String>>,
    tags: Option<Vec<String>>,
    metadata: Option<Map<String, Value>>,
    blocked: Option<bool>,
    /// `/team/new` only (members are changed with `/team/member_*` afterwards).
    members_with_roles: Option<Vec<MemberIn>>,
}

impl TeamFields {
    /// Applies the fields; returns the team's window change ([`WindowPlan`], already written
    /// into `t.spend` / `t.budget_reset_at`). Errors: 400 (bad duration, unknown organization,
    /// bad `model_max_budget`).
    fn apply(
        &self,
        e: &Entities,
        t: &mut Team,
        now: DateTime<Utc>,
        creating: bool,
    ) -> ApiResult<Option<WindowPlan>> {
        let before = t.limits().budget_duration;
        let d = extract::duration("budget_duration", self.budget_duration.as_deref())?;
        if let Some(d) = d {
            t.budget_duration = Some(d.to_string());
        }
        let window = WindowPlan::for_update(before, d, now);
        if let Some(w) = &window {
            w.apply_to(&mut t.spend, &mut t.budget_reset_at);
        }
        if let Some(o) = &self.organization_id {
            if !e.organizations.contains_key(o) {
                return Err(ApiError::bad_request(format!(
                    "Organization not found, passed organization_id={o}"
                )));
            }
            t.organization_id = Some(o.clone());
        }
        if let Some(m) = &self.model_max_budget {
            extract::model_max_budget(m)?;
            t.model_max_budget = Value::Object(m.clone());
        }
        if let Some(a) = &self.team_alias {
            t.team_alias = Some(a.clone());
        }
        if let Some(m) = &self.models {
            t.models = m.clone();
        }
        extract::set_limit("max_budget", &mut t.max_budget, self.max_budget)?;
        if let Some(v) = self.soft_budget {
            t.soft_budget = Some(v);
        }
        extract::set_limit("tpm_limit", &mut t.tpm_limit, self.tpm_limit)?;
        extract::set_limit("rpm_limit", &mut t.rpm_limit, self.rpm_limit)?;
        extract::set_limit(
            "max_parallel_requests",
            &mut t.max_parallel_requests,
            self.max_parallel_requests,
        )?;
        if let Some(b) = self.blocked {
            t.blocked = b;
        }
        let mut meta = match (creating, &t.metadata) {
            (false, Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        for (k, v) in self.metadata.iter().flatten() {
            meta.insert(k.clone(), v.clone());
        }
        let ints = |l: &BTreeMap<String, u64>| {
            Value::Object(
                l.iter()
                    .map(|(k, v)| (k.clone(), Value::from(*v)))
                    .collect(),
            )
        };
        if let Some(l) = &self.model_rpm_limit {
            meta.insert("model_rpm_limit".into(), ints(l));
        }
        if let Some(l) = &self.model_tpm_limit {
            meta.insert("model_tpm_limit".into(), ints(l));
        }
        if let Some(a) = &self.model_aliases {
            let m = a.iter().map(|(k, v)| (k.clone(), Value::from(v.clone())));
            meta.insert("model_aliases".into(), Value::Object(m.collect()));
        }
        if let Some(t) = &self.tags {
            meta.insert("tags".into(), Value::from(t.clone()));
        }
        t.metadata = Value::Object(meta);
        t.updated_at = Some(now);
        Ok(window)
    }
}

/// Applies a team's budget window change to the counters.
async fn start_window(
    gov: &Governance,
    t: &Team,
    window: Option<&WindowPlan>,
) -> Result<(), ApiError> {
    let scope = ScopeKey::new(ScopeKind::Team, t.team_id.as_str());
    live::arm(gov, &scope, window).await
}

/// `POST /team/new`: a team (`team_id` generated as a uuid when absent) with its members
/// (users created when missing). Returns the team object. Errors: 400 (bad body, existing
/// `team_id`, bad member), 401, 403, 500.
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/team/new")?;
    let req: TeamFields = extract::body(&body)?;
    let gov = &ctx.gov;
    let now = gov.admission().now();
    let mut team = Team {
        team_id: req.team_id.clone().unwrap_or_else(extract::new_id),
        model_spend: json!({}),
        model_max_budget: json!({}),
        metadata: json!({}),
        created_at: Some(now),
        ..Team::default()
    };
    let mut batch = Batch::default();
    let window = {
        let e = gov.cache().read();
        if e.teams.contains_key(&team.team_id) {
            return Err(ApiError::bad_request(format!(
                "Team id = {} already exists. Please use a different team id.",
                team.team_id
            )));
        }
        let window = req.apply(&e, &mut team, now, true)?;
        for m in req.members_with_roles.iter().flatten() {
            let mut user = members::resolve_user(&e, m)?;
            let membership = members::join(&e, &mut team, &mut user, m.role()?, None)?;
            batch.memberships.push(membership);
            batch.users.push(user);
        }
        window
    };
    // live spend read after the cache's guard is dropped (no guard is held across an await)
    for u in &mut batch.users {
        *u = live::user_row(gov, u).await?;
    }
    batch.teams.push(team.clone());
    batch.commit(gov).await?;
    start_window(gov, &team, window.as_ref()).await?;
    tracing::info!(team_id = %team.team_id, "team created");
    Ok(Json(Value::Object(object(gov, &team).await?)))
}

/// `POST /team/update` `{"team_id", …fields}`; in force on the next request. Returns
/// `{"team_id", "data": team}` (LiteLLM's shape). Errors: 400, 401, 403, 404, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/team/update")?;
    let req: TeamFields = extract::body(&body)?;
    let id = req
        .team_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let team = change(&ctx, &id, &req).await?;
    Ok(Json(
        json!({"team_id": id, "data": object(&ctx.gov, &team).await?}),
    ))
}

/// Applies `req` to the cached team `id` and saves it.
async fn change(ctx: &AdminContext, id: &str, req: &TeamFields) -> ApiResult<Team> {
    let gov = &ctx.gov;
    let mut team = live::team_row(gov, &*cached(gov, id)?).await?;
    let now = gov.admission().now();
    let window = req.apply(&gov.cache().read(), &mut team, now, false)?;
    Batch {
        teams: vec![team.clone()],
        ..Batch::default()
    }
    .commit(gov)
    .await?;
    start_window(gov, &team, window.as_ref()).await?;
    tracing::info!(team_id = %id, "team updated");
    Ok(team)
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TeamRef {
    team_id: Option<String>,
}

async fn set_blocked(
    ctx: &AdminContext,
    headers: &HeaderMap,
    body: &[u8],
    blocked: bool,
) -> ApiResult<Json<Value>> {
    let route = if blocked {
        "/team/block"
    } else {
        "/team/unblock"
    };
    access::admin(ctx, headers, route)?;
    let r: TeamRef = extract::body(body)?;
    let id = r
        .team_id
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let req = TeamFields {
        blocked: Some(blocked),
        ..TeamFields::default()
    };
    let team = change(ctx, &id, &req).await?;
    Ok(Json(Value::Object(object(&ctx.gov, &team).await?)))
}

/// `POST /team/block` `{"team_id"}`: every key of the team is refused (401) from the next
/// request. Returns the team object. Errors: 400, 401, 403, 404, 500.
async fn block(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    set_blocked(&ctx, &headers, &body, true).await
}

/// `POST /team/unblock` `{"team_id"}`. Errors as `/team/block`.
async fn unblock(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    set_blocked(&ctx, &headers, &body, false).await
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
