//! Client assertions: a client proving who it is with a JWT it signed with
//! its private key (`private_key_jwt`, RFC 7523 §2.2 over RFC 7521 §4.2).
//!
//! This module owns the one verifier every caller uses (client
//! authentication at `/token` and `/revoke`, and the automations'
//! `client_credentials` grant): [`verify`] takes the assertion, what it
//! must say ([`Expected`]: the client id, the audiences that name Coop, and
//! the client's registered algorithm if any), where the client's keys come
//! from ([`KeySource`]), the current time, and where used `jti`s are
//! remembered ([`JtiStore`]); it returns the [`VerifiedAssertion`] or the
//! [`AssertionError`] saying which check refused it. No HTTP types; the
//! clock is passed in.
//!
//! The checks, in order (each refusal is its own variant, for the log; on
//! the wire every one is `invalid_client`):
//!
//! 1. a compact JWS of at most [`MAX_ASSERTION_BYTES`], no `crit` header;
//! 2. `alg` from the allow-list [`SIGNING_ALGORITHMS`] (ES256, RS256,
//!    PS256, EdDSA): never `none`, never HMAC (whose key would be a secret
//!    shared with the client, which this method exists to avoid), and the
//!    client's registered `token_endpoint_auth_signing_alg` when it has one;
//! 3. a key of the client's set: the one its `kid` names (a set behind a
//!    `jwks_uri` is fetched again once when the `kid` is unknown, see
//!    [`crate::oauth::cimd::CimdRequest::key_set_with_kid`]), or, without a
//!    `kid`, any of its keys that fits the algorithm; a key whose `use`,
//!    `key_ops` or `alg` says it is not for this never verifies;
//! 4. the signature, by that key;
//! 5. `iss` = `sub` = the client id; `aud` names Coop (its issuer or its
//!    token endpoint), and names nothing else;
//! 6. `exp` present, not past, and at most [`MAX_LIFETIME`] ahead (so a
//!    `jti` needs remembering only that long); `nbf` and `iat`, when
//!    present, not in the future; [`CLOCK_SKEW`] allowed on each. Each is
//!    a JSON integer of seconds, compared without arithmetic on the claim
//!    ([`claim_time`]), so `i64::MAX` or a second before the year 10000 is
//!    "too long-lived", never a panic;
//! 7. `jti` present and never seen before for this client: it is recorded
//!    (as a SHA-256 hash) in the shared store until the assertion expires,
//!    by an insert that fails on a duplicate, so two replicas cannot both
//!    accept one assertion (threat "client assertion replayed"). This is
//!    last, so an assertion refused for any other reason spends nothing.

use std::future::Future;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::PublicKeyUse;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyOperations};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use time::OffsetDateTime;

use crate::oauth::cimd::{CimdError, CimdRequest, Throttle};
use crate::oauth::claim_time;
use crate::oauth::client::ClientKeys;
use crate::secrets;
use crate::storage::{Store, StoreError, client_assertions};

/// `client_assertion_type` for a JWT (RFC 7523 §2.2), compared exactly.
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The algorithms an assertion may be signed with: asymmetric only.
pub const SIGNING_ALGORITHMS: [Algorithm; 4] = [
    Algorithm::ES256,
    Algorithm::RS256,
    Algorithm::PS256,
    Algorithm::EdDSA,
];

/// Their names, as advertised in the server metadata
/// (`token_endpoint_auth_signing_alg_values_supported`).
pub const SIGNING_ALGORITHM_NAMES: [&str; 4] = ["ES256", "RS256", "PS256", "EdDSA"];

/// How far ahead an assertion's `exp` may be. Assertions are made for one
/// request; a long-lived one is a bearer credential in all but name, and
/// every `jti` must be remembered until its `exp`.
pub const MAX_LIFETIME: time::Duration = time::Duration::minutes(5);

/// The clock difference tolerated between the client and Coop, on `exp`,
/// `nbf` and `iat`.
pub const CLOCK_SKEW: time::Duration = time::Duration::seconds(60);

/// The longest assertion read: a JWT signed with a 4096-bit RSA key and
/// ordinary claims is well under 2 KiB.
pub const MAX_ASSERTION_BYTES: usize = 8 * 1024;

/// The longest `jti` accepted.
pub const MAX_JTI_BYTES: usize = 256;

