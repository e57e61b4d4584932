//! Browser sessions in the shared database, so any replica serves any
//! session, stored under the hash of their id.
//!
//! The cookie carries a 128-bit random session id; the table keeps only
//! its SHA-256 (threat 28): a copy of the database, a backup or a log of
//! its rows yields no cookie anyone can present. The data is the session's
//! key-value map as JSON, with its expiry as Unix seconds. tower-sessions
//! sets the expiry from the system clock, so the system clock is what it is
//! compared with here too. Expired rows are deleted by the housekeeping
//! task.
//!
//! A database out of reach is told apart from other failures, so a page can
//! answer 503 instead of 500: in the error's text ([`UNAVAILABLE`]) when a
//! handler's session call fails, and through [`watch_unavailable`] when the
//! save after the handler fails (tower-sessions then logs the error and
//! answers a bare 500 itself, so the cause has to travel beside it).

use std::cell::Cell;

use async_trait::async_trait;
use time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

use super::{Sql, Store, StoreError, Tx};
use crate::secrets;

#[derive(Clone, Debug)]
pub struct SessionBackend {
    store: Store,
}

fn id_hash(id: &Id) -> String {
    secrets::hash_secret(&id.to_string())
}

/// The text of a session store error whose cause is the database being
/// out of reach.
pub const UNAVAILABLE: &str = "the session store is unavailable";

tokio::task_local! {
    static UNAVAILABLE_CAUSE: Cell<Option<String>>;
}

/// Runs `request` (the session layer and what it wraps) and returns, beside
/// its output, why a session store call in it found the database out of
/// reach, unless a handler took that cause already ([`take_unavailable`]).
pub async fn watch_unavailable<F: Future>(request: F) -> (F::Output, Option<String>) {
    UNAVAILABLE_CAUSE
        .scope(Cell::new(None), async move {
            let output = request.await;
            (output, take_unavailable())
        })
        .await
}

/// The cause behind the last [`UNAVAILABLE`] error of this request, for the
/// one log line that answers it.
pub fn take_unavailable() -> Option<String> {
    UNAVAILABLE_CAUSE.try_with(Cell::take).ok().flatten()
}

fn backend_error(err: StoreError) -> session_store::Error {
    if err.is_unavailable() {
        // Logged by whoever answers the request; outside a request (no
        // one to tell) here.
        if UNAVAILABLE_CAUSE
            .try_with(|cause| cause.set(Some(err.to_string())))
            .is_err()
        {
            tracing::warn!(error = %err, "session store unavailable");
        }
        return session_store::Error::Backend(UNAVAILABLE.to_owned());
    }
    tracing::warn!(error = %err, "session store failed");
    session_store::Error::Backend("the session store failed".to_owned())
}

impl SessionBackend {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Deletes the sessions that expired by `now`; returns how many.
    pub async fn delete_expired(&self, now: OffsetDateTime) -> Result<u64, StoreError> {
        let mut tx = self.store.write().await?;
        let deleted = Sql::new("delete from sessions where expires_at <= $1")
            .bind(now)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(deleted)
    }

    async fn insert(&self, tx: &mut Tx, record: &Record, data: &str) -> Result<u64, StoreError> {
        Sql::new(
            "insert into sessions (id_hash, data, expires_at) values ($1, $2, $3)
             on conflict (id_hash) do nothing",
        )
        .bind(id_hash(&record.id))
        .bind(data)
        .bind(record.expiry_date)
        .execute(tx)
        .await
    }
}

fn encode(record: &Record) -> session_store::Result<String> {
    serde_json::to_string(&record.data).map_err(|e| session_store::Error::Encode(e.to_string()))
}

#[async_trait]
impl SessionStore for SessionBackend {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        let data = encode(record)?;
        let mut tx = self.store.write().await.map_err(backend_error)?;
        // A 128-bit id colliding is all but impossible; if it happens the
        // new session takes another id rather than anyone's existing one.
        while self
            .insert(&mut tx, record, &data)
            .await
            .map_err(backend_error)?
            == 0
        {
            record.id = Id::default();
        }
        tx.commit().await.map_err(backend_error)
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let data = encode(record)?;
        let mut tx = self.store.write().await.map_err(backend_error)?;
        Sql::new(
            "insert into sessions (id_hash, data, expires_at) values ($1, $2, $3)
             on conflict (id_hash) do update set data = excluded.data,
                 expires_at = excluded.expires_at",
        )
        .bind(id_hash(&record.id))
        .bind(data)
        .bind(record.expiry_date)
        .execute(&mut tx)
        .await
        .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let mut db = self.store.read().await.map_err(backend_error)?;
        let row: Option<(String, i64)> = Sql::new(
            "select data, expires_at from sessions where id_hash = $1 and expires_at > $2",
        )
        .bind(id_hash(id))
        .bind(OffsetDateTime::now_utc())
        .fetch_optional(&mut db)
        .await
        .map_err(backend_error)?;
        let Some((data, expires_at)) = row else {
            return Ok(None);
        };
        let data =
            serde_json::from_str(&data).map_err(|e| session_store::Error::Decode(e.to_string()))?;
        let expiry_date = OffsetDateTime::from_unix_timestamp(expires_at)
            .map_err(|e| session_store::Error::Decode(e.to_string()))?;
        Ok(Some(Record {
            id: *id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        let mut tx = self.store.write().await.map_err(backend_error)?;
        Sql::new("delete from sessions where id_hash = $1")
            .bind(id_hash(id))
            .execute(&mut tx)
            .await
            .map_err(backend_error)?;
        tx.commit().await.map_err(backend_error)
    }
}
