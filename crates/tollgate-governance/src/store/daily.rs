//! LiteLLM's daily roll-up tables (`"LiteLLM_Daily{User,Team,Organization,EndUser,Tag}Spend"`,
//! litellm/proxy/schema.prisma; litellm-surface §6.2), which LiteLLM's UI and the
//! `/{user,team,organization,customer,tag}/daily/activity` APIs read.
//!
//! [`upserts`] turns the spend-log rows a batch actually inserted into multi-row
//! `INSERT … ON CONFLICT (<unique cols>) DO UPDATE SET <col> = <col> + excluded.<col>` statements:
//! the batch is aggregated in memory first (one row per unique tuple), so a 500-row batch costs
//! one statement per table (more only past the bound-parameter limit). The stores run them in
//! the same transaction as the spend-log insert, so a row counts exactly once.
//!
//! Rules, as LiteLLM's `DBSpendUpdateWriter` applies them
//! (`_common_add_spend_log_transaction_to_daily_transaction` and the per-entity callers):
//! - one roll-up per entity the row names (`user`, `team_id`, `organization_id`, `end_user`,
//!   each tag of `request_tags`); a missing or empty entity is skipped;
//! - `date` is the `YYYY-MM-DD` of `startTime` (UTC);
//! - `api_requests` +1; `successful_requests` +1 when `status == "success"`, else
//!   `failed_requests` +1;
//! - `cache_read_input_tokens` / `cache_creation_input_tokens` come from the row's
//!   `metadata.usage_object` (LiteLLM) or `metadata.additional_usage_values` (Tollgate).
//!
//! Unlike LiteLLM (which writes NULL), unique-key columns are never NULL here: NULLs are
//! distinct in a unique index, so `ON CONFLICT` would never match them. A missing
//! `custom_llm_provider` is written as `''`, and `mcp_namespaced_tool_name` / `endpoint` are
//! always `''` (Tollgate has no MCP tool calls; a constant also keeps Tollgate's own rows unique
//! under the 5- and 6-column unique indexes of older LiteLLM schemas). One case remains: on the
//! oldest (5-column) schema, a row LiteLLM wrote (NULL `endpoint`) for the same (entity, date,
//! key, model, provider) makes the upsert fail on LiteLLM's index, not ours.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rand::RngCore;
use serde_json::Value;

use super::codec::Val;
use super::entities::SpendLogRow;
use super::schema::{ColType::*, Table};

