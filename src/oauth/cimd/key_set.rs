//! A client's public keys: a JSON Web Key Set (RFC 7517 §5), fetched from
//! its `jwks_uri` or carried inline as `jwks` in its metadata document.
//!
//! Coop will verify `private_key_jwt` assertions (RFC 7523) against these
//! keys, so a set must be a JSON object with a non-empty `keys` array of at
//! most [`MAX_KEYS`] keys that jsonwebtoken's [`JwkSet`] can read (a key of
//! a type it does not know is kept as such, and a verifier skips it). A key
//! carrying private material (`d`, the RSA CRT members, `oth`) or a
//! symmetric key (`kty: "oct"`, whose `k` is the secret itself) is refused:
//! a client that publishes one has published what lets anyone sign as it,
//! and an HMAC key could never authenticate a client to anyone but itself.

use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use serde_json::Value;

use super::CimdError;

/// The largest key set fetched: a few RSA keys of 4096 bits fit.
pub const MAX_KEY_SET_BYTES: usize = 16 * 1024;
/// The most keys one set may hold.
pub const MAX_KEYS: usize = 20;

/// Key types jsonwebtoken reads into parameters of their own.
const KNOWN_TYPES: &[&str] = &["EC", "RSA", "OKP"];

/// Members that hold private or secret key material (RFC 7518 §6.2.2,
/// §6.3.2, §6.4.1; RFC 8037 §2).
const PRIVATE_MEMBERS: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// Parses a fetched body as a key set.
pub fn parse(body: &[u8]) -> Result<JwkSet, CimdError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| CimdError::InvalidKeySet(format!("not JSON: {e}")))?;
    from_value(&value)
}

/// Checks and reads a key set given as JSON (a fetched body, or a
/// document's `jwks`).
pub fn from_value(value: &Value) -> Result<JwkSet, CimdError> {
    let invalid = |why: &str| Err(CimdError::InvalidKeySet(why.to_owned()));
    let Some(keys) = value.get("keys").and_then(Value::as_array) else {
        return invalid("not a JSON object with a keys array");
    };
    if keys.is_empty() {
        return invalid("the key set holds no keys");
    }
    if keys.len() > MAX_KEYS {
        return Err(CimdError::InvalidKeySet(format!(
            "the key set holds more than {MAX_KEYS} keys"
        )));
    }
    for key in keys {
        let Some(members) = key.as_object() else {
            return invalid("a key is not a JSON object");
        };
        if members.get("kty").and_then(Value::as_str) == Some("oct") {
            return invalid("a key is symmetric (kty \"oct\")");
        }
        if PRIVATE_MEMBERS
            .iter()
            .any(|name| members.contains_key(*name))
        {
            return invalid("a key carries private key material");
        }
    }
    let set: JwkSet = serde_json::from_value(value.clone())
        .map_err(|e| CimdError::InvalidKeySet(format!("not a JWK Set Coop can read: {e}")))?;
    // jsonwebtoken reads a key it cannot place as "other": for a type it
    // knows, that means the key's parameters are missing or malformed.
    for key in &set.keys {
        if let AlgorithmParameters::Other(other) = &key.algorithm
            && let Some(kty) = other.fields.get("kty").and_then(Value::as_str)
            && KNOWN_TYPES.contains(&kty)
        {
            return Err(CimdError::InvalidKeySet(format!(
                "a key of type {kty} is not one Coop can read (missing or malformed parameters)"
            )));
        }
    }
    Ok(set)
}

#[cfg(test)]
pub mod tests {
    use serde_json::json;

    use super::*;

    /// RFC 7517 Appendix A.1's public keys (an EC P-256 key and an RSA key),
    /// each with the `kid` given.
    pub fn public_keys(kids: &[&str]) -> Value {
        let keys: Vec<Value> = kids
            .iter()
            .enumerate()
            .map(|(i, kid)| {
                if i % 2 == 0 {
                    json!({
                        "kty": "EC", "crv": "P-256", "use": "sig", "kid": kid,
                        "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4",
                        "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"
                    })
                } else {
                    json!({
                        "kty": "RSA", "alg": "RS256", "kid": kid, "e": "AQAB",
                        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
                    })
                }
            })
            .collect();
        json!({ "keys": keys })
    }

