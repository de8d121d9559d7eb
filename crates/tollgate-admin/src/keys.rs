//! Virtual key writes (litellm-surface §4.3): `POST /key/generate`, `/key/update`,
//! `/key/delete` (in `key_delete.rs`), `/key/regenerate` (and `/key/{key}/regenerate`), `/key/block`,
//! `/key/unblock`, `/key/{key}/reset_spend` (`/key/service-account/generate` is in
//! `key_service.rs`). Admin only.
//!
//! Keys are `sk-` + 22 random URL-safe characters ([`SecretKey::generate`]) or a custom `sk-…`
//! `key`; only the hex SHA-256 (`token`) and the masked form (`key_name`, `sk-...abcd`) are
//! stored. The plaintext appears in the `/key/generate` and `/key/regenerate` responses only.
//! Routes that name a key accept the key or its 64-hex hash.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::admission::ScopeKey;
use tollgate_governance::store::{SecretKey, VerificationToken, hash_key, is_key_hash};

use crate::error::{ApiError, ApiResult};
use crate::key_fields::{KeyFields, KeyPlan, new_row};
use crate::write::Batch;
use crate::{AdminContext, access, extract, key_delete, key_view, live, served};

/// The key routes that write.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/key/generate", post(generate))
        .route("/key/update", post(update))
        .route("/key/delete", post(key_delete::delete))
        .route("/key/regenerate", post(regenerate))
        .route("/key/{key}/regenerate", post(regenerate_path))
        .route("/key/block", post(block))
        .route("/key/unblock", post(unblock))
        .route("/key/{key}/reset_spend", post(reset_spend))
}

/// The stored hash of a key given as `sk-…` or as its hash. Errors: 400 for anything else.
pub(crate) fn key_hash(s: &str) -> ApiResult<String> {
    if s.starts_with("sk-") {
        Ok(hash_key(s))
    } else if is_key_hash(s) {
        Ok(s.to_owned())
    } else {
        Err(ApiError::bad_request(
            "Invalid key: expected a virtual key (sk-...) or its SHA-256 hash",
        ))
    }
}

/// The cached key with this hash; in a fleet, a key another replica created a moment ago is
/// looked up in the database first ([`Governance::load_missing_key`]). Errors: 404.
///
/// [`Governance::load_missing_key`]: tollgate_governance::runtime::Governance::load_missing_key
pub(crate) async fn cached(ctx: &AdminContext, hash: &str) -> ApiResult<Arc<VerificationToken>> {
    ctx.gov.load_missing_key(hash).await;
    ctx.gov
        .cache()
        .read()
        .keys
        .get(hash)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("Key not found. token={hash}")))
}

/// A plaintext key from a body field: `sk-…` or 400.
fn custom_key(field: &str, k: &str) -> ApiResult<SecretKey> {
    if k.starts_with("sk-") {
        Ok(SecretKey::new(k))
    } else {
        Err(ApiError::bad_request(format!(
            "Invalid {field}: a LiteLLM virtual key must start with 'sk-'"
        )))
    }
}

/// How a saved key's counters change.
enum Counters {
    /// The fields' window changes only ([`KeyPlan::window`], [`KeyPlan::model_windows`]).
    Window,
    /// The row's `spend` and `budget_reset_at` are set as they are (an explicit `spend`, or a
    /// regenerated key taking over the old key's counters), with the model windows.
    Set,
}

/// Writes `row` (and the key's new tier) store first, then cache; then applies the plan's
/// budget windows, or sets the row's spend, in the counters.
async fn save(
    ctx: &AdminContext,
    row: &VerificationToken,
    plan: KeyPlan,
    replaces: Option<(&str, String)>,
    counters: Counters,
) -> ApiResult<()> {
    let mut batch = Batch {
        keys: vec![row.clone()],
        budgets: plan.tier.into_iter().collect(),
        ..Batch::default()
    };
    if let Some((old, by)) = replaces {
        batch.delete_keys.push(old.to_owned());
        batch.deleted_by = Some(by);
    }
    batch.commit(&ctx.gov).await?;
    let scope = ScopeKey::key(&row.token);
    match counters {
        Counters::Set => live::set(&ctx.gov, &scope, row.spend, row.budget_reset_at).await?,
        Counters::Window => live::arm(&ctx.gov, &scope, plan.window.as_ref()).await?,
    }
    for (model, w) in &plan.model_windows {
        live::arm(
            &ctx.gov,
            &ScopeKey::model_per_key(&row.token, model),
            Some(w),
        )
        .await?;
    }
    Ok(())
}

