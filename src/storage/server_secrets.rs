//! Secrets the server makes for itself and every replica must share: the
//! master secret its signed cookies are keyed from.
//!
//! The first server to start makes the value; every later one (and every
//! replica starting at the same moment) reads the one that won the insert.
//! Like the signing keys, the value is kept in clear, so the database is as
//! sensitive as they make it (docs/security.md, "Signing keys").

use time::OffsetDateTime;

use super::{Sql, Store, StoreError};
use crate::secrets::MasterSecret;

/// The secret called `name`, made from `fresh` if there is none yet.
pub async fn load_or_create(
    store: &Store,
    name: &str,
    fresh: impl FnOnce() -> MasterSecret,
    now: OffsetDateTime,
) -> Result<MasterSecret, StoreError> {
    let mut tx = store.write().await?;
    Sql::new(
        "insert into server_secrets (name, value, created_at) values ($1, $2, $3)
         on conflict (name) do nothing",
    )
    .bind(name)
    .bind(fresh().expose().to_owned())
    .bind(now)
    .execute(&mut tx)
    .await?;
    let value: String = Sql::new("select value from server_secrets where name = $1")
        .bind(name)
        .fetch_scalar(&mut tx)
        .await?;
    tx.commit().await?;
    Ok(MasterSecret::new(value))
}
