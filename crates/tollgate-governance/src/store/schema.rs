//! LiteLLM's tables and columns that Tollgate reads and writes (litellm-surface §6.2–6.3), with
//! their SQLite and Postgres types. Migrations built from this catalogue are additive only:
//! `CREATE TABLE IF NOT EXISTS`, then `ADD COLUMN` for each column an existing table lacks. They
//! never drop, rename or retype anything, so they are safe on a database LiteLLM created.
//!
//! Types: Postgres follows LiteLLM's Prisma schema (`TEXT[]` arrays, `JSONB`, `TIMESTAMP(3)`,
//! `DOUBLE PRECISION`); SQLite stores arrays and JSON as JSON text and times as RFC 3339 text.

/// A column's logical type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    /// Text.
    Text,
    /// Double precision float (USD).
    Float,
    /// 64-bit integer.
    Int,
    /// Boolean.
    Bool,
    /// JSON document.
    Json,
    /// Array of text (Postgres `TEXT[]`, SQLite JSON text).
    TextArray,
    /// Timestamp (UTC).
    Time,
}

impl ColType {
    /// SQLite column type.
    pub fn sqlite(self) -> &'static str {
        match self {
            Self::Text | Self::Json | Self::TextArray | Self::Time => "TEXT",
            Self::Float => "REAL",
            Self::Int | Self::Bool => "INTEGER",
        }
    }

    /// Postgres column type (as Prisma creates it).
    pub fn postgres(self) -> &'static str {
        match self {
            Self::Text => "TEXT",
            Self::Float => "DOUBLE PRECISION",
            Self::Int => "BIGINT",
            Self::Bool => "BOOLEAN",
            Self::Json => "JSONB",
            Self::TextArray => "TEXT[]",
            Self::Time => "TIMESTAMP(3)",
        }
    }
}

/// A table: name, primary key columns, columns.
#[derive(Debug)]
pub struct Table {
    /// Table name (quoted in SQL).
    pub name: &'static str,
    /// Primary key columns.
    pub primary_key: &'static [&'static str],
    /// Columns (name, type, SQL default or "").
    pub columns: &'static [(&'static str, ColType, &'static str)],
}

use ColType::*;

/// `"LiteLLM_VerificationToken"`.
pub const VERIFICATION_TOKEN: Table = Table {
    name: "LiteLLM_VerificationToken",
    primary_key: &["token"],
    columns: &[
        ("token", Text, ""),
        ("key_name", Text, ""),
        ("key_alias", Text, ""),
        ("spend", Float, "0"),
        ("max_budget", Float, ""),
        ("budget_duration", Text, ""),
        ("budget_reset_at", Time, ""),
        ("expires", Time, ""),
        ("models", TextArray, ""),
        ("aliases", Json, ""),
        ("config", Json, ""),
        ("user_id", Text, ""),
        ("team_id", Text, ""),
        ("organization_id", Text, ""),
        ("budget_id", Text, ""),
        ("permissions", Json, ""),
        ("max_parallel_requests", Int, ""),
        ("tpm_limit", Int, ""),
        ("rpm_limit", Int, ""),
        ("model_max_budget", Json, ""),
        ("model_spend", Json, ""),
        ("metadata", Json, ""),
        ("blocked", Bool, ""),
        ("key_type", Text, ""),
        ("created_at", Time, ""),
        ("created_by", Text, ""),
        ("updated_at", Time, ""),
        ("updated_by", Text, ""),
    ],
};

/// `"LiteLLM_DeletedVerificationToken"`: where deleted keys go (`/key/info` then says `deleted`).
pub const DELETED_VERIFICATION_TOKEN: Table = Table {
    name: "LiteLLM_DeletedVerificationToken",
    primary_key: &["id"],
    columns: &[
        ("id", Text, ""),
        ("token", Text, ""),
        ("key_name", Text, ""),
        ("key_alias", Text, ""),
        ("spend", Float, "0"),
        ("max_budget", Float, ""),
        ("user_id", Text, ""),
        ("team_id", Text, ""),
        ("metadata", Json, ""),
        ("deleted_at", Time, ""),
        ("deleted_by", Text, ""),
    ],
};

