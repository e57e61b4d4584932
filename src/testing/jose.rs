//! Random JOSE parts for the property tests of the token checks: a
//! base64url JSON object whose members are drawn from the names a check
//! reads, with any of the given values.

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