/// Declares one daily table: `id`, optional extra columns, the entity column, then the columns
/// every daily table shares, in Prisma's order.
macro_rules! daily_table {
    ($(#[$doc:meta])* $name:ident, $table:literal, $entity:literal $(, $extra:expr)*) => {
        $(#[$doc])*
        pub const $name: Table = Table {
            name: $table,
            primary_key: &["id"],
            columns: &[
                ("id", Text, ""),
                $($extra,)*
                ($entity, Text, ""),
                ("date", Text, ""),
                ("api_key", Text, ""),
                ("model", Text, ""),
                ("model_group", Text, ""),
                ("custom_llm_provider", Text, ""),
                ("mcp_namespaced_tool_name", Text, "''"),
                ("endpoint", Text, "''"),
                ("prompt_tokens", Int, "0"),
                ("completion_tokens", Int, "0"),
                ("cache_read_input_tokens", Int, "0"),
                ("cache_creation_input_tokens", Int, "0"),
                ("spend", Float, "0"),
                ("api_requests", Int, "0"),
                ("successful_requests", Int, "0"),
                ("failed_requests", Int, "0"),
                ("created_at", Time, ""),
                ("updated_at", Time, ""),
            ],
        };
    };
}

daily_table!(
    /// `"LiteLLM_DailyUserSpend"`: per internal user (`user_id` = the spend log's `user`).
    DAILY_USER_SPEND,
    "LiteLLM_DailyUserSpend",
    "user_id"
);
daily_table!(
    /// `"LiteLLM_DailyTeamSpend"`: per team.
    DAILY_TEAM_SPEND,
    "LiteLLM_DailyTeamSpend",
    "team_id"
);
daily_table!(
    /// `"LiteLLM_DailyOrganizationSpend"`: per organization.
    DAILY_ORGANIZATION_SPEND,
    "LiteLLM_DailyOrganizationSpend",
    "organization_id"
);
daily_table!(
    /// `"LiteLLM_DailyEndUserSpend"`: per end user (`end_user_id` = the spend log's `end_user`).
    DAILY_END_USER_SPEND,
    "LiteLLM_DailyEndUserSpend",
    "end_user_id"
);
daily_table!(
    /// `"LiteLLM_DailyTagSpend"`: per request tag. LiteLLM's `request_id` column (the last
    /// request of the bucket) is kept in the schema but left NULL: a roll-up has no single request.
    DAILY_TAG_SPEND,
    "LiteLLM_DailyTagSpend",
    "tag",
    ("request_id", Text, "")
);

/// Which entity of a spend-log row a daily table rolls up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entity {
    User,
    Team,
    Organization,
    EndUser,
    Tag,
}

/// One daily table: its catalogue entry, entity column and Tollgate's unique index on it.
#[derive(Debug)]
struct Rollup {
    table: &'static Table,
    column: &'static str,
    entity: Entity,
    /// Distinct from LiteLLM's Prisma-generated name (`…_custom_ll_key`), which LiteLLM reused
    /// for unique indexes of 5, 6 and 7 columns: reusing it would skip ours on an older schema.
    index: &'static str,
}

const ROLLUPS: [Rollup; 5] = [
    Rollup {
        table: &DAILY_USER_SPEND,
        column: "user_id",
        entity: Entity::User,
        index: "tollgate_daily_user_spend_uniq",
    },
    Rollup {
        table: &DAILY_TEAM_SPEND,
        column: "team_id",
        entity: Entity::Team,
        index: "tollgate_daily_team_spend_uniq",
    },
    Rollup {
        table: &DAILY_ORGANIZATION_SPEND,
        column: "organization_id",
        entity: Entity::Organization,
        index: "tollgate_daily_organization_spend_uniq",
    },
    Rollup {
        table: &DAILY_END_USER_SPEND,
        column: "end_user_id",
        entity: Entity::EndUser,
        index: "tollgate_daily_end_user_spend_uniq",
    },
    Rollup {
        table: &DAILY_TAG_SPEND,
        column: "tag",
        entity: Entity::Tag,
        index: "tollgate_daily_tag_spend_uniq",
    },
];

/// Unique-key columns after the entity column (LiteLLM's `@@unique`).
const KEY_COLS: [&str; 6] = [
    "date",
    "api_key",
    "model",
    "custom_llm_provider",
    "mcp_namespaced_tool_name",
    "endpoint",
];

/// Counter columns: incremented on conflict.
const SUM_COLS: [&str; 8] = [
    "prompt_tokens",
    "completion_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "spend",
    "api_requests",
    "successful_requests",
    "failed_requests",
];

/// Columns an upsert writes: `id`, entity, [`KEY_COLS`] with `model_group` after `model`,
/// [`SUM_COLS`], `created_at`, `updated_at`.
const INSERT_COLS: usize = 2 + KEY_COLS.len() + 1 + SUM_COLS.len() + 2;

/// `CREATE UNIQUE INDEX IF NOT EXISTS` on each daily table's
/// `(<entity>, date, api_key, model, custom_llm_provider, mcp_namespaced_tool_name, endpoint)`,
/// the conflict target of [`upserts`]. Same SQL for SQLite and Postgres. Additive: on a LiteLLM
/// database the same columns already carry LiteLLM's index, and this adds a second one under
/// Tollgate's name.
pub(crate) fn create_index_sql() -> Vec<String> {
    ROLLUPS
        .iter()
        .map(|r| {
            format!(
                "CREATE UNIQUE INDEX IF NOT EXISTS \"{}\" ON \"{}\" ({})",
                r.index,
                r.table.name,
                quoted(std::iter::once(r.column).chain(KEY_COLS))
            )
        })
        .collect()
}

/// One multi-row upsert: SQL with `?` placeholders and its values in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Upsert {
    /// `INSERT … ON CONFLICT … DO UPDATE` with `?` placeholders.
    pub sql: String,
    /// Bound values, `INSERT_COLS` per row.
    pub values: Vec<Val>,
}

