//! Checking one DPoP proof (RFC 9449 §4.3), without HTTP types: the proof's
//! text, what the request was, and the current time in; the key's
//! thumbprint and the proof's `jti` out, or why not.
//!
//! In order: one proof of bounded size; three base64url parts; the header a
//! JSON object with `typ` `dpop+jwt`, an `alg` of [`ALGORITHMS`] and a
//! public `jwk` of the matching type (no private member, no `crit`); the
//! signature by that key; the claims `jti`, `htm` (the request's method),
//! `htu` (the URL Coop built from its issuer for this endpoint, compared
//! without query and fragment), `iat` (a JSON integer, compared without
//! arithmetic on it: [`claim_time`]) within [`MAX_AGE`] behind and
//! [`MAX_AHEAD`] ahead; `ath` (the SHA-256 of the access token) at the
//! resource; and last, when nonces are required, a `nonce` Coop issued.
//! Whether the `jti` was seen before is the store's question, asked by the
//! caller ([`super::spend`]).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde_json::{Map, Value};
use time::{Duration, OffsetDateTime};

use super::nonce::NonceKey;
use super::thumbprint::thumbprint;
use crate::oauth::claim_time;

/// The proof algorithms Coop accepts: asymmetric only (never `none`, never
/// an HMAC, RFC 9449 §11.6), as advertised in both metadata documents and
/// in the `DPoP` challenge. The same set as client assertions'
/// ([`crate::oauth::client_assertion::SIGNING_ALGORITHM_NAMES`]), in the
/// order DPoP advertises it.
pub const ALGORITHMS: [&str; 4] = ["ES256", "EdDSA", "RS256", "PS256"];

/// How old a proof's `iat` may be, in seconds.
pub const MAX_AGE: i64 = 300;
/// How far ahead of Coop's clock a proof's `iat` may be, in seconds.
pub const MAX_AHEAD: i64 = 60;
/// The longest proof read (an RSA-8192 key and signature fit).
pub const MAX_LEN: usize = 8 * 1024;
/// The longest `jti` accepted.
const MAX_JTI: usize = 256;

/// Members a public JWK never has: any of them means a private (or
/// symmetric) key was sent (RFC 9449 §4.3 item 6).
const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// Why a proof is not acceptable. Every variant but the nonce ones is
/// `invalid_dpop_proof` on the wire; the variant is for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error("no DPoP proof")]
    Missing,
    #[error("more than one DPoP header")]
    Several,
    #[error("the proof is too long")]
    TooLong,
    #[error("not a JWS in compact form, or its parts do not decode")]
    Malformed,
    #[error("typ is not dpop+jwt")]
    WrongType,
    #[error("alg is not one of the accepted asymmetric algorithms")]
    Algorithm,
    #[error("jwk is missing, private, or does not match alg")]
    Key,
    #[error("the signature does not verify with the proof's jwk")]
    BadSignature,
    #[error("a required claim is missing or malformed")]
    Claims,
    #[error("htm is not the request's method")]
    WrongMethod,
    #[error("htu is not this endpoint's URL")]
    WrongUri,
    #[error("iat is too old")]
    Stale,
    #[error("iat is in the future")]
    Early,
    #[error("ath is missing or not the access token's hash")]
    WrongTokenHash,
    #[error("the proof key is not the one the token is bound to")]
    KeyMismatch,
    #[error("the proof's jti was seen before")]
    Replayed,
    #[error("no nonce, and the server requires one")]
    NonceMissing,
    #[error("the nonce is not one the server issued, or is too old")]
    NonceStale,
}

impl ProofError {
    /// Answered with `use_dpop_nonce` and a fresh nonce, not as a bad proof.
    pub fn wants_nonce(self) -> bool {
        matches!(self, Self::NonceMissing | Self::NonceStale)
    }
}

/// What a proof must match.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    /// The request's method.
    pub method: &'a str,
    /// The endpoint's URL as Coop builds it from its issuer (never from
    /// the request's `Host`).
    pub uri: &'a str,
    /// At the resource: the access token the proof goes with (`ath`).
    pub access_token: Option<&'a str>,
    /// When nonces are required: the key they are checked with.
    pub nonces: Option<&'a NonceKey>,
}

/// A proof that passed every check but the `jti` look-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The RFC 7638 thumbprint of the proof key: a bound token's `cnf.jkt`.
    pub jkt: String,
    pub jti: String,
    pub iat: i64,
}

