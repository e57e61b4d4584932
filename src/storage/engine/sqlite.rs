//! SQLite through rusqlite: one writer connection, a pool of read-only
//! connections, statements run on the calling thread.
//!
//! # Why statements run where they are called
//!
//! sqlx runs each SQLite connection on a thread of its own and sends every
//! statement there and every row back, two thread hand-offs per statement;
//! a profile of `/mcp` put about half the server's time in those switches
//! (docs/decisions/0004 has the measurements). A statement on an indexed
//! table whose pages are in memory takes microseconds, less than the
//! hand-off, so Coop runs it directly on the async worker that asked, as
//! short non-blocking work. What could block long is kept off that path:
//!
//! - **Writers never wait inside SQLite.** The one writer connection sits
//!   behind an async FIFO mutex: writers queue in the process, in order,
//!   and a write transaction begins `IMMEDIATE`, so it holds the write lock
//!   from its first statement and can never fail half-way with "database is
//!   locked". Its busy timeout is zero: when another process (an operator's
//!   `coop admin`) holds the lock, the begin is retried with an async sleep,
//!   never a sleep on the worker thread.
//! - **Readers never wait for writers** (WAL mode): a read-only connection
//!   sees the last committed state. Readers are taken from a bounded pool;
//!   a reader, like the writer, is waited for at most
//!   [`ACQUIRE_DEADLINE`].
//! - **`/readyz` has a read-only connection of its own**, outside the pool,
//!   so requests holding every reader do not make the replica look down.
//! - **Checkpoints run off the async workers.** The writer's automatic
//!   checkpoint is off (it would copy the WAL into the database inside some
//!   unlucky request's commit); a background thread checkpoints every
//!   second when something was written, and the file is checkpointed whole
//!   at close.
//!
//! Durability: `synchronous = NORMAL` in WAL mode. A commit is in the WAL
//! file when it returns, so it survives the process being killed; only a
//! power loss can take back the last commits, the trade-off an embedded
//! default makes (PostgreSQL is the engine for more).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags};
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use super::ACQUIRE_DEADLINE;
use super::error::StoreError;
use super::sql::{FromRecord, Record, RecordInner, Sql, Value, date_text};

/// How many read connections exist at most. Reads run without awaiting,
/// so a connection is busy only while a storage call runs or while a
/// request keeps its reader between two calls; past this, readers wait.
const MAX_READERS: usize = 16;
/// Prepared statements kept per connection (Coop has about a hundred).
const STATEMENT_CACHE: usize = 256;
/// Page cache per reader, in KiB (SQLite's `cache_size` when negative).
/// Small: the operating system caches the file for every connection.
const READER_CACHE_KIB: i64 = 1024;
/// How long a write waits for another process's write lock (once it has
/// the writer), and a reader for the rare lock a reader needs (WAL
/// recovery).
const LOCK_WAIT: Duration = Duration::from_secs(5);
const READER_BUSY_TIMEOUT: Duration = Duration::from_millis(250);
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

pub(super) struct Engine {
    path: PathBuf,
    writer: Arc<tokio::sync::Mutex<Connection>>,
    readers: Arc<ReaderPool>,
    /// `/readyz`'s own read-only connection.
    probe: tokio::sync::Mutex<Connection>,
    /// Moves on every committed write, so the checkpointer knows when to act.
    writes: Arc<AtomicU64>,
    closed: Arc<AtomicBool>,
}

