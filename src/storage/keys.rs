//! Signing keys: every replica reads the same table, so a token signed by
//! one verifies on all of them.

use time::OffsetDateTime;

use super::{Store, StoreResult, unix};
use crate::on_pool;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct KeyRow {
    pub kid: String,
    pub algorithm: String,
    pub private_pkcs8: Vec<u8>,
    pub public_jwk: String,
    pub created_at: i64,
    pub active: bool,
    pub retired_at: Option<i64>,
}

/// The active key and every retired key retired after `retired_since`.
pub async fn usable(store: &Store, retired_since: OffsetDateTime) -> StoreResult<Vec<KeyRow>> {
    let rows = on_pool!(store, |pool| {
        sqlx::query_as::<_, KeyRow>(
            "select kid, algorithm, private_pkcs8, public_jwk, created_at, active, retired_at
             from signing_keys where active or retired_at >= $1
             order by created_at desc",
        )
        .bind(unix(retired_since))
        .fetch_all(pool)
        .await?
    });
    Ok(rows)
}

/// Retires the active key (if any) and makes `new` the active one, in one
/// transaction: there is never a moment with two active keys or none.
pub async fn rotate_to(store: &Store, new: &KeyRow, now: OffsetDateTime) -> StoreResult<()> {
    on_pool!(store, |pool| {
        let mut tx = pool.begin().await?;
        sqlx::query("update signing_keys set active = false, retired_at = $1 where active")
            .bind(unix(now))
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "insert into signing_keys (kid, algorithm, private_pkcs8, public_jwk, created_at, active)
             values ($1, $2, $3, $4, $5, true)",
        )
        .bind(&new.kid)
        .bind(&new.algorithm)
        .bind(&new.private_pkcs8)
        .bind(&new.public_jwk)
        .bind(unix(now))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    });
    Ok(())
}

/// Inserts `new` as the active key only if there is none: two replicas
/// starting together on an empty database end up with one active key (the
/// partial unique index refuses the second).
pub async fn insert_first(store: &Store, new: &KeyRow, now: OffsetDateTime) -> StoreResult<()> {
    let result = on_pool!(store, |pool| {
        sqlx::query(
            "insert into signing_keys (kid, algorithm, private_pkcs8, public_jwk, created_at, active)
             values ($1, $2, $3, $4, $5, true)",
        )
        .bind(&new.kid)
        .bind(&new.algorithm)
        .bind(&new.private_pkcs8)
        .bind(&new.public_jwk)
        .bind(unix(now))
        .execute(pool)
        .await
        .map(|_| ())
    });
    match result {
        Ok(()) => Ok(()),
        Err(err) => match super::StoreError::from(err) {
            super::StoreError::Conflict(_) => Ok(()),
            other => Err(other),
        },
    }
}
