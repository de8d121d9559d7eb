//! The key each `"LiteLLM_SpendLogs"` row is stored under.
//!
//! LiteLLM keys a spend-log row by the response id the client saw (`chatcmpl-…`, `msg_…`,
//! `resp_…`; litellm-surface §6.3) so `/spend/logs?request_id=<id>` finds it, and inserts with
//! "skip duplicates". Many upstreams repeat their ids, though: fixed-id servers answer every
//! call with the same id, Ollama's `chatcmpl-<0-999>` wrap around. Keyed on that id alone,
//! every row after the first would be dropped silently (LiteLLM issue #28376), while the spend
//! counters still moved. The rule here:
//!
//! - a row is first inserted under its `request_id` (the response id, or the attempt id when
//!   the answer had none); the first call that writes an id keeps it;
//! - a row skipped because its `request_id` is taken is **ours** when the stored row is the same
//!   attempt (same `litellm_call_id` and `metadata.attempt`): a batch retried after a failure
//!   that had in fact been committed. It is not inserted again;
//! - otherwise the id belongs to another call, and the row is stored under its
//!   [`attempt_id`] (`<litellm_call_id>` for the first attempt, `<litellm_call_id>-attempt-<n>`
//!   for a retry or fallback), with the repeated response id kept in `metadata.response_id`.
//!   The call id is a fresh UUID per request (the `x-litellm-call-id` response header), so the
//!   attempt id is unique, and a conflict on it is again our own earlier insert;
//! - a row without `litellm_call_id` (not written by Tollgate) cannot be told apart and is
//!   skipped, as before.
//!
//! Each attempt so lands exactly once, however often its batch is retried, and the daily
//! roll-ups add only the rows actually inserted.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::entities::SpendLogRow;

/// The id of one attempt of a call: `call_id` for the first attempt (`attempt` 0), else
/// `<call_id>-attempt-<attempt>`. The spend-log key of an attempt without a response id, and of
/// one whose response id another call already wrote (see the module docs).
pub fn attempt_id(call_id: &str, attempt: u32) -> String {
    if attempt == 0 {
        call_id.to_owned()
    } else {
        format!("{call_id}-attempt-{attempt}")
    }
}

/// A row's [`attempt_id`], from `litellm_call_id` and `metadata.attempt` (0 when absent);
/// `None` without a call id.
pub(crate) fn row_attempt_id(row: &SpendLogRow) -> Option<String> {
    let call = row.litellm_call_id.as_deref().filter(|c| !c.is_empty())?;
    let attempt = row
        .metadata
        .get("attempt")
        .and_then(Value::as_u64)
        .and_then(|a| u32::try_from(a).ok())
        .unwrap_or(0);
    Some(attempt_id(call, attempt))
}

/// After an `INSERT … ON CONFLICT DO NOTHING RETURNING "request_id"` of `rows`: the rows the
/// database inserted (for an id repeated within the batch, its first occurrence, the one the
/// insert kept) and the indices of those it skipped.
pub(crate) fn split_inserted(
    rows: &[SpendLogRow],
    returned: Vec<String>,
) -> (Vec<&SpendLogRow>, Vec<usize>) {
    let mut left: HashSet<String> = returned.into_iter().collect();
    let mut inserted = Vec::with_capacity(rows.len());
    let mut skipped = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if left.remove(&r.request_id) {
            inserted.push(r);
        } else {
            skipped.push(i);
        }
    }
    (inserted, skipped)
}

/// The distinct `request_id`s of the skipped rows: whose stored owners to read.
pub(crate) fn taken_ids(rows: &[SpendLogRow], skipped: &[usize]) -> Vec<String> {
    let mut seen = HashSet::new();
    skipped
        .iter()
        .map(|&i| &rows[i].request_id)
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect()
}

