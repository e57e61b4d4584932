//! Properties of the client-assertion check (issue 16): for any assertion a
//! client could present, [`verify`] answers without panicking, accepts
//! exactly the assertions that pass every check of RFC 7523 §3 as Coop
//! applies them, and refuses the others for the first check they fail. The
//! expected answer is worked out here from what was drawn, an independent
//! model of the check order, not by calling the code under test. Every
//! refusal here is `invalid_client` on the wire; the variant is what the
//! log says, and it must be the right one. The time claims are also drawn
//! at the edges of what a JSON reader or a clock holds (0, negative, the
//! ends of `i64`, the year 10000, floats, huge floats, text: issue 31),
//! where `exp` plus the skew once panicked. `bench/props.sh` runs these
//! with a million cases each.

use std::sync::{Arc, LazyLock};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::JwkSet;
use proptest::prelude::*;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use super::tests::{MemoryJtis, set_of};
use super::{
    AssertionError, CLOCK_SKEW, Expected, MAX_JTI_BYTES, MAX_LIFETIME, VerifiedAssertion, verify,
};
use crate::testing::client_keys::ClientKey;
use crate::testing::jose::{ExtremeTime, extreme_time, object_part};

const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);
const CLIENT: &str = "https://chatgpt.example/oauth/client.json";
const ISSUER: &str = "https://coop.example";
const TOKEN_ENDPOINT: &str = "https://coop.example/token";
const AUDIENCES: &[&str] = &[ISSUER, TOKEN_ENDPOINT];

/// One key per accepted algorithm, made once: RSA keys are slow to make.
static KEYS: LazyLock<[ClientKey; 4]> = LazyLock::new(|| {
    [
        ClientKey::es256("ec"),
        ClientKey::ed25519("ed"),
        ClientKey::rsa("rs", Algorithm::RS256),
        ClientKey::rsa("ps", Algorithm::PS256),
    ]
});

/// The client's registered set: all four keys.
static SET: LazyLock<Arc<JwkSet>> = LazyLock::new(|| {
    let [a, b, c, d] = &*KEYS;
    set_of(&[a, b, c, d])
});

/// The answer, by variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Accepted,
    Malformed,
    Algorithm,
    UnknownKey,
    BadSignature,
    WrongIssuer,
    WrongSubject,
    WrongAudience,
    MissingExpiry,
    Expired,
    TooLongLived,
    NotYetValid,
    MissingJti,
    Replayed,
    Other,
}

fn answer(got: &Result<VerifiedAssertion, AssertionError>) -> Answer {
    match got {
        Ok(_) => Answer::Accepted,
        Err(AssertionError::Malformed(_)) => Answer::Malformed,
        Err(AssertionError::Algorithm(_)) => Answer::Algorithm,
        Err(AssertionError::UnknownKey) => Answer::UnknownKey,
        Err(AssertionError::BadSignature) => Answer::BadSignature,
        Err(AssertionError::WrongIssuer) => Answer::WrongIssuer,
        Err(AssertionError::WrongSubject) => Answer::WrongSubject,
        Err(AssertionError::WrongAudience) => Answer::WrongAudience,
        Err(AssertionError::MissingExpiry) => Answer::MissingExpiry,
        Err(AssertionError::Expired) => Answer::Expired,
        Err(AssertionError::TooLongLived) => Answer::TooLongLived,
        Err(AssertionError::NotYetValid) => Answer::NotYetValid,
        Err(AssertionError::MissingJti) => Answer::MissingJti,
        Err(AssertionError::Replayed) => Answer::Replayed,
        Err(AssertionError::KeySet(_) | AssertionError::Store(_)) => Answer::Other,
    }
}

#[derive(Clone, Debug)]
enum Kid {
    Own,
    /// Another key's of the set: that key does not fit this algorithm.
    Another,
    Unknown,
    None,
}

