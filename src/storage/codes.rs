//! Authorization codes, stored only as hashes.
//!
//! A code is read (with its grant) and checked in full before it is spent,
//! so a refused exchange consumes nothing; spending it is one conditional
//! update in the same transaction that stores the first refresh token, so
//! two racing exchanges cannot both succeed.

use time::OffsetDateTime;
use uuid::Uuid;

use super::grants::{GRANT_STATUS_COLUMNS, GRANT_STATUS_JOIN, GrantStatus};
use super::refresh_tokens::{self, NewRefreshToken};
use super::{Exec, Sql, StoreError, Tx};
use crate::domain::{GrantId, ScopeSet, UserId};

pub struct NewCode<'a> {
    pub code_hash: &'a str,
    pub grant: GrantId,
    pub client_id: &'a str,
    pub user: UserId,
    pub redirect_uri: &'a str,
    pub code_challenge: &'a str,
    pub resource: &'a str,
    pub scope: &'a str,
    pub epoch: i64,
    pub expires_at: OffsetDateTime,
}

pub async fn insert(
    tx: &mut Tx,
    code: &NewCode<'_>,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    Sql::new(
        "insert into authorization_codes (code_hash, grant_id, client_id, user_id,
             redirect_uri, code_challenge, resource, scope, credential_epoch,
             expires_at, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(code.code_hash)
    .bind(code.grant.0)
    .bind(code.client_id)
    .bind(code.user.0)
    .bind(code.redirect_uri)
    .bind(code.code_challenge)
    .bind(code.resource)
    .bind(code.scope)
    .bind(code.epoch)
    .bind(code.expires_at)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(())
}

crate::record! {
    /// A stored code with its grant's current status.
    #[derive(Clone, Debug)]
    pub struct CodeRow {
        pub client_id: String,
        pub user_id: Uuid,
        pub redirect_uri: String,
        pub code_challenge: String,
        pub resource: String,
        pub scope: ScopeSet,
        pub credential_epoch: i64,
        pub expires_at: i64,
        pub consumed_at: Option<i64>,
        /// Read from the same row ([`GRANT_STATUS_COLUMNS`]).
        pub grant: GrantStatus,
    }
}

pub async fn find(db: &mut impl Exec, code_hash: &str) -> Result<Option<CodeRow>, StoreError> {
    Sql::new(format!(
        "select c.client_id, c.user_id, c.redirect_uri, c.code_challenge, c.resource, c.scope,
             c.credential_epoch, c.expires_at, c.consumed_at, {GRANT_STATUS_COLUMNS}
         from authorization_codes c
         join grants g on g.id = c.grant_id {GRANT_STATUS_JOIN}
         where c.code_hash = $1"
    ))
    .bind(code_hash)
    .fetch_optional(db)
    .await
}

/// Spends the code and stores the first refresh token (if the client gets
/// one) in the caller's transaction. `false` when the code was already
/// spent (a racing exchange won): nothing is stored.
pub async fn redeem(
    tx: &mut Tx,
    code_hash: &str,
    refresh: Option<&NewRefreshToken<'_>>,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    let spent = Sql::new(
        "update authorization_codes set consumed_at = $2
         where code_hash = $1 and consumed_at is null",
    )
    .bind(code_hash)
    .bind(now)
    .execute(tx)
    .await?;
    if spent != 1 {
        return Ok(false);
    }
    if let Some(refresh) = refresh {
        refresh_tokens::insert(tx, refresh, now).await?;
    }
    Ok(true)
}

/// Deletes codes that expired before `before`.
pub async fn delete_expired(tx: &mut Tx, before: OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from authorization_codes where expires_at < $1")
        .bind(before)
        .execute(tx)
        .await
}
