//! `GET /tollgate/spend/summary`: Tollgate's own aggregate spend read, for groupings LiteLLM
//! has no report shape for (model, tag, day) and the same shape for key, team and end user, so
//! the admin UI's spend page (or a script) reads one row per group and per day over any date
//! range, never the spend logs themselves. Summed by the database (`spend_groups`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use http::{HeaderMap, Uri};
use serde::Deserialize;
use serde_json::{Value, json};
use tollgate_governance::store::{GovernanceStore, SpendDim, SpendGroup, SpendGroupQuery};

use crate::error::{ApiError, ApiResult};
use crate::{AdminContext, access, extract};

/// The summary route.
pub(crate) fn routes() -> Router<Arc<AdminContext>> {
    Router::new().route("/tollgate/spend/summary", get(summary))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SummaryQuery {
    start_date: Option<String>,
    end_date: Option<String>,
    group_by: Option<String>,
}

/// `group_by` value → dimension.
pub(crate) fn dim(name: &str) -> Option<SpendDim> {
    Some(match name {
        "api_key" => SpendDim::ApiKey,
        "team" => SpendDim::Team,
        "model" => SpendDim::Model,
        "end_user" => SpendDim::EndUser,
        "tag" => SpendDim::Tag,
        "day" => SpendDim::Day,
        _ => return None,
    })
}

/// The per-day totals of `base` and its totals per `by` group, largest spend first. By tag
/// (a request counts under each of its tags) two queries; otherwise one, by day and group,
/// summed here both ways (at most days × groups rows).
async fn days_and_groups(
    store: &dyn GovernanceStore,
    base: &SpendGroupQuery,
    by: SpendDim,
) -> ApiResult<(Vec<SpendGroup>, Vec<SpendGroup>)> {
    let (days, mut groups) = match by {
        SpendDim::Day => {
            let days = store.spend_groups(base).await?;
            (days.clone(), days)
        }
        SpendDim::Tag => {
            let q = SpendGroupQuery {
                by: vec![SpendDim::Tag],
                ..base.clone()
            };
            (
                store.spend_groups(base).await?,
                store.spend_groups(&q).await?,
            )
        }
        _ => {
            let q = SpendGroupQuery {
                by: vec![SpendDim::Day, by],
                ..base.clone()
            };
            let rows = store.spend_groups(&q).await?;
            let mut days: BTreeMap<Option<String>, SpendGroup> = BTreeMap::new();
            let mut groups: BTreeMap<Option<String>, SpendGroup> = BTreeMap::new();
            for r in rows {
                let mut k = r.keys.iter().cloned();
                let (day, group) = (k.next().flatten(), k.next().flatten());
                add(days.entry(day.clone()).or_insert_with(|| empty(day)), &r);
                add(
                    groups.entry(group.clone()).or_insert_with(|| empty(group)),
                    &r,
                );
            }
            (days.into_values().collect(), groups.into_values().collect())
        }
    };
    groups.sort_by(|a, b| b.spend.total_cmp(&a.spend).then(a.keys.cmp(&b.keys)));
    Ok((days, groups))
}

fn empty(key: Option<String>) -> SpendGroup {
    SpendGroup {
        keys: vec![key],
        spend: 0.0,
        total_tokens: 0,
        requests: 0,
    }
}

fn add(to: &mut SpendGroup, r: &SpendGroup) {
    to.spend += r.spend;
    to.total_tokens += r.total_tokens;
    to.requests += r.requests;
}

/// `GET /tollgate/spend/summary?start_date&end_date&group_by=api_key|team|model|end_user|tag|day`
/// (default `api_key`) → `{"group_by", "start_date", "end_date", "total_spend" (USD),
/// "total_tokens", "requests", "groups": [{"group", "label", "spend", "total_tokens",
/// "requests"}] (largest spend first), "days": [{"date": "YYYY-MM-DD", "spend",
/// "total_tokens", "requests"}] (ascending; days without spend are absent)}`. `group` is the
/// key hash, team id, model, end user, tag or day (`null`: no team / no end user); `label` is
/// the key's alias or the team's alias when it has one, else `group`. A request with several
/// tags counts under each, so tag groups may sum to more than the total. Dates as
/// `/spend/logs` (`YYYY-MM-DD`, an end date covers its day, or RFC 3339) on `startTime`.
/// Admins and viewers see all spend; a user's key (or UI session) the spend of all that user's
/// keys; a key without a user only its own. Errors: 400 (bad date or
/// `group_by`), 401, 500.
async fn summary(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let who = access::who(&ctx, &headers)?;
    let q: SummaryQuery = extract::query(&uri)?;
    let name = q.group_by.as_deref().unwrap_or("api_key");
    let Some(by) = dim(name) else {
        return Err(ApiError::bad_request(format!(
            "Invalid group_by={name}; expected api_key, team, model, end_user, tag or day"
        )));
    };
    // Anyone but an admin or viewer sees their own: a user's every key (an internal user's
    // UI session is one), else the calling key's.
    let own_user = who
        .principal
        .as_ref()
        .and_then(|p| p.key.user_id.clone())
        .filter(|u| !u.is_empty());
    let (api_key, user_id) = match (who.reads_all(), own_user) {
        (true, _) => (None, None),
        (false, Some(user)) => (None, Some(user)),
        (false, None) => (
            Some(
                who.principal
                    .as_ref()
                    .map(|p| p.key.token.clone())
                    .unwrap_or_default(),
            ),
            None,
        ),
    };
    let base = SpendGroupQuery {
        by: vec![SpendDim::Day],
        start: extract::date("start_date", q.start_date.as_deref(), false)?,
        end: extract::date("end_date", q.end_date.as_deref(), true)?,
        api_key,
        user_id,
    };
    ctx.write_behind.flush().await?;
    let (days, groups) = days_and_groups(ctx.gov.store().as_ref(), &base, by).await?;
    let label = |g: &Option<String>| -> Value {
        let Some(id) = g else { return Value::Null };
        let cache = ctx.gov.cache().read();
        let alias = match by {
            SpendDim::ApiKey => cache.keys.get(id).and_then(|k| k.key_alias.clone()),
            SpendDim::Team => cache.teams.get(id).and_then(|t| t.team_alias.clone()),
            _ => None,
        };
        Value::from(alias.unwrap_or_else(|| id.clone()))
    };
    let first = |g: &SpendGroup| g.keys.first().cloned().flatten();
    let group_rows: Vec<Value> = groups
        .iter()
        .map(|g| {
            let id = first(g);
            json!({"group": id, "label": label(&id), "spend": g.spend,
                "total_tokens": g.total_tokens, "requests": g.requests})
        })
        .collect();
    let day_rows: Vec<Value> = days
        .iter()
        .map(|d| {
            json!({"date": first(d), "spend": d.spend, "total_tokens": d.total_tokens,
                "requests": d.requests})
        })
        .collect();
    Ok(Json(json!({
        "group_by": name,
        "start_date": q.start_date,
        "end_date": q.end_date,
        // a fold from +0: an empty `sum::<f64>()` is -0.0, which a page prints as "-$0.00"
        "total_spend": days.iter().fold(0.0, |t, d| t + d.spend),
        "total_tokens": days.iter().map(|d| d.total_tokens).sum::<i64>(),
        "requests": days.iter().map(|d| d.requests).sum::<i64>(),
        "groups": group_rows,
        "days": day_rows,
    })))
}
