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
    // JSON-object columns written unset read back as LiteLLM's default `{}`, on both stores
    let empty = || json!({});
    let want_key = VerificationToken {
        config: empty(),
        permissions: empty(),
        model_max_budget: empty(),
        model_spend: empty(),
        ..k.clone()
    };
    assert_eq!(snap.keys, vec![want_key]);
    let want_team = Team {
        model_spend: empty(),
        model_max_budget: empty(),
        ..team
    };
    assert_eq!(snap.teams, vec![want_team]);
    let want_user = User {
        metadata: empty(),
        model_spend: empty(),
        model_max_budget: empty(),
        ..user
    };
    assert_eq!(snap.users, vec![want_user]);
    let want_tier = BudgetTier {
        model_max_budget: empty(),
        ..tier
    };
    assert_eq!(snap.budgets, vec![want_tier]);
    assert_eq!(snap.end_users, vec![eu]);
    assert_eq!(snap.memberships, vec![m]);
    let want_org = Organization {
        metadata: empty(),
        ..org
    };
    assert_eq!(snap.organizations, vec![want_org]);
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

/// Tags and organizations are deleted by name / id; unknown ones are not counted.
#[tokio::test]
async fn delete_tags_and_organizations() {
    let s = store().await;
    for name in ["prod", "dev"] {
        s.upsert_tag(&Tag {
            tag_name: name.into(),
            ..Tag::default()
        })
        .await
        .unwrap();
    }
    s.upsert_organization(&Organization {
        organization_id: "org-1".into(),
        ..Organization::default()
    })
    .await
    .unwrap();
    assert_eq!(
        s.delete_tags(&["prod".into(), "nope".into()])
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.delete_organizations(&["org-1".into()]).await.unwrap(), 1);
    let snap = s.load().await.unwrap();
    assert_eq!(
        snap.tags
            .iter()
            .map(|t| t.tag_name.as_str())
            .collect::<Vec<_>>(),
        vec!["dev"]
    );
    assert!(snap.organizations.is_empty());
}

/// No raw key in any stored row, in any table.
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
    let all = s.spend_since(None).await.unwrap();
    assert!((all - 0.007).abs() < 1e-12, "{all}");
    let late = s
        .spend_since(Some(t("2026-03-14T11:00:00Z")))
        .await
        .unwrap();
    assert!((late - 0.005).abs() < 1e-12, "{late}");
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
            .await
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

/// One daily roll-up row as read back (`id`, `created_at`, `updated_at` are checked apart).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Daily {
    pub entity: String,
    pub date: String,
    pub api_key: String,
    pub model: String,
    pub model_group: Option<String>,
    pub provider: String,
    pub mcp: String,
    pub endpoint: String,
    /// prompt, completion, cache read, cache creation tokens
    pub tokens: (i64, i64, i64, i64),
    pub spend: f64,
    /// api, successful, failed requests
    pub requests: (i64, i64, i64),
}

/// Raw SQL the daily roll-up tests need, per backend.
#[async_trait::async_trait]
pub(super) trait DailyDb: Sync {
    /// Runs a statement.
    async fn exec(&self, sql: &str);
    /// A `SELECT COUNT(*) …`.
    async fn count(&self, sql: &str) -> i64;
    /// Rows of a daily table, ordered by entity, date, api_key, model.
    async fn daily(&self, table: &str, entity: &str) -> Vec<Daily>;
}

/// `SELECT` of [`DailyDb::daily`], the entity column aliased `e`.
pub(super) fn daily_select(table: &str, entity: &str) -> String {
    format!(
        "SELECT \"{entity}\" AS e, \"date\", \"api_key\", \"model\", \"model_group\", \"custom_llm_provider\", \
         \"mcp_namespaced_tool_name\", \"endpoint\", \"prompt_tokens\", \"completion_tokens\", \
         \"cache_read_input_tokens\", \"cache_creation_input_tokens\", \"spend\", \"api_requests\", \
         \"successful_requests\", \"failed_requests\" FROM \"{table}\" ORDER BY \"{entity}\", \"date\", \"api_key\", \"model\""
    )
}

#[async_trait::async_trait]
impl DailyDb for SqliteStore {
    async fn exec(&self, sql: &str) {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(self.pool())
            .await
            .unwrap();
    }
    async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(self.pool())
            .await
            .unwrap()
    }
    async fn daily(&self, table: &str, entity: &str) -> Vec<Daily> {
        use sqlx::Row;
        let rows = sqlx::query(sqlx::AssertSqlSafe(daily_select(table, entity)))
            .fetch_all(self.pool())
            .await
            .unwrap();
        rows.iter()
            .map(|r| Daily {
                entity: r.get(0),
                date: r.get(1),
                api_key: r.get(2),
                model: r.get(3),
                model_group: r.get(4),
                provider: r.get(5),
                mcp: r.get(6),
                endpoint: r.get(7),
                tokens: (r.get(8), r.get(9), r.get(10), r.get(11)),
                spend: r.get(12),
                requests: (r.get(13), r.get(14), r.get(15)),
            })
            .collect()
    }
}