/// `"LiteLLM_TeamTable"`.
pub const TEAM: Table = Table {
    name: "LiteLLM_TeamTable",
    primary_key: &["team_id"],
    columns: &[
        ("team_id", Text, ""),
        ("team_alias", Text, ""),
        ("organization_id", Text, ""),
        ("admins", TextArray, ""),
        ("members", TextArray, ""),
        ("members_with_roles", Json, ""),
        ("metadata", Json, ""),
        ("max_budget", Float, ""),
        ("soft_budget", Float, ""),
        ("spend", Float, "0"),
        ("models", TextArray, ""),
        ("max_parallel_requests", Int, ""),
        ("tpm_limit", Int, ""),
        ("rpm_limit", Int, ""),
        ("budget_duration", Text, ""),
        ("budget_reset_at", Time, ""),
        ("blocked", Bool, "false"),
        ("model_spend", Json, ""),
        ("model_max_budget", Json, ""),
        ("created_at", Time, ""),
        ("updated_at", Time, ""),
    ],
};

/// `"LiteLLM_UserTable"`.
pub const USER: Table = Table {
    name: "LiteLLM_UserTable",
    primary_key: &["user_id"],
    columns: &[
        ("user_id", Text, ""),
        ("user_alias", Text, ""),
        ("user_email", Text, ""),
        ("user_role", Text, ""),
        ("teams", TextArray, ""),
        ("organization_id", Text, ""),
        ("max_budget", Float, ""),
        ("spend", Float, "0"),
        ("models", TextArray, ""),
        ("metadata", Json, ""),
        ("max_parallel_requests", Int, ""),
        ("tpm_limit", Int, ""),
        ("rpm_limit", Int, ""),
        ("budget_duration", Text, ""),
        ("budget_reset_at", Time, ""),
        ("model_spend", Json, ""),
        ("model_max_budget", Json, ""),
        // The admin UI's login password, hashed (LiteLLM's `password String?`).
        ("password", Text, ""),
    ],
};

/// `"LiteLLM_EndUserTable"`.
pub const END_USER: Table = Table {
    name: "LiteLLM_EndUserTable",
    primary_key: &["user_id"],
    columns: &[
        ("user_id", Text, ""),
        ("alias", Text, ""),
        ("spend", Float, "0"),
        ("allowed_model_region", Text, ""),
        ("default_model", Text, ""),
        ("budget_id", Text, ""),
        ("blocked", Bool, "false"),
        ("models", TextArray, ""),
    ],
};

/// `"LiteLLM_BudgetTable"`.
pub const BUDGET: Table = Table {
    name: "LiteLLM_BudgetTable",
    primary_key: &["budget_id"],
    columns: &[
        ("budget_id", Text, ""),
        ("max_budget", Float, ""),
        ("soft_budget", Float, ""),
        ("max_parallel_requests", Int, ""),
        ("tpm_limit", Int, ""),
        ("rpm_limit", Int, ""),
        ("model_max_budget", Json, ""),
        ("budget_duration", Text, ""),
        ("budget_reset_at", Time, ""),
        ("created_at", Time, ""),
        ("created_by", Text, ""),
        ("updated_at", Time, ""),
        ("updated_by", Text, ""),
    ],
};

/// `"LiteLLM_TeamMembership"`.
pub const TEAM_MEMBERSHIP: Table = Table {
    name: "LiteLLM_TeamMembership",
    primary_key: &["user_id", "team_id"],
    columns: &[
        ("user_id", Text, ""),
        ("team_id", Text, ""),
        ("spend", Float, "0"),
        ("budget_id", Text, ""),
    ],
};

/// `"LiteLLM_OrganizationTable"`.
pub const ORGANIZATION: Table = Table {
    name: "LiteLLM_OrganizationTable",
    primary_key: &["organization_id"],
    columns: &[
        ("organization_id", Text, ""),
        ("organization_alias", Text, ""),
        ("budget_id", Text, ""),
        ("models", TextArray, ""),
        ("spend", Float, "0"),
        ("metadata", Json, ""),
        ("created_at", Time, ""),
        ("created_by", Text, ""),
        ("updated_at", Time, ""),
        ("updated_by", Text, ""),
    ],
};