/// Adds `"warnings": [...]` to a key response when the body set `model_max_budget` and an
/// entry names nothing this proxy serves ([`served::unserved_budgets`]); logs each one.
fn warn_unserved(
    ctx: &AdminContext,
    req: &KeyFields,
    row: &VerificationToken,
    out: &mut Map<String, Value>,
) {
    if req.model_max_budget.is_none() {
        return;
    }
    let team_aliases = row
        .team_id
        .as_ref()
        .and_then(|t| ctx.gov.cache().read().teams.get(t).cloned())
        .and_then(|t| t.metadata.get("model_aliases").cloned())
        .unwrap_or(Value::Null);
    let warnings = served::unserved_budgets(&*ctx.models, row, &team_aliases);
    for w in &warnings {
        tracing::warn!(token = %row.token, "{w}");
    }
    if !warnings.is_empty() {
        out.insert("warnings".into(), Value::from(warnings));
    }
}

/// [`Counters::Set`] when the body sets `spend`, else [`Counters::Window`].
fn counters_for(req: &KeyFields) -> Counters {
    if req.spend.is_some() {
        Counters::Set
    } else {
        Counters::Window
    }
}

/// `POST /key/generate`: a new key from LiteLLM's `GenerateKeyRequest` fields; returns
/// `GenerateKeyResponse` (the fields, `key` once, `token_id`, `key_name`, `expires`,
/// `created_at`, `created_by`, `litellm_budget_table`). Errors: 400 (bad body, custom key not
/// `sk-…`, duplicate key or alias, unknown team / budget), 401, 403, 500.
async fn generate(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/key/generate")?;
    let req: KeyFields = extract::body(&body)?;
    issue(&ctx, &who, &req).await
}

/// Creates the key `req` describes, written by `who`; the answer of `/key/generate`.
pub(crate) async fn issue(
    ctx: &AdminContext,
    who: &access::Who,
    req: &KeyFields,
) -> ApiResult<Json<Value>> {
    let secret = match &req.key {
        None => SecretKey::generate(),
        Some(k) => custom_key("key", k)?,
    };
    let gov = &ctx.gov;
    let now = gov.admission().now();
    let by = who.actor();
    let mut row = new_row(secret.hash(), secret.masked(), now, &by);
    let plan = {
        let e = gov.cache().read();
        if e.keys.contains_key(&row.token) {
            return Err(ApiError::bad_request("Key already exists"));
        }
        req.apply(&e, &mut row, now, &by, true)?
    };
    save(ctx, &row, plan, None, counters_for(req)).await?;
    tracing::info!(key = %secret.masked(), "virtual key generated");
    let mut out = key_view::generated(gov, &row, &secret, req.duration.as_deref()).await?;
    warn_unserved(ctx, req, &row, &mut out);
    Ok(Json(Value::Object(out)))
}

/// `POST /key/update` `{"key": "<sk-… or hash>", …fields}`: changes the given fields; in force
/// on the next request. Returns the key object with `key` = the hash. Errors: 400, 401, 403,
/// 404 unknown key, 500.
async fn update(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/key/update")?;
    let req: KeyFields = extract::body(&body)?;
    let id = req
        .key
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("key is required"))?;
    let hash = key_hash(id)?;
    let row = change(&ctx, &who, &hash, &req).await?;
    let mut out = key_view::object(&ctx.gov, &row).await?;
    out.insert("key".into(), Value::from(hash));
    warn_unserved(&ctx, &req, &row, &mut out);
    Ok(Json(Value::Object(out)))
}

/// Applies `req` to the cached key `hash` and saves it (spend and window from the counters).
async fn change(
    ctx: &AdminContext,
    who: &access::Who,
    hash: &str,
    req: &KeyFields,
) -> ApiResult<VerificationToken> {
    let gov = &ctx.gov;
    let mut row = live::key_row(gov, &*cached(ctx, hash).await?).await?;
    let now = gov.admission().now();
    let by = who.actor();
    let plan = req.apply(&gov.cache().read(), &mut row, now, &by, false)?;
    save(ctx, &row, plan, None, counters_for(req)).await?;
    Ok(row)
}

/// `{"key": …}` of block / unblock.
#[derive(Default, Deserialize)]
#[serde(default)]
struct KeyRef {
    key: Option<String>,
}

async fn set_blocked(
    ctx: &AdminContext,
    headers: &HeaderMap,
    body: &[u8],
    blocked: bool,
) -> ApiResult<Json<Value>> {
    let route = if blocked {
        "/key/block"
    } else {
        "/key/unblock"
    };
    let who = access::admin(ctx, headers, route)?;
    let r: KeyRef = extract::body(body)?;
    let hash = key_hash(
        r.key
            .as_deref()
            .ok_or_else(|| ApiError::bad_request("key is required"))?,
    )?;
    let req = KeyFields {
        blocked: Some(blocked),
        ..KeyFields::default()
    };
    let row = change(ctx, &who, &hash, &req).await?;
    tracing::info!(token = %hash, blocked, "virtual key block state changed");
    Ok(Json(Value::Object(key_view::object(&ctx.gov, &row).await?)))
}

/// `POST /key/block` `{"key"}`: the key is refused (401) from the next request; returns the
/// key object. Errors: 400, 401, 403, 404, 500.
async fn block(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    set_blocked(&ctx, &headers, &body, true).await
}