/// LiteLLM's own DDL for `"LiteLLM_DailyUserSpend"` and its unique index (Prisma migration,
/// current schema), to check that migrate and the upserts work on a table LiteLLM created.
pub(super) const LITELLM_DAILY_USER_DDL: [&str; 2] = [
    "CREATE TABLE \"LiteLLM_DailyUserSpend\" (\"id\" TEXT NOT NULL, \"user_id\" TEXT, \"date\" TEXT NOT NULL, \
     \"api_key\" TEXT NOT NULL, \"model\" TEXT, \"model_group\" TEXT, \"custom_llm_provider\" TEXT, \
     \"mcp_namespaced_tool_name\" TEXT, \"endpoint\" TEXT, \"prompt_tokens\" BIGINT NOT NULL DEFAULT 0, \
     \"completion_tokens\" BIGINT NOT NULL DEFAULT 0, \"cache_read_input_tokens\" BIGINT NOT NULL DEFAULT 0, \
     \"cache_creation_input_tokens\" BIGINT NOT NULL DEFAULT 0, \"spend\" DOUBLE PRECISION NOT NULL DEFAULT 0.0, \
     \"api_requests\" BIGINT NOT NULL DEFAULT 0, \"successful_requests\" BIGINT NOT NULL DEFAULT 0, \
     \"failed_requests\" BIGINT NOT NULL DEFAULT 0, \"created_at\" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP, \
     \"updated_at\" TIMESTAMP(3) NOT NULL, CONSTRAINT \"LiteLLM_DailyUserSpend_pkey\" PRIMARY KEY (\"id\"))",
    "CREATE UNIQUE INDEX \"LiteLLM_DailyUserSpend_user_id_date_api_key_model_custom_ll_key\" ON \"LiteLLM_DailyUserSpend\" \
     (\"user_id\", \"date\", \"api_key\", \"model\", \"custom_llm_provider\", \"mcp_namespaced_tool_name\", \"endpoint\")",
];

fn daily_log(
    id: &str,
    start: &str,
    spend: f64,
    status: Option<&str>,
    (prompt, completion): (i64, i64),
) -> SpendLogRow {
    SpendLogRow {
        request_id: id.into(),
        call_type: "acompletion".into(),
        api_key: "h1".into(),
        spend,
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        start_time: t(start),
        end_time: t(start),
        model: "gpt-4o".into(),
        model_group: Some("gpt-4o".into()),
        custom_llm_provider: Some("openai".into()),
        user: Some("u1".into()),
        team_id: Some("t1".into()),
        request_tags: json!(["prod"]),
        status: status.map(Into::into),
        ..SpendLogRow::default()
    }
}

