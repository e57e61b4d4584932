//! Property tests of what `/mcp` reads from a caller before any tool runs:
//! the `Authorization` header and the JSON-RPC body's envelope.
//!
//! No input panics; a body is refused with the status and JSON-RPC code its
//! refusal names, or let through with the id, method and tool it carries.
//! CI runs proptest's default number of cases; `bench/props.sh` a million.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::bearer::{self, Presented, Refusal, Scheme};
use super::wire::{self, SUPPORTED_VERSIONS, WireRefusal};

fn header() -> impl Strategy<Value = String> {
    let scheme = prop_oneof![
        Just("Bearer"),
        Just("bearer"),
        Just("BEARER"),
        Just("DPoP"),
        Just("Basic"),
        Just("")
    ];
    let token = prop_oneof!["[A-Za-z0-9._~+/=-]{0,40}", any::<String>()];
    prop_oneof![
        4 => (scheme, "[ \t]{0,3}", token).prop_map(|(s, sep, t)| format!("{s}{sep}{t}")),
        1 => any::<String>(),
    ]
}

proptest! {
    #[test]
    fn an_authorization_header_yields_its_scheme_and_trimmed_token_or_no_token(value in header()) {
        match bearer::credentials(Some(&value)) {
            Ok(Presented { scheme, token }) => {
                prop_assert!(!token.is_empty());
                prop_assert_eq!(token, token.trim());
                let (word, rest) = value.trim().split_once(' ').unwrap_or_default();
                let expected = if word.eq_ignore_ascii_case("bearer") {
                    Some(Scheme::Bearer)
                } else if word.eq_ignore_ascii_case("dpop") {
                    Some(Scheme::Dpop)
                } else {
                    None
                };
                prop_assert_eq!(Some(scheme), expected);
                prop_assert_eq!(rest.trim(), token);
            }
            Err(refusal) => prop_assert!(matches!(refusal, Refusal::NoToken)),
        }
    }

    #[test]
    fn a_well_formed_header_round_trips(
        dpop in any::<bool>(),
        token in "[A-Za-z0-9._~+/=-]{1,64}",
    ) {
        let (word, scheme) = if dpop { ("DPoP", Scheme::Dpop) } else { ("Bearer", Scheme::Bearer) };
        let header = format!("{word} {token}");
        prop_assert_eq!(
            bearer::credentials(Some(&header)),
            Ok(Presented { scheme, token: token.as_str() })
        );
    }
}

/// JSON-RPC messages as clients send them, and as a fuzzer bends them.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let id = prop_oneof![
        Just(json!(1)),
        Just(json!("a")),
        Just(Value::Null),
        Just(json!({})),
        Just(json!(1.5))
    ];
    let method = prop_oneof![
        Just(json!("tools/call")),
        Just(json!("tools/list")),
        Just(json!("initialize")),
        Just(json!(7)),
        any::<String>().prop_map(Value::String),
    ];
    let name = prop_oneof![
        Just(json!("list_flocks")),
        Just(json!(3)),
        any::<String>().prop_map(Value::String)
    ];
    let jsonrpc = prop_oneof![Just(json!("2.0")), Just(json!("1.0")), Just(json!(2))];
    let structured = (jsonrpc, id, method, name).prop_map(|(jsonrpc, id, method, name)| {
        serde_json::to_vec(&json!({
            "jsonrpc": jsonrpc, "id": id, "method": method, "params": { "name": name }
        }))
        .unwrap_or_default()
    });
    prop_oneof![
        3 => structured,
        1 => prop::collection::vec(any::<u8>(), 0..128),
        1 => "[ \t\n]{0,2}\\[.{0,16}".prop_map(String::into_bytes),
    ]
}

fn version() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        prop::sample::select(SUPPORTED_VERSIONS.to_vec()).prop_map(|v| Some(v.to_owned())),
        Just(Some("2025-03-26".to_owned())),
        any::<String>().prop_map(Some),
    ]
}

proptest! {
    #[test]
    fn a_body_is_let_through_with_its_envelope_or_refused_with_its_code(
        version in version(),
        body in message(),
    ) {
        match wire::inspect(version.as_deref(), &body) {
            Ok(envelope) => {
                let value: Value = serde_json::from_slice(&body)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(value.get("jsonrpc"), Some(&json!("2.0")));
                prop_assert_eq!(envelope.method.as_deref(), value.get("method").and_then(Value::as_str));
                if envelope.method.as_deref() == Some("tools/call") {
                    prop_assert_eq!(envelope.tool.as_deref(), value["params"]["name"].as_str());
                } else {
                    prop_assert!(envelope.tool.is_none());
                }
                match version.as_deref() {
                    None => prop_assert_eq!(envelope.method.as_deref(), Some("initialize")),
                    Some(v) => prop_assert!(SUPPORTED_VERSIONS.contains(&v)),
                }
            }
            Err(refusal) => {
                let expected: (u16, i64) = match refusal {
                    WireRefusal::Batch | WireRefusal::NotJsonRpc { .. } => (400, wire::code::INVALID_REQUEST),
                    WireRefusal::Parse => (400, wire::code::PARSE_ERROR),
                    WireRefusal::MissingVersion { .. } => (400, wire::code::HEADER_MISMATCH),
                    WireRefusal::UnsupportedVersion { .. } => (400, wire::code::UNSUPPORTED_VERSION),
                    WireRefusal::InitializeOnModernWire { .. } => (404, wire::code::METHOD_NOT_FOUND),
                };
                prop_assert_eq!(refusal.status(), expected.0);
                let answer = refusal.body();
                prop_assert_eq!(&answer["error"]["code"], &json!(expected.1));
                prop_assert_eq!(&answer["jsonrpc"], &json!("2.0"));
            }
        }
    }
}