/// The upserts that add `rows` to every daily table: one statement per table with entities,
/// more only past `max_params` bound parameters (SQLite 999, Postgres 65,535), chunks of
/// [`Table::rows_per_statement`] rows as for the spend-log inserts. Unlike those, chunks are
/// not split further into power-of-two sizes: the stores run these statements uncached
/// (`persistent(false)`), so varying row counts cost no statement-cache entries and the fewest
/// statements win. Tuples come sorted, so concurrent writers lock rows in the same order.
/// `now` is `created_at` / `updated_at`.
pub(crate) fn upserts(rows: &[&SpendLogRow], max_params: usize, now: DateTime<Utc>) -> Vec<Upsert> {
    let mut out = Vec::new();
    for r in &ROLLUPS {
        let buckets: Vec<(Key, Bucket)> = aggregate(rows, r.entity).into_iter().collect();
        for chunk in buckets.chunks(r.table.rows_per_statement(max_params)) {
            let mut values = Vec::with_capacity(chunk.len() * INSERT_COLS);
            for (key, b) in chunk {
                push_values(&mut values, key, b, now);
            }
            out.push(Upsert {
                sql: upsert_sql(r, chunk.len()),
                values,
            });
        }
    }
    out
}

/// `(entity, date, api_key, model, custom_llm_provider)`; the other key columns are constant.
type Key = (String, String, String, String, String);

/// Sums of one tuple.
#[derive(Debug, Default, Clone, PartialEq)]
struct Bucket {
    model_group: Option<String>,
    prompt_tokens: i64,
    completion_tokens: i64,
    cache_read_input_tokens: i64,
    cache_creation_input_tokens: i64,
    spend: f64,
    api_requests: i64,
    successful_requests: i64,
    failed_requests: i64,
}

fn aggregate(rows: &[&SpendLogRow], entity: Entity) -> BTreeMap<Key, Bucket> {
    let mut out: BTreeMap<Key, Bucket> = BTreeMap::new();
    for row in rows {
        let date = row.start_time.format("%Y-%m-%d").to_string();
        let provider = row.custom_llm_provider.clone().unwrap_or_default();
        let ok = row.status.as_deref() == Some("success");
        let cache_read = usage_tokens(&row.metadata, "cache_read_input_tokens");
        let cache_creation = usage_tokens(&row.metadata, "cache_creation_input_tokens");
        for id in entities(row, entity) {
            let key = (
                id,
                date.clone(),
                row.api_key.clone(),
                row.model.clone(),
                provider.clone(),
            );
            let b = out.entry(key).or_default();
            if b.model_group.is_none() {
                b.model_group.clone_from(&row.model_group);
            }
            b.prompt_tokens = b.prompt_tokens.saturating_add(row.prompt_tokens);
            b.completion_tokens = b.completion_tokens.saturating_add(row.completion_tokens);
            b.cache_read_input_tokens = b.cache_read_input_tokens.saturating_add(cache_read);
            b.cache_creation_input_tokens =
                b.cache_creation_input_tokens.saturating_add(cache_creation);
            b.spend += row.spend;
            b.api_requests += 1;
            if ok {
                b.successful_requests += 1;
            } else {
                b.failed_requests += 1;
            }
        }
    }
    out
}