/// Daily roll-ups: exact sums per (entity, date, key, model, provider) tuple; a duplicate
/// `request_id` (in a later batch or within a batch) counts once; `startTime` on either side
/// of midnight UTC lands on two dates; rows without an entity are skipped for that table.
pub(super) async fn daily_rollup_case(s: &dyn GovernanceStore, db: &dyn DailyDb) {
    let r1 = SpendLogRow {
        organization_id: Some("o1".into()),
        end_user: Some("c1".into()),
        request_tags: json!(["prod", "beta"]),
        metadata: json!({"additional_usage_values": {"cache_read_input_tokens": 40}}),
        ..daily_log(
            "r1",
            "2026-03-14T10:00:00Z",
            0.5,
            Some("success"),
            (100, 10),
        )
    };
    let r2 = daily_log(
        "r2",
        "2026-03-14T11:00:00Z",
        0.25,
        Some("failure"),
        (200, 0),
    );
    let r3 = SpendLogRow {
        user: Some("u2".into()),
        api_key: "h2".into(),
        model: "claude-sonnet-4".into(),
        model_group: Some("claude".into()),
        custom_llm_provider: Some("anthropic".into()),
        request_tags: serde_json::Value::Null,
        metadata: json!({"usage_object": {"cache_creation_input_tokens": 7}}),
        ..daily_log(
            "r3",
            "2026-03-14T12:00:00Z",
            0.125,
            Some("success"),
            (50, 5),
        )
    };
    let r4 = daily_log(
        "r4",
        "2026-03-14T23:59:59.999Z",
        1.0,
        Some("success"),
        (1, 1),
    );
    let r5 = daily_log("r5", "2026-03-15T00:00:00Z", 2.0, None, (2, 2));
    let r6 = SpendLogRow {
        user: None,
        team_id: None,
        request_tags: json!([]),
        ..daily_log("r6", "2026-03-14T09:00:00Z", 8.0, Some("success"), (9, 9))
    };
    let batch1 = vec![r1, r2.clone(), r3, r4, r5, r6];
    assert_eq!(s.insert_spend_logs(&batch1).await.unwrap(), 6);

    let gpt = |e: &str, date: &str, tokens, spend, requests| Daily {
        entity: e.into(),
        date: date.into(),
        api_key: "h1".into(),
        model: "gpt-4o".into(),
        model_group: Some("gpt-4o".into()),
        provider: "openai".into(),
        mcp: String::new(),
        endpoint: String::new(),
        tokens,
        spend,
        requests,
    };
    let claude = |e: &str| Daily {
        entity: e.into(),
        date: "2026-03-14".into(),
        api_key: "h2".into(),
        model: "claude-sonnet-4".into(),
        model_group: Some("claude".into()),
        provider: "anthropic".into(),
        mcp: String::new(),
        endpoint: String::new(),
        tokens: (50, 5, 0, 7),
        spend: 0.125,
        requests: (1, 1, 0),
    };
    // r1 + r2 + r4 (23:59:59.999 is still the 14th), then r5 alone on the 15th (no status:
    // failed); r6 names no user, team, org, end user or tag
    let day14 = |e: &str| gpt(e, "2026-03-14", (301, 11, 40, 0), 1.75, (3, 2, 1));
    let day15 = |e: &str| gpt(e, "2026-03-15", (2, 2, 0, 0), 2.0, (1, 0, 1));
    let r1_only = |e: &str| gpt(e, "2026-03-14", (100, 10, 40, 0), 0.5, (1, 1, 0));
    let user = "LiteLLM_DailyUserSpend";
    let team = "LiteLLM_DailyTeamSpend";
    let org = "LiteLLM_DailyOrganizationSpend";
    let end_user = "LiteLLM_DailyEndUserSpend";
    let tag = "LiteLLM_DailyTagSpend";
    assert_eq!(
        db.daily(user, "user_id").await,
        [day14("u1"), day15("u1"), claude("u2")]
    );
    assert_eq!(
        db.daily(team, "team_id").await,
        [day14("t1"), claude("t1"), day15("t1")]
    );
    assert_eq!(db.daily(org, "organization_id").await, [r1_only("o1")]);
    assert_eq!(db.daily(end_user, "end_user_id").await, [r1_only("c1")]);
    assert_eq!(
        db.daily(tag, "tag").await,
        [r1_only("beta"), day14("prod"), day15("prod")]
    );

    // second batch: r2 again (different values: must not count), r7 new, r7 again
    let r7 = daily_log(
        "r7",
        "2026-03-14T13:00:00Z",
        0.0625,
        Some("success"),
        (1000, 100),
    );
    let batch2 = vec![
        SpendLogRow { spend: 64.0, ..r2 },
        r7.clone(),
        SpendLogRow { spend: 32.0, ..r7 },
    ];
    assert_eq!(s.insert_spend_logs(&batch2).await.unwrap(), 1);
    let day14 = |e: &str| gpt(e, "2026-03-14", (1301, 111, 40, 0), 1.8125, (4, 3, 1));
    let after = [
        (
            user,
            "user_id",
            vec![day14("u1"), day15("u1"), claude("u2")],
        ),
        (
            team,
            "team_id",
            vec![day14("t1"), claude("t1"), day15("t1")],
        ),
        (org, "organization_id", vec![r1_only("o1")]),
        (end_user, "end_user_id", vec![r1_only("c1")]),
        (
            tag,
            "tag",
            vec![r1_only("beta"), day14("prod"), day15("prod")],
        ),
    ];
    for (table, col, want) in &after {
        assert_eq!(&db.daily(table, col).await, want, "{table}");
    }
    // the whole first batch again: nothing inserted, nothing counted
    assert_eq!(s.insert_spend_logs(&batch1).await.unwrap(), 0);
    for (table, col, want) in &after {
        assert_eq!(&db.daily(table, col).await, want, "{table} after a replay");
    }
    // every row has a uuid id and both timestamps
    for (table, _, want) in &after {
        let ok = db
            .count(&format!(
                "SELECT COUNT(*) FROM \"{table}\" WHERE length(\"id\") = 36 AND \"created_at\" IS NOT NULL AND \"updated_at\" IS NOT NULL"
            ))
            .await;
        assert_eq!(ok, want.len() as i64, "{table}");
    }
}

#[tokio::test]
async fn daily_rollups_count_inserted_rows_once() {
    let s = store().await;
    s.migrate().await.unwrap(); // a second migrate keeps the tables and indexes
    daily_rollup_case(&s, &s).await;
}

/// A daily table and unique index LiteLLM created: migrate (twice) adds Tollgate's index next
/// to LiteLLM's and the upserts work on LiteLLM's NOT NULL columns.
#[tokio::test]
async fn daily_rollups_on_a_litellm_created_table() {
    let s = SqliteStore::open(":memory:").await.unwrap();
    for sql in LITELLM_DAILY_USER_DDL {
        s.exec(sql).await;
    }
    s.migrate().await.unwrap();
    s.migrate().await.unwrap();
    let both = s
        .count(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'LiteLLM_DailyUserSpend' \
             AND name IN ('LiteLLM_DailyUserSpend_user_id_date_api_key_model_custom_ll_key', 'tollgate_daily_user_spend_uniq')",
        )
        .await;
    assert_eq!(both, 2);
    daily_rollup_case(&s, &s).await;
}
