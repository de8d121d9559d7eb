//! `POST /key/delete` (litellm-surface §4.3): moves keys, named by key or by alias, to
//! `"LiteLLM_DeletedVerificationToken"`. Admin only.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::keys::key_hash;
use crate::write::Batch;
use crate::{AdminContext, access, extract};

/// `/key/delete` body.
#[derive(Default, Deserialize)]
#[serde(default)]
struct DeleteBody {
    keys: Option<Vec<String>>,
    key_aliases: Option<Vec<String>>,
}

/// `POST /key/delete` `{"keys": [sk-… or hash]}` or `{"key_aliases": [...]}`: moves the keys
/// to `"LiteLLM_DeletedVerificationToken"`; `/key/info` then reports `status: deleted`.
/// Returns `{"deleted_keys": [...]}` echoing the list acted on, as LiteLLM's `delete_key_fn`
/// (`litellm/proxy/management_endpoints/key_management_endpoints.py`): `keys` when it is
/// non-empty (`key_aliases` is then not read), else `key_aliases` as sent. One difference: a
/// plaintext `sk-…` in `keys` is answered by its hash (LiteLLM echoes the plaintext), so no
/// response but a key's creation carries a plaintext key; hashes are echoed as sent. All or
/// nothing. In a fleet, an alias the cache does not hold reloads it from the database once
/// before the 404 ([`Governance::reload_for_missing_alias`]): the key may have been created
/// through another replica a moment ago.
///
/// [`Governance::reload_for_missing_alias`]: tollgate_governance::runtime::Governance::reload_for_missing_alias
/// Errors: 400 (neither list), 404 (a key or alias unknown), 401, 403, 500.
pub(crate) async fn delete(
    State(ctx): State<Arc<AdminContext>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let who = access::admin(&ctx, &headers, "/key/delete")?;
    let req: DeleteBody = extract::body(&body)?;
    let keys = req.keys.filter(|k| !k.is_empty());
    let aliases = req.key_aliases.filter(|a| !a.is_empty());
    let mut hashes = Vec::new();
    let echoed = match (keys, aliases) {
        (Some(keys), _) => {
            for k in &keys {
                hashes.push(key_hash(k)?);
            }
            hashes.clone()
        }
        (None, Some(aliases)) => {
            hashes = match alias_hashes(&ctx, &aliases) {
                Err(_) if ctx.gov.reload_for_missing_alias().await => alias_hashes(&ctx, &aliases)?,
                r => r?,
            };
            aliases
        }
        (None, None) => return Err(ApiError::bad_request("keys or key_aliases is required")),
    };
    for h in &hashes {
        ctx.gov.load_missing_key(h).await;
    }
    {
        let e = ctx.gov.cache().read();
        if let Some(missing) = hashes.iter().find(|h| !e.keys.contains_key(*h)) {
            return Err(ApiError::not_found(format!(
                "Key not found. token={missing}"
            )));
        }
    }
    hashes.sort();
    hashes.dedup();
    Batch {
        delete_keys: hashes.clone(),
        deleted_by: Some(who.actor()),
        ..Batch::default()
    }
    .commit(&ctx.gov)
    .await?;
    tracing::info!(count = hashes.len(), "virtual keys deleted");
    Ok(Json(json!({"deleted_keys": echoed})))
}

/// The hashes of the keys with these aliases. Errors: 404 naming an alias no key has.
fn alias_hashes(ctx: &AdminContext, aliases: &[String]) -> ApiResult<Vec<String>> {
    let e = ctx.gov.cache().read();
    let mut out = Vec::new();
    for a in aliases {
        let before = out.len();
        out.extend(
            e.keys
                .values()
                .filter(|k| k.key_alias.as_deref() == Some(a.as_str()))
                .map(|k| k.token.clone()),
        );
        if out.len() == before {
            return Err(ApiError::not_found(format!("Key not found. key_alias={a}")));
        }
    }
    Ok(out)
}