impl Proof {
    /// What the store keeps of the proof to recognise a replay: a hash of
    /// the key and the `jti` (so one client's `jti` never collides with
    /// another's), hex.
    pub fn replay_key(&self) -> String {
        let mut material = self.jkt.as_bytes().to_vec();
        material.push(0);
        material.extend_from_slice(self.jti.as_bytes());
        hex::encode(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &material).as_ref())
    }

    /// Until when (Unix seconds) the proof could be accepted, and so must
    /// be remembered.
    pub fn remember_until(&self) -> i64 {
        self.iat.saturating_add(MAX_AGE)
    }
}

/// `ath`: base64url of the SHA-256 of the access token (RFC 9449 §4.2).
pub fn token_hash(access_token: &str) -> String {
    URL_SAFE_NO_PAD.encode(
        aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, access_token.as_bytes()).as_ref(),
    )
}

#[derive(Deserialize)]
struct Claims {
    jti: Option<String>,
    htm: Option<String>,
    htu: Option<String>,
    /// Read as [`claim_time::numeric_date`] reads every time claim.
    iat: Option<Value>,
    ath: Option<String>,
    nonce: Option<String>,
}

fn decode_json<T: serde::de::DeserializeOwned>(part: &str) -> Result<T, ProofError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| ProofError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| ProofError::Malformed)
}

/// The proof's key as a verifier for `alg`, after checking that it is a
/// public key of the type `alg` needs.
fn public_key(alg: Algorithm, jwk: &Map<String, Value>) -> Result<DecodingKey, ProofError> {
    if PRIVATE_MEMBERS.iter().any(|m| jwk.contains_key(*m)) {
        return Err(ProofError::Key);
    }
    let text = |name: &str| jwk.get(name).and_then(Value::as_str).ok_or(ProofError::Key);
    let decoded_len = |name: &str| -> Result<usize, ProofError> {
        URL_SAFE_NO_PAD
            .decode(text(name)?)
            .map(|b| b.len())
            .map_err(|_| ProofError::Key)
    };
    let (kty, crv) = (text("kty")?, jwk.get("crv").and_then(Value::as_str));
    let key = match alg {
        Algorithm::ES256 if kty == "EC" && crv == Some("P-256") => {
            if decoded_len("x")? != 32 || decoded_len("y")? != 32 {
                return Err(ProofError::Key);
            }
            DecodingKey::from_ec_components(text("x")?, text("y")?)
        }
        Algorithm::EdDSA if kty == "OKP" && crv == Some("Ed25519") => {
            if decoded_len("x")? != 32 {
                return Err(ProofError::Key);
            }
            DecodingKey::from_ed_components(text("x")?)
        }
        Algorithm::RS256 | Algorithm::PS256 if kty == "RSA" => {
            DecodingKey::from_rsa_components(text("n")?, text("e")?)
        }
        _ => return Err(ProofError::Key),
    };
    key.map_err(|_| ProofError::Key)
}

/// Whether `htu` names `expected`: same scheme, host, port and path once
/// both are parsed (RFC 3986 normalisation), query and fragment ignored.
fn same_endpoint(htu: &str, expected: &str) -> bool {
    let (Ok(htu), Ok(expected)) = (url::Url::parse(htu), url::Url::parse(expected)) else {
        return false;
    };
    htu.scheme() == expected.scheme()
        && htu.host_str() == expected.host_str()
        && htu.port_or_known_default() == expected.port_or_known_default()
        && htu.path() == expected.path()
}