    /// What the limit is for: a client rotating its keys publishes the old
    /// and the new side by side, and a few 4096-bit RSA keys must fit.
    #[test]
    fn a_few_4096_bit_rsa_keys_fit_the_fetch_limit() {
        let modulus = "q".repeat(683); // 4096 bits, base64url
        let keys: Vec<Value> = (0..4)
            .map(|i| {
                json!({
                    "kty": "RSA", "alg": "RS256", "use": "sig",
                    "kid": format!("rotation-2026-{i}"), "e": "AQAB", "n": modulus
                })
            })
            .collect();
        let body = serde_json::to_vec_pretty(&json!({ "keys": keys })).unwrap();
        assert!(body.len() <= MAX_KEY_SET_BYTES, "{} bytes", body.len());
        assert!(parse(&body).is_ok());
    }

    fn refused(value: &Value, part: &str) {
        match from_value(value) {
            Err(CimdError::InvalidKeySet(why)) => assert!(why.contains(part), "{why} / {part}"),
            other => panic!("expected InvalidKeySet({part}), got {other:?}"),
        }
    }

    #[test]
    fn a_set_of_public_keys_is_read_and_found_by_kid() {
        let set = parse(public_keys(&["ec-1", "rsa-1"]).to_string().as_bytes()).unwrap();
        assert_eq!(set.keys.len(), 2);
        assert!(set.find("ec-1").is_some());
        assert!(set.find("rsa-1").is_some());
        assert!(set.find("other").is_none());
    }

    #[test]
    fn a_set_must_be_an_object_with_some_keys_and_not_too_many() {
        assert!(matches!(
            parse(b"not json"),
            Err(CimdError::InvalidKeySet(_))
        ));
        refused(&json!([]), "keys array");
        refused(&json!({"keys": {}}), "keys array");
        refused(&json!({"keys": []}), "no keys");
        refused(&json!({"keys": ["x"]}), "not a JSON object");
        let many: Vec<String> = (0..=MAX_KEYS).map(|i| format!("k{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        refused(&public_keys(&many), "more than");
        let most: Vec<&str> = many[..MAX_KEYS].to_vec();
        assert!(from_value(&public_keys(&most)).is_ok());
    }

    #[test]
    fn private_and_symmetric_keys_are_refused() {
        for member in PRIVATE_MEMBERS {
            let mut set = public_keys(&["k"]);
            set["keys"][0][*member] = json!("AAAA");
            refused(&set, "private key material");
        }
        refused(
            &json!({"keys": [{"kty": "oct", "kid": "h", "alg": "HS256"}]}),
            "symmetric",
        );
    }

    #[test]
    fn a_key_of_a_known_type_without_its_parameters_is_refused() {
        refused(
            &json!({"keys": [{"kty": "EC", "kid": "k"}]}),
            "type EC is not one Coop can read",
        );
        refused(
            &json!({"keys": [{"kty": "RSA", "kid": "k", "e": "AQAB"}]}),
            "type RSA",
        );
        refused(
            &json!({"keys": [{"kty": "OKP", "kid": "k", "crv": "Ed25519"}]}),
            "type OKP",
        );
    }

    #[test]
    fn a_key_of_a_type_coop_does_not_know_is_kept_beside_the_others() {
        // A client may publish keys for other uses; the verifier uses only
        // the kinds it supports, so one unknown key does not spoil the set.
        let mut set = public_keys(&["ec-1"]);
        set["keys"]
            .as_array_mut()
            .unwrap()
            .push(json!({"kty": "XYZ", "kid": "future"}));
        let set = from_value(&set).unwrap();
        assert_eq!(set.keys.len(), 2);
        assert!(matches!(
            set.find("future").unwrap().algorithm,
            jsonwebtoken::jwk::AlgorithmParameters::Other(_)
        ));
    }
}
