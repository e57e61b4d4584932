//! JOSE parts for the tests of the token checks: random ones for the
//! property tests (a base64url JSON object whose members are drawn from
//! the names a check reads, with any of the given values), the time claims
//! at the edges of what a JSON reader or a clock holds, and a signed token
//! whose claims were altered after signing.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

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

/// A time claim (`exp`, `iat`, `nbf`) at an edge, with the whole seconds it
/// names if it is a NumericDate as Coop reads one (a JSON integer that
/// fits an `i64`): `None` for what is not one, so each property's model
/// says what its check must answer without asking the code under test.
#[derive(Clone, Debug)]
pub struct ExtremeTime {
    pub value: Value,
    pub seconds: Option<i64>,
}

/// The edges: 0, -1, the ends of `i64`, the last second `time` holds and
/// the one after it (year 10000), past `i64` as an integer (`u64::MAX`),
/// fractions, a whole number written as a float (serialised `….0`), huge
/// floats (serialised with an exponent: `1e300`), a tiny one, and `now`
/// (`now_s`) as text, as a float and with a fraction.
pub fn extreme_time(now_s: i64) -> impl Strategy<Value = ExtremeTime> {
    let end_of_time = 253_402_300_799_i64;
    let now_f = now_s as f64;
    let cases: Vec<(Value, Option<i64>)> = vec![
        (json!(0), Some(0)),
        (json!(-1), Some(-1)),
        (json!(i64::MAX), Some(i64::MAX)),
        (json!(i64::MIN), Some(i64::MIN)),
        (json!(i64::MAX - 1), Some(i64::MAX - 1)),
        (json!(end_of_time), Some(end_of_time)),
        (json!(end_of_time + 1), Some(end_of_time + 1)),
        (json!(-end_of_time), Some(-end_of_time)),
        (json!(u64::MAX), None),
        (json!(now_f), None),
        (json!(now_f + 0.5), None),
        (json!(1.5), None),
        (json!(-0.0), None),
        (json!(1e300), None),
        (json!(-1e300), None),
        (json!(9.3e18), None),
        (json!(1e-300), None),
        (json!(now_s.to_string()), None),
        (json!("9999-12-31T23:59:59Z"), None),
        (json!(true), None),
        (Value::Null, None),
        (json!([now_s]), None),
    ];
    prop::sample::select(cases).prop_map(|(value, seconds)| ExtremeTime { value, seconds })
}
