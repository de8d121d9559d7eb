//! The `"LiteLLM_SpendLogs"` row an admitted attempt starts with: who called, what was
//! called, when. Settlement fills in tokens, spend, end time and status
//! ([`super::sink::GovernedSink`]).

use std::sync::Arc;

use tollgate_governance::store::{SpendLogRow, VerificationToken, attempt_id};

use super::admit::AttemptInfo;
use crate::request::Endpoint;

/// How spend-log rows name calls made with the master key (LiteLLM's alias, never the key).
pub const MASTER_KEY_ALIAS: &str = "litellm-proxy-master-key";

/// The caller's side of a row.
pub struct Caller<'a> {
    /// The virtual key; `None` for the master key (or no-auth mode).
    pub key: Option<&'a Arc<VerificationToken>>,
    /// Whether the gateway requires a key: then a call without a virtual key was made with
    /// the master key and is logged as [`MASTER_KEY_ALIAS`]; otherwise `api_key` is empty.
    pub requires_key: bool,
    /// The end user (`user` field or the configured header).
    pub end_user: Option<&'a str>,
    /// Request tags.
    pub tags: &'a [String],
    /// Wall-clock arrival (`startTime`; `endTime` until settled).
    pub started_at: chrono::DateTime<chrono::Utc>,
}

/// The row of attempt `a` of a `endpoint` call by `c` (`request_id` = the attempt's id until
/// settlement keys it by the response id the client saw).
pub fn row(c: Caller<'_>, endpoint: Endpoint, a: &AttemptInfo<'_>) -> SpendLogRow {
    let key = c.key;
    SpendLogRow {
        request_id: attempt_id(a.call_id, a.seq),
        call_type: endpoint.call_type().to_owned(),
        api_key: key.map_or_else(
            || {
                if c.requires_key {
                    MASTER_KEY_ALIAS.to_owned()
                } else {
                    String::new()
                }
            },
            |k| k.token.clone(),
        ),
        start_time: c.started_at,
        end_time: c.started_at,
        model: a.upstream_model.to_owned(),
        model_id: Some(a.dep.id.clone()),
        model_group: Some(a.group.name.clone()),
        custom_llm_provider: Some(a.dep.provider.name.to_owned()),
        api_base: Some(a.dep.base_url.clone()),
        user: key.and_then(|k| k.user_id.clone()),
        team_id: key.and_then(|k| k.team_id.clone()),
        organization_id: key.and_then(|k| k.organization_id.clone()),
        end_user: c.end_user.map(str::to_owned),
        request_tags: serde_json::json!(c.tags),
        metadata: serde_json::json!({
            "user_api_key_alias": key.and_then(|k| k.key_alias.clone()),
            "user_api_key_team_id": key.and_then(|k| k.team_id.clone()),
            "user_api_key_user_id": key.and_then(|k| k.user_id.clone()),
            "attempt": a.seq,
        }),
        litellm_call_id: Some(a.call_id.to_owned()),
        ..SpendLogRow::default()
    }
}