/// An allow-listed algorithm by its JOSE name.
pub fn algorithm(name: &str) -> Option<Algorithm> {
    SIGNING_ALGORITHM_NAMES
        .iter()
        .position(|allowed| *allowed == name)
        .map(|i| SIGNING_ALGORITHMS[i])
}

/// What a valid assertion must say.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    /// Its `iss` and `sub`.
    pub client_id: &'a str,
    /// The values its `aud` may hold: Coop's issuer and its token endpoint.
    pub audiences: &'a [&'a str],
    /// The client's registered `token_endpoint_auth_signing_alg`: when
    /// set, the only algorithm accepted from it.
    pub algorithm: Option<Algorithm>,
}

/// Why the client's key set could not be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeySetError {
    /// Fetching it failed or it is not a usable set; for the log.
    #[error("the client's key set cannot be used: {0}")]
    Unusable(String),
    /// Fetching it is needed and a fetch limit refuses that now.
    #[error("the client's key set is not fetched now: {0}")]
    Throttled(Throttle),
}

/// Where a client's public keys come from.
pub trait KeySource {
    /// The client's key set. `kid` is the key the assertion names: a source
    /// holding a cached copy without it may fetch the set again (once).
    fn key_set(
        &self,
        kid: Option<&str>,
        now: OffsetDateTime,
    ) -> impl Future<Output = Result<Arc<JwkSet>, KeySetError>> + Send;
}

/// A key set held in hand (registered inline, or already fetched).
impl KeySource for Arc<JwkSet> {
    async fn key_set(
        &self,
        _: Option<&str>,
        _: OffsetDateTime,
    ) -> Result<Arc<JwkSet>, KeySetError> {
        Ok(self.clone())
    }
}

/// A client's keys as registered: held inline, or behind a `jwks_uri`
/// fetched through `cimd` (the SSRF guard, limits and cache of metadata
/// documents), fetched again once when the assertion's `kid` is unknown.
#[derive(Clone, Copy, Debug)]
pub struct ClientKeySource<'a> {
    pub keys: &'a ClientKeys,
    pub cimd: &'a CimdRequest<'a>,
}

impl KeySource for ClientKeySource<'_> {
    async fn key_set(
        &self,
        kid: Option<&str>,
        now: OffsetDateTime,
    ) -> Result<Arc<JwkSet>, KeySetError> {
        let uri = match self.keys {
            ClientKeys::Inline(set) => return Ok(set.clone()),
            ClientKeys::Uri(uri) => uri,
        };
        let fetched = match kid {
            Some(kid) => self.cimd.key_set_with_kid(uri, kid, now).await,
            None => self.cimd.key_set(uri, now).await,
        };
        fetched.map_err(|err| match err {
            CimdError::Throttled(throttle) => KeySetError::Throttled(throttle),
            other => KeySetError::Unusable(other.to_string()),
        })
    }
}