/// `"LiteLLM_TagTable"`.
pub const TAG: Table = Table {
    name: "LiteLLM_TagTable",
    primary_key: &["tag_name"],
    columns: &[
        ("tag_name", Text, ""),
        ("description", Text, ""),
        ("models", TextArray, ""),
        ("spend", Float, "0"),
        ("budget_id", Text, ""),
    ],
};

/// `"LiteLLM_SpendLogs"`.
pub const SPEND_LOGS: Table = Table {
    name: "LiteLLM_SpendLogs",
    primary_key: &["request_id"],
    columns: &[
        ("request_id", Text, ""),
        ("call_type", Text, ""),
        ("api_key", Text, "''"),
        ("spend", Float, "0"),
        ("total_tokens", Int, "0"),
        ("prompt_tokens", Int, "0"),
        ("completion_tokens", Int, "0"),
        ("startTime", Time, ""),
        ("endTime", Time, ""),
        ("completionStartTime", Time, ""),
        ("model", Text, "''"),
        ("model_id", Text, ""),
        ("model_group", Text, ""),
        ("custom_llm_provider", Text, ""),
        ("api_base", Text, ""),
        ("user", Text, ""),
        ("team_id", Text, ""),
        ("organization_id", Text, ""),
        ("end_user", Text, ""),
        ("metadata", Json, ""),
        ("cache_hit", Text, ""),
        ("cache_key", Text, ""),
        ("request_tags", Json, ""),
        ("requester_ip_address", Text, ""),
        ("session_id", Text, ""),
        ("status", Text, ""),
        ("litellm_call_id", Text, ""),
    ],
};

/// Every table Tollgate covers, in creation order (LiteLLM's, then Tollgate's own
/// `tollgate_model_budget_window`).
pub const TABLES: &[&Table] = &[
    &BUDGET,
    &ORGANIZATION,
    &TEAM,
    &USER,
    &VERIFICATION_TOKEN,
    &DELETED_VERIFICATION_TOKEN,
    &END_USER,
    &TEAM_MEMBERSHIP,
    &TAG,
    &SPEND_LOGS,
    &super::models::PROXY_MODEL,
    &super::daily::DAILY_USER_SPEND,
    &super::daily::DAILY_TEAM_SPEND,
    &super::daily::DAILY_ORGANIZATION_SPEND,
    &super::daily::DAILY_END_USER_SPEND,
    &super::daily::DAILY_TAG_SPEND,
    &super::model_window::MODEL_BUDGET_WINDOW,
];

/// Which SQL dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// Postgres.
    Postgres,
}

impl Table {
    fn col_def(d: Dialect, name: &str, ty: ColType, default: &str) -> String {
        let t = match d {
            Dialect::Sqlite => ty.sqlite(),
            Dialect::Postgres => ty.postgres(),
        };
        if default.is_empty() {
            format!("\"{name}\" {t}")
        } else {
            format!("\"{name}\" {t} DEFAULT {default}")
        }
    }

    /// `CREATE TABLE IF NOT EXISTS` with every column and the primary key.
    pub fn create_sql(&self, d: Dialect) -> String {
        let mut cols: Vec<String> = self
            .columns
            .iter()
            .map(|(n, t, def)| Self::col_def(d, n, *t, def))
            .collect();
        let pk: Vec<String> = self
            .primary_key
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect();
        cols.push(format!("PRIMARY KEY ({})", pk.join(", ")));
        format!(
            "CREATE TABLE IF NOT EXISTS \"{}\" ({})",
            self.name,
            cols.join(", ")
        )
    }

