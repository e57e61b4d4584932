//! JOSE parts for the tests of the token checks: random ones for the
//! property tests (a base64url JSON object whose members are drawn from
//! the names a check reads, with any of the given values), and a signed
//! token whose claims were altered after signing.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Up to `most - 1` members named from `names`, each with a value from
/// `values`, as the base64url of the object's JSON.
pub fn object_part(
    names: Vec<&'static str>,
    values: impl Strategy<Value = Value>,
    most: usize,
) -> impl Strategy<Value = String> {
    prop::collection::btree_map(prop::sample::select(names), values, 0..most).prop_map(|members| {
        let object: Map<String, Value> = members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        URL_SAFE_NO_PAD.encode(Value::Object(object).to_string())
    })
}

/// The compact JWS `token` carrying `claims` instead of its own, under its
/// own header and signature (which no longer covers them).
pub fn with_claims(token: &str, claims: &Value) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        parts[2]
    )
}