/// The entity ids a row names for `entity`: none when absent or empty; each distinct non-empty
/// tag of `request_tags` (a JSON array, or a string holding one).
fn entities(row: &SpendLogRow, entity: Entity) -> Vec<String> {
    let one = |v: &Option<String>| v.iter().filter(|s| !s.is_empty()).cloned().collect();
    match entity {
        Entity::User => one(&row.user),
        Entity::Team => one(&row.team_id),
        Entity::Organization => one(&row.organization_id),
        Entity::EndUser => one(&row.end_user),
        Entity::Tag => {
            let parsed;
            let tags = match &row.request_tags {
                Value::String(s) => {
                    parsed = serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
                    &parsed
                }
                v => v,
            };
            let mut out: Vec<String> = Vec::new();
            for t in tags.as_array().into_iter().flatten() {
                if let Some(t) = t.as_str().filter(|t| !t.is_empty())
                    && !out.iter().any(|o| o == t)
                {
                    out.push(t.to_owned());
                }
            }
            out
        }
    }
}

/// A token count from `metadata.usage_object` (LiteLLM) or else
/// `metadata.additional_usage_values` (Tollgate); 0 when neither has it.
fn usage_tokens(metadata: &Value, field: &str) -> i64 {
    ["usage_object", "additional_usage_values"]
        .iter()
        .find_map(|o| metadata.get(o)?.get(field)?.as_i64())
        .unwrap_or(0)
}

fn push_values(values: &mut Vec<Val>, key: &Key, b: &Bucket, now: DateTime<Utc>) {
    let (entity, date, api_key, model, provider) = key;
    let text = |s: &str| Val::Text(Some(s.to_owned()));
    let int = |i: i64| Val::Int(Some(i));
    values.extend([
        Val::Text(Some(uuid_v4())),
        text(entity),
        text(date),
        text(api_key),
        text(model),
        Val::Text(b.model_group.clone()),
        text(provider),
        text(""),
        text(""),
        int(b.prompt_tokens),
        int(b.completion_tokens),
        int(b.cache_read_input_tokens),
        int(b.cache_creation_input_tokens),
        Val::Float(Some(b.spend)),
        int(b.api_requests),
        int(b.successful_requests),
        int(b.failed_requests),
        Val::Time(Some(now)),
        Val::Time(Some(now)),
    ]);
}

fn upsert_sql(r: &Rollup, rows: usize) -> String {
    let t = r.table.name;
    let cols = quoted(
        ["id", r.column]
            .into_iter()
            .chain(KEY_COLS[..3].iter().copied())
            .chain(["model_group"])
            .chain(KEY_COLS[3..].iter().copied())
            .chain(SUM_COLS)
            .chain(["created_at", "updated_at"]),
    );
    let one = format!("({})", vec!["?"; INSERT_COLS].join(", "));
    let sets: Vec<String> = SUM_COLS
        .iter()
        .map(|c| format!("\"{c}\" = \"{t}\".\"{c}\" + excluded.\"{c}\""))
        .chain(["\"updated_at\" = excluded.\"updated_at\"".to_owned()])
        .collect();
    format!(
        "INSERT INTO \"{t}\" ({cols}) VALUES {} ON CONFLICT ({}) DO UPDATE SET {}",
        vec![one; rows.max(1)].join(", "),
        quoted(std::iter::once(r.column).chain(KEY_COLS)),
        sets.join(", ")
    )
}

