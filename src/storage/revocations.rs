//! Access tokens revoked on their own (RFC 7009) before they expire.
//!
//! An access token is a JWT checked against the store on every `/mcp` call;
//! that check reads its grant and this table (by `jti`). A row is needed
//! only until the token's own `exp`, after which the signature check refuses
//! it anyway, so housekeeping deletes expired rows.

use time::OffsetDateTime;

use super::{Exec, Sql, StoreError, Tx};
use crate::domain::GrantId;

/// Records the token as revoked; revoking it twice is not an error.
pub async fn revoke_access_token(
    tx: &mut Tx,
    jti: &str,
    grant: GrantId,
    expires_at: i64,
) -> Result<(), StoreError> {
    Sql::new(
        "insert into revoked_access_tokens (jti, grant_id, expires_at) values ($1, $2, $3)
         on conflict (jti) do nothing",
    )
    .bind(jti)
    .bind(grant.0)
    .bind(expires_at)
    .execute(tx)
    .await?;
    Ok(())
}

pub async fn is_access_token_revoked(db: &mut impl Exec, jti: &str) -> Result<bool, StoreError> {
    let found: Option<i64> =
        Sql::new("select expires_at from revoked_access_tokens where jti = $1")
            .bind(jti)
            .fetch_optional_scalar(db)
            .await?;
    Ok(found.is_some())
}

pub async fn delete_expired(tx: &mut Tx, now: OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from revoked_access_tokens where expires_at < $1")
        .bind(now)
        .execute(tx)
        .await
}
