//! Refresh tokens, stored only as hashes, rotated on every use.
//!
//! Rotation is one conditional update ("mark used where not yet used and not
//! expired") followed by the successor's insert, in one transaction: of two
//! requests racing with the same token exactly one wins, and the loser sees
//! a spent token, which is reuse (threat 7). Spent rows are kept until they
//! expire, so a replay is recognised as reuse rather than as "unknown".

use time::OffsetDateTime;

use super::grants::{GRANT_STATUS_COLUMNS, GRANT_STATUS_JOIN, GrantStatus};
use super::{Store, StoreResult, unix};
use crate::domain::GrantId;
use crate::on_pool;

pub struct NewRefreshToken<'a> {
    pub token_hash: &'a str,
    pub grant: GrantId,
    /// The scopes this token may mint (never more than its grant's).
    pub scope: &'a str,
    pub expires_at: OffsetDateTime,
}

/// Binds: hash, grant, scope, expires_at, created_at.
pub(super) const INSERT: &str = "insert into refresh_tokens
        (token_hash, grant_id, scope, expires_at, created_at)
    values ($1, $2, $3, $4, $5)";

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct RefreshRow {
    pub scope: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    #[sqlx(flatten)]
    pub grant: GrantStatus,
}

/// The token with its grant's current status.
pub async fn find(store: &Store, token_hash: &str) -> StoreResult<Option<RefreshRow>> {
    let sql = format!(
        "select r.scope, r.expires_at, r.used_at, {GRANT_STATUS_COLUMNS}
         from refresh_tokens r
         join grants g on g.id = r.grant_id {GRANT_STATUS_JOIN}
         where r.token_hash = $1"
    );
    let row = on_pool!(store, |pool| {
        sqlx::query_as::<_, RefreshRow>(&sql)
            .bind(token_hash)
            .fetch_optional(pool)
            .await?
    });
    Ok(row)
}

/// Spends `old_hash` and stores its successor, atomically. `false` when the
/// token was spent (or expired) meanwhile: nothing is stored.
pub async fn rotate(
    store: &Store,
    old_hash: &str,
    next: &NewRefreshToken<'_>,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let rotated = on_pool!(store, |pool| {
        let mut tx = pool.begin().await?;
        let spent = sqlx::query(
            "update refresh_tokens set used_at = $2
             where token_hash = $1 and used_at is null and expires_at > $2",
        )
        .bind(old_hash)
        .bind(unix(now))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if spent == 1 {
            sqlx::query(INSERT)
                .bind(next.token_hash)
                .bind(next.grant.0)
                .bind(next.scope)
                .bind(unix(next.expires_at))
                .bind(unix(now))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            true
        } else {
            tx.rollback().await?;
            false
        }
    });
    Ok(rotated)
}

/// Deletes tokens that expired before `before` (spent or not).
pub async fn delete_expired(store: &Store, before: OffsetDateTime) -> StoreResult<u64> {
    let deleted = on_pool!(store, |pool| {
        sqlx::query("delete from refresh_tokens where expires_at < $1")
            .bind(unix(before))
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(deleted)
}