fn quoted<'a>(cols: impl IntoIterator<Item = &'a str>) -> String {
    cols.into_iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A random (version 4) UUID, lowercase hyphenated: the `id` Prisma's `@default(uuid())` makes.
fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    rand::rng().fill_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str, user: &str, start: &str, spend: f64, status: &str) -> SpendLogRow {
        SpendLogRow {
            request_id: id.into(),
            api_key: "h1".into(),
            spend,
            prompt_tokens: 10,
            completion_tokens: 2,
            start_time: DateTime::parse_from_rfc3339(start)
                .unwrap()
                .with_timezone(&Utc),
            model: "gpt-4o".into(),
            model_group: Some("gpt-4o".into()),
            custom_llm_provider: Some("openai".into()),
            user: Some(user.into()),
            status: Some(status.into()),
            ..SpendLogRow::default()
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-15T08:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn upsert_sql_is_one_multi_row_statement_with_increments() {
        let sql = upsert_sql(&ROLLUPS[0], 2);
        let one = format!("({})", vec!["?"; 19].join(", "));
        assert_eq!(
            sql,
            format!(
                "INSERT INTO \"LiteLLM_DailyUserSpend\" (\"id\", \"user_id\", \"date\", \"api_key\", \"model\", \"model_group\", \"custom_llm_provider\", \"mcp_namespaced_tool_name\", \"endpoint\", \"prompt_tokens\", \"completion_tokens\", \"cache_read_input_tokens\", \"cache_creation_input_tokens\", \"spend\", \"api_requests\", \"successful_requests\", \"failed_requests\", \"created_at\", \"updated_at\") \
                 VALUES {one}, {one} \
                 ON CONFLICT (\"user_id\", \"date\", \"api_key\", \"model\", \"custom_llm_provider\", \"mcp_namespaced_tool_name\", \"endpoint\") DO UPDATE SET \
                 \"prompt_tokens\" = \"LiteLLM_DailyUserSpend\".\"prompt_tokens\" + excluded.\"prompt_tokens\", \
                 \"completion_tokens\" = \"LiteLLM_DailyUserSpend\".\"completion_tokens\" + excluded.\"completion_tokens\", \
                 \"cache_read_input_tokens\" = \"LiteLLM_DailyUserSpend\".\"cache_read_input_tokens\" + excluded.\"cache_read_input_tokens\", \
                 \"cache_creation_input_tokens\" = \"LiteLLM_DailyUserSpend\".\"cache_creation_input_tokens\" + excluded.\"cache_creation_input_tokens\", \
                 \"spend\" = \"LiteLLM_DailyUserSpend\".\"spend\" + excluded.\"spend\", \
                 \"api_requests\" = \"LiteLLM_DailyUserSpend\".\"api_requests\" + excluded.\"api_requests\", \
                 \"successful_requests\" = \"LiteLLM_DailyUserSpend\".\"successful_requests\" + excluded.\"successful_requests\", \
                 \"failed_requests\" = \"LiteLLM_DailyUserSpend\".\"failed_requests\" + excluded.\"failed_requests\", \
                 \"updated_at\" = excluded.\"updated_at\""
            )
        );
        assert_eq!(
            create_index_sql()[4],
            "CREATE UNIQUE INDEX IF NOT EXISTS \"tollgate_daily_tag_spend_uniq\" ON \"LiteLLM_DailyTagSpend\" (\"tag\", \"date\", \"api_key\", \"model\", \"custom_llm_provider\", \"mcp_namespaced_tool_name\", \"endpoint\")"
        );
        // every daily table has the columns an upsert writes
        for r in &ROLLUPS {
            assert_eq!(
                r.table.columns[r.table.columns.len() - INSERT_COLS + 1].0,
                r.column
            );
        }
    }

    /// 500 rows of 3 users (one has two dates) aggregate to one statement per table that has
    /// an entity, with one row per tuple and exact sums.
    #[test]
    fn a_batch_aggregates_to_one_statement_per_table() {
        let rows: Vec<SpendLogRow> = (0..500)
            .map(|i| {
                let user = ["u1", "u2", "u3"][i % 3];
                let start = if i == 0 {
                    "2026-03-13T23:59:59.999Z"
                } else {
                    "2026-03-14T00:00:00Z"
                };
                row(
                    &format!("r{i}"),
                    user,
                    start,
                    0.25,
                    if i % 5 == 0 { "failure" } else { "success" },
                )
            })
            .collect();
        let refs: Vec<&SpendLogRow> = rows.iter().collect();
        let ups = upserts(&refs, 999, now());
        assert_eq!(ups.len(), 1, "only the user table has entities");
        assert_eq!(ups[0].values.len(), 4 * INSERT_COLS);
        assert_eq!(ups[0].sql, upsert_sql(&ROLLUPS[0], 4));
        let tuple = |n: usize| &ups[0].values[n * INSERT_COLS + 1..n * INSERT_COLS + 3];
        let t = |s: &str| Val::Text(Some(s.into()));
        // sorted: u1 on the 13th (row 0), u1 on the 14th, u2, u3
        assert_eq!(tuple(0), [t("u1"), t("2026-03-13")]);
        assert_eq!(tuple(1), [t("u1"), t("2026-03-14")]);
        assert_eq!(tuple(3), [t("u3"), t("2026-03-14")]);
        // u1 on the 14th: rows 3, 6, …, 498 (166 rows), failures at multiples of 15 (33 rows)
        let sums = &ups[0].values[INSERT_COLS + 9..INSERT_COLS + 17];
        assert_eq!(
            sums,
            [
                Val::Int(Some(1660)),
                Val::Int(Some(332)),
                Val::Int(Some(0)),
                Val::Int(Some(0)),
                Val::Float(Some(41.5)),
                Val::Int(Some(166)),
                Val::Int(Some(133)),
                Val::Int(Some(33)),
            ]
        );
    }

    #[test]
    fn many_tuples_split_at_the_parameter_limit() {
        let rows: Vec<SpendLogRow> = (0..100)
            .map(|i| {
                row(
                    &format!("r{i}"),
                    &format!("u{i:03}"),
                    "2026-03-14T10:00:00Z",
                    1.0,
                    "success",
                )
            })
            .collect();
        let refs: Vec<&SpendLogRow> = rows.iter().collect();
        let sizes: Vec<usize> = upserts(&refs, 999, now())
            .iter()
            .map(|u| u.values.len() / INSERT_COLS)
            .collect();
        assert_eq!(sizes, [32, 32, 32, 4]);
        let pg = upserts(&refs, 65535, now());
        assert_eq!(pg.len(), 1);
        assert_eq!(pg[0].sql, upsert_sql(&ROLLUPS[0], 100));
        assert!(upserts(&[], 999, now()).is_empty());
    }

    #[test]
    fn entities_tags_and_cache_tokens_come_from_the_row() {
        let mut r = row("r1", "", "2026-03-14T10:00:00Z", 1.0, "success");
        r.team_id = Some("t1".into());
        r.request_tags = json!(["a", "b", "a", "", 7]);
        assert_eq!(entities(&r, Entity::User), Vec::<String>::new());
        assert_eq!(entities(&r, Entity::Team), ["t1"]);
        assert_eq!(entities(&r, Entity::EndUser), Vec::<String>::new());
        assert_eq!(entities(&r, Entity::Tag), ["a", "b"]);
        r.request_tags = json!("[\"x\"]");
        assert_eq!(entities(&r, Entity::Tag), ["x"]);
        r.request_tags = Value::Null;
        assert!(entities(&r, Entity::Tag).is_empty());
        let m = json!({"usage_object": {"cache_read_input_tokens": 5},
                       "additional_usage_values": {"cache_read_input_tokens": 9, "cache_creation_input_tokens": 3}});
        assert_eq!(usage_tokens(&m, "cache_read_input_tokens"), 5);
        assert_eq!(usage_tokens(&m, "cache_creation_input_tokens"), 3);
        assert_eq!(usage_tokens(&Value::Null, "cache_read_input_tokens"), 0);
    }

    #[test]
    fn ids_are_v4_uuids() {
        let id = uuid_v4();
        assert_eq!(id.len(), 36);
        assert_eq!(id.as_bytes()[14], b'4');
        assert!(matches!(id.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
        assert_ne!(id, uuid_v4());
    }
}
