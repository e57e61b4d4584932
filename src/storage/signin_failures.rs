//! Failed sign-ins, counted in the shared store so that every replica
//! spends from one budget (threat 15).
//!
//! A bucket is one row: the instant at which every failure it has counted
//! is forgotten (`clear_at_ms`, Unix milliseconds). The arithmetic is a
//! GCRA, decided by [`crate::identity::throttle`]; what lives here is that
//! spending is one conditional upsert, so two replicas (or two requests)
//! spending from one bucket at once can never both take its last cell: on
//! PostgreSQL the upsert locks the row and re-reads it, on SQLite writers
//! take turns.

use super::{Exec, Sql, StoreError, Tx};

/// Spends one cell of `bucket` if its instant is at most `latest_ms`:
/// moves it `interval_ms` past `max(itself, now_ms)` and returns the new
/// instant, or `None` (and changes nothing) when the bucket is full.
pub async fn spend(
    tx: &mut Tx,
    bucket: &str,
    now_ms: i64,
    interval_ms: i64,
    latest_ms: i64,
) -> Result<Option<i64>, StoreError> {
    Sql::new(
        "insert into signin_failures (bucket, clear_at_ms) values ($1, $2 + $3)
         on conflict (bucket) do update set clear_at_ms =
             (case when signin_failures.clear_at_ms > $2
                   then signin_failures.clear_at_ms else $2 end) + $3
         where signin_failures.clear_at_ms <= $4
         returning clear_at_ms",
    )
    .bind(bucket)
    .bind(now_ms)
    .bind(interval_ms)
    .bind(latest_ms)
    .fetch_optional_scalar(tx)
    .await
}

/// The bucket's instant, if it has one.
pub async fn clear_at(db: &mut impl Exec, bucket: &str) -> Result<Option<i64>, StoreError> {
    Sql::new("select clear_at_ms from signin_failures where bucket = $1")
        .bind(bucket)
        .fetch_optional_scalar(db)
        .await
}

/// Gives back one cell spent from `bucket` (the attempt was not a failure).
pub async fn give_back(tx: &mut Tx, bucket: &str, interval_ms: i64) -> Result<(), StoreError> {
    Sql::new("update signin_failures set clear_at_ms = clear_at_ms - $2 where bucket = $1")
        .bind(bucket)
        .bind(interval_ms)
        .execute(tx)
        .await?;
    Ok(())
}

/// Forgets every failure of `bucket`.
pub async fn forget(tx: &mut Tx, bucket: &str) -> Result<(), StoreError> {
    Sql::new("delete from signin_failures where bucket = $1")
        .bind(bucket)
        .execute(tx)
        .await?;
    Ok(())
}

/// Deletes the buckets that count nothing any more; returns how many.
pub async fn delete_cleared(tx: &mut Tx, now_ms: i64) -> Result<u64, StoreError> {
    Sql::new("delete from signin_failures where clear_at_ms <= $1")
        .bind(now_ms)
        .execute(tx)
        .await
}
