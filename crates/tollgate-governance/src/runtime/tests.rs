//! The governance hub end to end on an in-memory SQLite store: open → principal → scopes →
//! admit → settle → write-behind → the store holds the spend and the log row.

use std::sync::Arc;

use chrono::Utc;

use super::*;
use crate::admission::{AdmitRequest, Estimate, ScopeKind};
use crate::store::{SecretKey, SqliteStore, VerificationToken};

async fn hub(keys: Vec<VerificationToken>) -> Governance {
    let store = SqliteStore::open(":memory:").await.unwrap();
    store.migrate().await.unwrap();
    for k in &keys {
        store.upsert_key(k).await.unwrap();
    }
    let mut prices = PriceTable::new();
    prices.insert(
        "mock-gpt",
        ModelPrice {
            input_per_token: 1e-6,
            output_per_token: 2e-6,
            ..ModelPrice::default()
        },
    );
    Governance::open(Arc::new(store), prices, GovernanceOptions::default())
        .await
        .unwrap()
}

fn log_row(id: &str, key: &str) -> SpendLogRow {
    SpendLogRow {
        request_id: id.into(),
        api_key: key.into(),
        start_time: Utc::now(),
        end_time: Utc::now(),
        ..SpendLogRow::default()
    }
}

#[tokio::test]
async fn admit_settle_and_write_behind() {
    let raw = SecretKey::new("sk-hub-test-key-0001");
    let hash = raw.hash();
    let g = hub(vec![VerificationToken {
        token: hash.clone(),
        key_name: Some(raw.masked()),
        max_budget: Some(0.003),
        spend: 0.0005,
        ..VerificationToken::default()
    }])
    .await;
    // seeded from the stored spend
    assert!((g.spend_of(&ScopeKey::key(&hash)).await.unwrap() - 0.0005).abs() < 1e-12);

    let p = g.principal(&hash).unwrap();
    let scopes = g
        .scopes(
            Some(&p),
            RequestFacts {
                model_group: "mock-gpt",
                ..RequestFacts::default()
            },
        )
        .unwrap();
    let price = g.price(None, "mock-gpt", &PriceOverrides::default());
    let est = Estimate::new(g.admission().config(), price.as_ref(), 100, Some(50));
    assert!((est.cost_usd - 0.0002).abs() < 1e-12);
    let charge = g
        .admit(
            AdmitRequest {
                request_id: "r1".into(),
                attempt: 0,
                scopes,
                estimate: est,
            },
            price,
            log_row("r1", &hash),
        )
        .await
        .unwrap();
    let s = g
        .settle(
            charge,
            CallOutcome {
                usage: Some(Usage::new(1000, 500)),
                success: true,
                end_time: Utc::now(),
                completion_start: None,
            },
        )
        .unwrap();
    // 1000 × 1e-6 + 500 × 2e-6 = 0.002
    assert!((s.cost_usd - 0.002).abs() < 1e-12);
    assert!((s.spend_of(ScopeKind::Key).unwrap() - 0.0025).abs() < 1e-12);
    let stats = g.write_behind(100).flush().await.unwrap();
    assert_eq!(stats.log_rows, 1);
    let rows = g
        .store()
        .spend_logs(&crate::store::SpendLogFilter::default())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].api_key, hash);
    assert_eq!(
        (rows[0].prompt_tokens, rows[0].completion_tokens),
        (1000, 500)
    );
    assert_eq!(rows[0].status.as_deref(), Some("success"));
    let stored = g.store().load().await.unwrap();
    assert!((stored.keys[0].spend - 0.0025).abs() < 1e-12);
    // without a proxy-wide limit the request counted on no proxy scope; the spend logs hold
    // the whole proxy's spend, and a restart seeds the proxy scope from them (it has no column)
    assert_eq!(g.spend_of(&ScopeKey::global()).await.unwrap(), 0.0);
    assert!((g.store().spend_since(None).await.unwrap() - 0.002).abs() < 1e-12);
    let again = Governance::open(
        Arc::clone(g.store()),
        PriceTable::new(),
        GovernanceOptions::default(),
    )
    .await
    .unwrap();
    assert!((again.spend_of(&ScopeKey::global()).await.unwrap() - 0.002).abs() < 1e-12);
    assert!((again.spend_of(&ScopeKey::key(&hash)).await.unwrap() - 0.0025).abs() < 1e-12);

    // next request: 0.0025 + 0.0002 reserved < 0.003 admits; once spend reaches the cap, refused
    g.admission()
        .set_spend(&ScopeKey::key(&hash), 0.003, None)
        .await
        .unwrap();
    let scopes = g.scopes(Some(&p), RequestFacts::default()).unwrap();
    let rej = g
        .admit(
            AdmitRequest {
                request_id: "r2".into(),
                attempt: 0,
                scopes,
                estimate: est,
            },
            None,
            log_row("r2", &hash),
        )
        .await
        .unwrap_err();
    assert_eq!(rej.status, 422);
    assert_eq!(rej.error_type, "budget_exceeded");
    assert!(rej.message.contains("sk-...0001"), "{}", rej.message);
    assert!(!rej.message.contains("sk-hub-test"));
}

#[tokio::test]
async fn unknown_and_blocked_keys() {
    let g = hub(vec![VerificationToken {
        token: "b".repeat(64),
        blocked: Some(true),
        ..VerificationToken::default()
    }])
    .await;
    assert_eq!(
        g.principal(&"a".repeat(64)).unwrap_err(),
        KeyError::NotFound("a".repeat(64))
    );
    assert_eq!(g.principal(&"b".repeat(64)).unwrap_err(), KeyError::Blocked);
}