#[derive(Clone, Debug)]
enum Alg {
    Own,
    Refused(&'static str),
}

/// A claim's value: the right one, a wrong one, or absent.
#[derive(Clone, Debug)]
enum Claim {
    Right,
    Wrong,
    NotAString,
    Missing,
}

#[derive(Clone, Debug)]
enum Aud {
    Issuer,
    TokenEndpoint,
    Both,
    WithAnother,
    Another,
    Empty,
    NotAString,
    Missing,
}

/// An instant claim: seconds from now, a value at an edge, not a number,
/// or absent.
#[derive(Clone, Debug)]
enum Instant {
    At(i64),
    Extreme(ExtremeTime),
    Text,
    Missing,
}

impl Instant {
    /// Seconds from now, exactly, if it is a NumericDate; `Err(())` if it
    /// is there but is not one.
    fn seconds_from_now(&self) -> Result<Option<i128>, ()> {
        match self {
            Instant::At(offset) => Ok(Some(i128::from(*offset))),
            Instant::Extreme(ExtremeTime {
                seconds: Some(seconds),
                ..
            }) => Ok(Some(
                i128::from(*seconds) - i128::from(NOW.unix_timestamp()),
            )),
            Instant::Extreme(_) | Instant::Text => Err(()),
            Instant::Missing => Ok(None),
        }
    }
}

#[derive(Clone, Debug)]
struct Drawn {
    key: usize,
    kid: Kid,
    alg: Alg,
    registered_own_alg: Option<bool>,
    crit: bool,
    tampered_signature: bool,
    iss: Claim,
    sub: Claim,
    aud: Aud,
    exp: Instant,
    nbf: Instant,
    iat: Instant,
    jti: Option<String>,
}

fn claim() -> impl Strategy<Value = Claim> {
    prop_oneof![
        8 => Just(Claim::Right),
        1 => Just(Claim::Wrong),
        1 => Just(Claim::NotAString),
        1 => Just(Claim::Missing),
    ]
}

fn instant(range: std::ops::Range<i64>, missing: u32) -> impl Strategy<Value = Instant> {
    prop_oneof![
        8 => range.prop_map(Instant::At),
        2 => extreme_time(NOW.unix_timestamp()).prop_map(Instant::Extreme),
        1 => Just(Instant::Text),
        missing => Just(Instant::Missing),
    ]
}

fn drawn() -> impl Strategy<Value = Drawn> {
    let kid = prop_oneof![
        8 => Just(Kid::Own),
        1 => Just(Kid::Another),
        1 => Just(Kid::Unknown),
        2 => Just(Kid::None),
    ];
    let alg = prop_oneof![
        12 => Just(Alg::Own),
        1 => prop::sample::select(vec!["none", "HS256", "ES384", "RS512", "es256"]).prop_map(Alg::Refused),
    ];
    let registered = prop_oneof![6 => Just(None), 2 => Just(Some(true)), 1 => Just(Some(false))];
    let aud = prop_oneof![
        4 => Just(Aud::Issuer),
        2 => Just(Aud::TokenEndpoint),
        2 => Just(Aud::Both),
        1 => Just(Aud::WithAnother),
        1 => Just(Aud::Another),
        1 => Just(Aud::Empty),
        1 => Just(Aud::NotAString),
        1 => Just(Aud::Missing),
    ];
    let lifetime = MAX_LIFETIME.whole_seconds() + CLOCK_SKEW.whole_seconds();
    let skew = CLOCK_SKEW.whole_seconds();
    let jti = prop_oneof![
        8 => "[A-Za-z0-9_-]{1,40}".prop_map(Some),
        1 => Just(Some(String::new())),
        1 => (MAX_JTI_BYTES - 4..MAX_JTI_BYTES + 4).prop_map(|n| Some("j".repeat(n))),
        1 => Just(None),
    ];
    (
        (
            0..4usize,
            kid,
            alg,
            registered,
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.1),
        ),
        (claim(), claim(), aud),
        (
            instant(-skew - 30..lifetime + 30, 1),
            instant(-120..skew + 30, 3),
            instant(-120..skew + 30, 3),
            jti,
        ),
    )
        .prop_map(
            |(
                (key, kid, alg, registered_own_alg, crit, tampered_signature),
                (iss, sub, aud),
                (exp, nbf, iat, jti),
            )| Drawn {
                key,
                kid,
                alg,
                registered_own_alg,
                crit,
                tampered_signature,
                iss,
                sub,
                aud,
                exp,
                nbf,
                iat,
                jti,
            },
        )
}

