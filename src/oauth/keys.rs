//! ES256 signing keys: made at first start, rotated by `coop keys rotate`,
//! published at `/jwks.json`.
//!
//! Keys live in the database so every replica signs and verifies with the
//! same set. Each process keeps the set in memory and reloads it when it
//! meets an unknown `kid` (another process rotated) at most once every few
//! seconds, and on a timer, so a rotation reaches every replica without a
//! restart. A retired key stays published, and keeps verifying, until every
//! token it could have signed has expired.

use std::sync::Arc;
use std::time::Duration;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use time::OffsetDateTime;
use tokio::sync::RwLock;

use super::access_token::AccessClaims;
use super::verified::{TokenHash, VerifiedTokens};
use crate::storage::audit::{self, AuditEvent, AuditKind};
use crate::storage::keys::{self as stored, KeyRow};
use crate::storage::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key generation failed")]
    Generate,
    #[error("stored key {0} is unusable: {1}")]
    Corrupt(String, String),
    #[error("no active signing key")]
    NoActiveKey,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One key as a process holds it.
struct LoadedKey {
    kid: String,
    decoding: DecodingKey,
    jwk: Jwk,
}

struct Loaded {
    signing: Option<(String, EncodingKey)>,
    verifying: Vec<LoadedKey>,
    loaded_at: std::time::Instant,
}

/// The key set shared by every handler of one process.
#[derive(Clone)]
pub struct Keys {
    store: Store,
    /// How long a retired key stays published: the longest access-token
    /// lifetime any replica may be configured with.
    retired_key_grace: time::Duration,
    inner: Arc<RwLock<Loaded>>,
    /// Tokens whose signature by one of these keys was checked already.
    verified: Arc<VerifiedTokens>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys")
    }
}

/// A new ES256 key as a storable row.
pub fn generate() -> Result<KeyRow, KeyError> {
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map_err(|_| KeyError::Generate)?;
    let der = pkcs8.as_ref().to_vec();
    let kid = crate::secrets::random_token(12);
    let encoding = EncodingKey::from_ec_der(&der);
    let mut jwk =
        Jwk::from_encoding_key(&encoding, Algorithm::ES256).map_err(|_| KeyError::Generate)?;
    jwk.common.key_id = Some(kid.clone());
    jwk.common.public_key_use = Some(PublicKeyUse::Signature);
    jwk.common.key_algorithm = Some(KeyAlgorithm::ES256);
    let public_jwk = serde_json::to_string(&jwk).map_err(|_| KeyError::Generate)?;
    Ok(KeyRow {
        kid,
        algorithm: "ES256".to_owned(),
        private_pkcs8: der,
        public_jwk,
        created_at: 0,
        active: true,
        retired_at: None,
        withdrawn_at: None,
    })
}

fn load_row(row: &KeyRow) -> Result<LoadedKey, KeyError> {
    let corrupt = |why: String| KeyError::Corrupt(row.kid.clone(), why);
    if row.algorithm != "ES256" {
        return Err(corrupt(format!("unknown algorithm {}", row.algorithm)));
    }
    let jwk: Jwk = serde_json::from_str(&row.public_jwk).map_err(|e| corrupt(e.to_string()))?;
    let decoding = DecodingKey::from_jwk(&jwk).map_err(|e| corrupt(e.to_string()))?;
    Ok(LoadedKey {
        kid: row.kid.clone(),
        decoding,
        jwk,
    })
}

/// Minimum time between two reloads caused by unknown `kid`s, so a flood of
/// forged tokens cannot turn into a flood of queries.
const RELOAD_BACKOFF: Duration = Duration::from_secs(5);

