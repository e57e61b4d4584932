//! The `jti`s of client assertions (`private_key_jwt`) already accepted,
//! each kept until its assertion expires, so that no assertion is accepted
//! twice by any replica. The primary key (client, `jti` hash) is the check:
//! a second insert of a live row changes nothing, and that is the replay.
//! Housekeeping deletes expired rows.

use time::OffsetDateTime;

use super::{Sql, StoreResult, Tx};

/// Records `jti_hash` for `client_id` until `until`. `true` when it was not
/// recorded (or only by an expired row, which it replaces); `false` when a
/// live row holds it: a replay.
pub async fn record_jti(
    tx: &mut Tx,
    client_id: &str,
    jti_hash: &str,
    until: OffsetDateTime,
    now: OffsetDateTime,
) -> StoreResult<bool> {
    let changed = Sql::new(
        "insert into client_assertion_jtis (client_id, jti_hash, expires_at) values ($1, $2, $3)
         on conflict (client_id, jti_hash) do update set expires_at = excluded.expires_at
         where client_assertion_jtis.expires_at < $4",
    )
    .bind(client_id)
    .bind(jti_hash)
    .bind(until)
    .bind(now)
    .execute(tx)
    .await?;
    Ok(changed == 1)
}

/// Deletes the rows whose assertion has expired; returns how many.
pub async fn delete_expired(tx: &mut Tx, now: OffsetDateTime) -> StoreResult<u64> {
    Sql::new("delete from client_assertion_jtis where expires_at < $1")
        .bind(now)
        .execute(tx)
        .await
}
