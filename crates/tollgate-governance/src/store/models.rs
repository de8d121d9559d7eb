//! Model deployments added at runtime (`/model/new`, LiteLLM's `store_model_in_db`): LiteLLM's
//! `"LiteLLM_ProxyModelTable"` ([`PROXY_MODEL`]), its row ([`ProxyModel`]) and the encryption
//! of `litellm_params` as LiteLLM applies it.
//!
//! LiteLLM (`add_new_model`) encrypts every **string** value of `litellm_params` with
//! [`SecretBox`] before the write (the model id, `api_base`, `api_key`, …; numbers, booleans
//! and objects are stored as they are) and, on load, decrypts each string value, keeping a
//! value that does not decrypt as it is (`decrypt_value_helper(return_original_value=True)`),
//! which is how rows written before encryption existed still load. [`sealed`] and [`opened`]
//! do the same, so rows are interchangeable with a LiteLLM database on the same salt key.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::StoreError;
use super::codec::{GetCol, ToRow, Val};
use super::schema::{ColType::*, Table};
use super::secret_box::SecretBox;

/// `"LiteLLM_ProxyModelTable"` (LiteLLM's Prisma schema: `model_id` text primary key,
/// `litellm_params` JSON, `model_info` JSON, creation and update stamps).
pub const PROXY_MODEL: Table = Table {
    name: "LiteLLM_ProxyModelTable",
    primary_key: &["model_id"],
    columns: &[
        ("model_id", Text, ""),
        ("model_name", Text, ""),
        ("litellm_params", Json, ""),
        ("model_info", Json, ""),
        ("created_at", Time, ""),
        ("created_by", Text, ""),
        ("updated_at", Time, ""),
        ("updated_by", Text, ""),
    ],
};

/// One stored deployment. In memory `litellm_params` is plaintext; in the table its string
/// values are encrypted ([`sealed`]). `Debug` lists the keys of `litellm_params`, never their
/// values (they hold credentials).
#[derive(Clone, Default, PartialEq)]
pub struct ProxyModel {
    /// Deployment id (`model_info.id`), the primary key.
    pub model_id: String,
    /// Model group name clients send as `"model"`.
    pub model_name: String,
    /// LiteLLM `litellm_params` object (`model`, `api_base`, `api_key`, …).
    pub litellm_params: Value,
    /// LiteLLM `model_info` object (`id`, costs, `access_groups`, …); `Null` when unset.
    pub model_info: Value,
    /// When it was added.
    pub created_at: Option<DateTime<Utc>>,
    /// Who added it (user id, or `litellm-proxy-master-key`).
    pub created_by: Option<String>,
    /// When it was last written.
    pub updated_at: Option<DateTime<Utc>>,
    /// Who last wrote it.
    pub updated_by: Option<String>,
}

impl std::fmt::Debug for ProxyModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self
            .litellm_params
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        f.debug_struct("ProxyModel")
            .field("model_id", &self.model_id)
            .field("model_name", &self.model_name)
            .field("litellm_params", &keys)
            .field("model_info", &self.model_info)
            .field("created_at", &self.created_at)
            .field("created_by", &self.created_by)
            .field("updated_at", &self.updated_at)
            .field("updated_by", &self.updated_by)
            .finish()
    }
}

impl ToRow for ProxyModel {
    const TABLE: &'static Table = &PROXY_MODEL;
    fn to_row(&self) -> Vec<Val> {
        vec![
            Val::Text(Some(self.model_id.clone())),
            Val::Text(Some(self.model_name.clone())),
            Val::Json(self.litellm_params.clone()),
            Val::Json(self.model_info.clone()),
            Val::Time(self.created_at),
            Val::Text(self.created_by.clone()),
            Val::Time(self.updated_at),
            Val::Text(self.updated_by.clone()),
        ]
    }
    fn from_row(r: &dyn GetCol) -> Result<Self, StoreError> {
        Ok(Self {
            model_id: r.text("model_id")?.unwrap_or_default(),
            model_name: r.text("model_name")?.unwrap_or_default(),
            litellm_params: object(r.json("litellm_params")?),
            model_info: object(r.json("model_info")?),
            created_at: r.time("created_at")?,
            created_by: r.text("created_by")?,
            updated_at: r.time("updated_at")?,
            updated_by: r.text("updated_by")?,
        })
    }
}

/// A JSON column that holds a JSON document as a string (a Prisma `Json` field written from a
/// `json.dumps` text) reads as the document it spells.
fn object(v: Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    }
}

/// The row as stored: every string value of `litellm_params` encrypted with `key`.
pub fn sealed(model: &ProxyModel, key: &SecretBox) -> ProxyModel {
    ProxyModel {
        litellm_params: map_strings(&model.litellm_params, |s| key.encrypt(s)),
        ..model.clone()
    }
}

