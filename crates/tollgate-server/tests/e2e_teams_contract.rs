//! End-to-end, through the real `tollgate` binary in front of `tollgate-mock`, on SQLite and on
//! Postgres: teams, organisations and `/v2/model/info` answer as LiteLLM does.
//!
//! - `team_member_budget` on `/team/new` is a budget row linked from
//!   `metadata.team_member_budget_id`, shown by `/team/info` as `team_member_budget_table`;
//!   every member (named at creation, or added by `/team/bulk_member_add`) gets a copy, and a
//!   member over it is refused with LiteLLM's `Budget has been exceeded! User=<user> in
//!   Team=<team> ...` (LiteLLM's `TeamMemberBudgetHandler`, team_endpoints.py; the check in
//!   auth_checks.py);
//! - the member's `"LiteLLM_TeamMembership".spend` row follows its settled calls;
//! - `/organization/new` writes every NOT NULL column of LiteLLM's
//!   `"LiteLLM_OrganizationTable"`: on Postgres the table is first created with LiteLLM's own
//!   DDL (Prisma's migration), where a missing `created_by` / `updated_at` / `updated_by` was
//!   a 500;
//! - `/v2/model/info` pages and filters, and never shows the upstream key.

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

/// One completion token costs $0.001; the mock answers a chat with 8 completion tokens.
fn deps() -> Vec<Dep<'static>> {
    vec![Dep {
        group: "flat",
        deployment: "flat",
        upstream: "flat",
        id: "flat-1",
        input_cost: 0.0,
        output_cost: 0.001,
    }]
}

/// `"LiteLLM_OrganizationTable"` as LiteLLM's Prisma migration creates it on Postgres
/// (litellm/proxy/schema.prisma).
const LITELLM_ORG_DDL: &str = r#"CREATE TABLE "LiteLLM_OrganizationTable" (
    "organization_id" TEXT NOT NULL,
    "organization_alias" TEXT NOT NULL,
    "budget_id" TEXT NOT NULL,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "models" TEXT[],
    "spend" DOUBLE PRECISION NOT NULL DEFAULT 0.0,
    "model_spend" JSONB NOT NULL DEFAULT '{}',
    "object_permission_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" TEXT NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL,
    "updated_by" TEXT NOT NULL,
    CONSTRAINT "LiteLLM_OrganizationTable_pkey" PRIMARY KEY ("organization_id")
)"#;

/// The membership of `user` in a `/team/info` answer.
fn membership<'a>(info: &'a Value, user: &str) -> &'a Value {
    info["team_memberships"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["user_id"] == user))
        .unwrap_or(&Value::Null)
}

