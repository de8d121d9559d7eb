//! Request parsing shared by the routes: JSON bodies and query strings with LiteLLM's 400 on
//! malformed input, duration strings, per-model budget maps, and entity rows as JSON objects.

use axum::extract::Query;
use chrono::{DateTime, NaiveDate, Utc};
use http::Uri;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tollgate_governance::duration::BudgetDuration;

use crate::error::{ApiError, ApiResult};

/// Parses a JSON body; an empty body is `{}` (LiteLLM accepts `POST /key/generate` without
/// one). Errors: 400 with serde's reason (scrubbed of keys).
pub(crate) fn body<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    let src: &[u8] = if bytes.trim_ascii().is_empty() {
        b"{}"
    } else {
        bytes
    };
    serde_json::from_slice(src)
        .map_err(|e| ApiError::bad_request(format!("Invalid request body: {e}")))
}

/// Parses the query string. Errors: 400.
pub(crate) fn query<T: DeserializeOwned>(uri: &Uri) -> ApiResult<T> {
    Query::<T>::try_from_uri(uri)
        .map(|q| q.0)
        .map_err(|e| ApiError::bad_request(format!("Invalid query parameters: {}", e.body_text())))
}

/// Parses an optional LiteLLM duration (`30s` … `1mo`) of field `field`. Errors: 400.
pub(crate) fn duration(field: &str, v: Option<&str>) -> ApiResult<Option<BudgetDuration>> {
    v.map(|s| {
        s.parse::<BudgetDuration>()
            .map_err(|e| ApiError::bad_request(format!("Invalid {field}: {e}")))
    })
    .transpose()
}

/// Checks a `model_max_budget` map: each entry `<USD>` or `{"budget_limit": <USD>,
/// "time_period": "<duration>"}` (LiteLLM's two shapes, an amount being a number or a string
/// holding one, see `tollgate_governance::store::model_budget`). Errors: 400 naming the model
/// and the field.
pub(crate) fn model_max_budget(m: &Map<String, Value>) -> ApiResult<()> {
    tollgate_governance::store::validate_model_max_budget(m)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// An entity row as a JSON object (LiteLLM field names, from the row's serde derive).
pub(crate) fn object<T: Serialize>(row: &T) -> Map<String, Value> {
    match serde_json::to_value(row) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// A start/end date parameter: `YYYY-MM-DD` (LiteLLM's format; an end date covers its whole
/// day) or RFC 3339. Errors: 400.
pub(crate) fn date(
    field: &str,
    v: Option<&str>,
    end_of_day: bool,
) -> ApiResult<Option<DateTime<Utc>>> {
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(Some(t.with_timezone(&Utc)));
    }
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| {
        ApiError::bad_request(format!("Invalid {field}: expected YYYY-MM-DD or RFC 3339"))
    })?;
    let t = if end_of_day {
        d.and_hms_milli_opt(23, 59, 59, 999)
    } else {
        d.and_hms_opt(0, 0, 0)
    };
    Ok(t.map(|t| t.and_utc()))
}

/// A timestamp as entity rows serialize it (RFC 3339, `Z`).
pub(crate) fn time(t: DateTime<Utc>) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// A fresh entity id (LiteLLM uses `uuid4` for teams, budgets and users it creates).
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Deserializes a field that distinguishes absent (`None`, via `#[serde(default)]`), `null`
/// (`Some(None)`: clear the limit, as LiteLLM's `/key/update` with `"max_budget": null`) and a
/// value (`Some(Some(v))`).
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

/// Sets `slot` from a nullable field: absent keeps it, `null` clears it, a value must not be
/// negative (400 naming `field`).
pub(crate) fn set_limit<T: PartialOrd + Default + Copy + std::fmt::Display>(
    field: &str,
    slot: &mut Option<T>,
    v: Option<Option<T>>,
) -> ApiResult<()> {
    match v {
        None => {}
        Some(None) => *slot = None,
        Some(Some(x)) if x < T::default() => {
            return Err(ApiError::bad_request(format!(
                "{field} must not be negative, got {x}"
            )));
        }
        Some(Some(x)) => *slot = Some(x),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates_and_durations() {
        let end = date("end_date", Some("2026-03-14"), true).unwrap().unwrap();
        assert_eq!(end.to_rfc3339(), "2026-03-14T23:59:59.999+00:00");
        assert!(date("start_date", Some("14/03/2026"), false).is_err());
        assert_eq!(date("start_date", None, false).unwrap(), None);
        assert_eq!(
            duration("budget_duration", Some("1mo")).unwrap(),
            Some(BudgetDuration::Months(1))
        );
        let e = duration("budget_duration", Some("1y")).unwrap_err();
        assert_eq!(e.status, http::StatusCode::BAD_REQUEST);
    }

    #[test]
    fn model_max_budget_shape() {
        for ok in [
            json!({"gpt-4o": {"max_budget": 2.5, "budget_duration": "1d"}}),
            json!({"gpt-4o": {"budget_limit": 2.5, "time_period": "1d"}}),
            json!({"gpt-4o": 2.5}),
        ] {
            assert!(model_max_budget(ok.as_object().unwrap()).is_ok(), "{ok}");
        }
        let bad = json!({"gpt-4o": {"time_period": "1 day"}});
        let e = model_max_budget(bad.as_object().unwrap()).unwrap_err();
        assert_eq!(e.status, http::StatusCode::BAD_REQUEST);
        assert!(model_max_budget(json!({"gpt-4o": "a lot"}).as_object().unwrap()).is_err());
    }
}