/// The skipped rows to insert again under their attempt id, given `owners`: each taken
/// `request_id` → the [`row_attempt_id`] of the row stored under it. Rows of the same attempt
/// as the owner, rows already keyed by their attempt id, and rows without a call id are left
/// out (see the module docs).
pub(crate) fn rekeyed(
    rows: &[SpendLogRow],
    skipped: &[usize],
    owners: &HashMap<String, Option<String>>,
) -> Vec<SpendLogRow> {
    let mut out = Vec::new();
    for &i in skipped {
        let r = &rows[i];
        let Some(own) = row_attempt_id(r) else {
            continue;
        };
        let ours = r.request_id == own
            || owners
                .get(&r.request_id)
                .is_some_and(|o| o.as_deref() == Some(own.as_str()));
        if ours {
            continue;
        }
        let mut row = r.clone();
        let response_id = std::mem::replace(&mut row.request_id, own);
        match &mut row.metadata {
            Value::Object(m) => {
                m.insert("response_id".into(), Value::String(response_id));
            }
            other => {
                *other = serde_json::json!({ "response_id": response_id });
            }
        }
        out.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str, call: Option<&str>, attempt: u32, spend: f64) -> SpendLogRow {
        SpendLogRow {
            request_id: id.into(),
            litellm_call_id: call.map(Into::into),
            metadata: json!({"attempt": attempt, "user_api_key_alias": null}),
            spend,
            ..SpendLogRow::default()
        }
    }

    #[test]
    fn attempt_ids() {
        assert_eq!(attempt_id("c1", 0), "c1");
        assert_eq!(attempt_id("c1", 2), "c1-attempt-2");
        assert_eq!(
            row_attempt_id(&row("x", Some("c1"), 1, 0.0)).as_deref(),
            Some("c1-attempt-1")
        );
        let no_attempt = SpendLogRow {
            litellm_call_id: Some("c2".into()),
            ..SpendLogRow::default()
        };
        assert_eq!(row_attempt_id(&no_attempt).as_deref(), Some("c2"));
        assert_eq!(row_attempt_id(&row("x", None, 0, 0.0)), None);
        assert_eq!(row_attempt_id(&row("x", Some(""), 0, 0.0)), None);
    }

    #[test]
    fn first_occurrence_of_a_returned_id_is_the_inserted_one() {
        let rows = vec![
            row("a", Some("c1"), 0, 1.0),
            row("b", Some("c2"), 0, 2.0),
            row("a", Some("c3"), 0, 4.0),
        ];
        let (inserted, skipped) = split_inserted(&rows, vec!["a".into()]);
        assert_eq!(inserted.len(), 1);
        assert_eq!(inserted[0].spend, 1.0);
        assert_eq!(skipped, [1, 2]);
        assert_eq!(taken_ids(&rows, &skipped), ["b", "a"]);
        assert_eq!(taken_ids(&rows, &[0, 2]), ["a"]);
    }

    #[test]
    fn only_rows_of_other_calls_are_rekeyed() {
        let rows = vec![
            // a retried batch: the stored row under the id is this very attempt
            row("chatcmpl-x", Some("c1"), 0, 1.0),
            // another call's response reused the id
            row("chatcmpl-x", Some("c2"), 0, 2.0),
            // a retry of the same call with the same id: another attempt
            row("chatcmpl-x", Some("c1"), 1, 4.0),
            // keyed by its attempt id already: a conflict there is our own insert
            row("c3", Some("c3"), 0, 8.0),
            // not Tollgate's: cannot be told apart
            row("chatcmpl-x", None, 0, 16.0),
        ];
        let owners = HashMap::from([
            ("chatcmpl-x".to_owned(), Some("c1".to_owned())),
            ("c3".to_owned(), Some("c3".to_owned())),
        ]);
        let out = rekeyed(&rows, &[0, 1, 2, 3, 4], &owners);
        let ids: Vec<&str> = out.iter().map(|r| r.request_id.as_str()).collect();
        assert_eq!(ids, ["c2", "c1-attempt-1"]);
        assert_eq!(out[0].spend, 2.0);
        assert_eq!(out[0].metadata["response_id"], "chatcmpl-x");
        assert_eq!(out[0].metadata["attempt"], 0);
        assert_eq!(out[1].metadata["response_id"], "chatcmpl-x");
        // an owner that names no attempt (a LiteLLM row) is another call's
        let litellm = HashMap::from([("chatcmpl-x".to_owned(), None)]);
        assert_eq!(rekeyed(&rows, &[0], &litellm)[0].request_id, "c1");
        // metadata that is not an object becomes one
        let mut bare = row("chatcmpl-x", Some("c9"), 0, 1.0);
        bare.metadata = Value::Null;
        let out = rekeyed(&[bare], &[0], &owners);
        assert_eq!(out[0].metadata, json!({"response_id": "chatcmpl-x"}));
    }
}
