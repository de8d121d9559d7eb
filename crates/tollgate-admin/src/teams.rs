//! Team writes (litellm-surface §4.4): `POST /team/new`, `/team/update`, `/team/block`,
//! `/team/unblock` (`/team/delete` is in `team_delete.rs`). Admin only.
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
use tollgate_governance::store::Team;

use crate::error::{ApiError, ApiResult};
use crate::members::{self, MemberBudget, MemberIn};
use crate::team_member_budget::{self, DefaultFields};
use crate::write::Batch;
use crate::{AdminContext, access, extract, live, team_join};

/// The team routes that write.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/team/new", post(new))
        .route("/team/update", post(update))
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
    /// The default member budget (`team_member_budget`, `team_member_rpm_limit`,
    /// `team_member_tpm_limit`).
    #[serde(flatten)]
    member_defaults: DefaultFields,
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
/// (users created when missing) and its creator as an `admin` member (`default_user_id` for
/// the master key, [`members::with_creator`]). Returns the team object. Errors: 400 (bad body, existing
/// `team_id`, bad member), 401, 403, 500.
async fn new(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/team/new")?;
    let req: TeamFields = extract::body(&body)?;
    let gov = &ctx.gov;
    let now = gov.admission().now();
    let by = who.actor();
    let mut team = Team {
        team_id: req.team_id.clone().unwrap_or_else(extract::new_id),
        model_spend: json!({}),
        model_max_budget: json!({}),
        metadata: json!({}),
        created_at: Some(now),
        ..Team::default()
    };
    let mut batch = Batch::default();
    let (window, members) = {
        let e = gov.cache().read();
        if e.teams.contains_key(&team.team_id) {
            return Err(ApiError::bad_request(format!(
                "Team id = {} already exists. Please use a different team id.",
                team.team_id
            )));
        }
        let window = req.apply(&e, &mut team, now, true)?;
        let duration = team.budget_duration.clone();
        let default = team_member_budget::upsert_default(
            &e,
            &mut team,
            &req.member_defaults,
            duration.as_deref(),
            now,
            &by,
        )?;
        // the members join after the default exists, so they get copies of it (LiteLLM adds
        // them after creating the team row)
        let creator = match &who.principal {
            None => Some(members::PROXY_ADMIN_USER_ID),
            Some(p) => p.key.user_id.as_deref(),
        };
        let list =
            members::with_creator(req.members_with_roles.clone().unwrap_or_default(), creator);
        let no_budget = MemberBudget::default();
        let members = team_join::add(
            &e,
            &mut team,
            (&list, &no_budget, default.as_ref()),
            now,
            &by,
            &mut batch,
        )?;
        batch.budgets.extend(default);
        (window, members)
    };
    team_join::refresh(gov, &mut batch).await?;
    batch.teams.push(team.clone());
    batch.commit(gov).await?;
    start_window(gov, &team, window.as_ref()).await?;
    members.arm(gov).await?;
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
    let who = access::admin(&ctx, &headers, "/team/update")?;
    let req: TeamFields = extract::body(&body)?;
    let id = req
        .team_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let team = change(&ctx, &id, &req, &who.actor()).await?;
    Ok(Json(
        json!({"team_id": id, "data": object(&ctx.gov, &team).await?}),
    ))
}

/// Applies `req` to the cached team `id` (its default member tier changed in place, or
/// created with the window the team had) and saves it; `by` writes the tier.
async fn change(ctx: &AdminContext, id: &str, req: &TeamFields, by: &str) -> ApiResult<Team> {
    let gov = &ctx.gov;
    let mut team = live::team_row(gov, &*cached(gov, id)?).await?;
    let now = gov.admission().now();
    let (window, default) = {
        let e = gov.cache().read();
        let duration = team.budget_duration.clone();
        let default = team_member_budget::upsert_default(
            &e,
            &mut team,
            &req.member_defaults,
            duration.as_deref(),
            now,
            by,
        )?;
        (req.apply(&e, &mut team, now, false)?, default)
    };
    Batch {
        budgets: default.into_iter().collect(),
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
    let who = access::admin(ctx, headers, route)?;
    let r: TeamRef = extract::body(body)?;
    let id = r
        .team_id
        .ok_or_else(|| ApiError::bad_request("team_id is required"))?;
    let req = TeamFields {
        blocked: Some(blocked),
        ..TeamFields::default()
    };
    let team = change(ctx, &id, &req, &who.actor()).await?;
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
