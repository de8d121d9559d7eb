//! Spend reads (litellm-surface §4.7): `GET /spend/logs`, `GET /global/spend`,
//! `GET /global/spend/report`. Each first flushes the write-behind so it sees every call
//! settled before it (read-your-writes). Money is USD, tokens are prompt + completion.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tollgate_governance::admission::ScopeKey;
use tollgate_governance::store::{SpendDim, SpendGroupQuery, SpendLogFilter, hash_key};

use crate::error::{ApiError, ApiResult};
use crate::{AdminContext, access, extract};

/// The spend routes.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new()
        .route("/spend/logs", get(logs))
        .route("/global/spend", get(global))
        .route("/global/spend/report", get(report))
}

/// Writes everything queued (spend counters, spend-log rows) before a read.
async fn flush(ctx: &AdminContext) -> ApiResult<()> {
    ctx.write_behind.flush().await?;
    Ok(())
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LogsQuery {
    api_key: Option<String>,
    user_id: Option<String>,
    request_id: Option<String>,
    team_id: Option<String>,
    end_user: Option<String>,
    start_date: Option<String>,
    end_date: Option<String>,
}

/// `GET /spend/logs?api_key&user_id&request_id&team_id&end_user&start_date&end_date` → a
/// JSON list of `"LiteLLM_SpendLogs"` rows (LiteLLM field names: `request_id`, `api_key` = key
/// hash, `spend`, `prompt_tokens`, `startTime`, …), newest first. `api_key` may be the hash or
/// the `sk-…` key (hashed here). Dates: `YYYY-MM-DD` (an end date covers its day) or RFC 3339,
/// on `startTime`. A non-admin key sees only its own rows (another `api_key`: 403).
/// Errors: 400 (bad date), 401, 403, 500.
async fn logs(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let q: LogsQuery = extract::query(&uri)?;
    let mut api_key = q.api_key.as_deref().map(|k| {
        if k.starts_with("sk-") {
            hash_key(k)
        } else {
            k.to_owned()
        }
    });
    if !who.reads_all() {
        let own = who
            .principal
            .as_ref()
            .map(|p| p.key.token.clone())
            .unwrap_or_default();
        if api_key.as_ref().is_some_and(|k| *k != own) {
            return Err(ApiError::forbidden(
                "A non-admin key can only view its own spend logs. Route=/spend/logs",
            ));
        }
        api_key = Some(own);
    }
    let filter = SpendLogFilter {
        api_key,
        user_id: q.user_id,
        request_id: q.request_id,
        team_id: q.team_id,
        end_user: q.end_user,
        start: extract::date("start_date", q.start_date.as_deref(), false)?,
        end: extract::date("end_date", q.end_date.as_deref(), true)?,
        limit: None,
    };
    flush(&ctx).await?;
    let rows = ctx.gov.store().spend_logs(&filter).await?;
    Ok(Json(serde_json::to_value(rows).unwrap_or(Value::Null)))
}

/// `GET /global/spend` → `{"spend": <proxy-wide spend in its window (all time without a
/// proxy-wide limit: the spend logs' sum), USD>, "max_budget":
/// <litellm_settings.max_budget, 0 when unset>}`. Admins and viewers. Errors: 401, 403, 500.
async fn global(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/global/spend")?;
    flush(&ctx).await?;
    // The proxy-wide counter exists only when a limit needs it; otherwise the spend logs
    // hold the same total.
    let spend = match ctx.gov.options().global.is_empty() {
        true => ctx.gov.store().spend_since(None).await?,
        false => ctx.gov.spend_of(&ScopeKey::global()).await?,
    };
    let max = ctx.gov.options().global.max_budget.unwrap_or(0.0);
    Ok(Json(json!({"spend": spend, "max_budget": max})))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ReportQuery {
    start_date: Option<String>,
    end_date: Option<String>,
    group_by: Option<String>,
}

/// One group's totals: spend (USD) and, per model, spend and tokens.
#[derive(Default)]
struct Totals {
    spend: f64,
    models: BTreeMap<String, (f64, i64)>,
}

/// `GET /global/spend/report?start_date&end_date&group_by=team|customer|api_key` → LiteLLM's
/// shape, one entry per day (`YYYY-MM-DD` of `startTime`, ascending):
/// `[{"group_by_day", "teams": [{"team_name", "total_spend", "metadata": [{"model", "spend",
/// "total_tokens"}]}]}]`; with `group_by=customer` the list is `customers` and the name
/// `customer`, with `api_key` it is `api_keys` / `api_key` (the hash). Summed by the database
/// (one row per day, group and model, never the logs). Admins and viewers. Errors: 400 (bad date or `group_by`), 401, 403, 500.
async fn report(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    access::reader(&ctx, &headers, "/global/spend/report")?;
    let q: ReportQuery = extract::query(&uri)?;
    let (list, name): (&str, &str) = match q.group_by.as_deref().unwrap_or("team") {
        "team" => ("teams", "team_name"),
        "customer" => ("customers", "customer"),
        "api_key" => ("api_keys", "api_key"),
        other => {
            return Err(ApiError::bad_request(format!(
                "Invalid group_by={other}; expected team, customer or api_key"
            )));
        }
    };
    let dim = match list {
        "teams" => SpendDim::Team,
        "customers" => SpendDim::EndUser,
        _ => SpendDim::ApiKey,
    };
    let query = SpendGroupQuery {
        by: vec![SpendDim::Day, dim, SpendDim::Model],
        start: extract::date("start_date", q.start_date.as_deref(), false)?,
        end: extract::date("end_date", q.end_date.as_deref(), true)?,
        ..SpendGroupQuery::default()
    };
    flush(&ctx).await?;
    // one row per (day, group, model), summed by the database
    let rows = ctx.gov.store().spend_groups(&query).await?;
    let team_name = |t: String| -> String {
        ctx.gov
            .cache()
            .read()
            .teams
            .get(&t)
            .and_then(|t| t.team_alias.clone())
            .unwrap_or(t)
    };
    let mut days: BTreeMap<String, BTreeMap<Option<String>, Totals>> = BTreeMap::new();
    for r in rows {
        let mut k = r.keys.into_iter();
        let (day, group, model) = (k.next().flatten(), k.next().flatten(), k.next().flatten());
        let group = if dim == SpendDim::Team {
            group.map(team_name)
        } else {
            group
        };
        let g = days
            .entry(day.unwrap_or_default())
            .or_default()
            .entry(group)
            .or_default();
        g.spend += r.spend;
        let m = g.models.entry(model.unwrap_or_default()).or_default();
        m.0 += r.spend;
        m.1 += r.total_tokens;
    }
    let out: Vec<Value> = days
        .into_iter()
        .map(|(day, groups)| {
            let entries: Vec<Value> = groups
                .into_iter()
                .map(|(g, t)| {
                    let mut o = Map::new();
                    o.insert(name.to_owned(), g.map_or(Value::Null, Value::from));
                    o.insert("total_spend".into(), Value::from(t.spend));
                    let meta: Vec<Value> = t
                        .models
                        .into_iter()
                        .map(|(model, (spend, tokens))| {
                            json!({"model": model, "spend": spend, "total_tokens": tokens})
                        })
                        .collect();
                    o.insert("metadata".into(), Value::from(meta));
                    Value::Object(o)
                })
                .collect();
            let mut d = Map::new();
            d.insert("group_by_day".into(), Value::from(day));
            d.insert(list.to_owned(), Value::from(entries));
            Value::Object(d)
        })
        .collect();
    Ok(Json(Value::from(out)))
}
