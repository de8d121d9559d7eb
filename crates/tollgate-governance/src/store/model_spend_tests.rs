//! `model_spend` written behind for per-model budgets, on any [`GovernanceStore`] (SQLite here,
//! Postgres in `pg_tests.rs`).

use serde_json::json;

use super::*;
use crate::admission::SpendSnapshot;

fn snap(hash: &str, model: &str, spend: f64) -> SpendSnapshot {
    SpendSnapshot {
        scope: ScopeKey::model_per_key(hash, model),
        spend,
        added: spend,
        budget_reset_at: None,
        was_reset: false,
    }
}

/// Each per-model scope lands in its key's `model_spend` under the model group's name; other
/// entries and the key's own `spend` stay as they were.
pub(super) async fn model_spend_case(s: &dyn GovernanceStore) {
    let a = "a".repeat(64);
    let b = "b".repeat(64);
    for (token, model_spend) in [(&a, json!({"kept": 0.25})), (&b, serde_json::Value::Null)] {
        s.upsert_key(&VerificationToken {
            token: token.clone(),
            spend: 0.5,
            model_spend,
            ..VerificationToken::default()
        })
        .await
        .unwrap();
    }
    s.write_spend(&[
        snap(&a, "gpt-4o", 0.6),
        snap(&a, "openai/gpt-4o-mini", 0.1),
        snap(&b, "m\"q", 0.3),
    ])
    .await
    .unwrap();
    s.write_spend(&[snap(&a, "gpt-4o", 0.9)]).await.unwrap();
    let keys = s.load().await.unwrap().keys;
    let row = |t: &str| keys.iter().find(|k| k.token == t).unwrap().clone();
    assert_eq!(
        row(&a).model_spend,
        json!({"kept": 0.25, "gpt-4o": 0.9, "openai/gpt-4o-mini": 0.1})
    );
    assert_eq!(row(&a).spend, 0.5);
    assert_eq!(row(&b).model_spend, json!({"m\"q": 0.3}));

    // a windowed entry's snapshot also records where its window ends; the newest end wins
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
    let windowed = |spend, at| SpendSnapshot {
        budget_reset_at: Some(t(at)),
        ..snap(&a, "w/x", spend)
    };
    s.write_spend(&[windowed(0.0, "2026-03-15T00:00:00Z")])
        .await
        .unwrap();
    s.write_spend(&[windowed(0.002, "2026-03-16T00:00:00Z")])
        .await
        .unwrap();
    let snap = s.load().await.unwrap();
    assert_eq!(
        snap.model_budget_windows,
        vec![ModelBudgetWindow {
            token: a.clone(),
            model: "w/x".into(),
            budget_reset_at: Some(t("2026-03-16T00:00:00Z")),
        }]
    );
    let k = snap.keys.iter().find(|k| k.token == a).unwrap();
    assert_eq!(k.model_spend["w/x"], json!(0.002));
}

#[tokio::test]
async fn sqlite_model_spend_is_merged_per_model() {
    let s = SqliteStore::open(":memory:").await.unwrap();
    s.migrate().await.unwrap();
    model_spend_case(&s).await;
}
