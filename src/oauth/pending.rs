//! Authorization requests waiting for the person (the consent screen, the
//! password asked again), and the single answer each gets.
//!
//! A request that needs the person is stored in the shared store under a
//! random 256-bit id, which the consent and password forms carry; two tabs
//! connecting two apps each answer their own request. A request belongs to
//! the person who opened it, lives [`PENDING_TTL`], and at most
//! [`MAX_PENDING_PER_USER`] wait per person.
//!
//! **One decision, one code.** Answering is a claim on the row
//! ([`claim`]) in the transaction that carries the answer out, won by
//! exactly one submit even when two arrive at once, on one replica or two. The code an approval issues is derived from the
//! request's id ([`code_for`]): the losing submit, which carries the same
//! id, can send the browser the very same redirect while the code is
//! unspent, so a double click still lands the code with the client, and
//! nothing but hashes is stored (the id and the code exist only in the
//! person's browser and the client).

use time::OffsetDateTime;

use crate::domain::UserId;
use crate::oauth::authorize::AuthorizationRequest;
use crate::secrets::{self, AuthorizationCode};
use crate::storage::pending_authorizations::{self as stored, NewPending};
use crate::storage::{Store, StoreError, Tx};

/// How long a request may wait for its answer.
pub const PENDING_TTL: time::Duration = time::Duration::minutes(30);

/// How many requests may wait per person; a new one pushes out the oldest.
pub const MAX_PENDING_PER_USER: u32 = 16;

/// What the person decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
}

impl Decision {
    fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        match raw {
            "approve" => Some(Self::Approve),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// A waiting (or answered) request.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The id the forms carry (never stored: only its hash is).
    pub id: String,
    pub request: AuthorizationRequest,
    /// The password was entered again for this very request.
    pub reauthenticated: bool,
    /// Set once the request has been answered.
    pub answered: Option<Decision>,
}

fn id_hash(id: &str) -> String {
    secrets::hash_secret(id)
}

/// Stores `request` for `user`; returns its id.
pub async fn put(
    store: &Store,
    user: UserId,
    request: &AuthorizationRequest,
    now: OffsetDateTime,
) -> Result<String, StoreError> {
    let id = secrets::random_token(32);
    let json = serde_json::to_string(request).map_err(StoreError::backend)?;
    let mut tx = store.write().await?;
    stored::insert(
        &mut tx,
        &NewPending {
            id_hash: &id_hash(&id),
            user,
            request: &json,
            expires_at: now + PENDING_TTL,
        },
        MAX_PENDING_PER_USER,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// The request `id` of `user`, unless unknown, another person's, expired
/// or unreadable.
pub async fn get(
    store: &Store,
    id: &str,
    user: UserId,
    now: OffsetDateTime,
) -> Result<Option<Pending>, StoreError> {
    if id.is_empty() {
        return Ok(None);
    }
    let Some(row) = stored::find(&mut store.read().await?, &id_hash(id), user, now).await? else {
        return Ok(None);
    };
    let request = match serde_json::from_str::<AuthorizationRequest>(&row.request) {
        Ok(request) => request,
        Err(err) => {
            tracing::error!(error = %err, "a waiting authorization request is unreadable");
            return Ok(None);
        }
    };
    Ok(Some(Pending {
        id: id.to_owned(),
        request,
        reauthenticated: row.reauthenticated_at.is_some(),
        answered: row
            .answered_at
            .and(row.decision.as_deref().and_then(Decision::parse)),
    }))
}

/// Records that the password was just entered again for request `id`.
pub async fn reauthenticated(
    store: &Store,
    id: &str,
    user: UserId,
    now: OffsetDateTime,
) -> Result<(), StoreError> {
    let mut tx = store.write().await?;
    stored::mark_reauthenticated(&mut tx, &id_hash(id), user, now).await?;
    tx.commit().await
}

/// Answers request `id` in `tx`: `true` for the one caller whose answer
/// counts, which then carries it out in the same transaction. `false`:
/// another answer won (and has committed: the claim waited for it).
pub async fn claim(
    tx: &mut Tx,
    id: &str,
    user: UserId,
    decision: Decision,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    stored::claim(tx, &id_hash(id), user, decision.as_str(), now).await
}

/// The one code an approval of request `id` issues: HMAC-SHA256 keyed by
/// the id's 256 random bits. Whoever holds the id (the person's browser)
/// can compute it, and no one else; the store keeps its hash like any
/// other code's.
pub fn code_for(id: &str) -> AuthorizationCode {
    use aws_lc_rs::hmac;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let key = hmac::Key::new(hmac::HMAC_SHA256, id.as_bytes());
    let tag = hmac::sign(&key, b"coop authorization code v1");
    AuthorizationCode::new(URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_has_one_code_and_two_requests_two() {
        let a = secrets::random_token(32);
        let b = secrets::random_token(32);
        assert_eq!(code_for(&a), code_for(&a));
        assert_ne!(code_for(&a), code_for(&b));
        // As long as a random code: 256 bits, base64url.
        assert_eq!(code_for(&a).expose().len(), 43);
        assert_ne!(code_for(&a).expose(), a);
    }

    #[test]
    fn decisions_round_trip() {
        for d in [Decision::Approve, Decision::Deny] {
            assert_eq!(Decision::parse(d.as_str()), Some(d));
        }
        assert_eq!(Decision::parse("maybe"), None);
    }
}