/// Where the `jti`s already used are remembered.
pub trait JtiStore {
    /// Records `jti_hash` for `client_id` until `until`; `Ok(false)` if it
    /// is already recorded (a replay). Atomic: of two concurrent calls with
    /// the same values, at most one returns `Ok(true)`.
    fn first_use(
        &self,
        client_id: &str,
        jti_hash: &str,
        until: OffsetDateTime,
        now: OffsetDateTime,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// The shared store: one table, keyed by (client, `jti` hash), so every
/// replica sees every use.
impl JtiStore for Store {
    async fn first_use(
        &self,
        client_id: &str,
        jti_hash: &str,
        until: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write().await?;
        let first = client_assertions::record_jti(&mut tx, client_id, jti_hash, until, now).await?;
        tx.commit().await?;
        Ok(first)
    }
}

/// An assertion that passed every check, its `jti` now spent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedAssertion {
    pub client_id: String,
    pub algorithm: Algorithm,
    /// The `kid` it named, if any.
    pub kid: Option<String>,
    pub expires_at: OffsetDateTime,
}

/// Why an assertion was refused. Every variant but `Throttled` and `Store`
/// is the client's failure (`invalid_client` on the wire); the variant and
/// its text are for the log.
#[derive(Debug, thiserror::Error)]
pub enum AssertionError {
    #[error("not a signed JWT Coop reads: {0}")]
    Malformed(&'static str),
    #[error("algorithm {0:?} is not accepted")]
    Algorithm(String),
    #[error("no key of the client's set fits the assertion's kid and algorithm")]
    UnknownKey,
    #[error(transparent)]
    KeySet(KeySetError),
    #[error("the signature does not verify")]
    BadSignature,
    #[error("iss is not the client id")]
    WrongIssuer,
    #[error("sub is not the client id")]
    WrongSubject,
    #[error("aud does not name Coop, or names another audience too")]
    WrongAudience,
    #[error("exp is missing or not a number")]
    MissingExpiry,
    #[error("expired")]
    Expired,
    #[error("exp is more than the allowed lifetime ahead")]
    TooLongLived,
    #[error("nbf or iat is in the future")]
    NotYetValid,
    #[error("jti is missing, empty or too long")]
    MissingJti,
    #[error("jti already used")]
    Replayed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The `sub` an assertion claims, read without verifying anything: which
/// client to look up when the request names none (RFC 7523 §3 lets
/// `client_id` be left out). [`verify`] then checks everything.
pub fn claimed_client_id(assertion: &str) -> Option<String> {
    if assertion.len() > MAX_ASSERTION_BYTES {
        return None;
    }
    let claims = assertion.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).ok()?).ok()?;
    claims.get("sub")?.as_str().map(str::to_owned)
}

/// Verifies `assertion` as described in the module documentation, and
/// spends its `jti`.
pub async fn verify(
    assertion: &str,
    expected: &Expected<'_>,
    keys: &impl KeySource,
    now: OffsetDateTime,
    jtis: &impl JtiStore,
) -> Result<VerifiedAssertion, AssertionError> {
    let header = read_header(assertion)?;
    let alg =
        algorithm(&header.alg).ok_or_else(|| AssertionError::Algorithm(header.alg.clone()))?;
    if expected
        .algorithm
        .is_some_and(|registered| registered != alg)
    {
        return Err(AssertionError::Algorithm(header.alg));
    }
    let set = keys
        .key_set(header.kid.as_deref(), now)
        .await
        .map_err(AssertionError::KeySet)?;
    let claims = verified_claims(assertion, &set, header.kid.as_deref(), alg)?;
    let expires_at = check_claims(&claims, expected, now)?;
    let jti = match claims.get("jti").and_then(Value::as_str) {
        Some(jti) if !jti.is_empty() && jti.len() <= MAX_JTI_BYTES => jti,
        _ => return Err(AssertionError::MissingJti),
    };
    // Remembered past `exp` by the skew that `exp` itself is allowed.
    let until = expires_at
        .checked_add(CLOCK_SKEW)
        .ok_or(AssertionError::TooLongLived)?;
    if !jtis
        .first_use(expected.client_id, &secrets::hash_secret(jti), until, now)
        .await?
    {
        return Err(AssertionError::Replayed);
    }
    Ok(VerifiedAssertion {
        client_id: expected.client_id.to_owned(),
        algorithm: alg,
        kid: header.kid,
        expires_at,
    })
}

/// The members of the JOSE header Coop looks at.
#[derive(serde::Deserialize)]
struct RawHeader {
    alg: String,
    kid: Option<String>,
    crit: Option<Value>,
}

fn read_header(assertion: &str) -> Result<RawHeader, AssertionError> {
    if assertion.len() > MAX_ASSERTION_BYTES {
        return Err(AssertionError::Malformed("longer than Coop reads"));
    }
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, _, _] = parts.as_slice() else {
        return Err(AssertionError::Malformed("not three dot-separated parts"));
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| AssertionError::Malformed("header is not base64url"))?;
    let header: RawHeader = serde_json::from_slice(&bytes)
        .map_err(|_| AssertionError::Malformed("header is not a JOSE header with an alg"))?;
    // An extension the signer marked critical must be understood, and Coop
    // understands none (RFC 7515 §4.1.11).
    if header.crit.is_some() {
        return Err(AssertionError::Malformed("header has crit"));
    }
    Ok(header)
}

