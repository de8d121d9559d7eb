//! SQLite store tests (in-memory database; a file database in one test).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::*;
use crate::admission::{
    Admission, AdmissionConfig, AdmitRequest, Estimate, InMemoryCounterStore, Limits, ScopeRequest,
};
use crate::pricing::Usage;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

async fn store() -> SqliteStore {
    let s = SqliteStore::open(":memory:").await.unwrap();
    s.migrate().await.unwrap();
    s
}

fn key(raw: &str) -> VerificationToken {
    let k = SecretKey::new(raw);
    VerificationToken {
        token: k.hash(),
        key_name: Some(k.masked()),
        key_alias: Some("alias-1".into()),
        max_budget: Some(10.0),
        budget_duration: Some("1d".into()),
        budget_reset_at: Some(t("2026-03-15T00:00:00Z")),
        models: vec!["gpt-4o".into(), "claude-*".into()],
        aliases: json!({"fast": "gpt-4o-mini"}),
        metadata: json!({"model_rpm_limit": {"gpt-4o": 5}}),
        rpm_limit: Some(60),
        blocked: Some(false),
        created_at: Some(t("2026-03-14T10:00:00.123Z")),
        ..VerificationToken::default()
    }
}

#[tokio::test]
async fn entities_round_trip_through_litellm_tables() {
    round_trip(&store().await).await;
}

pub(super) async fn round_trip(s: &dyn GovernanceStore) {
    let k = key("sk-test-CANARY2");
    s.upsert_key(&k).await.unwrap();
    let team = Team {
        team_id: "team-1".into(),
        team_alias: Some("Team One".into()),
        metadata: json!({"cost_center": 7}),
        members_with_roles: vec![TeamMember {
            user_id: Some("u1".into()),
            user_email: None,
            role: "admin".into(),
        }],
        max_budget: Some(100.0),
        models: vec!["gpt-4o".into()],
        blocked: true,
        ..Team::default()
    };
    s.upsert_team(&team).await.unwrap();
    let user = User {
        user_id: "u1".into(),
        user_role: Some("internal_user".into()),
        teams: vec!["team-1".into()],
        ..User::default()
    };
    s.upsert_user(&user).await.unwrap();
    let tier = BudgetTier {
        budget_id: "daily-tier".into(),
        max_budget: Some(30.0),
        budget_duration: Some("1d".into()),
        ..BudgetTier::default()
    };
    s.upsert_budget(&tier).await.unwrap();
    let eu = EndUser {
        user_id: "cust-1".into(),
        budget_id: Some("daily-tier".into()),
        ..EndUser::default()
    };
    s.upsert_end_user(&eu).await.unwrap();
    let m = TeamMembership {
        user_id: "u1".into(),
        team_id: "team-1".into(),
        spend: 1.5,
        budget_id: None,
    };
    s.upsert_membership(&m).await.unwrap();
    let org = Organization {
        organization_id: "org-1".into(),
        budget_id: Some("daily-tier".into()),
        ..Organization::default()
    };
    s.upsert_organization(&org).await.unwrap();
    let tag = Tag {
        tag_name: "prod".into(),
        models: vec!["gpt-4o".into()],
        ..Tag::default()
    };
    s.upsert_tag(&tag).await.unwrap();

    let snap = s.load().await.unwrap();
    assert_eq!(snap.keys, vec![k.clone()]);
    assert_eq!(snap.teams, vec![team]);
    assert_eq!(snap.users, vec![user]);
    assert_eq!(snap.budgets, vec![tier]);
    assert_eq!(snap.end_users, vec![eu]);
    assert_eq!(snap.memberships, vec![m]);
    assert_eq!(snap.organizations, vec![org]);
    assert_eq!(snap.tags, vec![tag]);

    // update replaces; delete moves the key to the deleted table
    let k2 = VerificationToken {
        max_budget: Some(20.0),
        ..k.clone()
    };
    s.upsert_key(&k2).await.unwrap();
    assert_eq!(s.load().await.unwrap().keys[0].max_budget, Some(20.0));
    assert_eq!(
        s.delete_keys(std::slice::from_ref(&k.token), Some("admin"))
            .await
            .unwrap(),
        1
    );
    assert!(s.load().await.unwrap().keys.is_empty());
    assert!(s.is_deleted_key(&k.token).await.unwrap());
    assert_eq!(
        s.delete_teams(&["team-1".into(), "nope".into()])
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.delete_users(&["u1".into()]).await.unwrap(), 1);
    assert_eq!(s.delete_membership("team-1", "u1").await.unwrap(), 1);
    assert_eq!(s.delete_budgets(&["daily-tier".into()]).await.unwrap(), 1);
    assert_eq!(s.delete_end_users(&["cust-1".into()]).await.unwrap(), 1);
}

