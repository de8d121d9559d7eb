//! What `/model/info` and `/model/new` show of a deployment: its `litellm_params` without
//! credentials and its `model_info` with `id` and `db_model`.

use chrono::{SecondsFormat, Utc};
use serde_json::{Map, Value, json};
use tollgate_config::ModelEntry;
use tollgate_config::redact::{is_sensitive_key, redact_value};
use tollgate_governance::store::ProxyModel;

/// `litellm_params` as listed: credential-like keys (`api_key`, `aws_secret_access_key`,
/// `vertex_credentials`, …) removed, credential-like values inside the rest masked.
pub(super) fn public_params(params: &Value) -> Value {
    match params {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !is_sensitive_key(k))
                .map(|(k, v)| (k.clone(), redact_value(k, v)))
                .collect(),
        ),
        _ => json!({}),
    }
}

/// `model_info` as listed: the stored or configured object with `id` and `db_model`.
fn listed_info(info: Value, id: &str, db_model: bool) -> Value {
    let mut m = match info {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    m.insert("id".into(), json!(id));
    m.insert("db_model".into(), json!(db_model));
    Value::Object(m)
}

/// The `/model/info` entry of a config deployment.
pub(super) fn config_entry_info(e: &ModelEntry) -> Value {
    let params = serde_json::to_value(&e.litellm_params).unwrap_or_else(|_| json!({}));
    let info = serde_json::to_value(&e.model_info).unwrap_or_else(|_| json!({}));
    json!({
        "model_name": e.model_name,
        "litellm_params": public_params(&params),
        "model_info": listed_info(info, &e.deployment_id(), false),
    })
}

/// The `/model/info` entry of a stored deployment. Its `model_info` also carries the row's
/// `created_at`, `updated_at` (RFC 3339, ms), `created_by` and `updated_by`, as LiteLLM's
/// `ProxyConfig.get_model_info_with_id` (`litellm/proxy/proxy_server.py`) copies them in for
/// deployments from the database.
pub(super) fn stored_info(row: &ProxyModel) -> Value {
    let mut info = listed_info(row.model_info.clone(), &row.model_id, true);
    if let Value::Object(m) = &mut info {
        m.insert("created_at".into(), json!(time(row.created_at)));
        m.insert("updated_at".into(), json!(time(row.updated_at)));
        m.insert("created_by".into(), json!(row.created_by));
        m.insert("updated_by".into(), json!(row.updated_by));
    }
    json!({
        "model_name": row.model_name,
        "litellm_params": public_params(&row.litellm_params),
        "model_info": info,
    })
}

/// A row time as the API shows it: RFC 3339 with milliseconds, `Z`.
fn time(t: Option<chrono::DateTime<Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// The `/model/new` answer: LiteLLM returns the created `"LiteLLM_ProxyModelTable"` row; this
/// is that row with credentials removed.
pub(super) fn stored_row(row: &ProxyModel) -> Value {
    json!({
        "model_id": row.model_id,
        "model_name": row.model_name,
        "litellm_params": public_params(&row.litellm_params),
        "model_info": listed_info(row.model_info.clone(), &row.model_id, true),
        "created_at": time(row.created_at),
        "created_by": row.created_by,
        "updated_at": time(row.updated_at),
        "updated_by": row.updated_by,
    })
}
