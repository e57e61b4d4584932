//! A client's DPoP proof keys (RFC 9449), for the unit tests and the
//! integration suite alike: keys of each algorithm Coop accepts, their
//! public JWKs and RFC 7638 thumbprints (computed here, independently of
//! Coop's own), and proofs signed as a client library would, with any
//! header or claim changed.
// Shared with the integration suite, which uses what the unit tests do not.
#![allow(dead_code)]

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RSA_PKCS1_SHA256,
    RSA_PSS_SHA256, RsaKeyPair, RsaPublicKeyComponents,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

enum Pair {
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
    Rsa(RsaKeyPair, bool),
}

/// A client's proof key.
pub struct ProofKey {
    pub alg: &'static str,
    pair: Pair,
}

impl ProofKey {
    pub fn es256() -> Self {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        Self {
            alg: "ES256",
            pair: Pair::Ec(pair),
        }
    }

    pub fn ed25519() -> Self {
        Self {
            alg: "EdDSA",
            pair: Pair::Ed(Ed25519KeyPair::generate().unwrap()),
        }
    }

    pub fn rs256() -> Self {
        let pair = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        Self {
            alg: "RS256",
            pair: Pair::Rsa(pair, false),
        }
    }

    pub fn ps256() -> Self {
        let pair = RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        Self {
            alg: "PS256",
            pair: Pair::Rsa(pair, true),
        }
    }

    pub fn public_jwk(&self) -> Value {
        match &self.pair {
            Pair::Ec(pair) => {
                let point = pair.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..])})
            }
            Pair::Ed(pair) => {
                json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref())})
            }
            Pair::Rsa(pair, _) => {
                let c = RsaPublicKeyComponents::<Vec<u8>>::from(pair.public_key());
                json!({"kty": "RSA", "n": b64(&c.n), "e": b64(&c.e)})
            }
        }
    }

    /// RFC 7638, computed here independently of Coop.
    pub fn thumbprint(&self) -> String {
        let jwk = self.public_jwk();
        let canonical = match jwk["kty"].as_str().unwrap() {
            "EC" => format!(
                r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
                jwk["x"].as_str().unwrap(),
                jwk["y"].as_str().unwrap()
            ),
            "OKP" => format!(
                r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
                jwk["x"].as_str().unwrap()
            ),
            _ => format!(
                r#"{{"e":"{}","kty":"RSA","n":"{}"}}"#,
                jwk["e"].as_str().unwrap(),
                jwk["n"].as_str().unwrap()
            ),
        };
        b64(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()).as_ref())
    }

    pub fn header(&self) -> Value {
        json!({"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk()})
    }

    /// Signs `claims` under `header` (which may say anything).
    pub fn sign_with_header(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let signature = match &self.pair {
            Pair::Ec(pair) => pair.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
            Pair::Ed(pair) => pair.sign(input.as_bytes()).as_ref().to_vec(),
            Pair::Rsa(pair, pss) => {
                let mut signature = vec![0; pair.public_modulus_len()];
                let padding: &'static dyn aws_lc_rs::signature::RsaEncoding = if *pss {
                    &RSA_PSS_SHA256
                } else {
                    &RSA_PKCS1_SHA256
                };
                pair.sign(padding, &rng, input.as_bytes(), &mut signature)
                    .unwrap();
                signature
            }
        };
        format!("{input}.{}", b64(&signature))
    }

    /// A good proof for `htm` `htu` (with `ath` when `token` is given).
    pub fn proof(&self, htm: &str, htu: &str, token: Option<&str>) -> String {
        proof(self, &claims(htm, htu, token))
    }

    /// A POST proof for `htu` with `change` applied to its claims.
    pub fn proof_with(
        &self,
        htu: &str,
        token: Option<&str>,
        change: impl FnOnce(&mut Value),
    ) -> String {
        let mut c = claims("POST", htu, token);
        change(&mut c);
        proof(self, &c)
    }
}

/// A proof with the key's own header over `claims`.
pub fn proof(key: &ProofKey, claims: &Value) -> String {
    key.sign_with_header(&key.header(), claims)
}

/// `ath`: the SHA-256 of the token, base64url.
pub fn ath(token: &str) -> String {
    b64(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes()).as_ref())
}

/// The claims of a fresh proof: a random `jti`, `iat` now (the real clock:
/// the integration suite's adjustable clocks start at the real time).
pub fn claims(htm: &str, htu: &str, token: Option<&str>) -> Value {
    let mut jti = [0u8; 16];
    SystemRandom::new().fill(&mut jti).unwrap();
    let mut claims = json!({
        "jti": b64(&jti),
        "htm": htm,
        "htu": htu,
        "iat": time::OffsetDateTime::now_utc().unix_timestamp(),
    });
    if let Some(token) = token {
        claims["ath"] = ath(token).into();
    }
    claims
}
