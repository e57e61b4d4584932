//! The storage seam: the one module that knows Coop runs on two engines.
//!
//! Everything above it sees four things:
//!
//! - [`Store`], the handle every part of the server shares (cheap to clone);
//! - [`Reader`], a connection for reads (`store.read()`);
//! - [`Tx`], a write transaction (`store.write()`, then `commit`) that can
//!   span any number of statements in any number of storage modules, so a
//!   change and its audit row commit together or not at all;
//! - [`Sql`], a statement written once for both engines, run on anything
//!   that is [`Exec`] (a reader or a transaction) and decoded through
//!   [`FromRecord`].
//!
//! Storage functions take `&mut impl Exec` when they only read and
//! `&mut Tx` when they write, so the type says which calls can change
//! state, and a caller composes several writes into one transaction by
//! passing the same `Tx`.
//!
//! Below the seam each engine is what suits it (docs/decisions/0004):
//! SQLite through rusqlite with one writer connection and a pool of
//! read-only ones, statements run on the calling thread ([`sqlite`]);
//! PostgreSQL through sqlx's pool ([`postgres`]). Both keep the SQL text
//! of docs/decisions/0001: `$n` placeholders, integer instants.
//!
//! Rules for callers, because the SQLite writer is one connection and
//! PostgreSQL's readers and writers share one pool: a task holds at most
//! one connection at a time, reader or [`Tx`] (a second `store.write()`
//! while holding a `Tx` waits for itself on SQLite; on PostgreSQL a burst
//! of tasks that each hold a reader while waiting for a writer takes every
//! connection and waits on itself until the acquire timeout:
//! `tests/api/pool_pressure.rs`), and a transaction does no slow work
//! between its statements (no password hashing, no outbound fetch): while
//! it is open every other writer waits. Nor does a task hold a connection
//! while it waits for a client (a request body still arriving, a response
//! the client reads slowly): whoever sends slowly would hold the pool
//! (`tests/api/slow_bodies.rs`).
//!
//! Every acquisition, a reader or a transaction on either engine, waits at
//! most [`ACQUIRE_DEADLINE`]; past it the store counts as unavailable
//! ([`StoreError::Unavailable`]: 503 with `Retry-After` on every surface),
//! so a pool that stays full makes requests hear "retry later" rather than
//! queue until their request timeout. [`Store::ping`] (`/readyz`) queues
//! behind none of this: it has a connection of its own.

mod domain_columns;
mod error;
mod postgres;
mod sql;
mod sqlite;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::{ConnectOptions, Connection};

pub use error::{RETRY_AFTER_UNAVAILABLE, StoreError};
pub use sql::{Column, ColumnAt, Field, FromRecord, Record, STATEMENT_TARGET, Sql, Value};

use crate::config::DatabaseUrl;

/// How long a request waits for a connection, a reader or the writer,
/// before the store counts as unavailable: long enough for a burst to
/// drain (a connection is held for a storage call, milliseconds), short
/// enough that a client hears "retry later" well within its own timeout.
/// On PostgreSQL it also bounds the wait for a new connection, so it is how
/// long a request waits in an outage before its 503.
pub const ACQUIRE_DEADLINE: Duration = Duration::from_secs(5);

/// Which engine a store runs on (for tests, diagnostics and the rare
/// statement that must differ, with its reason beside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Sqlite,
    Postgres,
}

/// The shared credential store and farm records.
#[derive(Clone)]
pub struct Store {
    engine: Arc<Engine>,
}

enum Engine {
    Sqlite(sqlite::Engine),
    Postgres(postgres::Engine),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("engine", &self.kind())
            .finish()
    }
}

impl Store {
    /// Connects and applies the engine's migrations. A SQLite file is
    /// created if missing.
    pub async fn connect(url: &DatabaseUrl) -> Result<Self, StoreError> {
        let engine = match url {
            DatabaseUrl::Sqlite(raw) => Engine::Sqlite(connect_sqlite(raw).await?),
            DatabaseUrl::Postgres(raw) => Engine::Postgres(postgres::Engine::connect(raw).await?),
        };
        Ok(Self {
            engine: Arc::new(engine),
        })
    }

    pub fn kind(&self) -> EngineKind {
        match &*self.engine {
            Engine::Sqlite(_) => EngineKind::Sqlite,
            Engine::Postgres(_) => EngineKind::Postgres,
        }
    }

    /// A connection for reads.
    pub async fn read(&self) -> Result<Reader, StoreError> {
        let inner = match &*self.engine {
            Engine::Sqlite(engine) => ReaderInner::Sqlite(engine.read().await?),
            Engine::Postgres(engine) => ReaderInner::Postgres(engine.read().await?),
        };
        Ok(Reader(inner))
    }

