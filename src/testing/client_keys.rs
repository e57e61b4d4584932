//! A client's signing keys for `private_key_jwt` assertions (RFC 7523), for
//! the unit tests and the integration suite alike: keys of each algorithm
//! Coop accepts, made on the spot, their public halves as JWKs, and claims
//! signed under a header that names the key or none.
// Shared with the integration suite, which uses what the unit tests do not.
#![allow(dead_code)]

use std::sync::OnceLock;

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// A client's key pair: signs assertions; its public half as a JWK.
pub struct ClientKey {
    pub alg: Algorithm,
    encoding: EncodingKey,
    pub public: Jwk,
}

impl ClientKey {
    pub fn es256(kid: &str) -> Self {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        Self::new(
            EncodingKey::from_ec_der(pkcs8.as_ref()),
            Algorithm::ES256,
            kid,
        )
    }

    pub fn ed25519(kid: &str) -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8v1(&SystemRandom::new()).unwrap();
        Self::new(
            EncodingKey::from_ed_der(pkcs8.as_ref()),
            Algorithm::EdDSA,
            kid,
        )
    }

    /// An RSA key for RS256 or PS256: the first of the two 2048-bit keys.
    pub fn rsa(kid: &str, alg: Algorithm) -> Self {
        Self::rsa_key(kid, alg, 0)
    }

    /// RS256 with one of two 2048-bit keys (`which` 0 or 1).
    pub fn rs256(kid: &str, which: usize) -> Self {
        Self::rsa_key(kid, Algorithm::RS256, which)
    }

    /// Each of the two RSA keys is made once per test process: making one
    /// is slow.
    fn rsa_key(kid: &str, alg: Algorithm, which: usize) -> Self {
        static PEMS: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
        let pem = PEMS[which].get_or_init(|| {
            let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
            let body = STANDARD.encode(pair.as_der().unwrap().as_ref());
            let lines: Vec<&str> = body
                .as_bytes()
                .chunks(64)
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect();
            format!(
                "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
                lines.join("\n")
            )
        });
        Self::new(EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(), alg, kid)
    }

    fn new(encoding: EncodingKey, alg: Algorithm, kid: &str) -> Self {
        let mut public = Jwk::from_encoding_key(&encoding, alg).unwrap();
        public.common.key_id = Some(kid.to_owned());
        Self {
            alg,
            encoding,
            public,
        }
    }

    pub fn kid(&self) -> &str {
        self.public.common.key_id.as_deref().unwrap()
    }

    /// `claims` signed, the header naming this key's `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid().to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }

    /// `claims` signed, the header naming no key.
    pub fn sign_without_kid(&self, claims: &Value) -> String {
        jsonwebtoken::encode(&Header::new(self.alg), claims, &self.encoding).unwrap()
    }
}

/// The public keys as a JWK Set document.
pub fn key_set(keys: &[&ClientKey]) -> Value {
    json!({"keys": keys.iter().map(|k| serde_json::to_value(&k.public).unwrap()).collect::<Vec<_>>()})
}