/// The team with a $0.008 default member budget, its members `m1` (at creation) and `m2`
/// (bulk), and the refusal of `m2` once one call spent it.
async fn member_budget(gw: &GovGateway) {
    let r = post_as(
        gw,
        MASTER,
        "/team/new",
        &json!({"team_id": "tc", "team_alias": "Contract", "max_budget": 10.0,
                "budget_duration": "30d", "team_member_budget": 0.008,
                "members_with_roles": [{"user_id": "m1", "role": "user"}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let default_id = r.body["metadata"]["team_member_budget_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        default_id.starts_with("team-Contract-budget-"),
        "{}",
        r.text
    );
    assert!(r.body.get("team_member_budget").is_none(), "{}", r.text);

    let r = get_as(gw, MASTER, "/team/info?team_id=tc").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let table = &r.body["team_info"]["team_member_budget_table"];
    assert_eq!(
        (
            table["budget_id"].clone(),
            table["max_budget"].clone(),
            table["budget_duration"].clone(),
            table["tpm_limit"].clone(),
            table["rpm_limit"].clone(),
            table["created_by"].clone(),
        ),
        (
            json!(default_id),
            json!(0.008),
            json!("30d"),
            Value::Null,
            Value::Null,
            json!("litellm-proxy-master-key")
        ),
        "{}",
        r.text
    );
    let m1 = &membership(&r.body, "m1")["litellm_budget_table"];
    assert_eq!(
        (m1["max_budget"].clone(), m1["budget_duration"].clone()),
        (json!(0.008), json!("30d"))
    );
    assert!(m1["budget_reset_at"].is_string(), "{}", r.text);

    let r = post_as(
        gw,
        MASTER,
        "/team/bulk_member_add",
        &json!({"team_id": "tc", "members": [{"user_id": "m2", "role": "user"}]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (
            r.body["total_requested"].clone(),
            r.body["successful_additions"].clone(),
            r.body["failed_additions"].clone()
        ),
        (json!(1), json!(1), json!(0)),
        "{}",
        r.text
    );
    let added = &r.body["results"][0];
    assert_eq!(added["success"], true);
    assert_eq!(added["error"], Value::Null);
    assert_eq!(added["updated_user"]["teams"], json!(["tc"]));
    assert_eq!(
        added["updated_team_membership"]["litellm_budget_table"]["max_budget"],
        0.008
    );
    assert_eq!(r.body["updated_team"]["team_id"], "tc");

    let (key, _) = generate_key(gw, json!({"team_id": "tc", "user_id": "m2"})).await;
    let first = chat(gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let refused = chat(gw, &key, &chat_body("flat", "hello", 8)).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert_eq!(
        refused.body["error"],
        json!({"message": "Budget has been exceeded! User=m2 in Team=tc Current cost: 0.008, Max budget: 0.008",
               "type": "budget_exceeded", "param": null, "code": "422"})
    );
    let r = get_as(gw, MASTER, "/team/info?team_id=tc").await;
    assert!(
        same_dollars(
            membership(&r.body, "m2")["spend"].as_f64().unwrap_or(-1.0),
            0.008
        ),
        "{}",
        r.text
    );
}

/// An organisation, answered with LiteLLM's audit columns.
async fn organization(gw: &GovGateway) {
    let r = post_as(
        gw,
        MASTER,
        "/organization/new",
        &json!({"organization_id": "org-c", "organization_alias": "Contract Org", "max_budget": 5.0}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (
            r.body["organization_alias"].clone(),
            r.body["created_by"].clone(),
            r.body["updated_by"].clone()
        ),
        (
            json!("Contract Org"),
            json!("litellm-proxy-master-key"),
            json!("litellm-proxy-master-key")
        ),
        "{}",
        r.text
    );
    assert!(
        r.body["budget_id"].is_string() && r.body["updated_at"].is_string(),
        "{}",
        r.text
    );
    assert_eq!(r.body["litellm_budget_table"]["max_budget"], 5.0);
}

/// `/v2/model/info`: LiteLLM's page fields, the filters, no upstream key.
async fn model_info_v2(gw: &GovGateway) {
    let r = get_as(gw, MASTER, "/v2/model/info?model=flat&page=1&size=10").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (
            r.body["total_count"].clone(),
            r.body["current_page"].clone(),
            r.body["size"].clone(),
            r.body["total_pages"].clone()
        ),
        (json!(1), json!(1), json!(10), json!(1))
    );
    let entry = &r.body["data"][0];
    assert_eq!(entry["model_name"], "flat");
    assert_eq!(entry["model_info"]["id"], "flat-1");
    assert_eq!(entry["litellm_params"]["model"], "openai/flat");
    assert!(
        entry["litellm_params"].get("api_key").is_none(),
        "{}",
        r.text
    );
    assert!(
        !r.text.contains(UPSTREAM_KEY),
        "the upstream key leaked: {}",
        r.text
    );
    let r = get_as(gw, MASTER, "/v2/model/info?search=nothing-like-it").await;
    assert_eq!(
        (r.body["data"].clone(), r.body["total_count"].clone()),
        (json!([]), json!(0))
    );
    let r = get_as(gw, MASTER, "/v2/model/info?page=0").await;
    assert_eq!(r.status, 400, "{}", r.text);
}

/// The contract on a running gateway; returns it for the caller's row checks.
async fn contract(db_url: Option<&str>) -> (GovGateway, tollgate_mock::MockHandle) {
    let m = mock().await;
    let gw = GovGateway::start(&config(&m.base_url(), &deps(), "", db_url));
    member_budget(&gw).await;
    organization(&gw).await;
    model_info_v2(&gw).await;
    (gw, m)
}

const MEMBER_SPEND: &str =
    "SELECT spend FROM \"LiteLLM_TeamMembership\" WHERE user_id = $1 AND team_id = 'tc'";
const ORG_ROW: &str = "SELECT organization_alias, budget_id, created_by, updated_by FROM \"LiteLLM_OrganizationTable\" WHERE organization_id = 'org-c'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teams_organizations_and_model_info_as_litellm_sqlite() {
    let (mut gw, _m) = contract(None).await;
    assert!(gw.stop().await, "graceful shutdown flushes spend");
    let store =
        tollgate_governance::store::SqliteStore::open(gw.db_path().to_str().expect("utf-8 path"))
            .await
            .expect("open the gateway's SQLite store");
    let spend: f64 = sqlx::query_scalar(sqlx::AssertSqlSafe(MEMBER_SPEND.replace("$1", "?")))
        .bind("m2")
        .fetch_one(store.pool())
        .await
        .expect("m2's membership row");
    assert!(same_dollars(spend, 0.008), "membership spend {spend}");
    let org: (String, String, String, String) = sqlx::query_as(ORG_ROW)
        .fetch_one(store.pool())
        .await
        .expect("the organization row");
    assert_eq!(
        (org.0.as_str(), org.2.as_str(), org.3.as_str()),
        (
            "Contract Org",
            "litellm-proxy-master-key",
            "litellm-proxy-master-key"
        )
    );
    store.pool().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teams_organizations_and_model_info_as_litellm_postgres() {
    let Some(db) = PgDb::create("teams_contract").await else {
        return;
    };
    let mut c = db.connect().await;
    sqlx::query(LITELLM_ORG_DDL)
        .execute(&mut c)
        .await
        .expect("LiteLLM's organization table");
    let (mut gw, _m) = contract(Some(&db.url)).await;
    assert!(gw.stop().await, "graceful shutdown flushes spend");
    let spend: f64 = sqlx::query_scalar(MEMBER_SPEND)
        .bind("m2")
        .fetch_one(&mut c)
        .await
        .expect("m2's membership row");
    assert!(same_dollars(spend, 0.008), "membership spend {spend}");
    let org: (String, String, String, String) = sqlx::query_as(ORG_ROW)
        .fetch_one(&mut c)
        .await
        .expect("the organization row");
    assert_eq!(
        (org.0.as_str(), org.2.as_str(), org.3.as_str()),
        (
            "Contract Org",
            "litellm-proxy-master-key",
            "litellm-proxy-master-key"
        )
    );
    let _ = sqlx::Connection::close(c).await;
}
