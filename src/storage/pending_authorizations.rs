//! Authorization requests waiting for the person's answer, and the one
//! answer each gets.
//!
//! A row is keyed by the SHA-256 of the random id the consent form names
//! and belongs to one user. Answering is [`claim`]: one conditional update
//! (`… where answered_at is null`) in the transaction that carries the
//! answer out, so of two submits of one form, on one replica or two,
//! exactly one wins; the other, whose update waits for the winner's
//! transaction (SQLite's single writer, PostgreSQL's row lock) and then
//! changes nothing, reads the winner's decision and its code.

use time::OffsetDateTime;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::UserId;

pub struct NewPending<'a> {
    pub id_hash: &'a str,
    pub user: UserId,
    /// The checked request, JSON.
    pub request: &'a str,
    pub expires_at: OffsetDateTime,
}

crate::record! {
    #[derive(Clone, Debug)]
    pub struct PendingRow {
        pub request: String,
        pub created_at: i64,
        pub expires_at: i64,
        pub reauthenticated_at: Option<i64>,
        pub answered_at: Option<i64>,
        /// `approve` or `deny`, once answered.
        pub decision: Option<String>,
    }
}

/// Stores a waiting request, first deleting the user's oldest ones so that
/// at most `keep` remain (a person opening request after request cannot
/// grow the table without bound).
pub async fn insert(
    tx: &mut Tx,
    pending: &NewPending<'_>,
    keep: u32,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "delete from pending_authorizations
         where user_id = $1 and id_hash not in (
             select id_hash from pending_authorizations
             where user_id = $1 order by created_at desc limit $2)",
    )
    .bind(pending.user.0)
    .bind(i64::from(keep.saturating_sub(1)))
    .execute(tx)
    .await?;
    Sql::new(
        "insert into pending_authorizations (id_hash, user_id, request, created_at, expires_at)
         values ($1, $2, $3, $4, $5)",
    )
    .bind(pending.id_hash)
    .bind(pending.user.0)
    .bind(pending.request)
    .bind(now)
    .bind(pending.expires_at)
    .execute(tx)
    .await?;
    Ok(())
}

/// The request `id_hash` of `user`, answered or not, unless expired.
pub async fn find(
    db: &mut impl Exec,
    id_hash: &str,
    user: UserId,
    now: OffsetDateTime,
) -> Result<Option<PendingRow>, StoreError> {
    Sql::new(
        "select request, created_at, expires_at, reauthenticated_at, answered_at, decision
         from pending_authorizations
         where id_hash = $1 and user_id = $2 and expires_at > $3",
    )
    .bind(id_hash)
    .bind(user.0)
    .bind(now)
    .fetch_optional(db)
    .await
}

/// Records that the password was entered again for this request.
pub async fn mark_reauthenticated(
    tx: &mut Tx,
    id_hash: &str,
    user: UserId,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "update pending_authorizations set reauthenticated_at = $3
         where id_hash = $1 and user_id = $2 and answered_at is null",
    )
    .bind(id_hash)
    .bind(user.0)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(())
}

/// Answers the request with `decision`, if nobody has: `true` for the one
/// caller that did (its transaction then carries the answer out).
pub async fn claim(
    tx: &mut Tx,
    id_hash: &str,
    user: UserId,
    decision: &str,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let claimed = Sql::new(
        "update pending_authorizations set answered_at = $3, decision = $4
         where id_hash = $1 and user_id = $2 and answered_at is null and expires_at > $3",
    )
    .bind(id_hash)
    .bind(user.0)
    .bind(now)
    .bind(decision)
    .execute(tx)
    .await?;
    Ok(claimed == 1)
}

/// Deletes requests that expired before `before`.
pub async fn delete_expired(tx: &mut Tx, before: OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from pending_authorizations where expires_at < $1")
        .bind(before)
        .execute(tx)
        .await
}
