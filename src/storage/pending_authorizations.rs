//! Authorization requests waiting for the person's answer, and the one
//! answer each gets.
//!
//! A row is keyed by the SHA-256 of the random id the consent form names
//! and belongs to one user. Answering is [`claim`]: one conditional update
//! (`… where answered_at is null`), so of two submits of one form, on one
//! replica or two, exactly one wins; the other reads the winner's decision.
//! The update writes from its first statement, so SQLite takes the write
//! lock at once (waiting its busy timeout) instead of failing to upgrade a
//! read, as a read-then-write transaction does.

use time::OffsetDateTime;

use super::{Store, StoreResult, unix};
use crate::domain::UserId;
use crate::on_pool;

pub struct NewPending<'a> {
    pub id_hash: &'a str,
    pub user: UserId,
    /// The checked request, JSON.
    pub request: &'a str,
    pub expires_at: OffsetDateTime,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PendingRow {
    pub request: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub reauthenticated_at: Option<i64>,
    pub answered_at: Option<i64>,
    /// `approve` or `deny`, once answered.
    pub decision: Option<String>,
}

/// Stores a waiting request, first deleting the user's oldest ones so that
/// at most `keep` remain (a person opening request after request cannot
/// grow the table without bound).
pub async fn insert(
    store: &Store,
    pending: &NewPending<'_>,
    keep: u32,
    now: OffsetDateTime,
) -> StoreResult<()> {
    let older = i64::from(keep.saturating_sub(1));
    on_pool!(store, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query(
            "delete from pending_authorizations
             where user_id = $1 and id_hash not in (
                 select id_hash from pending_authorizations
                 where user_id = $1 order by created_at desc limit $2)",
        )
        .bind(pending.user.0)
        .bind(older)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "insert into pending_authorizations (id_hash, user_id, request, created_at, expires_at)
             values ($1, $2, $3, $4, $5)",
        )
        .bind(pending.id_hash)
        .bind(pending.user.0)
        .bind(pending.request)
        .bind(unix(now))
        .bind(unix(pending.expires_at))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    });
    Ok(())
}

/// The request `id_hash` of `user`, answered or not, unless expired.
pub async fn find(
    store: &Store,
    id_hash: &str,
    user: UserId,
    now: OffsetDateTime,
) -> StoreResult<Option<PendingRow>> {
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, PendingRow>(
            "select request, created_at, expires_at, reauthenticated_at, answered_at, decision
             from pending_authorizations
             where id_hash = $1 and user_id = $2 and expires_at > $3",
        )
        .bind(id_hash)
        .bind(user.0)
        .bind(unix(now))
        .fetch_optional(pool)
        .await?
    });
    Ok(row)
}

/// Records that the password was entered again for this request.
pub async fn mark_reauthenticated(
    store: &Store,
    id_hash: &str,
    user: UserId,
    now: OffsetDateTime,
) -> StoreResult<()> {
    on_pool!(store, |pool| {
        sqlx::query(
            "update pending_authorizations set reauthenticated_at = $3
             where id_hash = $1 and user_id = $2 and answered_at is null",
        )
        .bind(id_hash)
        .bind(user.0)
        .bind(unix(now))
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// Answers the request with `decision`, if nobody has: `true` for the one
/// caller that did.
pub async fn claim(
    store: &Store,
    id_hash: &str,
    user: UserId,
    decision: &str,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let claimed = on_pool!(store, |pool| {
        sqlx::query(
            "update pending_authorizations set answered_at = $3, decision = $4
             where id_hash = $1 and user_id = $2 and answered_at is null and expires_at > $3",
        )
        .bind(id_hash)
        .bind(user.0)
        .bind(unix(now))
        .bind(decision)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(claimed == 1)
}

/// Undoes a claim whose answer could not be carried out (a storage error
/// after the claim), so the person can answer again.
pub async fn release(store: &Store, id_hash: &str) -> StoreResult<()> {
    on_pool!(store, |pool| {
        sqlx::query(
            "update pending_authorizations set answered_at = null, decision = null
             where id_hash = $1",
        )
        .bind(id_hash)
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// Deletes requests that expired before `before`.
pub async fn delete_expired(store: &Store, before: OffsetDateTime) -> StoreResult<u64> {
    let deleted = on_pool!(store, |pool| {
        sqlx::query("delete from pending_authorizations where expires_at < $1")
            .bind(unix(before))
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(deleted)
}