fn put_claim(claims: &mut Value, name: &str, claim: &Claim) {
    match claim {
        Claim::Right => claims[name] = json!(CLIENT),
        Claim::Wrong => claims[name] = json!("https://other.example/client.json"),
        Claim::NotAString => claims[name] = json!([CLIENT]),
        Claim::Missing => {}
    }
}

fn put_instant(claims: &mut Value, name: &str, instant: &Instant) {
    match instant {
        Instant::At(offset) => claims[name] = json!(NOW.unix_timestamp() + offset),
        Instant::Extreme(extreme) => claims[name] = extreme.value.clone(),
        Instant::Text => claims[name] = json!("soon"),
        Instant::Missing => {}
    }
}

fn b64(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

/// The assertion `d` describes, signed with its key.
fn build(d: &Drawn) -> String {
    let key = &KEYS[d.key];
    let mut claims = json!({});
    put_claim(&mut claims, "iss", &d.iss);
    put_claim(&mut claims, "sub", &d.sub);
    match d.aud {
        Aud::Issuer => claims["aud"] = json!(ISSUER),
        Aud::TokenEndpoint => claims["aud"] = json!(TOKEN_ENDPOINT),
        Aud::Both => claims["aud"] = json!([ISSUER, TOKEN_ENDPOINT]),
        Aud::WithAnother => claims["aud"] = json!([ISSUER, "https://other.example"]),
        Aud::Another => claims["aud"] = json!("https://other.example"),
        Aud::Empty => claims["aud"] = json!([]),
        Aud::NotAString => claims["aud"] = json!([ISSUER, 7]),
        Aud::Missing => {}
    }
    put_instant(&mut claims, "exp", &d.exp);
    put_instant(&mut claims, "nbf", &d.nbf);
    put_instant(&mut claims, "iat", &d.iat);
    if let Some(jti) = &d.jti {
        claims["jti"] = json!(jti);
    }
    let signed = match d.kid {
        Kid::None => key.sign_without_kid(&claims),
        _ => key.sign(&claims),
    };
    let Some((_, rest)) = signed.split_once('.') else {
        return signed;
    };
    let Some((claims_part, signature)) = rest.split_once('.') else {
        return signed;
    };
    let needs_own_header =
        !matches!(d.kid, Kid::Own | Kid::None) || d.crit || !matches!(d.alg, Alg::Own);
    if !needs_own_header && !d.tampered_signature {
        return signed;
    }
    // The header as the drawing says; the signature then covers another
    // header, which only matters if every check before the signature's
    // passes, and then the model expects a bad signature.
    let mut header = json!({"typ": "JWT"});
    header["alg"] = json!(match d.alg {
        Alg::Own => super::alg_name(key.alg),
        Alg::Refused(name) => name,
    });
    match d.kid {
        Kid::Own => header["kid"] = json!(key.kid()),
        Kid::Another => header["kid"] = json!(KEYS[(d.key + 1) % 4].kid()),
        Kid::Unknown => header["kid"] = json!("nobody"),
        Kid::None => {}
    }
    if d.crit {
        header["crit"] = json!(["exp"]);
    }
    let mut signature = URL_SAFE_NO_PAD.decode(signature).unwrap_or_default();
    if d.tampered_signature
        && let Some(first) = signature.first_mut()
    {
        *first ^= 0x01;
    }
    let header_part = if needs_own_header {
        b64(&header)
    } else {
        signed.split('.').next().unwrap_or_default().to_owned()
    };
    format!(
        "{header_part}.{claims_part}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// What the check must answer for `d`.
fn model(d: &Drawn) -> Answer {
    if d.crit {
        return Answer::Malformed;
    }
    if matches!(d.alg, Alg::Refused(_)) || d.registered_own_alg == Some(false) {
        return Answer::Algorithm;
    }
    // Every key of the set names its own `alg`, so another key's `kid`
    // never fits (RS256 and PS256 keys are both RSA, but not each other's).
    if matches!(d.kid, Kid::Unknown | Kid::Another) {
        return Answer::UnknownKey;
    }
    // A header other than the signed one fails one of the checks above
    // first (crit, alg, kid), so only a changed signature is left.
    if d.tampered_signature {
        return Answer::BadSignature;
    }
    if !matches!(d.iss, Claim::Right) {
        return Answer::WrongIssuer;
    }
    if !matches!(d.sub, Claim::Right) {
        return Answer::WrongSubject;
    }
    if !matches!(d.aud, Aud::Issuer | Aud::TokenEndpoint | Aud::Both) {
        return Answer::WrongAudience;
    }
    let skew = i128::from(CLOCK_SKEW.whole_seconds());
    let Ok(Some(exp)) = d.exp.seconds_from_now() else {
        return Answer::MissingExpiry;
    };
    if exp + skew <= 0 {
        return Answer::Expired;
    }
    if exp > i128::from(MAX_LIFETIME.whole_seconds()) + skew {
        return Answer::TooLongLived;
    }
    for instant in [&d.nbf, &d.iat] {
        match instant.seconds_from_now() {
            Err(()) => return Answer::Malformed,
            Ok(Some(t)) if t > skew => return Answer::NotYetValid,
            Ok(_) => {}
        }
    }
    match &d.jti {
        Some(jti) if !jti.is_empty() && jti.len() <= MAX_JTI_BYTES => Answer::Accepted,
        _ => Answer::MissingJti,
    }
}

fn expected(d: &Drawn) -> Expected<'static> {
    let own = KEYS[d.key].alg;
    Expected {
        client_id: CLIENT,
        audiences: AUDIENCES,
        algorithm: d.registered_own_alg.map(|same| {
            if same {
                own
            } else if own == Algorithm::ES256 {
                Algorithm::EdDSA
            } else {
                Algorithm::ES256
            }
        }),
    }
}

proptest! {
    #[test]
    fn an_assertion_is_accepted_exactly_when_every_check_passes(d in drawn()) {
        let assertion = build(&d);
        let jtis = MemoryJtis::default();
        let check = || futures::executor::block_on(verify(&assertion, &expected(&d), &*SET, NOW, &jtis));
        let got = check();
        prop_assert_eq!(answer(&got), model(&d), "assertion {}", assertion);
        if let Ok(verified) = got {
            prop_assert_eq!(verified.algorithm, KEYS[d.key].alg);
            if let Ok(Some(exp)) = d.exp.seconds_from_now() {
                prop_assert_eq!(
                    i128::from(verified.expires_at.unix_timestamp()),
                    i128::from(NOW.unix_timestamp()) + exp
                );
            }
            // Accepted once, then a replay.
            prop_assert_eq!(answer(&check()), Answer::Replayed);
        }
    }

    #[test]
    fn any_text_is_refused_without_panicking(
        value in prop_oneof![
            any::<String>(),
            "[A-Za-z0-9_=.-]{0,300}",
            (jose_part(), jose_part(), "[A-Za-z0-9_-]{0,90}")
                .prop_map(|(h, c, s)| format!("{h}.{c}.{s}")),
        ],
    ) {
        let jtis = MemoryJtis::default();
        let expected = Expected { client_id: CLIENT, audiences: AUDIENCES, algorithm: None };
        let got = futures::executor::block_on(verify(&value, &expected, &*SET, NOW, &jtis));
        prop_assert!(got.is_err());
        // Reading the claimed client never fails loudly either.
        let _ = super::claimed_client_id(&value);
    }
}

/// A base64url JSON object with the members the checks read, any values.
fn jose_part() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just(json!("ES256")),
        Just(json!("ec")),
        Just(json!(CLIENT)),
        Just(json!(ISSUER)),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,20}".prop_map(Value::from),
        Just(json!([])),
        Just(Value::Null),
    ];
    object_part(
        vec![
            "alg", "kid", "crit", "iss", "sub", "aud", "exp", "nbf", "iat", "jti",
        ],
        value,
        8,
    )
}
