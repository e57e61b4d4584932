//! RFC 7638 JWK thumbprints: the SHA-256 of the key's required members, in
//! lexicographic order, without whitespace, base64url. A DPoP-bound token's
//! `cnf.jkt` is this value for the proof key; anything else in the JWK
//! (`kid`, `alg`, `use`) does not change it.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

/// The thumbprint of a public JWK, or `None` when a required member is
/// missing or not a string, or the key type is not one Coop knows.
pub fn thumbprint(jwk: &Map<String, Value>) -> Option<String> {
    let members: &[&str] = match jwk.get("kty")?.as_str()? {
        "EC" => &["crv", "kty", "x", "y"],
        "OKP" => &["crv", "kty", "x"],
        "RSA" => &["e", "kty", "n"],
        _ => return None,
    };
    let mut required = BTreeMap::new();
    for name in members {
        required.insert(*name, jwk.get(*name)?.as_str()?);
    }
    // A BTreeMap serialises its keys in order and serde_json adds no
    // whitespace: exactly the RFC 7638 §3 form.
    let canonical = serde_json::to_string(&required).ok()?;
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes());
    Some(URL_SAFE_NO_PAD.encode(digest.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_rfc_7638_example_key_has_its_published_thumbprint() {
        // RFC 7638 §3.1.
        let jwk = object(json!({
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB",
            "alg": "RS256",
            "kid": "2011-04-29"
        }));
        assert_eq!(
            thumbprint(&jwk).as_deref(),
            Some("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        );
    }

    #[test]
    fn only_the_required_members_count() {
        let bare = object(json!({"kty": "OKP", "crv": "Ed25519", "x": "abc"}));
        let dressed =
            object(json!({"kty": "OKP", "crv": "Ed25519", "x": "abc", "kid": "k", "use": "sig"}));
        assert_eq!(thumbprint(&bare), thumbprint(&dressed));
        assert!(thumbprint(&bare).is_some());
        assert_eq!(
            thumbprint(&object(json!({"kty": "EC", "crv": "P-256", "x": "a"}))),
            None
        );
        assert_eq!(thumbprint(&object(json!({"kty": "oct", "k": "a"}))), None);
        assert_eq!(
            thumbprint(&object(json!({"kty": "RSA", "n": 1, "e": "AQAB"}))),
            None
        );
    }
}
