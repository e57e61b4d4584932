//! Test keys that sign DPoP proofs as a client would (unit tests only).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RSA_PKCS1_SHA256,
    RSA_PSS_SHA256, RsaKeyPair, RsaPublicKeyComponents,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

enum Pair {
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
    Rsa(RsaKeyPair, bool),
}

pub struct ProofKey {
    pub alg: &'static str,
    pair: Pair,
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
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

    pub fn thumbprint(&self) -> String {
        super::thumbprint::thumbprint(self.public_jwk().as_object().unwrap()).unwrap()
    }

    pub fn header(&self) -> Value {
        json!({"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk()})
    }

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
}

/// A proof with the key's own header over `claims`.
pub fn proof(key: &ProofKey, claims: &Value) -> String {
    key.sign_with_header(&key.header(), claims)
}
