//! Property tests of the OAuth parsers that read untrusted input: scope
//! strings, `resource`, redirect URIs and their matching, form and query
//! parameters, Client ID Metadata Documents and access-token JWTs (also
//! tokens Coop signed with time claims at the edges of what a JSON reader
//! or a clock holds: issue 31).
//!
//! Each property is one of four kinds: no input panics; a refusal is the
//! typed refusal its caller turns into the right error code; what is
//! accepted round-trips to its canonical form; matching is exact. CI runs
//! proptest's default number of cases; `bench/props.sh` sets
//! `PROPTEST_CASES` to a million and prints the counts.

use proptest::prelude::*;
use url::Url;

use super::params::Params;
use super::redirect_uri::{self, RedirectUriRefusal};
use super::resource;
use super::scopes::{self, OFFLINE_ACCESS};
use crate::domain::{Issuer, Scope};

/// Words a scope string is made of: the real ones, near misses and noise.
fn scope_word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("farm:read".to_owned()),
        Just("daily-entries:write".to_owned()),
        Just(OFFLINE_ACCESS.to_owned()),
        Just("FARM:READ".to_owned()),
        Just("farm:read ".to_owned()),
        "[a-z:_-]{0,12}",
        any::<String>(),
    ]
}

fn scope_string() -> impl Strategy<Value = String> {
    (prop::collection::vec(scope_word(), 0..6), "[ \t]{1,3}")
        .prop_map(|(words, sep)| words.join(&sep))
}

proptest! {
    #[test]
    fn a_scope_string_is_refused_by_its_first_unknown_word_or_round_trips(raw in scope_string()) {
        match scopes::requested(Some(&raw)) {
            Ok(set) => {
                prop_assert!(!set.is_empty());
                let wire = set.to_wire();
                prop_assert_eq!(scopes::requested(Some(&wire)), Ok(set));
                // Every accepted word was a real scope or offline_access.
                for word in raw.split(' ').filter(|w| !w.is_empty()) {
                    prop_assert!(word == OFFLINE_ACCESS || Scope::parse(word).is_some(), "{word:?}");
                }
            }
            Err(scopes::UnknownScope(word)) => {
                let first_unknown = raw
                    .split(' ')
                    .filter(|w| !w.is_empty())
                    .find(|w| *w != OFFLINE_ACCESS && Scope::parse(w).is_none());
                prop_assert_eq!(Some(word.as_str()), first_unknown);
            }
        }
    }
}

const ISSUER: &str = "https://coop.example";

fn issuer() -> Issuer {
    match Issuer::parse(ISSUER) {
        Ok(issuer) => issuer,
        Err(err) => panic!("test issuer: {err}"),
    }
}

/// Spellings of the one resource the spec asks servers to tolerate, and
/// near misses that must be refused.
fn resource_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("https://coop.example/mcp".to_owned()),
        Just("HTTPS://COOP.EXAMPLE/mcp".to_owned()),
        Just("https://coop.example/mcp/".to_owned()),
        Just("https://coop.example:443/mcp".to_owned()),
        Just("https://coop.example/MCP".to_owned()),
        Just("https://coop.example/mcp#x".to_owned()),
        Just("https://coop.example/mcp?x=1".to_owned()),
        Just("https://u@coop.example/mcp".to_owned()),
        Just("http://coop.example/mcp".to_owned()),
        Just("https://coop.example.evil/mcp".to_owned()),
        "https://coop\\.example/[a-z/]{0,8}",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn a_resource_is_the_one_resource_or_refused(values in prop::collection::vec(resource_value(), 0..3)) {
        let issuer = issuer();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        match resource::resolve(&issuer, &refs) {
            Ok(resolved) => {
                prop_assert_eq!(resolved.as_str(), issuer.mcp_resource());
                prop_assert!(refs.len() <= 1);
                if let [one] = refs.as_slice() {
                    // Accepted spellings differ from the canonical one only
                    // in the case of scheme and host, a default port and
                    // one trailing slash.
                    let url = Url::parse(one).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(url.path().trim_end_matches('/'), "/mcp");
                    prop_assert!(url.query().is_none() && url.fragment().is_none());
                    prop_assert!(url.username().is_empty() && url.password().is_none());
                }
            }
            Err(refusal) => prop_assert_eq!(refusal.expected, issuer.mcp_resource()),
        }
    }
}

