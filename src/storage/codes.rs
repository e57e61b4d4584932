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
use super::{Store, StoreResult, unix};
use crate::domain::{GrantId, UserId};
use crate::on_pool;

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

pub async fn insert(store: &Store, code: &NewCode<'_>, now: OffsetDateTime) -> StoreResult<()> {
    on_pool!(store, |pool| {
        sqlx::query(
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
        .bind(unix(code.expires_at))
        .bind(unix(now))
        .execute(pool)
        .await?;
    });
    Ok(())
}

/// A stored code with its grant's current status.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct CodeRow {
    pub client_id: String,
    pub user_id: Uuid,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub resource: String,
    pub scope: String,
    pub credential_epoch: i64,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
    #[sqlx(flatten)]
    pub grant: GrantStatus,
}

pub async fn find(store: &Store, code_hash: &str) -> StoreResult<Option<CodeRow>> {
    let sql = format!(
        "select c.client_id, c.user_id, c.redirect_uri, c.code_challenge, c.resource, c.scope,
             c.credential_epoch, c.expires_at, c.consumed_at, {GRANT_STATUS_COLUMNS}
         from authorization_codes c
         join grants g on g.id = c.grant_id {GRANT_STATUS_JOIN}
         where c.code_hash = $1"
    );
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, CodeRow>(&sql)
            .bind(code_hash)
            .fetch_optional(pool)
            .await?
    });
    Ok(row)
}

/// Spends the code and stores the first refresh token (if the client gets
/// one), atomically. `false` when the code was already spent (a racing
/// exchange won): nothing is stored.
pub async fn redeem(
    store: &Store,
    code_hash: &str,
    refresh: Option<&NewRefreshToken<'_>>,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let redeemed = on_pool!(store, |pool| {
        let mut tx = pool.begin().await?;
        let spent = sqlx::query(
            "update authorization_codes set consumed_at = $2
             where code_hash = $1 and consumed_at is null",
        )
        .bind(code_hash)
        .bind(unix(now))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if spent == 1 {
            if let Some(refresh) = refresh {
                sqlx::query(refresh_tokens::INSERT)
                    .bind(refresh.token_hash)
                    .bind(refresh.grant.0)
                    .bind(refresh.scope)
                    .bind(unix(refresh.expires_at))
                    .bind(unix(now))
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            true
        } else {
            tx.rollback().await?;
            false
        }
    });
    Ok(redeemed)
}

/// Deletes codes that expired before `before`.
pub async fn delete_expired(store: &Store, before: OffsetDateTime) -> StoreResult<u64> {
    let deleted = on_pool!(store, |pool| {
        sqlx::query("delete from authorization_codes where expires_at < $1")
            .bind(unix(before))
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(deleted)
}