/// Checks the one proof the request carried (`proofs` are the values of
/// its `DPoP` headers) against `expected` at `now`.
pub fn verify(
    proofs: &[&str],
    expected: &Expected<'_>,
    now: OffsetDateTime,
) -> Result<Proof, ProofError> {
    let proof = match proofs {
        [] => return Err(ProofError::Missing),
        [one] => one.trim(),
        _ => return Err(ProofError::Several),
    };
    if proof.len() > MAX_LEN {
        return Err(ProofError::TooLong);
    }
    let mut parts = proof.split('.');
    let (Some(header_part), Some(claims_part), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ProofError::Malformed);
    };

    let header: Map<String, Value> = decode_json(header_part)?;
    if !header
        .get("typ")
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("dpop+jwt"))
    {
        return Err(ProofError::WrongType);
    }
    // The advertised list decides; the JOSE name is read as the one
    // asymmetric allow-list of client assertions reads it.
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .filter(|name| ALGORITHMS.contains(name))
        .and_then(crate::oauth::client_assertion::algorithm)
        .ok_or(ProofError::Algorithm)?;
    // No extension Coop would have to understand (RFC 7515 §4.1.11).
    if header.contains_key("crit") {
        return Err(ProofError::Malformed);
    }
    let jwk = header
        .get("jwk")
        .and_then(Value::as_object)
        .ok_or(ProofError::Key)?;
    let key = public_key(alg, jwk)?;
    let jkt = thumbprint(jwk).ok_or(ProofError::Key)?;

    let signed = &proof[..header_part.len() + 1 + claims_part.len()];
    if !jsonwebtoken::crypto::verify(signature, signed.as_bytes(), &key, alg).unwrap_or(false) {
        return Err(ProofError::BadSignature);
    }

    let claims: Claims = decode_json(claims_part).map_err(|_| ProofError::Claims)?;
    let iat = claims.iat.as_ref().and_then(claim_time::numeric_date);
    let (Some(jti), Some(htm), Some(htu), Some(iat)) = (claims.jti, claims.htm, claims.htu, iat)
    else {
        return Err(ProofError::Claims);
    };
    if jti.is_empty() || jti.len() > MAX_JTI {
        return Err(ProofError::Claims);
    }
    if htm != expected.method {
        return Err(ProofError::WrongMethod);
    }
    if !same_endpoint(&htu, expected.uri) {
        return Err(ProofError::WrongUri);
    }
    if claim_time::compare(iat, now, -Duration::seconds(MAX_AGE)).is_lt() {
        return Err(ProofError::Stale);
    }
    if claim_time::compare(iat, now, Duration::seconds(MAX_AHEAD)).is_gt() {
        return Err(ProofError::Early);
    }
    if let Some(token) = expected.access_token
        && claims.ath.as_deref() != Some(token_hash(token).as_str())
    {
        return Err(ProofError::WrongTokenHash);
    }
    if let Some(nonces) = expected.nonces {
        match claims.nonce.as_deref() {
            None => return Err(ProofError::NonceMissing),
            Some(nonce) if !nonces.accepts(nonce, now) => return Err(ProofError::NonceStale),
            Some(_) => {}
        }
    }
    Ok(Proof { jkt, jti, iat })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::oauth::dpop::testing::{ProofKey, proof};
    use serde_json::json;
    use time::macros::datetime;

    #[test]
    fn proof_algorithms_are_the_client_assertion_allow_list() {
        let mut dpop = ALGORITHMS.to_vec();
        let mut assertions = crate::oauth::client_assertion::SIGNING_ALGORITHM_NAMES.to_vec();
        dpop.sort_unstable();
        assertions.sort_unstable();
        assert_eq!(dpop, assertions);
    }

    const NOW: OffsetDateTime = datetime!(2026-03-10 12:00 UTC);
    const MCP: &str = "https://coop.example/mcp";

    fn claims(token: &str) -> Value {
        json!({
            "jti": "j-1",
            "htm": "POST",
            "htu": MCP,
            "iat": NOW.unix_timestamp(),
            "ath": token_hash(token),
        })
    }

    fn at_mcp<'a>(token: &'a str, nonces: Option<&'a NonceKey>) -> Expected<'a> {
        Expected {
            method: "POST",
            uri: MCP,
            access_token: Some(token),
            nonces,
        }
    }

    #[test]
    fn a_good_proof_of_each_algorithm_yields_its_keys_thumbprint() {
        for key in [
            ProofKey::es256(),
            ProofKey::ed25519(),
            ProofKey::rs256(),
            ProofKey::ps256(),
        ] {
            let p = proof(&key, &claims("tok"));
            let verified = verify(&[&p], &at_mcp("tok", None), NOW).unwrap();
            assert_eq!(verified.jkt, key.thumbprint(), "{}", key.alg);
            assert_eq!(verified.jti, "j-1");
        }
    }

    #[test]
    fn each_wrong_claim_is_refused_with_its_reason() {
        let key = ProofKey::es256();
        type Breaks = fn(&mut Value);
        let cases: [(Breaks, ProofError); 10] = [
            (|c| c["htm"] = "GET".into(), ProofError::WrongMethod),
            (
                |c| c["htu"] = "https://coop.example/token".into(),
                ProofError::WrongUri,
            ),
            (
                |c| c["htu"] = "https://evil.example/mcp".into(),
                ProofError::WrongUri,
            ),
            (|c| c["htu"] = "not a url".into(), ProofError::WrongUri),
            (
                |c| c["iat"] = (NOW.unix_timestamp() - MAX_AGE - 1).into(),
                ProofError::Stale,
            ),
            (
                |c| c["iat"] = (NOW.unix_timestamp() + MAX_AHEAD + 1).into(),
                ProofError::Early,
            ),
            (
                |c| c["ath"] = token_hash("another").into(),
                ProofError::WrongTokenHash,
            ),
            (
                |c| drop(c.as_object_mut().unwrap().remove("ath")),
                ProofError::WrongTokenHash,
            ),
            (
                |c| drop(c.as_object_mut().unwrap().remove("jti")),
                ProofError::Claims,
            ),
            (|c| c["iat"] = "yesterday".into(), ProofError::Claims),
        ];
        for (breaks, why) in cases {
            let mut c = claims("tok");
            breaks(&mut c);
            assert_eq!(
                verify(&[&proof(&key, &c)], &at_mcp("tok", None), NOW),
                Err(why)
            );
        }
        // The query and fragment of htu do not count; case and default port do not either.
        let mut c = claims("tok");
        c["htu"] = "HTTPS://Coop.Example:443/mcp?x=1#f".into();
        assert!(verify(&[&proof(&key, &c)], &at_mcp("tok", None), NOW).is_ok());
        // At the token endpoint no ath is asked for.
        let mut c = claims("tok");
        c["htu"] = "https://coop.example/token".into();
        let at_token = Expected {
            method: "POST",
            uri: "https://coop.example/token",
            access_token: None,
            nonces: None,
        };
        assert!(verify(&[&proof(&key, &c)], &at_token, NOW).is_ok());
    }

    #[test]
    fn a_proof_issued_at_either_edge_of_its_window_is_accepted() {
        let key = ProofKey::es256();
        let now = NOW.unix_timestamp();
        for (iat, answer) in [
            (now - MAX_AGE - 1, Err(ProofError::Stale)),
            (now - MAX_AGE, Ok(())),
            (now + MAX_AHEAD, Ok(())),
            (now + MAX_AHEAD + 1, Err(ProofError::Early)),
        ] {
            let mut c = claims("tok");
            c["iat"] = iat.into();
            let verified = verify(&[&proof(&key, &c)], &at_mcp("tok", None), NOW);
            assert_eq!(verified.map(|_| ()), answer, "iat {}", iat - now);
        }
    }

    #[test]
    fn a_wrong_header_key_or_signature_is_refused() {
        let key = ProofKey::es256();
        let c = claims("tok");
        let good = proof(&key, &c);
        let expected = at_mcp("tok", None);
        let with_header = |change: &dyn Fn(&mut Value)| {
            let mut header = key.header();
            change(&mut header);
            key.sign_with_header(&header, &c)
        };
        assert_eq!(verify(&[], &expected, NOW), Err(ProofError::Missing));
        assert_eq!(
            verify(&[&good, &good], &expected, NOW),
            Err(ProofError::Several)
        );
        assert_eq!(
            verify(
                &[&with_header(&|h| h["typ"] = "JWT".into())],
                &expected,
                NOW
            ),
            Err(ProofError::WrongType)
        );
        for alg in ["none", "HS256", "ES384", "RS512"] {
            let forged = with_header(&|h| h["alg"] = alg.into());
            assert_eq!(
                verify(&[&forged], &expected, NOW),
                Err(ProofError::Algorithm),
                "{alg}"
            );
        }
        // A private member in the jwk: the client sent its private key.
        let private = with_header(&|h| h["jwk"]["d"] = "c2VjcmV0".into());
        assert_eq!(verify(&[&private], &expected, NOW), Err(ProofError::Key));
        let symmetric = with_header(&|h| h["jwk"] = json!({"kty": "oct", "k": "c2VjcmV0"}));
        assert_eq!(verify(&[&symmetric], &expected, NOW), Err(ProofError::Key));
        let no_key = with_header(&|h| drop(h.as_object_mut().unwrap().remove("jwk")));
        assert_eq!(verify(&[&no_key], &expected, NOW), Err(ProofError::Key));
        // An EC key under an RSA algorithm.
        let mismatched = with_header(&|h| h["alg"] = "RS256".into());
        assert_eq!(verify(&[&mismatched], &expected, NOW), Err(ProofError::Key));
        let crit = with_header(&|h| h["crit"] = json!(["exp"]));
        assert_eq!(verify(&[&crit], &expected, NOW), Err(ProofError::Malformed));
        // Another key's jwk over this key's signature.
        let other = ProofKey::es256();
        let swapped = with_header(&|h| h["jwk"] = other.public_jwk());
        assert_eq!(
            verify(&[&swapped], &expected, NOW),
            Err(ProofError::BadSignature)
        );
        // Altered claims.
        let mut altered = c.clone();
        altered["jti"] = "j-2".into();
        let altered = crate::testing::jose::with_claims(&good, &altered);
        assert_eq!(
            verify(&[&altered], &expected, NOW),
            Err(ProofError::BadSignature)
        );
        for malformed in ["", "a.b", "a.b.c.d", "!!.!!.!!"] {
            assert_eq!(
                verify(&[malformed], &expected, NOW),
                Err(ProofError::Malformed),
                "{malformed}"
            );
        }
        assert_eq!(
            verify(&[&"a".repeat(MAX_LEN + 1)], &expected, NOW),
            Err(ProofError::TooLong)
        );
        // The longest proof allowed is read (and is then not a JWT).
        assert_eq!(
            verify(&[&"a".repeat(MAX_LEN)], &expected, NOW),
            Err(ProofError::Malformed)
        );
    }

    #[test]
    fn a_key_labelled_with_another_type_or_curve_is_refused() {
        let c = claims("tok");
        let expected = at_mcp("tok", None);
        let (es256, ed25519, rs256) = (ProofKey::es256(), ProofKey::ed25519(), ProofKey::rs256());
        type Relabel = fn(&mut Value);
        let cases: [(&ProofKey, Relabel, &str); 7] = [
            (&es256, |k| k["crv"] = "P-384".into(), "ES256 on P-384"),
            (&es256, |k| k["kty"] = "OKP".into(), "ES256 with an OKP key"),
            (
                &es256,
                |k| k["y"] = URL_SAFE_NO_PAD.encode([7u8; 33]).into(),
                "ES256 with a 33-byte y",
            ),
            (&ed25519, |k| k["crv"] = "X25519".into(), "EdDSA on X25519"),
            (&ed25519, |k| k["kty"] = "EC".into(), "EdDSA with an EC key"),
            (&rs256, |k| k["kty"] = "EC".into(), "RS256 with an EC key"),
            // Every member an EC key's thumbprint takes, beside the RSA ones.
            (
                &rs256,
                |k| {
                    k["kty"] = "EC".into();
                    k["crv"] = "P-256".into();
                    k["x"] = URL_SAFE_NO_PAD.encode([1u8; 32]).into();
                    k["y"] = URL_SAFE_NO_PAD.encode([2u8; 32]).into();
                },
                "RS256 with an RSA key labelled EC",
            ),
        ];
        for (key, relabel, case) in cases {
            let mut header = key.header();
            relabel(&mut header["jwk"]);
            let relabelled = key.sign_with_header(&header, &c);
            assert_eq!(
                verify(&[&relabelled], &expected, NOW),
                Err(ProofError::Key),
                "{case}"
            );
        }
    }

    #[test]
    fn a_required_nonce_must_be_one_coop_issued_lately() {
        let key = ProofKey::es256();
        let nonces = NonceKey::new(crate::secrets::MacKey::derive(b"k", "dpop nonce"));
        let expected = at_mcp("tok", Some(&nonces));
        let mut c = claims("tok");
        assert_eq!(
            verify(&[&proof(&key, &c)], &expected, NOW),
            Err(ProofError::NonceMissing)
        );
        c["nonce"] = NonceKey::new(crate::secrets::MacKey::derive(b"other", "dpop nonce"))
            .issue(NOW)
            .into();
        assert_eq!(
            verify(&[&proof(&key, &c)], &expected, NOW),
            Err(ProofError::NonceStale)
        );
        c["nonce"] = nonces.issue(NOW - time::Duration::minutes(20)).into();
        assert_eq!(
            verify(&[&proof(&key, &c)], &expected, NOW),
            Err(ProofError::NonceStale)
        );
        c["nonce"] = nonces.issue(NOW).into();
        assert!(verify(&[&proof(&key, &c)], &expected, NOW).is_ok());
        assert!(ProofError::NonceStale.wants_nonce() && !ProofError::Stale.wants_nonce());
    }

    #[test]
    fn the_replay_key_is_per_key_and_jti() {
        let a = Proof {
            jkt: "k1".into(),
            jti: "j".into(),
            iat: 10,
        };
        let b = Proof {
            jkt: "k2".into(),
            jti: "j".into(),
            iat: 10,
        };
        assert_ne!(a.replay_key(), b.replay_key());
        assert_eq!(a.replay_key().len(), 64);
        assert_eq!(a.remember_until(), 10 + MAX_AGE);
    }
}