    /// `ALTER TABLE ... ADD COLUMN` for one column.
    pub fn add_column_sql(&self, d: Dialect, column: &str) -> Option<String> {
        let (n, t, def) = self.columns.iter().find(|(n, _, _)| *n == column)?;
        Some(format!(
            "ALTER TABLE \"{}\" ADD COLUMN {}",
            self.name,
            Self::col_def(d, n, *t, def)
        ))
    }

    /// `INSERT INTO "t" (cols) VALUES (?, …), (?, …) … ON CONFLICT (conflict) DO NOTHING` for
    /// `rows` rows, with `?` placeholders. One statement per batch instead of one per row:
    /// each statement is a round trip to the database (SQLite's worker thread, Postgres' socket).
    pub fn insert_many_sql(&self, rows: usize, conflict: &str) -> String {
        let one = format!("({})", vec!["?"; self.columns.len()].join(", "));
        format!(
            "INSERT INTO \"{}\" ({}) VALUES {} ON CONFLICT (\"{conflict}\") DO NOTHING",
            self.name,
            self.column_list(),
            vec![one; rows.max(1)].join(", ")
        )
    }

    /// Rows per multi-row statement so that `rows × columns` stays within `max_params` bound
    /// parameters (SQLite's oldest default is 999, Postgres allows 65,535), rounded down to a
    /// power of two (see [`statement_sizes`]).
    pub fn rows_per_statement(&self, max_params: usize) -> usize {
        let n = (max_params / self.columns.len().max(1)).max(1);
        1 << n.ilog2()
    }

    /// Column names, quoted and comma-separated.
    pub fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|(n, _, _)| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Splits `rows` rows into statements of power-of-two sizes, largest first, none above
/// `max_rows` (a power of two): e.g. 45 with 32 → 32, 8, 4, 1. Prepared statements are cached
/// per SQL text, so this bounds the distinct multi-row statements a connection keeps to
/// `log2(max_rows) + 1` however batch sizes vary.
pub fn statement_sizes(rows: usize, max_rows: usize) -> impl Iterator<Item = usize> {
    let max_rows = max_rows.max(1);
    let mut left = rows;
    std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let n = (1usize << left.ilog2()).min(max_rows);
        left -= n;
        Some(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_sizes_are_bounded_powers_of_two() {
        let v: Vec<usize> = statement_sizes(45, 32).collect();
        assert_eq!(v, vec![32, 8, 4, 1]);
        let v: Vec<usize> = statement_sizes(100, 32).collect();
        assert_eq!(v, vec![32, 32, 32, 4]);
        assert_eq!(statement_sizes(0, 32).count(), 0);
        // 999 parameters / N columns, rounded down to a power of two
        let per = SPEND_LOGS.rows_per_statement(999);
        assert!(per.is_power_of_two() && per * SPEND_LOGS.columns.len() <= 999);
    }

    #[test]
    fn create_statements_use_litellm_names_and_types() {
        let s = VERIFICATION_TOKEN.create_sql(Dialect::Postgres);
        assert!(s.starts_with(
            "CREATE TABLE IF NOT EXISTS \"LiteLLM_VerificationToken\" (\"token\" TEXT, "
        ));
        assert!(
            s.contains("\"models\" TEXT[]")
                && s.contains("\"metadata\" JSONB")
                && s.contains("\"expires\" TIMESTAMP(3)")
        );
        assert!(s.ends_with("PRIMARY KEY (\"token\"))"));
        let s = SPEND_LOGS.create_sql(Dialect::Sqlite);
        assert!(s.contains("\"startTime\" TEXT") && s.contains("\"spend\" REAL DEFAULT 0"));
        assert_eq!(
            TEAM.add_column_sql(Dialect::Sqlite, "blocked").unwrap(),
            "ALTER TABLE \"LiteLLM_TeamTable\" ADD COLUMN \"blocked\" INTEGER DEFAULT false"
        );
        assert!(TEAM.add_column_sql(Dialect::Sqlite, "nope").is_none());
        assert_eq!(
            TEAM_MEMBERSHIP
                .create_sql(Dialect::Sqlite)
                .matches("PRIMARY KEY (\"user_id\", \"team_id\")")
                .count(),
            1
        );
    }
}