/// Redirect URIs as clients send them, and as attackers bend them.
fn redirect_uri() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        Just("app.example".to_owned()),
        Just("127.0.0.1".to_owned()),
        Just("[::1]".to_owned()),
        Just("localhost".to_owned()),
        Just("LOCALHOST".to_owned()),
        Just("127.0.0.2".to_owned()),
        Just("evil.example".to_owned()),
        Just(String::new()),
    ];
    let scheme = prop_oneof![
        Just("https"),
        Just("http"),
        Just("HTTPS"),
        Just("myapp"),
        Just("javascript")
    ];
    let port = prop_oneof![Just(String::new()), (1u16..).prop_map(|p| format!(":{p}"))];
    let path = prop_oneof![
        Just("/cb".to_owned()),
        Just("/callback".to_owned()),
        Just("/cb/".to_owned()),
        Just("/cb?x=1".to_owned()),
        Just("/cb#frag".to_owned()),
        Just("/c%62".to_owned()),
        Just("/cb\r\n".to_owned()),
        Just("\\cb".to_owned()),
        "/[a-zA-Z0-9._~%/-]{0,10}",
    ];
    let user = prop_oneof![Just(""), Just("u@"), Just("u:p@")];
    prop_oneof![
        4 => (scheme, user, host, port, path)
            .prop_map(|(s, u, h, p, path)| format!("{s}://{u}{h}{p}{path}")),
        1 => any::<String>(),
    ]
}

proptest! {
    #[test]
    fn a_registrable_redirect_uri_is_https_or_loopback_without_fragment_or_user(raw in redirect_uri()) {
        match redirect_uri::check_registrable(&raw) {
            Ok(stored) => {
                // What is accepted is stored as given: its text is the
                // parser's canonical form.
                let url = Url::parse(&raw).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&stored, &raw);
                prop_assert_eq!(url.as_str(), raw.as_str());
                prop_assert!(raw.len() <= redirect_uri::MAX_LEN);
                prop_assert!(url.fragment().is_none() && !raw.contains('#'));
                prop_assert!(url.username().is_empty() && url.password().is_none());
                prop_assert!(
                    (url.scheme() == "https" && url.host().is_some()) || redirect_uri::is_loopback(&url)
                );
            }
            Err(RedirectUriRefusal::NotAbsolute) => prop_assert!(Url::parse(&raw).is_err()),
            Err(RedirectUriRefusal::NotCanonical { .. }) => {
                prop_assert!(Url::parse(&raw).is_ok_and(|url| url.as_str() != raw));
            }
            Err(_) => {}
        }
    }

    #[test]
    fn a_redirect_uri_matches_only_itself_or_its_loopback_twin_on_another_port(
        registered in redirect_uri(),
        requested in redirect_uri(),
    ) {
        // Only what registration accepted is ever stored, and it matches itself.
        if redirect_uri::check_registrable(&registered).is_ok() {
            prop_assert!(redirect_uri::matches(&registered, &registered));
        }
        if redirect_uri::matches(&registered, &requested) && registered != requested {
            let reg = Url::parse(&registered).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let req = Url::parse(&requested).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(redirect_uri::is_loopback(&reg) && redirect_uri::is_loopback(&req));
            let mut req_without_port = req.clone();
            let mut reg_without_port = reg.clone();
            prop_assert!(req_without_port.set_port(None).is_ok() && reg_without_port.set_port(None).is_ok());
            prop_assert_eq!(req_without_port, reg_without_port);
            prop_assert!(!requested.contains('#'));
        }
    }
}

proptest! {
    #[test]
    fn form_parameters_round_trip_and_repeats_are_visible(
        pairs in prop::collection::vec((prop_oneof![Just("client_id".to_owned()), Just("scope".to_owned()), any::<String>()], any::<String>()), 0..6)
    ) {
        let encoded = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs.iter())
            .finish();
        let params = Params::parse(encoded.as_bytes());
        let parsed: Vec<(&str, &str)> = params.pairs().collect();
        let sent: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        prop_assert_eq!(parsed, sent);
        let values: Vec<&str> = pairs.iter().filter(|(k, _)| k == "client_id").map(|(_, v)| v.as_str()).collect();
        match params.single("client_id") {
            Ok(None) => prop_assert!(values.is_empty() || values == [""]),
            Ok(Some(one)) => prop_assert_eq!(values, vec![one]),
            Err(name) => {
                prop_assert_eq!(name, "client_id");
                prop_assert!(values.len() > 1);
            }
        }
    }

    #[test]
    fn any_bytes_parse_as_parameters_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let params = Params::parse(&bytes);
        let _ = params.single("grant_type");
        let _ = params.all("resource");
    }
}

mod documents {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use crate::oauth::cimd::document;

    const URL: &str = "https://app.example/client.json";