    /// A write transaction. On SQLite it waits its turn for the one writer
    /// and begins `IMMEDIATE`; on PostgreSQL it is a pooled transaction.
    pub async fn write(&self) -> Result<Tx, StoreError> {
        let inner = match &*self.engine {
            Engine::Sqlite(engine) => TxInner::Sqlite(engine.write().await?),
            Engine::Postgres(engine) => TxInner::Postgres(engine.write().await?),
        };
        Ok(Tx(inner))
    }

    /// `/readyz`: the database answers a trivial query, on a connection
    /// kept for this alone, so the answer is about the database and never
    /// about how busy the request pool is (which any token holder can
    /// make it).
    pub async fn ping(&self) -> Result<(), StoreError> {
        match &*self.engine {
            Engine::Sqlite(engine) => engine.ping().await,
            Engine::Postgres(engine) => engine.ping().await,
        }
    }

    /// Closes every connection; SQLite checkpoints its write-ahead log so
    /// the file is whole on its own.
    pub async fn close(&self) {
        match &*self.engine {
            Engine::Sqlite(engine) => engine.close().await,
            Engine::Postgres(engine) => engine.close().await,
        }
    }
}

/// Migrates with sqlx (its `_sqlx_migrations` table is what every existing
/// database carries), then opens Coop's own connections (foreign keys on).
/// The migrating connection has foreign keys off: SQLite changes a
/// constraint only by rebuilding the table, and dropping the old copy of a
/// table others reference would otherwise cascade to their rows.
async fn connect_sqlite(raw: &str) -> Result<sqlite::Engine, StoreError> {
    let options = sqlx::sqlite::SqliteConnectOptions::from_str(raw)?
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .foreign_keys(false)
        .busy_timeout(std::time::Duration::from_secs(5));
    let path = options.get_filename().to_owned();
    if path.as_os_str().is_empty() || path.to_string_lossy().contains(":memory:") {
        return Err(StoreError::backend(
            "an in-memory SQLite database cannot be shared by connections; name a file",
        ));
    }
    let mut migrator = options.connect().await?;
    sqlx::migrate!("./migrations/sqlite")
        .run(&mut migrator)
        .await?;
    migrator.close().await?;
    sqlite::Engine::open(&path)
}

/// A connection for reads; returned to its pool when dropped.
pub struct Reader(ReaderInner);

enum ReaderInner {
    Sqlite(sqlite::Reader),
    Postgres(postgres::Reader),
}

/// A write transaction; rolled back if dropped without [`Tx::commit`].
pub struct Tx(TxInner);

enum TxInner {
    Sqlite(sqlite::WriteTx),
    Postgres(postgres::WriteTx),
}

impl Tx {
    pub async fn commit(self) -> Result<(), StoreError> {
        match self.0 {
            TxInner::Sqlite(tx) => tx.commit(),
            TxInner::Postgres(tx) => Ok(tx.commit().await?),
        }
    }
}

/// What a statement runs on: a [`Reader`] or a [`Tx`].
pub trait Exec: Send {
    #[doc(hidden)]
    fn handle(&mut self) -> Handle<'_>;
}

/// A borrowed connection of either engine. Opaque outside the seam.
#[doc(hidden)]
pub struct Handle<'a>(HandleInner<'a>);

enum HandleInner<'a> {
    Sqlite(&'a mut rusqlite::Connection),
    Postgres(&'a mut sqlx::PgConnection),
    /// The reader or transaction was already given back (a bug).
    Gone(StoreError),
}

impl<'a> HandleInner<'a> {
    /// A SQLite connection, or why there is none.
    fn sqlite(connection: Result<&'a mut rusqlite::Connection, StoreError>) -> Self {
        connection.map_or_else(HandleInner::Gone, HandleInner::Sqlite)
    }
}

impl Exec for Reader {
    fn handle(&mut self) -> Handle<'_> {
        Handle(match &mut self.0 {
            ReaderInner::Sqlite(reader) => HandleInner::sqlite(reader.connection()),
            ReaderInner::Postgres(connection) => HandleInner::Postgres(connection),
        })
    }
}

impl Exec for Tx {
    fn handle(&mut self) -> Handle<'_> {
        Handle(match &mut self.0 {
            TxInner::Sqlite(tx) => HandleInner::sqlite(tx.connection()),
            TxInner::Postgres(tx) => HandleInner::Postgres(tx),
        })
    }
}

impl<E: Exec> Exec for &mut E {
    fn handle(&mut self) -> Handle<'_> {
        (**self).handle()
    }
}

#[cfg(test)]
mod tests;
