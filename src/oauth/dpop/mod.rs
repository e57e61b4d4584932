//! DPoP (RFC 9449): sender-constrained access tokens, at `/token` and at
//! `/mcp`, without HTTP types.
//!
//! - [`proof`]: checking one proof (header, key, signature, `htm`, `htu`,
//!   `iat`, `ath`, nonce), giving the key's thumbprint and the `jti`.
//! - [`thumbprint`]: RFC 7638, the `cnf.jkt` of a bound token.
//! - [`nonce`]: stateless server nonces every replica accepts.
//! - [`spend`]: the `jti` seen once, across replicas, in the shared store.
//!
//! **Replay across replicas** is stopped by the shared store: every accepted
//! proof leaves a row keyed by a hash of its key and `jti` until its `iat`
//! is too old for it to be accepted anyway ([`proof::MAX_AGE`]), so a proof
//! replayed on any replica, within its window, is refused; housekeeping
//! deletes the rows after. Server nonces are on offer as well
//! (`--dpop-require-nonce`): they bound how far ahead proofs can be made,
//! they do not replace the `jti` check.
//!
//! What a proof binds is decided by the caller: `oauth::token` puts the
//! thumbprint in the access token's `cnf.jkt` (and, for a public client, on
//! the refresh token); `mcp::bearer` compares it with the token's on every
//! call. The signature cache of access tokens ([`super::verified`]) keeps
//! `cnf` with the claims but never a proof: each request's proof is checked
//! afresh.

pub mod nonce;
pub mod proof;
#[cfg(test)]
mod props;
#[cfg(test)]
pub(crate) use crate::testing::dpop_keys as testing;
pub mod thumbprint;

use time::OffsetDateTime;

pub use nonce::NonceKey;
pub use proof::{ALGORITHMS, Expected, Proof, ProofError, token_hash, verify};

use crate::domain::Issuer;
use crate::oauth::error::OAuthError;
use crate::storage::{Store, StoreError, dpop_proofs};

/// The `algs` of a `DPoP` challenge: the accepted algorithms, space-separated.
pub fn algs() -> String {
    ALGORITHMS.join(" ")
}

/// How this server treats proofs: the nonce key every replica shares, and
/// whether a nonce is required.
#[derive(Clone, Debug)]
pub struct Policy {
    nonces: NonceKey,
    require_nonce: bool,
}

impl Policy {
    pub fn new(nonces: NonceKey, require_nonce: bool) -> Self {
        Self {
            nonces,
            require_nonce,
        }
    }

    /// Whether proofs must carry a nonce Coop issued.
    pub fn requires_nonce(&self) -> bool {
        self.require_nonce
    }

    /// The key proofs' nonces are checked with, when they are required.
    pub fn required_nonces(&self) -> Option<&NonceKey> {
        self.require_nonce.then_some(&self.nonces)
    }

    /// The nonce to hand out now.
    pub fn fresh_nonce(&self, now: OffsetDateTime) -> String {
        self.nonces.issue(now)
    }
}

/// Records the proof's `jti` as seen; [`ProofError::Replayed`] when it was
/// seen before (on any replica) within its window.
pub async fn spend(store: &Store, proof: &Proof) -> Result<Result<(), ProofError>, StoreError> {
    let mut tx = store.write().await?;
    let fresh = dpop_proofs::remember(&mut tx, &proof.replay_key(), proof.remember_until()).await?;
    tx.commit().await?;
    Ok(if fresh {
        Ok(())
    } else {
        Err(ProofError::Replayed)
    })
}

/// The token endpoint's proof (RFC 9449 §5), checked but not yet spent.
/// It is checked before anything the request presented is spent (a client
/// assertion's `jti`), since its refusals send the client back to retry
/// with the same credentials: `use_dpop_nonce` above all (issue 31).
#[derive(Debug)]
#[must_use = "spend the proof before issuing anything for it"]
pub struct UnspentProof(Proof);

/// Checks the token endpoint's proof: none, or exactly one for
/// `POST <issuer>/token` (never the `Host` the request named), with a
/// nonce when they are required. Reads nothing from the store. Its
/// refusals are `invalid_dpop_proof`, or `use_dpop_nonce` carrying a fresh
/// nonce.
pub fn check_at_token_endpoint(
    policy: &Policy,
    issuer: &Issuer,
    proofs: &[&str],
    now: OffsetDateTime,
) -> Result<Option<UnspentProof>, OAuthError> {
    if proofs.is_empty() {
        return Ok(None);
    }
    let uri = issuer.url("/token");
    let expected = Expected {
        method: "POST",
        uri: &uri,
        access_token: None,
        nonces: policy.required_nonces(),
    };
    let proof = verify(proofs, &expected, now).map_err(|why| refusal(policy, why, now))?;
    Ok(Some(UnspentProof(proof)))
}

impl UnspentProof {
    /// Spends the proof's `jti`: `invalid_dpop_proof` if it was seen before
    /// (on any replica) within its window.
    pub async fn spend(
        self,
        store: &Store,
        policy: &Policy,
        now: OffsetDateTime,
    ) -> Result<Proof, OAuthError> {
        spend(store, &self.0)
            .await?
            .map_err(|why| refusal(policy, why, now))?;
        Ok(self.0)
    }
}

/// A refused proof at the token endpoint, as the client is told.
fn refusal(policy: &Policy, why: ProofError, now: OffsetDateTime) -> OAuthError {
    if why.wants_nonce() {
        OAuthError::UseDpopNonce(policy.fresh_nonce(now))
    } else {
        OAuthError::InvalidDpopProof(why.to_string())
    }
}