struct ReaderPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl Engine {
    /// Opens the writer on a file that exists and is migrated.
    pub(super) fn open(path: &Path) -> Result<Self, StoreError> {
        let writer = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        writer.pragma_update(None, "journal_mode", "wal")?;
        writer.pragma_update(None, "synchronous", "normal")?;
        writer.pragma_update(None, "foreign_keys", true)?;
        writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        writer.busy_timeout(Duration::ZERO)?;
        writer.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let engine = Self {
            path: path.to_owned(),
            writer: Arc::new(tokio::sync::Mutex::new(writer)),
            readers: Arc::new(ReaderPool {
                path: path.to_owned(),
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(MAX_READERS)),
            }),
            probe: tokio::sync::Mutex::new(open_reader(path)?),
            writes: Arc::new(AtomicU64::new(0)),
            closed: Arc::new(AtomicBool::new(false)),
        };
        engine.spawn_checkpointer()?;
        Ok(engine)
    }

    pub(super) async fn read(&self) -> Result<Reader, StoreError> {
        let permits = self.readers.permits.clone();
        let permit = tokio::time::timeout(ACQUIRE_DEADLINE, permits.acquire_owned())
            .await
            .map_err(|_| {
                StoreError::Unavailable(
                    format!("every read connection stayed busy for {ACQUIRE_DEADLINE:?}").into(),
                )
            })?
            .map_err(|_| StoreError::Unavailable("the store is closed".into()))?;
        let idle = self
            .readers
            .idle
            .lock()
            .map_err(|_| StoreError::backend("reader pool poisoned"))?
            .pop();
        let connection = match idle {
            Some(connection) => connection,
            None => open_reader(&self.readers.path)?,
        };
        Ok(Reader {
            connection: Some(connection),
            pool: self.readers.clone(),
            _permit: permit,
        })
    }

    pub(super) async fn write(&self) -> Result<WriteTx, StoreError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Unavailable("the store is closed".into()));
        }
        let guard = tokio::time::timeout(ACQUIRE_DEADLINE, self.writer.clone().lock_owned())
            .await
            .map_err(|_| {
                StoreError::Unavailable(
                    format!("the writer stayed busy for {ACQUIRE_DEADLINE:?}").into(),
                )
            })?;
        let deadline = Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(1);
        loop {
            match guard.execute_batch("begin immediate") {
                Ok(()) => break,
                Err(err) if is_busy(&err) && Instant::now() < deadline => {
                    // Another process holds the write lock: wait here, not
                    // in SQLite's busy handler on this worker thread.
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(err) => return Err(err.into()),
            }
        }
        Ok(WriteTx {
            connection: Some(guard),
            writes: self.writes.clone(),
        })
    }

    /// Reads the file's schema on the probe's own connection: the file is
    /// there and readable, whoever holds the readers.
    pub(super) async fn ping(&self) -> Result<(), StoreError> {
        let probe = self.probe.lock().await;
        probe.query_row("select count(*) from sqlite_master", [], |_| Ok(()))?;
        Ok(())
    }

    /// Checkpoints the whole WAL into the file and stops the checkpointer.
    pub(super) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let writer = self.writer.clone().lock_owned().await;
        let done = tokio::task::spawn_blocking(move || {
            writer.busy_timeout(LOCK_WAIT)?;
            writer.execute_batch("pragma wal_checkpoint(truncate)")
        })
        .await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!(error = %err, "SQLite checkpoint at close failed"),
            Err(err) => tracing::warn!(error = %err, "SQLite checkpoint at close failed"),
        }
        if let Ok(mut idle) = self.readers.idle.lock() {
            idle.clear();
        }
    }

    fn spawn_checkpointer(&self) -> Result<(), StoreError> {
        let connection = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(READER_BUSY_TIMEOUT)?;
        // Weak: the thread ends when the engine is closed or dropped.
        let writes = Arc::downgrade(&self.writes);
        let closed = Arc::downgrade(&self.closed);
        std::thread::Builder::new()
            .name("coop-sqlite-checkpoint".into())
            .spawn(move || {
                let mut seen = 0;
                loop {
                    std::thread::sleep(CHECKPOINT_EVERY);
                    let (Some(writes), Some(closed)) = (writes.upgrade(), closed.upgrade()) else {
                        return;
                    };
                    if closed.load(Ordering::Acquire) {
                        return;
                    }
                    let now = writes.load(Ordering::Acquire);
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    // PASSIVE never waits for readers or the writer; what it
                    // cannot copy now it copies next time.
                    if let Err(err) = connection.execute_batch("pragma wal_checkpoint(passive)") {
                        tracing::debug!(error = %err, "SQLite checkpoint deferred");
                    }
                }
            })
            .map_err(|e| StoreError::backend(format!("checkpoint thread: {e}")))?;
        Ok(())
    }
}

fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(READER_BUSY_TIMEOUT)?;
    connection.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(connection)
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// A read-only connection, back in the pool when dropped.
pub(super) struct Reader {
    connection: Option<Connection>,
    pool: Arc<ReaderPool>,
    _permit: OwnedSemaphorePermit,
}

