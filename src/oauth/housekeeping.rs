//! Periodic clean-up of what can no longer be used, so tables stay bounded:
//! self-registered clients never used within a day of registering (threat
//! 14), expired codes, refresh tokens past their expiry (spent ones are
//! kept until then so a replay is still recognised as reuse),
//! revoked-access-token rows whose token has expired anyway,
//! authorization requests that waited past their half hour, the `jti`s
//! of client assertions that have expired (a replay of one is refused by
//! its `exp` from then on), and DPoP proofs too old to be accepted anyway.

use time::OffsetDateTime;

use crate::oauth::clients::UNUSED_REGISTRATION_TTL;
use crate::storage::{
    Store, StoreError, client_assertions, clients, codes, dpop_proofs, pending_authorizations,
    refresh_tokens, revocations,
};

/// How many rows each sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub clients: u64,
    pub codes: u64,
    pub refresh_tokens: u64,
    pub revoked_access_tokens: u64,
    pub pending_authorizations: u64,
    pub client_assertion_jtis: u64,
    pub dpop_proofs: u64,
}

/// One sweep at `now`, in one short transaction.
pub async fn sweep(store: &Store, now: OffsetDateTime) -> Result<Swept, StoreError> {
    let mut tx = store.write().await?;
    let swept = Swept {
        clients: clients::delete_unused_dynamic(&mut tx, now - UNUSED_REGISTRATION_TTL).await?,
        codes: codes::delete_expired(&mut tx, now - time::Duration::hours(1)).await?,
        refresh_tokens: refresh_tokens::delete_expired(&mut tx, now).await?,
        revoked_access_tokens: revocations::delete_expired(&mut tx, now).await?,
        pending_authorizations: pending_authorizations::delete_expired(&mut tx, now).await?,
        client_assertion_jtis: client_assertions::delete_expired(&mut tx, now).await?,
        dpop_proofs: dpop_proofs::delete_expired(&mut tx, now).await?,
    };
    tx.commit().await?;
    Ok(swept)
}
