//! Database errors as Tollgate prints them: the database's own message, its SQLSTATE code,
//! Postgres's detail and hint, and a next step for the errors a newcomer meets first.
//!
//! Never the source position of the database server's code: sqlx's `Display` of a Postgres
//! error appends ` at line N`, the line of the PostgreSQL C source file that raised it (the
//! `L` field of the error response, e.g. 948 for a missing database), which reads as a line
//! of the config file.

use sqlx::postgres::PgDatabaseError;

/// SQLSTATE `invalid_catalog_name`: the database named in the URL does not exist.
pub const SQLSTATE_NO_SUCH_DATABASE: &str = "3D000";

/// `e` for a message: `database "tg" does not exist (SQLSTATE 3D000); create it (CREATE
/// DATABASE, or createdb), or point general_settings.database_url (or DATABASE_URL) at an
/// existing one`. Errors that
/// are not the database's own (I/O, TLS, pool timeouts, a bad URL) keep sqlx's text, which
/// carries no source position.
pub fn db_error_message(e: &sqlx::Error) -> String {
    let sqlx::Error::Database(db) = e else {
        return e.to_string();
    };
    let mut s = db.message().to_owned();
    let code = db.code();
    if let Some(code) = &code {
        s.push_str(&format!(" (SQLSTATE {code})"));
    }
    if let Some(pg) = db.try_downcast_ref::<PgDatabaseError>() {
        if let Some(detail) = pg.detail() {
            s.push_str(&format!("; {detail}"));
        }
        if let Some(hint) = pg.hint() {
            s.push_str(&format!("; hint: {hint}"));
        }
    }
    if code.as_deref() == Some(SQLSTATE_NO_SUCH_DATABASE) {
        s.push_str(
            "; create it (CREATE DATABASE, or createdb), or point general_settings.database_url (or DATABASE_URL) at an existing one",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::error::Error as StdError;
    use std::fmt;

    use super::*;
    use crate::store::StoreError;

    /// A driver error whose `Display` carries a source line, as sqlx-postgres's does.
    #[derive(Debug)]
    struct WithSourceLine(&'static str);

    impl fmt::Display for WithSourceLine {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "database \"tg_missing\" does not exist at line 948")
        }
    }

    impl StdError for WithSourceLine {}

    impl sqlx::error::DatabaseError for WithSourceLine {
        fn message(&self) -> &str {
            "database \"tg_missing\" does not exist"
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }
        fn as_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn StdError + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn StdError + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    #[test]
    fn a_database_error_prints_its_message_and_code_never_a_source_line() {
        let e = StoreError::Db(sqlx::Error::Database(Box::new(WithSourceLine(
            SQLSTATE_NO_SUCH_DATABASE,
        ))));
        assert_eq!(
            e.to_string(),
            "database error: database \"tg_missing\" does not exist (SQLSTATE 3D000); create it (CREATE DATABASE, or createdb), or point general_settings.database_url (or DATABASE_URL) at an existing one"
        );
        let e = StoreError::Db(sqlx::Error::Database(Box::new(WithSourceLine("28P01"))));
        let s = e.to_string();
        assert!(!s.contains("at line") && !s.contains("948"), "{s}");
        assert!(s.ends_with("does not exist (SQLSTATE 28P01)"), "{s}");
    }

    #[test]
    fn other_errors_keep_their_text() {
        let e = sqlx::Error::PoolTimedOut;
        assert_eq!(db_error_message(&e), e.to_string());
    }
}
