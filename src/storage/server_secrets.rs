//! Secrets every replica must share (the DPoP nonce key): made once, by the
//! first process that asks, and read by all the others.

use time::OffsetDateTime;

use super::{Sql, StoreResult, Tx};

/// The secret called `name`, storing `candidate` as it when there is none
/// yet. Two processes starting at once agree: the second insert is a no-op
/// and both read the first one's value.
pub async fn get_or_create(
    tx: &mut Tx,
    name: &str,
    candidate: &str,
    now: OffsetDateTime,
) -> StoreResult<String> {
    Sql::new(
        "insert into server_secrets (name, secret, created_at) values ($1, $2, $3)
         on conflict (name) do nothing",
    )
    .bind(name)
    .bind(candidate)
    .bind(now)
    .execute(tx)
    .await?;
    Sql::new("select secret from server_secrets where name = $1")
        .bind(name)
        .fetch_scalar(tx)
        .await
}
