//! Refresh tokens, stored only as hashes, rotated on every use.
//!
//! Rotation is one conditional update ("mark used where not yet used and not
//! expired") followed by the successor's insert, in one transaction: of two
//! requests racing with the same token exactly one wins, and the loser sees
//! a spent token, which is reuse (threat 7), unless the reuse window says
//! otherwise (see `oauth::token`). Spent rows are kept until they expire,
//! so a replay is recognised as reuse rather than as "unknown". A public
//! client's token may be bound to a DPoP key (`dpop_jkt`); its successor
//! is stored with the same binding.

use time::OffsetDateTime;

use super::grants::{GRANT_STATUS_COLUMNS, GRANT_STATUS_JOIN, GrantStatus};
use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{GrantId, ScopeSet};

pub struct NewRefreshToken<'a> {
    pub token_hash: &'a str,
    pub grant: GrantId,
    /// The scopes this token may mint (never more than its grant's).
    pub scope: &'a str,
    pub expires_at: OffsetDateTime,
    /// The DPoP key thumbprint a public client's token is bound to.
    pub dpop_jkt: Option<&'a str>,
}

pub async fn insert(
    tx: &mut Tx,
    token: &NewRefreshToken<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "insert into refresh_tokens (token_hash, grant_id, scope, expires_at, created_at, dpop_jkt)
         values ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token.token_hash)
    .bind(token.grant.0)
    .bind(token.scope)
    .bind(token.expires_at)
    .bind(now)
    .bind(token.dpop_jkt)
    .execute(tx)
    .await?;
    Ok(())
}

crate::record! {
    #[derive(Clone, Debug)]
    pub struct RefreshRow {
        pub scope: ScopeSet,
        pub expires_at: i64,
        pub used_at: Option<i64>,
        /// Bound to this DPoP key: refreshed only with a proof by it.
        pub dpop_jkt: Option<String>,
        /// Read from the same row ([`GRANT_STATUS_COLUMNS`]).
        pub grant: GrantStatus,
    }
}

/// The token with its grant's current status.
pub async fn find(db: &mut impl Exec, token_hash: &str) -> Result<Option<RefreshRow>, StoreError> {
    Sql::new(format!(
        "select r.scope, r.expires_at, r.used_at, r.dpop_jkt, {GRANT_STATUS_COLUMNS}
         from refresh_tokens r
         join grants g on g.id = r.grant_id {GRANT_STATUS_JOIN}
         where r.token_hash = $1"
    ))
    .bind(token_hash)
    .fetch_optional(db)
    .await
}

/// Spends `old_hash`, keeping the nonce its successor was derived with,
/// and stores the successor, in the caller's transaction. `false` when the
/// token was spent (or expired) meanwhile: nothing is stored.
pub async fn rotate(
    tx: &mut Tx,
    old_hash: &str,
    next: &NewRefreshToken<'_>,
    successor_nonce: &str,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let spent = Sql::new(
        "update refresh_tokens set used_at = $2, successor_nonce = $3
         where token_hash = $1 and used_at is null and expires_at > $2",
    )
    .bind(old_hash)
    .bind(now)
    .bind(successor_nonce)
    .execute(tx)
    .await?;
    if spent != 1 {
        return Ok(false);
    }
    insert(tx, next, now).await?;
    Ok(true)
}

/// The nonce the successor of `token_hash` was derived with, if the token
/// was spent at or after `spent_since`.
pub async fn successor_nonce(
    tx: &mut Tx,
    token_hash: &str,
    spent_since: OffsetDateTime,
) -> Result<Option<String>, StoreError> {
    let nonce: Option<Option<String>> = Sql::new(
        "select successor_nonce from refresh_tokens
         where token_hash = $1 and used_at >= $2",
    )
    .bind(token_hash)
    .bind(spent_since)
    .fetch_optional_scalar(tx)
    .await?;
    Ok(nonce.flatten())
}

/// Whether `token_hash` is still unused and unexpired, claimed by a write
/// so that on PostgreSQL it waits for, and then sees, a concurrent
/// rotation of the same token (the SQLite writer serialises them anyway).
pub async fn claim_unused(
    tx: &mut Tx,
    token_hash: &str,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let claimed = Sql::new(
        "update refresh_tokens set reissued_at = $2
         where token_hash = $1 and used_at is null and expires_at > $2",
    )
    .bind(token_hash)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(claimed == 1)
}

/// Deletes tokens that expired before `before` (spent or not).
pub async fn delete_expired(tx: &mut Tx, before: OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from refresh_tokens where expires_at < $1")
        .bind(before)
        .execute(tx)
        .await
}