    /// JSON values of the kinds a document member might hold.
    fn member_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            Just(json!(URL)),
            Just(json!("https://app.example/cb")),
            Just(json!("none")),
            Just(json!("private_key_jwt")),
            Just(json!("client_secret_basic")),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn member_name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("client_id".to_owned()),
            Just("client_name".to_owned()),
            Just("redirect_uris".to_owned()),
            Just("token_endpoint_auth_method".to_owned()),
            Just("token_endpoint_auth_methods_supported".to_owned()),
            Just("token_endpoint_auth_signing_alg".to_owned()),
            Just("jwks_uri".to_owned()),
            Just("jwks".to_owned()),
            Just("client_secret".to_owned()),
            "[a-z_]{1,12}",
        ]
    }

    /// A valid document with some members replaced or added.
    fn document() -> impl Strategy<Value = Value> {
        prop::collection::vec((member_name(), member_value()), 0..5).prop_map(|changes| {
            let mut members: Map<String, Value> = json!({
                "client_id": URL,
                "client_name": "App",
                "redirect_uris": ["https://app.example/cb"],
                "token_endpoint_auth_method": "none",
            })
            .as_object()
            .cloned()
            .unwrap_or_default();
            for (name, value) in changes {
                members.insert(name, value);
            }
            Value::Object(members)
        })
    }

    proptest! {
        #[test]
        fn a_document_is_accepted_only_for_its_own_url_and_without_a_secret(doc in document()) {
            let body = serde_json::to_vec(&doc).map_err(|e| TestCaseError::fail(e.to_string()))?;
            if let Ok(valid) = document::validate(&body, URL) {
                prop_assert_eq!(doc.get("client_id"), Some(&json!(URL)));
                prop_assert!(doc.get("client_secret").is_none());
                prop_assert!(!valid.redirect_uris.is_empty());
                prop_assert!(!valid.client_name.is_empty());
            }
        }

        #[test]
        fn any_bytes_are_a_document_or_a_refusal(body in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = document::validate(&body, URL);
        }
    }
}

mod access_tokens {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;
    use time::OffsetDateTime;

    use jsonwebtoken::{Algorithm, Header};
    use serde_json::{Value, json};

    use crate::domain::{GrantId, Scope, ScopeSet, UserId};
    use crate::oauth::access_token::{self, NewAccessToken, TokenRejection, VerifyError};
    use crate::oauth::keys::Keys;
    use crate::testing::TestStore;
    use crate::testing::jose::{ExtremeTime, extreme_time};

    const ISSUER: &str = "https://coop.example";
    const RESOURCE: &str = "https://coop.example/mcp";

    struct Fixture {
        runtime: tokio::runtime::Runtime,
        keys: Keys,
        token: String,
        now: OffsetDateTime,
        _db: TestStore,
    }

    fn fixture() -> Fixture {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let now = OffsetDateTime::now_utc();
        let (db, keys, token) = runtime.block_on(async {
            let db = TestStore::sqlite().await;
            let keys = Keys::load_or_create(db.store.clone(), time::Duration::hours(24), now)
                .await
                .unwrap();
            let scope = ScopeSet::from_scopes([Scope::FarmRead]);
            let new = NewAccessToken {
                issuer: ISSUER,
                audience: RESOURCE,
                user: UserId::new(),
                client_id: "client",
                scope: &scope,
                grant: GrantId::new(),
                epoch: 0,
                lifetime: time::Duration::minutes(5),
                jkt: None,
            };
            let (token, _) = access_token::mint(&keys, &new, now).await.unwrap();
            (db, keys, token.expose().to_owned())
        });
        Fixture {
            runtime,
            keys,
            token,
            now,
            _db: db,
        }
    }