impl Keys {
    /// Loads the key set, creating the first key on an empty database.
    pub async fn load_or_create(
        store: Store,
        retired_key_grace: time::Duration,
        now: OffsetDateTime,
    ) -> Result<Self, KeyError> {
        let keys = Self {
            store,
            retired_key_grace,
            inner: Arc::new(RwLock::new(Loaded {
                signing: None,
                verifying: Vec::new(),
                loaded_at: std::time::Instant::now(),
            })),
            verified: Arc::new(VerifiedTokens::default()),
        };
        keys.reload(now).await?;
        if keys.inner.read().await.signing.is_none() {
            let mut tx = keys.store.write().await?;
            stored::insert_first(&mut tx, &generate()?, now).await?;
            tx.commit().await?;
            keys.reload(now).await?;
        }
        Ok(keys)
    }

    /// Reads the usable keys from the store.
    pub async fn reload(&self, now: OffsetDateTime) -> Result<(), KeyError> {
        let rows =
            stored::usable(&mut self.store.read().await?, now - self.retired_key_grace).await?;
        let mut signing = None;
        let mut verifying = Vec::with_capacity(rows.len());
        for row in &rows {
            let loaded = match load_row(row) {
                Ok(loaded) => loaded,
                Err(err) => {
                    tracing::error!(error = %err, "skipping an unusable signing key");
                    continue;
                }
            };
            if row.active {
                signing = Some((
                    row.kid.clone(),
                    EncodingKey::from_ec_der(&row.private_pkcs8),
                ));
            }
            verifying.push(loaded);
        }
        let mut inner = self.inner.write().await;
        inner.signing = signing;
        inner.verifying = verifying;
        inner.loaded_at = std::time::Instant::now();
        // A key that left the set takes the signatures it made with it.
        self.verified
            .forget_keys_except(|kid| inner.verifying.iter().any(|k| k.kid == kid));
        Ok(())
    }

    /// The claims of a token whose signature by a key still in the set was
    /// checked before, while it has not expired (see [`super::verified`]).
    pub(crate) async fn verified_claims(
        &self,
        hash: &TokenHash,
        now: OffsetDateTime,
    ) -> Option<Arc<AccessClaims>> {
        let inner = self.inner.read().await;
        self.verified.get(hash, now.unix_timestamp(), |kid| {
            inner.verifying.iter().any(|k| k.kid == kid)
        })
    }

    /// Remembers a token whose signature by `kid` was just checked.
    pub(crate) fn remember_verified(
        &self,
        hash: TokenHash,
        kid: &str,
        claims: AccessClaims,
        now: OffsetDateTime,
    ) {
        self.verified
            .insert(hash, kid, claims, now.unix_timestamp());
    }

    /// Reloads when this process last read the key set more than `age` ago.
    pub async fn reload_if_older_than(
        &self,
        age: Duration,
        now: OffsetDateTime,
    ) -> Result<(), KeyError> {
        if self.inner.read().await.loaded_at.elapsed() >= age {
            self.reload(now).await?;
        }
        Ok(())
    }

    /// The `kid` and key that sign new tokens.
    pub async fn signing_key(&self) -> Result<(String, EncodingKey), KeyError> {
        self.inner
            .read()
            .await
            .signing
            .clone()
            .ok_or(KeyError::NoActiveKey)
    }

    /// The verification key for `kid`, looked up only among Coop's own keys.
    /// An unknown `kid` triggers one reload (rate limited), since another
    /// replica may have rotated. A reload that fails is an error, not "no
    /// such key": the token may be signed by a key the store would have
    /// shown, and refusing it would look like a revocation.
    pub async fn decoding_key(
        &self,
        kid: &str,
        now: OffsetDateTime,
    ) -> Result<Option<DecodingKey>, KeyError> {
        if let Some(key) = self.find(kid).await {
            return Ok(Some(key));
        }
        let stale = self.inner.read().await.loaded_at.elapsed() >= RELOAD_BACKOFF;
        if stale {
            self.reload(now).await?;
            return Ok(self.find(kid).await);
        }
        Ok(None)
    }

    async fn find(&self, kid: &str) -> Option<DecodingKey> {
        self.inner
            .read()
            .await
            .verifying
            .iter()
            .find(|k| k.kid == kid)
            .map(|k| k.decoding.clone())
    }

