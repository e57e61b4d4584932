//! PostgreSQL through sqlx: one pool for requests; a reader is a pooled
//! connection, a write transaction a pooled transaction. `/readyz` has a
//! pool of one connection of its own.
//!
//! The request pool pings a connection only when it sat idle a while, so a
//! connection the server dropped in a quiet spell is replaced before use
//! and none is pinged under load (docs/decisions/0003).
//!
//! The readiness probe does not draw from the request pool: a pool full of
//! requests (or of someone's slow ones) says nothing about the database,
//! and a load balancer told "not ready" for that would take the replica
//! out while the database is fine. Its one connection is tested before
//! every probe (probes are seconds apart, the ping costs nothing), so a
//! database that went away is seen at once and one that came back is
//! reconnected to by the next probe.

use std::str::FromStr;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgConnection, PgPoolOptions, PgRow};
use sqlx::query::Query;
use sqlx::{ConnectOptions, Connection, PgPool, Postgres, Transaction};

use super::ACQUIRE_DEADLINE;
use super::error::StoreError;
use super::sql::{FromRecord, Record, RecordInner, Sql, Value};

/// A connection idle at least this long is pinged before use.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(1);
/// The request pool's size. With the probe's, a replica opens at most
/// one more than this.
const MAX_CONNECTIONS: u32 = 16;

pub(super) type Reader = PoolConnection<Postgres>;
pub(super) type WriteTx = Transaction<'static, Postgres>;

pub(super) struct Engine {
    pool: PgPool,
    probe: PgPool,
}

impl Engine {
    /// Connects (one direct connection first, so a refused connection, an
    /// unknown database or a bad password is reported with its cause
    /// instead of the pool's "timed out") and migrates.
    pub(super) async fn connect(url: &str) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(url)?;
        options.connect().await?.close().await?;
        // While PostgreSQL refuses connections sqlx keeps trying until the
        // acquire deadline, so a request in an outage hears "retry later"
        // then; a client told that soon backs off sooner.
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_DEADLINE)
            .test_before_acquire(false)
            .before_acquire(|connection, meta| {
                Box::pin(async move {
                    if meta.idle_for >= IDLE_BEFORE_PING {
                        connection.ping().await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        // Lazy: the first probe connects, and `/readyz` is what reports a
        // database it cannot reach.
        let probe = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(ACQUIRE_DEADLINE)
            .test_before_acquire(true)
            .connect_lazy_with(options);
        Ok(Self { pool, probe })
    }

    pub(super) async fn read(&self) -> Result<Reader, StoreError> {
        Ok(self.pool.acquire().await?)
    }

    pub(super) async fn write(&self) -> Result<WriteTx, StoreError> {
        Ok(self.pool.begin().await?)
    }

    pub(super) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("select 1").execute(&self.probe).await?;
        Ok(())
    }

    pub(super) async fn close(&self) {
        self.probe.close().await;
        self.pool.close().await;
    }
}

fn bind<'q>(
    mut query: Query<'q, Postgres, PgArguments>,
    values: &'q [Value<'q>],
) -> Query<'q, Postgres, PgArguments> {
    for value in values {
        query = match value {
            Value::Int(v) => query.bind(*v),
            Value::Text(v) => query.bind(v.as_deref()),
            Value::Bool(v) => query.bind(*v),
            Value::Uuid(v) => query.bind(*v),
            Value::Date(v) => query.bind(*v),
            Value::Bytes(v) => query.bind(v.as_deref()),
        };
    }
    query
}

fn query<'q>(sql: &'q Sql<'q>) -> Query<'q, Postgres, PgArguments> {
    bind(sqlx::query(sql.text()), sql.values())
}

pub(super) async fn execute(
    connection: &mut PgConnection,
    sql: &Sql<'_>,
) -> Result<u64, StoreError> {
    Ok(query(sql).execute(connection).await?.rows_affected())
}

pub(super) async fn fetch_all<T: FromRecord>(
    connection: &mut PgConnection,
    sql: &Sql<'_>,
) -> Result<Vec<T>, StoreError> {
    let rows = query(sql).fetch_all(connection).await?;
    rows.iter().map(decode).collect()
}

pub(super) async fn fetch_optional<T: FromRecord>(
    connection: &mut PgConnection,
    sql: &Sql<'_>,
) -> Result<Option<T>, StoreError> {
    let row = query(sql).fetch_optional(connection).await?;
    row.as_ref().map(decode).transpose()
}

fn decode<T: FromRecord>(row: &PgRow) -> Result<T, StoreError> {
    T::from_record(&Record(RecordInner::Postgres(row)))
}