impl Reader {
    pub(super) fn connection(&mut self) -> Result<&mut Connection, StoreError> {
        self.connection
            .as_mut()
            .ok_or_else(|| StoreError::backend("reader already returned"))
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let (Some(connection), Ok(mut idle)) = (self.connection.take(), self.pool.idle.lock()) {
            idle.push(connection);
        }
    }
}

/// The write transaction on the one writer; rolled back if dropped
/// uncommitted.
pub(super) struct WriteTx {
    connection: Option<OwnedMutexGuard<Connection>>,
    writes: Arc<AtomicU64>,
}

impl WriteTx {
    pub(super) fn connection(&mut self) -> Result<&mut Connection, StoreError> {
        self.connection
            .as_deref_mut()
            .ok_or_else(|| StoreError::backend("transaction already ended"))
    }

    pub(super) fn commit(mut self) -> Result<(), StoreError> {
        let Some(connection) = self.connection.take() else {
            return Err(StoreError::backend("transaction already ended"));
        };
        match connection.execute_batch("commit") {
            Ok(()) => {
                self.writes.fetch_add(1, Ordering::AcqRel);
                Ok(())
            }
            Err(err) => {
                // A failed commit leaves the transaction open: end it so the
                // next writer starts clean.
                let _ = connection.execute_batch("rollback");
                Err(err.into())
            }
        }
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take()
            && !connection.is_autocommit()
            && let Err(err) = connection.execute_batch("rollback")
        {
            tracing::warn!(error = %err, "SQLite rollback failed");
        }
    }
}

/// `$n` names the n-th value; SQLite numbers parameters by first
/// appearance, so each is bound by its name.
fn bind(statement: &mut rusqlite::CachedStatement<'_>, sql: &Sql<'_>) -> Result<(), StoreError> {
    for index in 1..=statement.parameter_count() {
        let position = statement
            .parameter_name(index)
            .and_then(|name| name.strip_prefix('$'))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(index);
        let value = sql.values().get(position.wrapping_sub(1)).ok_or_else(|| {
            StoreError::backend(format!("no value for ${position} in {:?}", sql.text()))
        })?;
        statement.raw_bind_parameter(index, bound(value)?)?;
    }
    Ok(())
}

/// A [`Value`] as SQLite stores it.
struct Bound<'v>(ToSqlOutput<'v>);

fn bound<'v>(value: &'v Value<'_>) -> Result<Bound<'v>, StoreError> {
    let out = match value {
        Value::Int(Some(v)) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
        Value::Bool(Some(v)) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*v))),
        Value::Text(Some(v)) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
        Value::Uuid(Some(v)) => ToSqlOutput::Borrowed(ValueRef::Blob(v.as_bytes())),
        Value::Bytes(Some(v)) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
        Value::Date(Some(v)) => ToSqlOutput::Owned(rusqlite::types::Value::Text(date_text(*v)?)),
        Value::Int(None)
        | Value::Bool(None)
        | Value::Text(None)
        | Value::Uuid(None)
        | Value::Bytes(None)
        | Value::Date(None) => ToSqlOutput::Borrowed(ValueRef::Null),
    };
    Ok(Bound(out))
}

impl rusqlite::ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match &self.0 {
            ToSqlOutput::Borrowed(v) => ToSqlOutput::Borrowed(*v),
            ToSqlOutput::Owned(v) => ToSqlOutput::Borrowed(ValueRef::from(v)),
            other => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    format!("unexpected bound value {other:?}").into(),
                ));
            }
        })
    }
}

pub(super) fn execute(connection: &mut Connection, sql: &Sql<'_>) -> Result<u64, StoreError> {
    let mut statement = connection.prepare_cached(sql.text())?;
    bind(&mut statement, sql)?;
    let changed = statement.raw_execute()?;
    Ok(changed as u64)
}

/// At most `limit` rows, decoded.
pub(super) fn fetch<T: FromRecord>(
    connection: &mut Connection,
    sql: &Sql<'_>,
    limit: usize,
) -> Result<Vec<T>, StoreError> {
    let mut statement = connection.prepare_cached(sql.text())?;
    bind(&mut statement, sql)?;
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(row) = rows.next()? else { break };
        out.push(T::from_record(&Record(RecordInner::Sqlite(row)))?);
    }
    Ok(out)
}
