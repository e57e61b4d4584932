//! Browser sessions in the shared database, so any replica serves any
//! session. tower-sessions' sqlx stores do the SQL; this enum lets one
//! session layer sit on whichever engine is configured.

use async_trait::async_trait;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};
use tower_sessions_sqlx_store::{PostgresStore, SqliteStore};

use super::{Db, Store, StoreError};

#[derive(Clone, Debug)]
pub enum SessionBackend {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl SessionBackend {
    /// Creates the session table if missing.
    pub async fn for_store(store: &Store) -> Result<Self, StoreError> {
        let backend = match store.db() {
            Db::Sqlite(pool) => Self::Sqlite(SqliteStore::new(pool.clone())),
            Db::Postgres(pool) => Self::Postgres(PostgresStore::new(pool.clone())),
        };
        let migrated = match &backend {
            Self::Sqlite(s) => s.migrate().await,
            Self::Postgres(s) => s.migrate().await,
        };
        migrated.map_err(StoreError::Backend)?;
        Ok(backend)
    }
}

#[async_trait]
impl SessionStore for SessionBackend {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.create(record).await,
            Self::Postgres(s) => s.create(record).await,
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.save(record).await,
            Self::Postgres(s) => s.save(record).await,
        }
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        match self {
            Self::Sqlite(s) => s.load(id).await,
            Self::Postgres(s) => s.load(id).await,
        }
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.delete(id).await,
            Self::Postgres(s) => s.delete(id).await,
        }
    }
}

#[async_trait]
impl ExpiredDeletion for SessionBackend {
    async fn delete_expired(&self) -> session_store::Result<()> {
        match self {
            Self::Sqlite(s) => s.delete_expired().await,
            Self::Postgres(s) => s.delete_expired().await,
        }
    }
}