    /// The public keys for `/jwks.json`.
    pub async fn jwks(&self) -> JwkSet {
        JwkSet {
            keys: self
                .inner
                .read()
                .await
                .verifying
                .iter()
                .map(|k| k.jwk.clone())
                .collect(),
        }
    }

    /// `coop keys rotate`: a new active key; the old one is retired and
    /// stays published for the grace period.
    /// `coop keys retire KID --now`: withdraws a retired key at once. It
    /// leaves `/jwks.json` and this process's key set on the next reload
    /// (within a second for the JWKS), and every replica refuses its tokens
    /// on their next call, since the per-call store check reads the
    /// withdrawal. The withdrawal and its audit row commit together.
    pub async fn withdraw(
        store: &Store,
        kid: &str,
        now: OffsetDateTime,
    ) -> Result<stored::Withdrawal, KeyError> {
        let mut tx = store.write().await?;
        let outcome = stored::withdraw(&mut tx, kid, now).await?;
        if outcome == stored::Withdrawal::Withdrawn {
            let mut event = AuditEvent::new(AuditKind::AdminAction);
            event.detail = serde_json::json!({ "action": "signing_key_withdrawn", "kid": kid });
            audit::record(&mut tx, &event, now).await?;
            tx.commit().await?;
        }
        Ok(outcome)
    }

