//! What a storage call can fail with, the same on both engines.
//!
//! The drivers' errors are sorted here, once: a missing row, a constraint
//! that refused a write (callers turn it into a readable refusal), the
//! database being out of reach (a 503 with `Retry-After`: the caller's
//! credentials are fine, the store is not), and everything else (a 500).
//! The driver's detail is kept for the log and never shown to a client.

use std::error::Error as StdError;
use std::time::Duration;

type Detail = Box<dyn StdError + Send + Sync>;

/// What an answer to a request the store could not serve tells the client
/// to wait (`Retry-After`): long enough for a restart or a failover to be
/// under way, short enough that a client does not give up on a blip.
pub const RETRY_AFTER_UNAVAILABLE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    /// A unique, primary-key or check constraint refused the write. SQLite
    /// does not name the constraint, so callers never rely on the name.
    #[error("constraint {0} refused the write")]
    Conflict(String),
    /// The database cannot be reached or cannot take writes just now
    /// (connection refused or lost, pool exhausted, file locked by another
    /// process past the wait, disk full, read-only file).
    #[error("database unavailable: {0}")]
    Unavailable(#[source] Detail),
    #[error("database error: {0}")]
    Backend(#[source] Detail),
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
}

impl StoreError {
    pub fn backend(detail: impl Into<Detail>) -> Self {
        Self::Backend(detail.into())
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict(_))
    }

    /// Whether trying again later may succeed with nothing changed.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::RowNotFound => Self::NotFound,
            sqlx::Error::Database(db) if db.is_unique_violation() || db.is_check_violation() => {
                Self::Conflict(db.constraint().unwrap_or("unknown").to_owned())
            }
            // SQLSTATE class 08 (connection exception), 57P01-03 (the
            // server shutting down or starting), 53300 (too many
            // connections), 25006 (a read-only standby).
            sqlx::Error::Database(db)
                if db.code().is_some_and(|code| {
                    code.starts_with("08")
                        || code.starts_with("57P")
                        || code == "53300"
                        || code == "25006"
                }) =>
            {
                Self::Unavailable(Box::new(err))
            }
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::Protocol(_) => Self::Unavailable(Box::new(err)),
            _ => Self::Backend(Box::new(err)),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        use rusqlite::ffi::ErrorCode;
        match &err {
            rusqlite::Error::QueryReturnedNoRows => Self::NotFound,
            rusqlite::Error::SqliteFailure(e, _) => match e.code {
                // Foreign-key failures are bugs or races with a delete, not
                // a refusal a person can act on: they stay `Backend`.
                ErrorCode::ConstraintViolation
                    if matches!(
                        e.extended_code,
                        rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                            | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                            | rusqlite::ffi::SQLITE_CONSTRAINT_CHECK
                    ) =>
                {
                    Self::Conflict("unknown".to_owned())
                }
                ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::ReadOnly
                | ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied => {
                    let cause = sqlite_cause(e.code);
                    Self::Unavailable(format!("{cause} ({err})").into())
                }
                _ => Self::Backend(Box::new(err)),
            },
            _ => Self::Backend(Box::new(err)),
        }
    }
}

/// The SQLite file's trouble in an operator's words: the log line an
/// unavailable store leaves names what to fix, not only SQLite's code.
fn sqlite_cause(code: rusqlite::ffi::ErrorCode) -> &'static str {
    use rusqlite::ffi::ErrorCode;
    match code {
        ErrorCode::DiskFull => "the SQLite file cannot grow: the disk is full",
        ErrorCode::ReadOnly => "the SQLite file is read-only",
        ErrorCode::SystemIoFailure => {
            "the SQLite file cannot be written or read (an I/O error: read-only, removed or failing storage)"
        }
        ErrorCode::CannotOpen => "the SQLite file cannot be opened",
        ErrorCode::PermissionDenied => "the SQLite file may not be accessed",
        _ => "another process holds the SQLite file's lock",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite_failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn sqlite_errors_are_sorted() {
        assert!(
            StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE)).is_conflict()
        );
        assert!(
            StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_CONSTRAINT_CHECK)).is_conflict()
        );
        assert!(matches!(
            StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY)),
            StoreError::Backend(_)
        ));
        assert!(StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_BUSY)).is_unavailable());
        assert!(StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_FULL)).is_unavailable());
        assert!(StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_READONLY)).is_unavailable());
        assert!(
            StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_IOERR_WRITE)).is_unavailable()
        );
        assert!(StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_CANTOPEN)).is_unavailable());
        assert!(
            StoreError::from(sqlite_failure(rusqlite::ffi::SQLITE_FULL))
                .to_string()
                .contains("the disk is full")
        );
        assert!(matches!(
            StoreError::from(rusqlite::Error::QueryReturnedNoRows),
            StoreError::NotFound
        ));
    }

    #[test]
    fn sqlx_errors_are_sorted() {
        assert!(StoreError::from(sqlx::Error::PoolTimedOut).is_unavailable());
        assert!(StoreError::from(sqlx::Error::PoolClosed).is_unavailable());
        for kind in [
            std::io::ErrorKind::ConnectionRefused,
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::UnexpectedEof,
        ] {
            assert!(StoreError::from(sqlx::Error::Io(kind.into())).is_unavailable());
        }
        assert!(matches!(
            StoreError::from(sqlx::Error::RowNotFound),
            StoreError::NotFound
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::ColumnNotFound("x".into())),
            StoreError::Backend(_)
        ));
    }
}