/// B37: no raw key in any stored row, in any table.
#[tokio::test]
async fn no_raw_key_in_any_table() {
    let s = store().await;
    let raw = "sk-test-CANARY2";
    s.upsert_key(&key(raw)).await.unwrap();
    s.insert_spend_logs(&[SpendLogRow {
        request_id: "r1".into(),
        api_key: hash_key(raw),
        ..SpendLogRow::default()
    }])
    .await
    .unwrap();
    s.delete_keys(&[hash_key(raw)], None).await.unwrap();
    for table in schema::TABLES {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT * FROM \"{}\"",
            table.name
        )))
        .fetch_all(s.pool())
        .await
        .unwrap();
        for row in rows {
            use sqlx::{Column, Row};
            for col in row.columns() {
                if let Ok(Some(v)) = row.try_get::<Option<String>, _>(col.ordinal()) {
                    assert!(
                        !v.contains("CANARY2"),
                        "raw key in {}.{}: {v}",
                        table.name,
                        col.name()
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn migration_adds_missing_columns_and_keeps_existing_data() {
    let s = SqliteStore::open(":memory:").await.unwrap();
    // a LiteLLM-like table with fewer columns and an extra one Tollgate does not know
    sqlx::query("CREATE TABLE \"LiteLLM_TeamTable\" (\"team_id\" TEXT PRIMARY KEY, \"spend\" REAL, \"litellm_extra\" TEXT)")
        .execute(s.pool())
        .await
        .unwrap();
    sqlx::query("INSERT INTO \"LiteLLM_TeamTable\" VALUES ('t1', 2.5, 'keep me')")
        .execute(s.pool())
        .await
        .unwrap();
    s.migrate().await.unwrap();
    s.migrate().await.unwrap(); // idempotent
    let teams = s.load().await.unwrap().teams;
    assert_eq!(
        (
            teams[0].team_id.as_str(),
            teams[0].spend,
            teams[0].max_budget
        ),
        ("t1", 2.5, None)
    );
    let extra: (String,) = sqlx::query_as("SELECT \"litellm_extra\" FROM \"LiteLLM_TeamTable\"")
        .fetch_one(s.pool())
        .await
        .unwrap();
    assert_eq!(extra.0, "keep me");
}

#[tokio::test]
async fn spend_logs_insert_idempotently_and_filter() {
    spend_logs_case(&store().await).await;
}

pub(super) async fn spend_logs_case(s: &dyn GovernanceStore) {
    let row = |id: &str, key: &str, start: &str, spend: f64| SpendLogRow {
        request_id: id.into(),
        call_type: "acompletion".into(),
        api_key: key.into(),
        spend,
        prompt_tokens: 1000,
        completion_tokens: 500,
        total_tokens: 1500,
        start_time: t(start),
        end_time: t(start),
        model: "gpt-4o".into(),
        metadata: json!({"additional_usage_values": {"cache_read_input_tokens": 400}}),
        request_tags: json!(["prod"]),
        status: Some("success".into()),
        ..SpendLogRow::default()
    };
    let rows = vec![
        row("r1", "h1", "2026-03-14T10:00:00Z", 0.002),
        row("r2", "h1", "2026-03-14T11:00:00Z", 0.004),
        row("r3", "h2", "2026-03-14T12:00:00Z", 0.001),
    ];
    assert_eq!(s.insert_spend_logs(&rows).await.unwrap(), 3);
    assert_eq!(
        s.insert_spend_logs(&rows[..1]).await.unwrap(),
        0,
        "same request_id written twice"
    );
    // A batch larger than one multi-row statement (SQLite: 999 parameters), with one
    // duplicate of an earlier row and one inside the batch itself.
    let per = schema::SPEND_LOGS.rows_per_statement(999);
    let mut many: Vec<SpendLogRow> = (0..per * 2 + 5)
        .map(|i| row(&format!("bulk-{i}"), "h3", "2026-03-13T10:00:00Z", 0.0001))
        .collect();
    many.push(row("r2", "h3", "2026-03-13T10:00:00Z", 9.0));
    many.push(row("bulk-0", "h3", "2026-03-13T10:00:00Z", 9.0));
    assert_eq!(
        s.insert_spend_logs(&many).await.unwrap(),
        (per * 2 + 5) as u64
    );
    let h3 = s
        .spend_logs(&SpendLogFilter {
            api_key: Some("h3".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(h3.len(), per * 2 + 5);
    assert!(
        h3.iter().all(|r| r.spend == 0.0001),
        "first row of an id wins"
    );
    let h1 = s
        .spend_logs(&SpendLogFilter {
            api_key: Some("h1".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        h1.iter().map(|r| r.request_id.as_str()).collect::<Vec<_>>(),
        ["r2", "r1"]
    );
    assert_eq!(h1[1], rows[0]);
    let one = s
        .spend_logs(&SpendLogFilter {
            request_id: Some("r3".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(one[0].spend, 0.001);
    let late = s
        .spend_logs(&SpendLogFilter {
            start: Some(t("2026-03-14T10:30:00Z")),
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].request_id, "r3");
}

/// Admission → settle → write-behind: stored spend equals the sum of the spend-log costs;
/// end-user, membership and tag rows are created on first spend.
#[tokio::test]
async fn write_behind_persists_spend_and_logs() {
    write_behind_case(Arc::new(store().await)).await;
}

pub(super) async fn write_behind_case(s: Arc<dyn GovernanceStore>) {
    let k = key("sk-live-0001");
    s.upsert_key(&k).await.unwrap();
    s.upsert_team(&Team {
        team_id: "team-1".into(),
        ..Team::default()
    })
    .await
    .unwrap();
    let adm = Admission::new(
        Arc::new(InMemoryCounterStore::default()),
        AdmissionConfig::default(),
    );
    let logs = Arc::new(SpendLogQueue::new(100));
    let wb = WriteBehind::new(s.clone(), adm.clone(), logs.clone(), 2);
    let scopes = || {
        vec![
            ScopeRequest::new(ScopeKey::key(&k.token), Limits::default()),
            ScopeRequest::new(ScopeKey::new(ScopeKind::Team, "team-1"), Limits::default()),
            ScopeRequest::new(ScopeKey::team_member("team-1", "u1"), Limits::default()),
            ScopeRequest::new(
                ScopeKey::new(ScopeKind::EndUser, "cust-9"),
                Limits::default(),
            ),
            ScopeRequest::new(ScopeKey::new(ScopeKind::Tag, "prod"), Limits::default()),
            ScopeRequest::new(ScopeKey::global(), Limits::default()),
        ]
    };
    let mut total = 0.0;
    for (i, c) in [0.002, 0.0035, 0.0005].into_iter().enumerate() {
        let id = format!("req-{i}");
        let mut r = adm
            .admit(AdmitRequest {
                request_id: id.as_str().into(),
                attempt: 0,
                scopes: scopes(),
                estimate: Estimate {
                    prompt_tokens: 10,
                    output_tokens: 10,
                    cost_usd: 0.01,
                },
            })
            .unwrap();
        let done = r.settle(&Usage::new(1000, 500), c).unwrap();
        total += done.cost_usd;
        logs.push(SpendLogRow {
            request_id: id,
            api_key: k.token.clone(),
            spend: done.cost_usd,
            ..SpendLogRow::default()
        });
    }
    let stats = wb.flush().await.unwrap();
    assert_eq!(
        stats,
        FlushStats {
            spend_rows: 6,
            log_rows: 3
        }
    ); // 6 scopes; global has no row
    assert!(logs.is_empty());
    let snap = s.load().await.unwrap();
    assert_eq!(snap.keys[0].spend, 0.006);
    assert!((total - 0.006).abs() < 1e-15);
    let logged: f64 = s
        .spend_logs(&SpendLogFilter::default())
        .await
        .unwrap()
        .iter()
        .map(|r| r.spend)
        .sum();
    assert!((logged - snap.keys[0].spend).abs() < 1e-12);
    assert_eq!(snap.teams[0].spend, 0.006);
    assert_eq!(snap.end_users[0].user_id, "cust-9");
    assert_eq!(snap.end_users[0].spend, 0.006);
    assert_eq!(
        (
            snap.memberships[0].user_id.as_str(),
            snap.memberships[0].spend
        ),
        ("u1", 0.006)
    );
    assert_eq!(snap.tags[0].spend, 0.006);
    // nothing new: nothing written
    assert_eq!(wb.flush().await.unwrap(), FlushStats::default());
}

#[tokio::test]
async fn run_flushes_on_shutdown() {
    let s = Arc::new(store().await);
    let adm = Admission::new(
        Arc::new(InMemoryCounterStore::default()),
        AdmissionConfig::default(),
    );
    let logs = Arc::new(SpendLogQueue::new(10));
    let wb = WriteBehind::new(s.clone(), adm, logs.clone(), 100);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(Arc::new(wb).run(std::time::Duration::from_secs(3600), rx));
    tokio::task::yield_now().await;
    logs.push(SpendLogRow {
        request_id: "late".into(),
        ..SpendLogRow::default()
    });
    tx.send(true).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        s.spend_logs(&SpendLogFilter::default())
            .await
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn queue_is_bounded_and_drops_oldest() {
    let q = SpendLogQueue::new(2);
    for id in ["a", "b", "c"] {
        q.push(SpendLogRow {
            request_id: id.into(),
            ..SpendLogRow::default()
        });
    }
    assert_eq!((q.len(), q.dropped()), (2, 1));
    let rows = q.take(10);
    assert_eq!(
        rows.iter()
            .map(|r| r.request_id.as_str())
            .collect::<Vec<_>>(),
        ["b", "c"]
    );
    q.push(SpendLogRow {
        request_id: "d".into(),
        ..SpendLogRow::default()
    });
    q.requeue(rows);
    assert_eq!(q.dropped(), 2);
    assert_eq!(
        q.take(10)
            .iter()
            .map(|r| r.request_id.as_str())
            .collect::<Vec<_>>(),
        ["c", "d"]
    );
}

#[tokio::test]
async fn file_database_survives_reopen() {
    let dir = std::env::temp_dir().join(format!("tollgate-gov-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gov.db");
    let path = path.to_str().unwrap();
    {
        let s = SqliteStore::open(path).await.unwrap();
        s.migrate().await.unwrap();
        s.upsert_key(&key("sk-file-0001")).await.unwrap();
        s.pool().close().await;
    }
    let s = SqliteStore::open(path).await.unwrap();
    s.migrate().await.unwrap();
    assert_eq!(s.load().await.unwrap().keys.len(), 1);
    s.pool().close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