    /// The rotation and its audit row commit together.
    pub async fn rotate(store: &Store, now: OffsetDateTime) -> Result<String, KeyError> {
        let new = generate()?;
        let mut tx = store.write().await?;
        stored::rotate_to(&mut tx, &new, now).await?;
        let mut event = AuditEvent::new(AuditKind::AdminAction);
        event.detail = serde_json::json!({ "action": "signing_key_rotated", "kid": new.kid });
        audit::record(&mut tx, &event, now).await?;
        tx.commit().await?;
        Ok(new.kid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::verified::token_hash;
    use crate::storage::Sql;
    use crate::storage::keys::Withdrawal;
    use crate::testing::TestStore;

    const GRACE: time::Duration = time::Duration::hours(24);
    const SECOND: time::Duration = time::Duration::seconds(1);

    /// Now, to the whole second the store keeps.
    fn now() -> OffsetDateTime {
        let now = OffsetDateTime::now_utc().unix_timestamp();
        OffsetDateTime::from_unix_timestamp(now).unwrap()
    }

    async fn loaded(db: &TestStore, now: OffsetDateTime) -> Keys {
        Keys::load_or_create(db.store.clone(), GRACE, now)
            .await
            .unwrap()
    }

    /// The `kid`s of `/jwks.json`, sorted.
    async fn published(keys: &Keys) -> Vec<String> {
        let mut kids: Vec<String> = keys
            .jwks()
            .await
            .keys
            .into_iter()
            .filter_map(|jwk| jwk.common.key_id)
            .collect();
        kids.sort();
        kids
    }

    fn sorted<const N: usize>(mut kids: [String; N]) -> Vec<String> {
        kids.sort();
        kids.to_vec()
    }

    async fn verifies(keys: &Keys, kid: &str, now: OffsetDateTime) -> bool {
        keys.decoding_key(kid, now).await.unwrap().is_some()
    }

    /// Makes the process's copy of the key set look `age` old, as if the
    /// last read had happened that long ago.
    async fn age(keys: &Keys, age: Duration) {
        let mut inner = keys.inner.write().await;
        inner.loaded_at = std::time::Instant::now().checked_sub(age).unwrap();
    }

    async fn audited(db: &TestStore, action: &str) -> i64 {
        Sql::new("select count(*) from audit_log where detail like $1")
            .bind(format!("%{action}%"))
            .fetch_scalar(&mut db.store.read().await.unwrap())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_first_start_makes_one_key_and_the_next_start_reads_it() {
        let db = TestStore::sqlite().await;
        let now = now();
        let first = loaded(&db, now).await;
        let (kid, _) = first.signing_key().await.unwrap();
        let second = loaded(&db, now).await;
        assert_eq!(second.signing_key().await.unwrap().0, kid);
        assert_eq!(published(&first).await, vec![kid.clone()]);
        assert_eq!(published(&second).await, vec![kid]);
        let rows = stored::all(&mut db.store.read().await.unwrap())
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
    }

    #[tokio::test]
    async fn a_generated_key_publishes_only_its_public_half() {
        let row = generate().unwrap();
        let jwk: serde_json::Value = serde_json::from_str(&row.public_jwk).unwrap();
        assert_eq!(jwk["kid"], row.kid.as_str());
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert_eq!(jwk["use"], "sig");
        assert_eq!(jwk["alg"], "ES256");
        assert!(jwk.get("d").is_none(), "the private scalar is published");
        assert_ne!(generate().unwrap().kid, row.kid);
    }

    #[tokio::test]
    async fn the_debug_form_shows_no_key_material() {
        let db = TestStore::sqlite().await;
        let keys = loaded(&db, now()).await;
        assert_eq!(format!("{keys:?}"), "Keys");
    }

    #[tokio::test]
    async fn a_retired_key_is_published_for_the_grace_and_not_a_second_longer() {
        let db = TestStore::sqlite().await;
        let start = now();
        let keys = loaded(&db, start).await;
        let (old, _) = keys.signing_key().await.unwrap();
        let retired_at = start + SECOND;
        let new = Keys::rotate(&db.store, retired_at).await.unwrap();
        assert_eq!(audited(&db, "signing_key_rotated").await, 1);

        keys.reload(retired_at + GRACE).await.unwrap();
        assert_eq!(keys.signing_key().await.unwrap().0, new);
        assert_eq!(published(&keys).await, sorted([old.clone(), new.clone()]));
        assert!(verifies(&keys, &old, retired_at + GRACE).await);

        keys.reload(retired_at + GRACE + SECOND).await.unwrap();
        assert_eq!(published(&keys).await, vec![new.clone()]);
        assert!(!verifies(&keys, &old, retired_at + GRACE + SECOND).await);
        assert!(verifies(&keys, &new, retired_at + GRACE + SECOND).await);
    }

    /// Another replica rotated: this one meets the new `kid` before its
    /// timer reloads.
    #[tokio::test]
    async fn an_unknown_kid_rereads_the_store_at_most_once_per_backoff() {
        let db = TestStore::sqlite().await;
        let now = now();
        let keys = loaded(&db, now).await;
        let rotated = Keys::rotate(&db.store, now).await.unwrap();

        // Just read: a flood of forged kids cannot become a flood of queries.
        assert!(!verifies(&keys, &rotated, now).await);
        age(&keys, RELOAD_BACKOFF - Duration::from_millis(100)).await;
        assert!(!verifies(&keys, &rotated, now).await);

        age(&keys, RELOAD_BACKOFF).await;
        assert!(verifies(&keys, &rotated, now).await);

        // The re-read of a forged kid counts as the one read of the backoff.
        age(&keys, RELOAD_BACKOFF).await;
        assert!(!verifies(&keys, "forged", now).await);
        let later = Keys::rotate(&db.store, now).await.unwrap();
        assert!(!verifies(&keys, &later, now).await);
    }

    #[tokio::test]
    async fn the_timer_rereads_only_a_copy_older_than_its_age() {
        let db = TestStore::sqlite().await;
        let now = now();
        let keys = loaded(&db, now).await;
        let rotated = Keys::rotate(&db.store, now).await.unwrap();

        keys.reload_if_older_than(Duration::from_secs(60), now)
            .await
            .unwrap();
        assert_ne!(keys.signing_key().await.unwrap().0, rotated);
        keys.reload_if_older_than(Duration::ZERO, now)
            .await
            .unwrap();
        assert_eq!(keys.signing_key().await.unwrap().0, rotated);
    }

    /// The table takes only ES256 rows; a public key that no longer reads
    /// is skipped, and then nothing signs rather than a wrong key.
    #[tokio::test]
    async fn an_unusable_stored_key_is_skipped_and_signs_nothing() {
        let mut foreign = generate().unwrap();
        foreign.algorithm = "RS256".to_owned();
        let mut garbled = generate().unwrap();
        garbled.public_jwk = "{\"kty\":\"EC\"}".to_owned();
        for bad in [&foreign, &garbled] {
            assert!(matches!(load_row(bad), Err(KeyError::Corrupt(kid, _)) if kid == bad.kid));
        }
        assert!(load_row(&generate().unwrap()).is_ok());

        let db = TestStore::sqlite().await;
        let now = now();
        let keys = loaded(&db, now).await;
        let (old, _) = keys.signing_key().await.unwrap();
        let mut tx = db.store.write().await.unwrap();
        stored::rotate_to(&mut tx, &garbled, now).await.unwrap();
        tx.commit().await.unwrap();
        keys.reload(now).await.unwrap();
        assert!(matches!(
            keys.signing_key().await,
            Err(KeyError::NoActiveKey)
        ));
        assert_eq!(published(&keys).await, vec![old]);
    }

    #[tokio::test]
    async fn only_a_retired_key_is_withdrawn_and_only_a_withdrawal_is_audited() {
        let db = TestStore::sqlite().await;
        let now = now();
        let keys = loaded(&db, now).await;
        let (old, _) = keys.signing_key().await.unwrap();
        let withdraw = |kid: String| {
            let store = db.store.clone();
            async move { Keys::withdraw(&store, &kid, now).await.unwrap() }
        };
        assert_eq!(withdraw(old.clone()).await, Withdrawal::Active);
        assert_eq!(withdraw("no-such-key".into()).await, Withdrawal::Unknown);
        assert_eq!(audited(&db, "signing_key_withdrawn").await, 0);

        let new = Keys::rotate(&db.store, now).await.unwrap();
        assert_eq!(withdraw(old.clone()).await, Withdrawal::Withdrawn);
        assert_eq!(withdraw(old.clone()).await, Withdrawal::AlreadyWithdrawn);
        assert_eq!(audited(&db, "signing_key_withdrawn").await, 1);
        keys.reload(now).await.unwrap();
        assert_eq!(published(&keys).await, vec![new]);
        assert!(!verifies(&keys, &old, now).await);
    }

    #[tokio::test]
    async fn a_key_leaving_the_set_takes_its_checked_signatures_with_it() {
        let db = TestStore::sqlite().await;
        let now = now();
        let keys = loaded(&db, now).await;
        let (old, _) = keys.signing_key().await.unwrap();
        let claims = |kid: &str| AccessClaims {
            iss: "https://coop.example".into(),
            sub: "u".into(),
            aud: "https://coop.example/mcp".into(),
            client_id: "c".into(),
            scope: "farm:read".into(),
            iat: now.unix_timestamp(),
            exp: (now + time::Duration::minutes(15)).unix_timestamp(),
            jti: kid.into(),
            grant_id: "g".into(),
            epoch: 0,
            cnf: None,
            kid: kid.into(),
        };
        keys.remember_verified(token_hash("old-token"), &old, claims(&old), now);
        let new = Keys::rotate(&db.store, now).await.unwrap();
        keys.reload(now).await.unwrap();
        keys.remember_verified(token_hash("new-token"), &new, claims(&new), now);
        assert!(
            keys.verified_claims(&token_hash("old-token"), now)
                .await
                .is_some()
        );
        assert_eq!(keys.verified.len(), 2);

        Keys::withdraw(&db.store, &old, now).await.unwrap();
        keys.reload(now).await.unwrap();
        assert_eq!(keys.verified.len(), 1, "the withdrawn key's entry stayed");
        assert!(
            keys.verified_claims(&token_hash("old-token"), now)
                .await
                .is_none()
        );
        let kept = keys.verified_claims(&token_hash("new-token"), now).await;
        assert_eq!(kept.map(|claims| claims.kid.clone()), Some(new));
    }
}
