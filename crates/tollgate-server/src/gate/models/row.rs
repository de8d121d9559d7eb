//! Deployments given through the API: a `/model/new` or `/model/update` body checked and
//! turned into a stored row and the typed entry the router is built from.

use chrono::Utc;
use serde_json::{Map, Value, json};
use tollgate_admin::ModelChangeError;
use tollgate_config::ModelEntry;
use tollgate_config::env::ENV_PREFIX;
use tollgate_config::redact::redact_url_userinfo;
use tollgate_governance::store::ProxyModel;

use super::Stored;
use crate::state::EnvLookup;

/// `base` with `patch`'s keys set (a `null` in `patch` removes the key).
pub(super) fn merge_object(base: &Value, patch: Option<&Value>) -> Value {
    let mut out = base.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(p)) = patch {
        for (k, v) in p {
            if v.is_null() {
                out.remove(k);
            } else {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// The team a body's `model_info.team_id` names (non-empty), if any.
pub(super) fn team_of(body: &Value) -> Option<&str> {
    body.pointer("/model_info/team_id")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
}

/// A new team deployment's stored names, as LiteLLM's `_add_team_model_to_db`
/// (`litellm/proxy/management_endpoints/model_management_endpoints.py`) writes them:
/// `model_name` becomes the unique internal `model_name_<team_id>_<uuid v4>` and
/// `model_info.team_public_model_name` the name the team calls it by (the one given there,
/// else the `model_name` sent). A body without `model_info.team_id` is left as it is.
pub(super) fn name_team_model(body: &mut Value) {
    let Some(team) = team_of(body).map(str::to_owned) else {
        return;
    };
    let public = body
        .pointer("/model_info/team_public_model_name")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .or_else(|| body.get("model_name").and_then(Value::as_str))
        .map(str::to_owned);
    let Some(public) = public else { return };
    body["model_info"]["team_public_model_name"] = json!(public);
    body["model_name"] = json!(format!("model_name_{team}_{}", uuid::Uuid::new_v4()));
}

/// The names of an updated deployment (`merged`: the stored row with the patch merged in)
/// that a team owns, as LiteLLM's `_update_team_model_in_db` keeps them: the internal
/// `model_name` stays (a new one when the deployment is given to a team for the first time),
/// the public name becomes the `model_name` of the patch (`asked`), else stays
/// `team_public_model_name`, else the old name. A deployment no team owns is left as it is.
pub(super) fn team_update_names(merged: &mut Value, old: &ProxyModel, asked: Option<&str>) {
    let Some(team) = team_of(merged).map(str::to_owned) else {
        return;
    };
    let old_team = old.model_info.get("team_id").and_then(Value::as_str);
    let public = asked
        .or_else(|| {
            old.model_info
                .get("team_public_model_name")
                .and_then(Value::as_str)
        })
        .unwrap_or(&old.model_name)
        .to_owned();
    merged["model_info"]["team_public_model_name"] = json!(public);
    merged["model_name"] = if old_team == Some(team.as_str()) {
        json!(old.model_name)
    } else {
        json!(format!("model_name_{team}_{}", uuid::Uuid::new_v4()))
    };
}

/// A `/model/new` body as a row (`model_info.id` kept, else a new UUID v4) and its entry.
///
/// Errors: [`ModelChangeError::Invalid`] naming the missing or wrong field.
pub(super) fn parse_new(
    body: Value,
    actor: &str,
    env: &EnvLookup,
) -> Result<Stored, ModelChangeError> {
    let invalid = |m: &str| ModelChangeError::Invalid(m.to_owned());
    let Value::Object(mut body) = body else {
        return Err(invalid("Invalid request body: expected a JSON object"));
    };
    let model_name = body
        .get("model_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("model_name is required"))?
        .to_owned();
    let params = match body.remove("litellm_params") {
        Some(Value::Object(m)) => m,
        _ => {
            return Err(invalid(
                "litellm_params is required: an object with `model`",
            ));
        }
    };
    if params
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(invalid("litellm_params.model is required"));
    }
    let mut info = match body.remove("model_info") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(invalid("model_info must be an object")),
    };
    let id = info
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    info.insert("id".into(), json!(id));
    info.remove("db_model");
    let now = Utc::now();
    let row = ProxyModel {
        model_id: id,
        model_name,
        litellm_params: Value::Object(params),
        model_info: Value::Object(info),
        created_at: Some(now),
        created_by: Some(actor.to_owned()),
        updated_at: Some(now),
        updated_by: Some(actor.to_owned()),
    };
    let entry = entry_of(&row, env).map_err(ModelChangeError::Invalid)?;
    Ok(Stored { row, entry })
}

/// The typed entry of a stored row: top-level `os.environ/NAME` values of `litellm_params`
/// resolved (LiteLLM's router resolves them when it adds a deployment), `api_base` checked to
/// be an http(s) URL, `model_info.id` = `model_id`.
///
/// Errors: a message naming the field (never a credential value).
pub(super) fn entry_of(row: &ProxyModel, env: &EnvLookup) -> Result<ModelEntry, String> {
    let mut params = row.litellm_params.clone();
    if let Value::Object(m) = &mut params {
        for (k, v) in m.iter_mut() {
            if let Value::String(s) = v
                && let Some(var) = s.strip_prefix(ENV_PREFIX)
            {
                let value = env(var).ok_or_else(|| {
                    format!("litellm_params.{k}: environment variable {var} is not set")
                })?;
                *v = Value::String(value);
            }
        }
        if let Some(base) = m.get("api_base").and_then(Value::as_str) {
            check_api_base(base)?;
        }
    }
    let mut info = match &row.model_info {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    info.insert("id".into(), json!(row.model_id));
    let entry = json!({"model_name": row.model_name, "litellm_params": params, "model_info": info});
    serde_json::from_value(entry).map_err(|e| format!("invalid model: {e}"))
}

/// `api_base` must be an absolute http(s) URL with a host.
fn check_api_base(base: &str) -> Result<(), String> {
    let ok = base
        .parse::<http::Uri>()
        .ok()
        .filter(|u| matches!(u.scheme_str(), Some("http" | "https")))
        .and_then(|u| u.host().map(|h| !h.is_empty()))
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "litellm_params.api_base '{}' is not an http(s) URL",
            redact_url_userinfo(base)
        ))
    }
}

/// `true`/`false` in LiteLLM's spellings (`True`, `1`, `yes`, ...); `None` otherwise.
pub(super) fn parse_flag(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}