/// The claims, once a key of `set` verified the signature.
fn verified_claims(
    assertion: &str,
    set: &JwkSet,
    kid: Option<&str>,
    alg: Algorithm,
) -> Result<Value, AssertionError> {
    let candidates: Vec<&Jwk> = match kid {
        Some(kid) => set
            .keys
            .iter()
            .filter(|key| key.common.key_id.as_deref() == Some(kid))
            .collect(),
        None => set.keys.iter().collect(),
    };
    let keys: Vec<DecodingKey> = candidates
        .into_iter()
        .filter(|key| fits(key, alg))
        .filter_map(|key| DecodingKey::from_jwk(key).ok())
        .collect();
    if keys.is_empty() {
        return Err(AssertionError::UnknownKey);
    }
    // The signature is checked on its own and the claims are read here,
    // not by `jsonwebtoken::decode`: its claim validation parses `sub`,
    // `exp` and the rest on its own terms before `check_claims` could,
    // and would refuse a malformed `sub` as a malformed token; every claim
    // is `check_claims`'s, against the injected clock.
    let Some((signed, signature)) = assertion.rsplit_once('.') else {
        return Err(AssertionError::Malformed("not three dot-separated parts"));
    };
    // Without a `kid`, any key of the set that fits may be the one.
    let verified = keys.iter().any(|key| {
        jsonwebtoken::crypto::verify(signature, signed.as_bytes(), key, alg).unwrap_or(false)
    });
    if !verified {
        return Err(AssertionError::BadSignature);
    }
    signed
        .split_once('.')
        .and_then(|(_, claims)| URL_SAFE_NO_PAD.decode(claims).ok())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .filter(Value::is_object)
        .ok_or(AssertionError::Malformed("claims are not a JSON object"))
}

/// Whether `key` may verify a signature made with `alg`: its type and curve
/// are the algorithm's, and what it says of its own use allows it.
fn fits(key: &Jwk, alg: Algorithm) -> bool {
    let kind = match (&key.algorithm, alg) {
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::RSA(_), Algorithm::RS256 | Algorithm::PS256) => true,
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    };
    let common = &key.common;
    let for_signatures = common
        .public_key_use
        .as_ref()
        .is_none_or(|key_use| *key_use == PublicKeyUse::Signature);
    let may_verify = common
        .key_operations
        .as_ref()
        .is_none_or(|ops| ops.contains(&KeyOperations::Verify));
    let same_alg = common
        .key_algorithm
        .is_none_or(|key_alg| key_alg.to_string() == alg_name(alg));
    kind && for_signatures && may_verify && same_alg
}

fn alg_name(alg: Algorithm) -> &'static str {
    SIGNING_ALGORITHMS
        .iter()
        .position(|allowed| *allowed == alg)
        .map_or("", |i| SIGNING_ALGORITHM_NAMES[i])
}

/// Checks `iss`, `sub`, `aud`, `exp`, `nbf` and `iat`; returns `exp`.
fn check_claims(
    claims: &Value,
    expected: &Expected<'_>,
    now: OffsetDateTime,
) -> Result<OffsetDateTime, AssertionError> {
    if claims.get("iss").and_then(Value::as_str) != Some(expected.client_id) {
        return Err(AssertionError::WrongIssuer);
    }
    if claims.get("sub").and_then(Value::as_str) != Some(expected.client_id) {
        return Err(AssertionError::WrongSubject);
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let array_len = claims.get("aud").and_then(Value::as_array).map(Vec::len);
    // Every value must name Coop: an assertion also addressed to another
    // server could be replayed here by that server (and the reverse).
    if audiences.is_empty()
        || array_len.is_some_and(|len| len != audiences.len())
        || !audiences.iter().all(|aud| expected.audiences.contains(aud))
    {
        return Err(AssertionError::WrongAudience);
    }
    let exp = claims
        .get("exp")
        .and_then(claim_time::numeric_date)
        .ok_or(AssertionError::MissingExpiry)?;
    if claim_time::compare(exp, now, -CLOCK_SKEW).is_le() {
        return Err(AssertionError::Expired);
    }
    if claim_time::compare(exp, now, MAX_LIFETIME + CLOCK_SKEW).is_gt() {
        return Err(AssertionError::TooLongLived);
    }
    for name in ["nbf", "iat"] {
        let Some(value) = claims.get(name) else {
            continue;
        };
        let t = claim_time::numeric_date(value).ok_or(AssertionError::Malformed(
            "nbf or iat is not a number of seconds",
        ))?;
        if claim_time::compare(t, now, CLOCK_SKEW).is_gt() {
            return Err(AssertionError::NotYetValid);
        }
    }
    // Within a few minutes of `now`, so always an instant.
    claim_time::instant(exp, time::Duration::ZERO).ok_or(AssertionError::TooLongLived)
}

#[cfg(test)]
mod props;
#[cfg(test)]
pub mod tests;
