//! Persistence: every SQL statement Coop runs, on SQLite or PostgreSQL.
//!
//! [`Store`] holds one pool of either engine. Each aggregate has its own
//! module of intention-named functions (`users::find_by_email`,
//! `farms::suspend`, ...). Queries are runtime-checked and written once for
//! both engines: `$1` placeholders, `on conflict`, `returning` and partial
//! indexes mean the same on both, and instants are integer Unix seconds so
//! comparisons are exact everywhere. The [`on_pool!`] macro runs one body
//! against whichever pool is configured; the integration suite, run on both
//! engines, stands in for compile-time query checks.
//!
//! Functions that read a farm's records take the farm id first; the MCP
//! call context is the only caller that can supply it for tool reads.

pub mod audit;
pub mod audit_query;
pub mod call_context;
pub mod clients;
pub mod codes;
pub mod connected_apps;
pub mod daily_entries;
pub mod egg_lots;
pub mod farm_admin;
pub mod farm_query;
pub mod farms;
pub mod flocks;
pub mod grants;
pub mod keys;
pub mod members;
pub mod pending_authorizations;
pub mod refresh_tokens;
pub mod revocations;
pub mod seed;
pub mod sessions;
pub mod stock;
pub mod users;

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, PgPool, SqlitePool};

use crate::config::DatabaseUrl;

/// A storage failure. Callers turn `NotFound` and `Conflict` into domain
/// answers; `Backend` is always a 5xx, its detail logged and never shown.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    /// A unique or check constraint refused the write; the name says which.
    #[error("constraint {0} refused the write")]
    Conflict(String),
    #[error("database error: {0}")]
    Backend(#[source] sqlx::Error),
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::RowNotFound => Self::NotFound,
            sqlx::Error::Database(db) if db.is_unique_violation() || db.is_check_violation() => {
                Self::Conflict(db.constraint().unwrap_or("unknown").to_owned())
            }
            _ => Self::Backend(err),
        }
    }
}

impl StoreError {
    /// Whether this is a unique violation (either engine) on `constraint`.
    /// SQLite reports no constraint name, so a caller that has only one
    /// unique constraint in play passes `None`.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict(_))
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The pool of the configured engine.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to whichever engine's pool `$store` holds.
/// The body is compiled once per engine, so the same SQL text and binds serve
/// both.
#[macro_export]
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match $store.db() {
            $crate::storage::Db::Sqlite($pool) => $body,
            $crate::storage::Db::Postgres($pool) => $body,
        }
    };
}

/// A PostgreSQL connection idle at least this long is pinged before use.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(1);

/// The shared credential store and farm records.
#[derive(Clone, Debug)]
pub struct Store {
    db: Db,
}

impl Store {
    /// Connects and applies the engine's migrations. A SQLite file is created
    /// if missing.
    pub async fn connect(url: &DatabaseUrl) -> StoreResult<Self> {
        let db = match url {
            DatabaseUrl::Sqlite(raw) => {
                let options = SqliteConnectOptions::from_str(raw)
                    .map_err(StoreError::Backend)?
                    .create_if_missing(true)
                    // WAL lets readers proceed during a write; NORMAL sync is
                    // durable across process crashes, which is the failure an
                    // embedded default must survive.
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .busy_timeout(Duration::from_secs(5))
                    .foreign_keys(true);
                let pool = SqlitePoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(10))
                    // An embedded database has no link to lose: a ping on
                    // every acquire only doubles the hand-offs to sqlx's
                    // connection thread (see docs/decisions/0003).
                    .test_before_acquire(false)
                    .connect_with(options)
                    .await?;
                sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
                Db::Sqlite(pool)
            }
            DatabaseUrl::Postgres(raw) => {
                let options = PgConnectOptions::from_str(raw).map_err(StoreError::Backend)?;
                // One direct connection first: the pool would retry until its
                // timeout and report only "pool timed out", hiding the cause
                // (refused, unknown database, bad password) the operator needs.
                options.connect().await?.close().await?;
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(10))
                    // A round trip before every statement would cost the
                    // hot path a sixth of its calls; a connection that sat
                    // idle a while is still tested, so one the server dropped
                    // in a quiet spell is replaced before use
                    // (docs/decisions/0003).
                    .test_before_acquire(false)
                    .before_acquire(|connection, meta| {
                        Box::pin(async move {
                            if meta.idle_for >= IDLE_BEFORE_PING {
                                connection.ping().await?;
                            }
                            Ok(true)
                        })
                    })
                    .connect_with(options)
                    .await?;
                sqlx::migrate!("./migrations/postgres").run(&pool).await?;
                Db::Postgres(pool)
            }
        };
        Ok(Self { db })
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// `/readyz`: the database answers a trivial query.
    pub async fn ping(&self) -> StoreResult<()> {
        on_pool!(self, |pool| {
            sqlx::query("select 1").execute(pool).await?;
        });
        Ok(())
    }

    pub async fn close(&self) {
        on_pool!(self, |pool| pool.close().await)
    }
}

/// Unix seconds, the one representation of an instant in storage.
pub fn unix(t: time::OffsetDateTime) -> i64 {
    t.unix_timestamp()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Both engines must carry the same migration versions, or a feature
    /// exists on one and not the other.
    #[test]
    fn both_engines_have_the_same_migrations() {
        let versions = |dir: &str| -> BTreeSet<String> {
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            versions("migrations/sqlite"),
            versions("migrations/postgres")
        );
    }
}