    /// A change to a valid token: one byte flipped, a segment replaced by
    /// arbitrary JSON, or the token cut.
    #[derive(Debug, Clone)]
    enum Change {
        Flip(usize, u8),
        Segment(usize, String),
        Cut(usize),
        Replace(String),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            (any::<usize>(), 1u8..).prop_map(|(i, b)| Change::Flip(i, b)),
            (0usize..3, any::<String>()).prop_map(|(i, s)| Change::Segment(i, s)),
            (
                0usize..3,
                r#"\{"(alg|typ|kid|iss|aud|exp|sub)":("[A-Za-z0-9+/=-]{0,12}"|[0-9]{1,12}|null)\}"#
            )
                .prop_map(|(i, s)| Change::Segment(i, s)),
            any::<usize>().prop_map(Change::Cut),
            any::<String>().prop_map(Change::Replace),
        ]
    }

    fn apply(token: &str, change: &Change) -> String {
        match change {
            Change::Flip(i, b) => {
                let mut bytes = token.as_bytes().to_vec();
                let i = i % bytes.len();
                bytes[i] ^= b;
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Change::Segment(i, json) => {
                let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
                if let Some(part) = parts.get_mut(*i) {
                    *part = URL_SAFE_NO_PAD.encode(json);
                }
                parts.join(".")
            }
            Change::Cut(i) => token[..i % token.len()].to_owned(),
            Change::Replace(s) => s.clone(),
        }
    }

    #[test]
    fn a_changed_access_token_is_always_refused() {
        let fixture = fixture();
        let mut runner = proptest::test_runner::TestRunner::default();
        let result = runner.run(&change(), |change| {
            let changed = apply(&fixture.token, &change);
            if changed == fixture.token {
                return Ok(());
            }
            let verdict = fixture.runtime.block_on(access_token::verify(
                &fixture.keys,
                &changed,
                ISSUER,
                RESOURCE,
                fixture.now,
            ));
            prop_assert!(verdict.is_err(), "accepted {changed:?}");
            Ok(())
        });
        if let Err(err) = result {
            panic!("{err}");
        }
        let untouched = fixture.runtime.block_on(access_token::verify(
            &fixture.keys,
            &fixture.token,
            ISSUER,
            RESOURCE,
            fixture.now,
        ));
        assert!(untouched.is_ok());
    }

    /// A time claim of a token Coop signed: seconds from now, or a value at
    /// an edge.
    #[derive(Debug, Clone)]
    enum Time {
        FromNow(i64),
        Extreme(ExtremeTime),
    }

    fn time_claim() -> impl Strategy<Value = Time> {
        prop_oneof![
            2 => (-600i64..600).prop_map(Time::FromNow),
            3 => extreme_time(OffsetDateTime::now_utc().unix_timestamp()).prop_map(Time::Extreme),
        ]
    }

    impl Time {
        fn value(&self, now: OffsetDateTime) -> Value {
            match self {
                Time::FromNow(offset) => json!(now.unix_timestamp() + offset),
                Time::Extreme(extreme) => extreme.value.clone(),
            }
        }

        fn seconds(&self, now: OffsetDateTime) -> Option<i64> {
            match self {
                Time::FromNow(offset) => Some(now.unix_timestamp() + offset),
                Time::Extreme(extreme) => extreme.seconds,
            }
        }
    }

    /// What `verify` must answer for a token Coop signed with these time
    /// claims, everything else right: both must be integers (and `exp`,
    /// which the JWT library reads too, not negative), and `exp` after now.
    fn model(
        exp: Option<i64>,
        iat: Option<i64>,
        now: OffsetDateTime,
    ) -> Result<(), TokenRejection> {
        match (exp, iat) {
            (Some(exp), Some(_)) if exp >= 0 => {
                if exp > now.unix_timestamp() {
                    Ok(())
                } else {
                    Err(TokenRejection::Expired)
                }
            }
            _ => Err(TokenRejection::BadClaims),
        }
    }

    #[test]
    fn a_token_coop_signed_with_any_time_claims_is_judged_without_panicking() {
        let fixture = fixture();
        let (kid, key) = fixture
            .runtime
            .block_on(fixture.keys.signing_key())
            .unwrap();
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("at+jwt".to_owned());
        header.kid = Some(kid);
        let mut runner = proptest::test_runner::TestRunner::default();
        let result = runner.run(&(time_claim(), time_claim()), |(exp, iat)| {
            let now = fixture.now;
            let claims = json!({
                "iss": ISSUER, "aud": RESOURCE, "sub": UserId::new().to_string(),
                "client_id": "client", "scope": "farm:read", "jti": "j",
                "grant_id": GrantId::new().to_string(), "epoch": 0,
                "exp": exp.value(now), "iat": iat.value(now),
            });
            let token = jsonwebtoken::encode(&header, &claims, &key)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let verdict = fixture.runtime.block_on(access_token::verify(
                &fixture.keys,
                &token,
                ISSUER,
                RESOURCE,
                now,
            ));
            let got = verdict.map(|_| ()).map_err(|err| match err {
                VerifyError::Rejected(rejection) => rejection,
                VerifyError::Keys(err) => panic!("{err}"),
            });
            prop_assert_eq!(
                got,
                model(exp.seconds(now), iat.seconds(now), now),
                "{}",
                claims
            );
            Ok(())
        });
        if let Err(err) = result {
            panic!("{err}");
        }
    }
}
