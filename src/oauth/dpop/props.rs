//! Properties of the DPoP proof check (issue 16): for any proof a client
//! could send, [`verify`] answers without panicking, accepts exactly the
//! proofs that pass every check of RFC 9449 §4.3, and refuses the others
//! with the error of the first check they fail. The expected answer is
//! worked out here from what was drawn (an independent model of the check
//! order), not by calling the code under test. `iat` is also drawn at the
//! edges of what a JSON reader or a clock holds (0, negative, the ends of
//! `i64`, the year 10000, floats, huge floats, text: issue 31), where a
//! check that moved the claim by its window would panic or wrap.
//! `bench/props.sh` runs these with a million cases each.

use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use super::proof::{Expected, MAX_AGE, MAX_AHEAD, MAX_LEN, ProofError, verify};
use super::testing::{ProofKey, ath};
use crate::testing::jose::{ExtremeTime, extreme_time, object_part};

const NOW: OffsetDateTime = datetime!(2026-12-01 12:00 UTC);
const MCP: &str = "https://coop.example/mcp";
const TOKEN: &str = "the-access-token";

/// One key per accepted algorithm, made once: RSA keys are slow to make.
static KEYS: LazyLock<[ProofKey; 4]> = LazyLock::new(|| {
    [
        ProofKey::es256(),
        ProofKey::ed25519(),
        ProofKey::rs256(),
        ProofKey::ps256(),
    ]
});

/// `htu` values and whether each names `MCP` (same scheme, host, port and
/// path; query and fragment do not count).
const HTUS: &[(&str, bool)] = &[
    (MCP, true),
    ("https://coop.example/mcp?x=1", true),
    ("https://coop.example/mcp#f", true),
    ("https://coop.example:443/mcp", true),
    ("https://COOP.example/mcp", true),
    ("https://coop.example/mcp/", false),
    ("https://coop.example/MCP", false),
    ("https://coop.example:8443/mcp", false),
    ("http://coop.example/mcp", false),
    ("https://coop.example.evil/mcp", false),
    ("https://evil.example/mcp", false),
    ("/mcp", false),
    ("", false),
];

#[derive(Clone, Debug)]
enum Typ {
    Dpop,
    DpopUpper,
    Jwt,
    Missing,
}

