//! Signing keys: every replica reads the same table, so a token signed by
//! one verifies on all of them.

use time::OffsetDateTime;

use super::{Exec, Sql, StoreError, Tx};

crate::record! {
    #[derive(Clone, Debug)]
    pub struct KeyRow {
        pub kid: String,
        pub algorithm: String,
        pub private_pkcs8: Vec<u8>,
        pub public_jwk: String,
        pub created_at: i64,
        pub active: bool,
        pub retired_at: Option<i64>,
        /// Withdrawn at once (`coop keys retire --now`): verifies nothing.
        pub withdrawn_at: Option<i64>,
    }
}

const COLUMNS: &str =
    "kid, algorithm, private_pkcs8, public_jwk, created_at, active, retired_at, withdrawn_at";

/// The active key and every retired key retired after `retired_since`,
/// none of them withdrawn.
pub async fn usable(
    db: &mut impl Exec,
    retired_since: OffsetDateTime,
) -> Result<Vec<KeyRow>, StoreError> {
    Sql::new(format!(
        "select {COLUMNS} from signing_keys
         where (active or retired_at >= $1) and withdrawn_at is null
         order by created_at desc"
    ))
    .bind(retired_since)
    .fetch_all(db)
    .await
}

/// Every key, the active one first, then newest first (`coop keys list`).
pub async fn all(db: &mut impl Exec) -> Result<Vec<KeyRow>, StoreError> {
    Sql::new(format!(
        "select {COLUMNS} from signing_keys order by active desc, created_at desc, kid limit 1000"
    ))
    .fetch_all(db)
    .await
}

/// What withdrawing a key did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withdrawal {
    Withdrawn,
    /// No key has that id.
    Unknown,
    /// It is the key that signs: rotate first, or nothing could sign.
    Active,
    AlreadyWithdrawn,
}

/// Withdraws the retired key `kid` in the caller's transaction.
pub async fn withdraw(
    tx: &mut Tx,
    kid: &str,
    now: OffsetDateTime,
) -> Result<Withdrawal, StoreError> {
    let found: Option<(bool, Option<i64>)> =
        Sql::new("select active, withdrawn_at from signing_keys where kid = $1")
            .bind(kid)
            .fetch_optional(tx)
            .await?;
    match found {
        None => Ok(Withdrawal::Unknown),
        Some((true, _)) => Ok(Withdrawal::Active),
        Some((false, Some(_))) => Ok(Withdrawal::AlreadyWithdrawn),
        Some((false, None)) => {
            Sql::new(
                "update signing_keys set withdrawn_at = $2
                 where kid = $1 and not active and withdrawn_at is null",
            )
            .bind(kid)
            .bind(now)
            .execute(tx)
            .await?;
            Ok(Withdrawal::Withdrawn)
        }
    }
}

const INSERT_ACTIVE: &str =
    "insert into signing_keys (kid, algorithm, private_pkcs8, public_jwk, created_at, active)
     values ($1, $2, $3, $4, $5, true)";

fn insert_active<'a>(new: &'a KeyRow, now: OffsetDateTime) -> Sql<'a> {
    Sql::new(INSERT_ACTIVE)
        .bind(&new.kid)
        .bind(&new.algorithm)
        .bind(new.private_pkcs8.as_slice())
        .bind(&new.public_jwk)
        .bind(now)
}

/// Retires the active key (if any) and makes `new` the active one, in the
/// caller's transaction: there is never a moment with two active keys or
/// none.
pub async fn rotate_to(tx: &mut Tx, new: &KeyRow, now: OffsetDateTime) -> Result<(), StoreError> {
    Sql::new("update signing_keys set active = false, retired_at = $1 where active")
        .bind(now)
        .execute(tx)
        .await?;
    insert_active(new, now).execute(tx).await?;
    Ok(())
}

/// Inserts `new` as the active key only if there is none: two replicas
/// starting together on an empty database end up with one active key (the
/// partial unique index refuses the second).
pub async fn insert_first(
    tx: &mut Tx,
    new: &KeyRow,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut insert = insert_active(new, now);
    insert.push(" on conflict do nothing");
    insert.execute(tx).await?;
    Ok(())
}