/// At start, a plain per-model budget takes the key's stored `model_spend`; a windowed one
/// re-derives its window's spend from the key's spend logs for that model group.
#[tokio::test]
async fn per_model_budgets_are_seeded_at_start() {
    let hash = "c".repeat(64);
    let store = SqliteStore::open(":memory:").await.unwrap();
    store.migrate().await.unwrap();
    store
        .upsert_key(&VerificationToken {
            token: hash.clone(),
            model_max_budget: serde_json::json!({
                "plain": 1.0,
                "win": {"budget_limit": 1.0, "time_period": "1d"},
            }),
            model_spend: serde_json::json!({"plain": 0.4, "win": 0.7}),
            ..VerificationToken::default()
        })
        .await
        .unwrap();
    let now = Utc::now();
    let day_start = crate::duration::BudgetDuration::Days(1).window_start(now);
    let row = |id: &str, group: &str, spend: f64, at: chrono::DateTime<Utc>| SpendLogRow {
        request_id: id.into(),
        api_key: hash.clone(),
        model_group: Some(group.into()),
        spend,
        start_time: at,
        end_time: at,
        ..SpendLogRow::default()
    };
    store
        .insert_spend_logs(&[
            row("today", "win", 0.3, now),
            row(
                "yesterday",
                "win",
                0.5,
                day_start - chrono::Duration::seconds(1),
            ),
            row("other", "plain", 0.9, now),
        ])
        .await
        .unwrap();
    let g = Governance::open(
        Arc::new(store),
        PriceTable::new(),
        GovernanceOptions::default(),
    )
    .await
    .unwrap();
    let plain = g
        .admission()
        .spend(&ScopeKey::model_per_key(&hash, "plain"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((plain.spend, plain.budget_reset_at), (0.4, None));
    let win = g
        .admission()
        .spend(&ScopeKey::model_per_key(&hash, "win"))
        .await
        .unwrap()
        .unwrap();
    assert!((win.spend - 0.3).abs() < 1e-12, "{}", win.spend);
    assert_eq!(
        win.budget_reset_at,
        Some(crate::duration::BudgetDuration::Days(1).next_reset(now))
    );
}

/// A windowed per-model budget whose window end is stored goes on from `model_spend` while
/// that end is ahead (the spend logs of the day, which include what was spent before a window
/// was armed at noon, are not read), and starts again at 0 once it has passed.
#[tokio::test]
async fn stored_window_ends_seed_per_model_budgets_without_the_logs() {
    use crate::admission::SpendSnapshot;
    use crate::duration::BudgetDuration;
    let hash = "d".repeat(64);
    let store = SqliteStore::open(":memory:").await.unwrap();
    store.migrate().await.unwrap();
    store
        .upsert_key(&VerificationToken {
            token: hash.clone(),
            model_max_budget: serde_json::json!({
                "armed": {"budget_limit": 0.007, "time_period": "1d"},
                "ended": {"budget_limit": 1.0, "time_period": "1h"},
            }),
            ..VerificationToken::default()
        })
        .await
        .unwrap();
    let now = Utc::now();
    let end = BudgetDuration::Days(1).next_reset(now);
    let snap = |model: &str, spend: f64, at| SpendSnapshot {
        scope: ScopeKey::model_per_key(&hash, model),
        spend,
        added: spend,
        budget_reset_at: Some(at),
        was_reset: false,
    };
    store
        .write_spend(&[
            snap("armed", 0.002, end),
            snap("ended", 0.5, now - chrono::Duration::minutes(1)),
        ])
        .await
        .unwrap();
    // today's logs hold 0.008 for "armed": 0.006 before its window was armed, 0.002 in it
    let log = |id: &str, spend: f64| SpendLogRow {
        request_id: id.into(),
        api_key: hash.clone(),
        model_group: Some("armed".into()),
        spend,
        ..log_row(id, &hash)
    };
    store
        .insert_spend_logs(&[log("a", 0.006), log("b", 0.002)])
        .await
        .unwrap();
    let g = Governance::open(
        Arc::new(store),
        PriceTable::new(),
        GovernanceOptions::default(),
    )
    .await
    .unwrap();
    let armed = g
        .admission()
        .spend(&ScopeKey::model_per_key(&hash, "armed"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((armed.spend, armed.budget_reset_at), (0.002, Some(end)));
    assert_eq!(armed.budget_duration, Some(BudgetDuration::Days(1)));
    let ended = g
        .admission()
        .spend(&ScopeKey::model_per_key(&hash, "ended"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.spend, 0.0);
    assert!(ended.budget_reset_at.is_some_and(|at| at > now));
}

/// An end user is in the cache from its first request (no limits of its own, spend 0), so the
/// management API finds it at once; a known one is left as it is.
#[tokio::test]
async fn a_first_request_puts_its_end_user_in_the_cache() {
    let g = hub(Vec::new()).await;
    assert!(!g.cache().read().end_users.contains_key("eu-1"));
    let facts = RequestFacts {
        end_user: Some("eu-1"),
        model_group: "mock-gpt",
        ..RequestFacts::default()
    };
    g.scopes(None, facts).unwrap();
    let row = g.cache().read().end_users.get("eu-1").cloned().unwrap();
    assert_eq!(
        *row,
        crate::store::EndUser {
            user_id: "eu-1".into(),
            ..crate::store::EndUser::default()
        }
    );
    g.cache().update(|e| {
        e.end_users.insert(
            "eu-1".into(),
            Arc::new(crate::store::EndUser {
                user_id: "eu-1".into(),
                blocked: true,
                ..crate::store::EndUser::default()
            }),
        )
    });
    assert!(g.scopes(None, facts).is_err(), "blocked, not replaced");
    let empty = RequestFacts {
        end_user: Some(""),
        ..facts
    };
    g.scopes(None, empty).unwrap();
    assert!(!g.cache().read().end_users.contains_key(""));
}