/// The row as used: every string value of `litellm_params` that decrypts with `key` replaced
/// by its plaintext; others are kept as stored (LiteLLM's `return_original_value=True`).
pub fn opened(model: ProxyModel, key: &SecretBox) -> ProxyModel {
    ProxyModel {
        litellm_params: map_strings(&model.litellm_params, |s| {
            key.decrypt(s).unwrap_or_else(|_| s.to_owned())
        }),
        ..model
    }
}

/// Applies `f` to the top-level string values of an object (LiteLLM's loop over
/// `litellm_params.items()`); anything else is returned unchanged.
fn map_strings(v: &Value, f: impl Fn(&str) -> String) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| match v {
                    Value::String(s) => (k.clone(), Value::String(f(s))),
                    other => (k.clone(), other.clone()),
                })
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

/// Orders loaded rows by creation time, then id: deployments join their groups in the order
/// they were added, whatever order the database returns.
pub fn sort(rows: &mut [ProxyModel]) {
    rows.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.model_id.cmp(&b.model_id))
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn seals_every_string_and_opens_them_back() {
        let key = SecretBox::from_salt("sk-1234");
        let m = ProxyModel {
            model_id: "id-1".into(),
            model_name: "g".into(),
            litellm_params: json!({"model": "openai/x", "api_key": "sk-up", "rpm": 5, "extra_headers": {"a": "b"}}),
            ..ProxyModel::default()
        };
        let s = sealed(&m, &key);
        let p = &s.litellm_params;
        assert_ne!(p["api_key"], "sk-up");
        assert_ne!(p["model"], "openai/x");
        assert_eq!(
            key.decrypt(p["api_key"].as_str().unwrap()).unwrap(),
            "sk-up"
        );
        assert_eq!(p["rpm"], 5);
        assert_eq!(p["extra_headers"], json!({"a": "b"}));
        assert_eq!(opened(s, &key), m.clone());
        let dbg = format!("{m:?}");
        assert!(!dbg.contains("sk-up"), "{dbg}");
        assert!(
            dbg.contains(r#"litellm_params: ["model", "api_key", "rpm", "extra_headers"]"#),
            "{dbg}"
        );
    }

    #[test]
    fn values_that_do_not_decrypt_are_kept() {
        let key = SecretBox::from_salt("sk-1234");
        let m = ProxyModel {
            litellm_params: json!({"model": "openai/x", "api_base": "http://127.0.0.1:1/v1"}),
            ..ProxyModel::default()
        };
        assert_eq!(opened(m.clone(), &key), m);
    }

    #[test]
    fn json_text_columns_read_as_documents() {
        assert_eq!(object(json!("{\"a\":1}")), json!({"a": 1}));
        assert_eq!(object(json!("plain")), json!("plain"));
        assert_eq!(object(Value::Null), Value::Null);
    }
}

/// The store methods over both backends: SQLite here, Postgres with
/// `TOLLGATE_TEST_DATABASE_URL` (each run in its own schema, dropped afterwards).
#[cfg(test)]
mod store_tests {
    use serde_json::json;

    use super::*;
    use crate::store::{GovernanceStore, PostgresStore, SqliteStore};

    const PLAIN_KEY: &str = "sk-upstream-CANARY9";

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    fn model(id: &str, name: &str, created: &str) -> ProxyModel {
        ProxyModel {
            model_id: id.into(),
            model_name: name.into(),
            litellm_params: json!({
                "model": "openai/x",
                "api_base": "http://127.0.0.1:9/v1",
                "api_key": PLAIN_KEY,
                "rpm": 7,
            }),
            model_info: json!({"id": id, "mode": "chat"}),
            created_at: Some(t(created)),
            created_by: Some("litellm-proxy-master-key".into()),
            updated_at: Some(t(created)),
            updated_by: Some("litellm-proxy-master-key".into()),
        }
    }

    /// Round trip through `s`; returns the stored `litellm_params` of `m-2` as `raw` reads it.
    async fn round_trip(s: &dyn GovernanceStore) {
        let key = SecretBox::from_salt("sk-1234");
        assert_eq!(s.load_models(&key).await.unwrap(), vec![]);
        // added out of order: loads come back oldest first
        let m2 = model("m-2", "g2", "2026-03-14T10:00:01.500Z");
        let m1 = model("m-1", "g1", "2026-03-14T10:00:00.250Z");
        s.upsert_model(&m2, &key).await.unwrap();
        s.upsert_model(&m1, &key).await.unwrap();
        assert_eq!(
            s.load_models(&key).await.unwrap(),
            vec![m1.clone(), m2.clone()]
        );
        // another salt key cannot read the credentials: the stored text is kept (LiteLLM)
        let other = s.load_models(&SecretBox::from_salt("other")).await.unwrap();
        let api_key = other[0].litellm_params["api_key"].as_str().unwrap_or("");
        assert_ne!(api_key, PLAIN_KEY);
        assert_eq!(key.decrypt(api_key).unwrap(), PLAIN_KEY);
        assert_eq!(other[0].litellm_params["rpm"], 7);
        // replace by id
        let mut m1b = m1.clone();
        m1b.model_name = "g1-renamed".into();
        m1b.updated_at = Some(t("2026-03-14T11:00:00Z"));
        s.upsert_model(&m1b, &key).await.unwrap();
        assert_eq!(
            s.load_models(&key).await.unwrap(),
            vec![m1b.clone(), m2.clone()]
        );
        // delete
        assert_eq!(s.delete_model("m-1").await.unwrap(), 1);
        assert_eq!(s.delete_model("m-1").await.unwrap(), 0);
        assert_eq!(s.load_models(&key).await.unwrap(), vec![m2]);
    }

