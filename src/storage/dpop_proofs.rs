//! DPoP proofs seen, so that none is accepted twice on any replica.
//!
//! A row is a hash of the proof's key and `jti` and the instant until which
//! the proof could still be accepted; the primary key makes the second
//! insert of the same proof a no-op, which is how a replay is recognised,
//! also when two replicas race (PostgreSQL makes the second insert wait for
//! the first and then skip it). Housekeeping deletes rows past that instant.

use super::{Sql, StoreError, Tx};

/// Remembers the proof `replay_key` until `until` (Unix seconds); `false`
/// when it was already remembered.
pub async fn remember(tx: &mut Tx, replay_key: &str, until: i64) -> Result<bool, StoreError> {
    let inserted = Sql::new(
        "insert into dpop_proofs (proof_hash, expires_at) values ($1, $2)
         on conflict (proof_hash) do nothing",
    )
    .bind(replay_key)
    .bind(until)
    .execute(tx)
    .await?;
    Ok(inserted == 1)
}

/// Forgets proofs that can no longer be accepted at `now`.
pub async fn delete_expired(tx: &mut Tx, now: time::OffsetDateTime) -> Result<u64, StoreError> {
    Sql::new("delete from dpop_proofs where expires_at < $1")
        .bind(now)
        .execute(tx)
        .await
}