#[derive(Clone, Debug)]
enum Alg {
    /// The key's own algorithm.
    Own,
    /// Another accepted algorithm than the key's: the key does not fit it.
    OtherAccepted,
    /// Not an accepted algorithm at all.
    Refused(&'static str),
}

#[derive(Clone, Debug)]
enum Jwk {
    Public,
    /// A private member beside the public ones.
    WithPrivate(&'static str),
    Missing,
}

/// `iat`: seconds from now, a value at an edge, or absent.
#[derive(Clone, Debug)]
enum Iat {
    Offset(i64),
    Extreme(ExtremeTime),
    Missing,
}

#[derive(Clone, Debug)]
enum Ath {
    Right,
    Wrong,
    Missing,
}

/// Everything a proof is made of, each part good or bad.
#[derive(Clone, Debug)]
struct Drawn {
    key: usize,
    typ: Typ,
    alg: Alg,
    jwk: Jwk,
    crit: bool,
    tampered_signature: bool,
    jti: Option<String>,
    htm: Option<&'static str>,
    htu: Option<usize>,
    iat: Iat,
    ath: Ath,
    /// Whether the check is at the resource (`ath` required) or `/token`.
    with_token: bool,
}

fn drawn() -> impl Strategy<Value = Drawn> {
    let typ = prop_oneof![
        6 => Just(Typ::Dpop),
        1 => Just(Typ::DpopUpper),
        1 => Just(Typ::Jwt),
        1 => Just(Typ::Missing),
    ];
    let alg = prop_oneof![
        8 => Just(Alg::Own),
        1 => Just(Alg::OtherAccepted),
        1 => prop::sample::select(vec!["none", "HS256", "ES384", "es256", ""]).prop_map(Alg::Refused),
    ];
    let jwk = prop_oneof![
        8 => Just(Jwk::Public),
        1 => prop::sample::select(vec!["d", "p", "k", "qi"]).prop_map(Jwk::WithPrivate),
        1 => Just(Jwk::Missing),
    ];
    let jti = prop_oneof![
        8 => "[A-Za-z0-9_-]{1,40}".prop_map(Some),
        1 => Just(Some(String::new())),
        1 => (250usize..262).prop_map(|n| Some("j".repeat(n))),
        1 => Just(None),
    ];
    let htm = prop_oneof![
        8 => Just(Some("POST")),
        1 => prop::sample::select(vec!["GET", "post", "PUT"]).prop_map(Some),
        1 => Just(None),
    ];
    let htu = prop_oneof![
        4 => Just(Some(0)),
        4 => (0..HTUS.len()).prop_map(Some),
        1 => Just(None),
    ];
    let iat = prop_oneof![
        6 => (-MAX_AGE - 30..MAX_AHEAD + 30).prop_map(Iat::Offset),
        1 => any::<i64>().prop_map(|t| Iat::Offset(t / 2)),
        2 => extreme_time(NOW.unix_timestamp()).prop_map(Iat::Extreme),
        1 => Just(Iat::Missing),
    ];
    let ath = prop_oneof![8 => Just(Ath::Right), 1 => Just(Ath::Wrong), 1 => Just(Ath::Missing)];
    (
        (0..4usize, typ, alg, jwk, prop::bool::weighted(0.05)),
        (prop::bool::weighted(0.1), jti, htm, htu, iat, ath),
        any::<bool>(),
    )
        .prop_map(
            |(
                (key, typ, alg, jwk, crit),
                (tampered_signature, jti, htm, htu, iat, ath),
                with_token,
            )| {
                Drawn {
                    key,
                    typ,
                    alg,
                    jwk,
                    crit,
                    tampered_signature,
                    jti,
                    htm,
                    htu,
                    iat,
                    ath,
                    with_token,
                }
            },
        )
}

fn alg_name(d: &Drawn) -> &'static str {
    let own = KEYS[d.key].alg;
    match d.alg {
        Alg::Own => own,
        // ES256 and EdDSA keys never fit RSA, and RSA keys never fit ES256.
        Alg::OtherAccepted => {
            if own == "ES256" {
                "RS256"
            } else {
                "ES256"
            }
        }
        Alg::Refused(name) => name,
    }
}

/// The proof `d` describes, signed with its key.
fn build(d: &Drawn) -> String {
    let key = &KEYS[d.key];
    let mut header = json!({});
    match d.typ {
        Typ::Dpop => header["typ"] = json!("dpop+jwt"),
        Typ::DpopUpper => header["typ"] = json!("DPoP+JWT"),
        Typ::Jwt => header["typ"] = json!("JWT"),
        Typ::Missing => {}
    }
    header["alg"] = json!(alg_name(d));
    match d.jwk {
        Jwk::Public => header["jwk"] = key.public_jwk(),
        Jwk::WithPrivate(member) => {
            let mut jwk = key.public_jwk();
            jwk[member] = json!("AAAA");
            header["jwk"] = jwk;
        }
        Jwk::Missing => {}
    }
    if d.crit {
        header["crit"] = json!(["exp"]);
    }
    let mut claims = json!({});
    if let Some(jti) = &d.jti {
        claims["jti"] = json!(jti);
    }
    if let Some(htm) = d.htm {
        claims["htm"] = json!(htm);
    }
    if let Some(i) = d.htu {
        claims["htu"] = json!(HTUS[i].0);
    }
    match &d.iat {
        Iat::Offset(offset) => claims["iat"] = json!(NOW.unix_timestamp().saturating_add(*offset)),
        Iat::Extreme(extreme) => claims["iat"] = extreme.value.clone(),
        Iat::Missing => {}
    }
    match d.ath {
        Ath::Right => claims["ath"] = json!(ath(TOKEN)),
        Ath::Wrong => claims["ath"] = json!(ath("another token")),
        Ath::Missing => {}
    }
    let proof = key.sign_with_header(&header, &claims);
    if d.tampered_signature {
        tamper_signature(&proof)
    } else {
        proof
    }
}

/// The proof with its signature's first byte changed (still base64url).
fn tamper_signature(proof: &str) -> String {
    let (signed, signature) = proof.rsplit_once('.').unwrap_or((proof, ""));
    let mut bytes = URL_SAFE_NO_PAD.decode(signature).unwrap_or_default();
    if let Some(first) = bytes.first_mut() {
        *first ^= 0x01;
    }
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// What the check must answer for `d`, in RFC 9449 §4.3's order as Coop
/// applies it.
fn model(d: &Drawn) -> Result<(), ProofError> {
    if matches!(d.typ, Typ::Jwt | Typ::Missing) {
        return Err(ProofError::WrongType);
    }
    if matches!(d.alg, Alg::Refused(_)) {
        return Err(ProofError::Algorithm);
    }
    if d.crit {
        return Err(ProofError::Malformed);
    }
    if !matches!(d.jwk, Jwk::Public) || matches!(d.alg, Alg::OtherAccepted) {
        return Err(ProofError::Key);
    }
    if d.tampered_signature {
        return Err(ProofError::BadSignature);
    }
    // Seconds from now, exactly (an extreme is any i64, so i128).
    let iat = match &d.iat {
        Iat::Offset(offset) => Some(i128::from(*offset)),
        Iat::Extreme(extreme) => extreme
            .seconds
            .map(|s| i128::from(s) - i128::from(NOW.unix_timestamp())),
        Iat::Missing => None,
    };
    let (Some(jti), Some(htm), Some(htu), Some(iat)) = (&d.jti, d.htm, d.htu, iat) else {
        return Err(ProofError::Claims);
    };
    if jti.is_empty() || jti.len() > 256 {
        return Err(ProofError::Claims);
    }
    if htm != "POST" {
        return Err(ProofError::WrongMethod);
    }
    if !HTUS[htu].1 {
        return Err(ProofError::WrongUri);
    }
    if iat < -i128::from(MAX_AGE) {
        return Err(ProofError::Stale);
    }
    if iat > i128::from(MAX_AHEAD) {
        return Err(ProofError::Early);
    }
    if d.with_token && !matches!(d.ath, Ath::Right) {
        return Err(ProofError::WrongTokenHash);
    }
    Ok(())
}

fn expected(with_token: bool) -> Expected<'static> {
    Expected {
        method: "POST",
        uri: MCP,
        access_token: with_token.then_some(TOKEN),
        nonces: None,
    }
}

/// What one character of a good proof may be changed to: its own alphabet
/// (base64url and the dots), and what a mangled header might carry.
const CHANGED_TO: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ";

proptest! {
    #[test]
    fn a_proof_is_accepted_exactly_when_every_check_passes(d in drawn()) {
        let proof = build(&d);
        let got = verify(&[proof.as_str()], &expected(d.with_token), NOW);
        match (model(&d), got) {
            (Ok(()), Ok(accepted)) => {
                // What is accepted names the key that signed it and the
                // proof's own `jti` and `iat`.
                prop_assert_eq!(accepted.jkt, KEYS[d.key].thumbprint());
                prop_assert_eq!(Some(accepted.jti), d.jti.clone());
                let claimed = match &d.iat {
                    Iat::Offset(offset) => Some(NOW.unix_timestamp() + offset),
                    Iat::Extreme(extreme) => extreme.seconds,
                    Iat::Missing => None,
                };
                prop_assert_eq!(Some(accepted.iat), claimed);
            }
            (want, got) => prop_assert_eq!(want, got.map(|_| ())),
        }
    }

    #[test]
    fn a_good_proof_with_any_one_character_changed_is_refused(
        key in 0..4usize,
        at in any::<prop::sample::Index>(),
        shift in 1..CHANGED_TO.len(),
    ) {
        let proof = KEYS[key].proof("POST", MCP, Some(TOKEN));
        let mut chars: Vec<char> = proof.chars().collect();
        let i = at.index(chars.len());
        // Drawn as a shift along the alphabet, so the new character always
        // differs from the old: rejected draws would exhaust proptest's
        // budget of them over a million cases.
        let alphabet: Vec<char> = CHANGED_TO.chars().collect();
        let from = alphabet.iter().position(|c| *c == chars[i]).unwrap_or(0);
        let mut with = alphabet[(from + shift) % alphabet.len()];
        // A space at either end is trimmed as a header's white space is.
        if with == ' ' && (i == 0 || i == chars.len() - 1) {
            with = if chars[i] == 'A' { 'B' } else { 'A' };
        }
        prop_assert_ne!(chars[i], with);
        chars[i] = with;
        let changed: String = chars.into_iter().collect();
        let got = verify(&[changed.as_str()], &expected(true), OffsetDateTime::now_utc());
        prop_assert!(got.is_err(), "accepted a changed proof: {changed}");
    }

    #[test]
    fn any_header_value_is_refused_without_panicking(
        value in prop_oneof![
            any::<String>(),
            "[A-Za-z0-9_=.-]{0,300}",
            (jose_part(), jose_part(), "[A-Za-z0-9_-]{0,90}")
                .prop_map(|(h, c, s)| format!("{h}.{c}.{s}")),
        ],
        several in prop::bool::weighted(0.05),
    ) {
        let values: Vec<&str> = if several { vec![&value, &value] } else { vec![&value] };
        let got = verify(&values, &expected(true), NOW);
        // Nothing here is signed by a key it carries.
        prop_assert!(got.is_err());
        if several {
            prop_assert_eq!(got, Err(ProofError::Several));
        } else if value.trim().len() > MAX_LEN {
            prop_assert_eq!(got, Err(ProofError::TooLong));
        }
    }
}

/// A base64url JSON object of the kind a header or claims part holds, with
/// the members a proof's checks read, drawn with any values.
fn jose_part() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        Just(json!("dpop+jwt")),
        Just(json!("ES256")),
        Just(json!({"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"})),
        Just(
            json!({"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"})
        ),
        Just(json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"})),
        any::<i64>().prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
        Just(Value::Null),
    ];
    object_part(
        vec!["typ", "alg", "jwk", "crit", "jti", "htm", "htu", "iat"],
        value,
        6,
    )
}