    /// The stored `litellm_params` holds ciphertext that decrypts, never the plaintext.
    fn assert_encrypted(raw: &Value) {
        let key = SecretBox::from_salt("sk-1234");
        assert!(!raw.to_string().contains("CANARY9"), "plaintext stored");
        let api_key = raw["api_key"].as_str().unwrap_or("");
        assert_eq!(key.decrypt(api_key).unwrap(), PLAIN_KEY);
        let m = raw["model"].as_str().unwrap_or("");
        assert_eq!(key.decrypt(m).unwrap(), "openai/x");
        assert_eq!(raw["rpm"], 7);
    }

    #[tokio::test]
    async fn sqlite_models_round_trip_encrypted() {
        let s = SqliteStore::open(":memory:").await.unwrap();
        s.migrate().await.unwrap();
        round_trip(&s).await;
        let raw: String = sqlx::query_scalar(
            "SELECT \"litellm_params\" FROM \"LiteLLM_ProxyModelTable\" WHERE \"model_id\" = 'm-2'",
        )
        .fetch_one(s.pool())
        .await
        .unwrap();
        assert_encrypted(&serde_json::from_str(&raw).unwrap());
    }

    #[tokio::test]
    async fn sqlite_reads_rows_written_by_litellm() {
        // a row as LiteLLM writes it: PyNaCl ciphertext (salt "sk-1234") for the key, a plain
        // (unencrypted, pre-encryption LiteLLM) model name, model_info as JSON text
        let s = SqliteStore::open(":memory:").await.unwrap();
        s.migrate().await.unwrap();
        let enc =
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXaHNU-8oaWPK1xDSJjdJGnYSczcpuHhhtpJWDqnAulhjJdXjz";
        sqlx::query(
            "INSERT INTO \"LiteLLM_ProxyModelTable\" (\"model_id\", \"model_name\", \"litellm_params\", \"model_info\", \"created_by\", \"updated_by\") VALUES ('x1', 'g', ?, '\"{\\\"id\\\": \\\"x1\\\"}\"', 'u', 'u')",
        )
        .bind(json!({"model": "openai/x", "api_key": enc}).to_string())
        .execute(s.pool())
        .await
        .unwrap();
        let got = s
            .load_models(&SecretBox::from_salt("sk-1234"))
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].litellm_params,
            json!({"model": "openai/x", "api_key": "sk-test-upstream-key"})
        );
        assert_eq!(got[0].model_info, json!({"id": "x1"}));
    }

    #[tokio::test]
    async fn pg_models_round_trip_encrypted() {
        let Some(url) =
            crate::test_support::postgres_url("tollgate-governance store postgres models")
        else {
            return;
        };
        let schema = format!("tollgate_gov_models_{}", std::process::id());
        let admin = PostgresStore::connect(&url).await.unwrap();
        for sql in [
            format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"),
            format!("CREATE SCHEMA \"{schema}\""),
        ] {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(admin.pool())
                .await
                .unwrap();
        }
        let opts: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        let s = PostgresStore::connect_with(opts.options([("search_path", schema.as_str())]))
            .await
            .unwrap();
        s.migrate().await.unwrap();
        s.migrate().await.unwrap(); // idempotent
        round_trip(&s).await;
        let raw: Value = sqlx::query_scalar(
            "SELECT \"litellm_params\" FROM \"LiteLLM_ProxyModelTable\" WHERE \"model_id\" = 'm-2'",
        )
        .fetch_one(s.pool())
        .await
        .unwrap();
        assert_encrypted(&raw);
        let ty: String = sqlx::query_scalar(
            "SELECT data_type::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'LiteLLM_ProxyModelTable' AND column_name = 'litellm_params'",
        )
        .fetch_one(s.pool())
        .await
        .unwrap();
        assert_eq!(ty, "jsonb");
        s.pool().close().await;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
        )))
        .execute(admin.pool())
        .await
        .unwrap();
        admin.pool().close().await;
    }
}