/// `POST /key/unblock` `{"key"}`: undoes `/key/block`. Errors as `/key/block`.
async fn unblock(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    set_blocked(&ctx, &headers, &body, false).await
}

/// `POST /key/regenerate` `{"key", "new_key"?, …fields}`.
async fn regenerate(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    regen(&ctx, &headers, None, &body).await
}

/// `POST /key/{key}/regenerate` `{"new_key"?, …fields}`.
async fn regenerate_path(
    State(ctx): State<Arc<AdminContext>>,
    Path(key): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    regen(&ctx, &headers, Some(key), &body).await
}

/// Replaces a key by a new one (random, or `new_key`) keeping its settings and spend, applying
/// any other fields given; the old key is deleted (its `/key/info` says `deleted`). Returns
/// `GenerateKeyResponse` with the new `key`. Errors: 400, 401, 403, 404, 500.
async fn regen(
    ctx: &AdminContext,
    headers: &HeaderMap,
    path_key: Option<String>,
    body: &[u8],
) -> ApiResult<Json<Value>> {
    let who = access::admin(ctx, headers, "/key/regenerate")?;
    let req: KeyFields = extract::body(body)?;
    let id = path_key
        .or_else(|| req.key.clone())
        .ok_or_else(|| ApiError::bad_request("key is required"))?;
    let old_hash = key_hash(&id)?;
    let old = cached(ctx, &old_hash).await?;
    let secret = match &req.new_key {
        None => SecretKey::generate(),
        Some(k) => custom_key("new_key", k)?,
    };
    let gov = &ctx.gov;
    let now = gov.admission().now();
    let by = who.actor();
    let mut row = VerificationToken {
        token: secret.hash(),
        key_name: Some(secret.masked()),
        ..live::key_row(gov, &old).await?
    };
    let plan = {
        let e = gov.cache().read();
        if e.keys.contains_key(&row.token) {
            return Err(ApiError::bad_request("Key already exists"));
        }
        req.apply(&e, &mut row, now, &by, false)?
    };
    // the new key takes over the old key's per-model budget counters
    for model in row
        .model_max_budget
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
    {
        let (spend, reset) = live::spend(gov, &ScopeKey::model_per_key(&old_hash, model)).await?;
        if spend != 0.0 || reset.is_some() {
            live::set(
                gov,
                &ScopeKey::model_per_key(&row.token, model),
                spend,
                reset,
            )
            .await?;
        }
    }
    save(ctx, &row, plan, Some((&old_hash, by)), Counters::Set).await?;
    tracing::info!(old = %old_hash, new = %secret.masked(), "virtual key regenerated");
    let mut out = key_view::generated(gov, &row, &secret, req.duration.as_deref()).await?;
    warn_unserved(ctx, &req, &row, &mut out);
    Ok(Json(Value::Object(out)))
}

/// `/key/{key}/reset_spend` body.
#[derive(Default, Deserialize)]
#[serde(default)]
struct ResetBody {
    reset_to: Option<f64>,
}

/// `POST /key/{key}/reset_spend` `{"reset_to": <USD, default 0>}`: the key's spend in its
/// window becomes `reset_to` now (0 restarts the window), in force for the very next
/// request. Returns `{"key_hash", "spend", "previous_spend", "max_budget", "budget_duration"}`.
/// Errors: 400 (`reset_to` negative or above the current spend), 401, 403, 404.
async fn reset_spend(
    State(ctx): State<Arc<AdminContext>>,
    Path(key): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    access::admin(&ctx, &headers, "/key/{key}/reset_spend")?;
    let req: ResetBody = extract::body(&body)?;
    let hash = key_hash(&key)?;
    let row = cached(&ctx, &hash).await?;
    let gov = &ctx.gov;
    let scope = ScopeKey::key(&hash);
    let (previous, _) = live::spend(gov, &scope).await?;
    let reset_to = req.reset_to.unwrap_or(0.0);
    if !reset_to.is_finite() || reset_to < 0.0 {
        return Err(ApiError::bad_request("reset_to must be >= 0"));
    }
    if reset_to > previous {
        return Err(ApiError::bad_request(format!(
            "reset_to ({reset_to}) must be <= the current spend ({previous})"
        )));
    }
    if reset_to == 0.0 {
        let tier = crate::key_fields::tier_of(&gov.cache().read(), row.budget_id.as_deref());
        let window = match tier {
            Some(t) => row.limits().tighter(&t.limits()).budget_duration,
            None => row.limits().budget_duration,
        };
        gov.admission().reset_spend(&scope, window).await?;
    } else {
        live::set(gov, &scope, reset_to, None).await?;
    }
    tracing::info!(token = %hash, "key spend reset");
    Ok(Json(json!({
        "key_hash": hash,
        "spend": reset_to,
        "previous_spend": previous,
        "max_budget": row.max_budget,
        "budget_duration": row.budget_duration,
    })))
}
