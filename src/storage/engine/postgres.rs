//! PostgreSQL through sqlx: one pool; a reader is a pooled connection, a
//! write transaction a pooled transaction.
//!
//! The pool pings a connection only when it sat idle a while, so a
//! connection the server dropped in a quiet spell is replaced before use
//! and none is pinged under load (docs/decisions/0003).

use std::str::FromStr;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgConnection, PgPoolOptions, PgRow};
use sqlx::query::Query;
use sqlx::{ConnectOptions, Connection, PgPool, Postgres, Transaction};

use super::error::StoreResult;
use super::sql::{FromRecord, Record, RecordInner, Sql, Value};

/// A connection idle at least this long is pinged before use.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(1);
const MAX_CONNECTIONS: u32 = 16;
/// How long a request waits for a connection, a new one included: past it
/// the database counts as unavailable and the request is answered 503 with
/// `Retry-After`. While PostgreSQL refuses connections sqlx keeps trying
/// until then, so this is also how long a request waits in an outage
/// before hearing "retry later"; a client told that soon backs off sooner.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) type Reader = PoolConnection<Postgres>;
pub(super) type WriteTx = Transaction<'static, Postgres>;

/// Connects (one direct connection first, so a refused connection, an
/// unknown database or a bad password is reported with its cause instead
/// of the pool's "timed out") and migrates.
pub(super) async fn connect(url: &str) -> StoreResult<PgPool> {
    let options = PgConnectOptions::from_str(url)?;
    options.connect().await?.close().await?;
    let pool = PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(ACQUIRE_TIMEOUT)
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
    Ok(pool)
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

pub(super) async fn execute(connection: &mut PgConnection, sql: &Sql<'_>) -> StoreResult<u64> {
    Ok(query(sql).execute(connection).await?.rows_affected())
}

pub(super) async fn fetch_all<T: FromRecord>(
    connection: &mut PgConnection,
    sql: &Sql<'_>,
) -> StoreResult<Vec<T>> {
    let rows = query(sql).fetch_all(connection).await?;
    rows.iter().map(decode).collect()
}

pub(super) async fn fetch_optional<T: FromRecord>(
    connection: &mut PgConnection,
    sql: &Sql<'_>,
) -> StoreResult<Option<T>> {
    let row = query(sql).fetch_optional(connection).await?;
    row.as_ref().map(decode).transpose()
}

fn decode<T: FromRecord>(row: &PgRow) -> StoreResult<T> {
    T::from_record(&Record(RecordInner::Postgres(row)))
}

pub(super) async fn ping(pool: &PgPool) -> StoreResult<()> {
    sqlx::query("select 1").execute(pool).await?;
    Ok(())
}
