//! The verifier's checks, one refusal each, with keys made on the spot
//! (`crate::testing::client_keys`, shared with the integration suite).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Mutex;

use jsonwebtoken::{EncodingKey, Header};
use serde_json::json;
use time::macros::datetime;

use super::*;
use crate::testing::client_keys::ClientKey;

const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);
const CLIENT: &str = "https://chatgpt.example/oauth/client.json";
const ISSUER: &str = "https://coop.example";
const TOKEN_ENDPOINT: &str = "https://coop.example/token";
const AUDIENCES: &[&str] = &[ISSUER, TOKEN_ENDPOINT];

/// The public keys as a set.
pub fn set_of(keys: &[&ClientKey]) -> Arc<JwkSet> {
    Arc::new(JwkSet {
        keys: keys.iter().map(|k| k.public.clone()).collect(),
    })
}

/// Good claims for `client`, `aud` the issuer, expiring in a minute.
pub fn claims_for(client: &str, now: OffsetDateTime) -> Value {
    json!({
        "iss": client,
        "sub": client,
        "aud": ISSUER,
        "iat": now.unix_timestamp(),
        "exp": (now + time::Duration::minutes(1)).unix_timestamp(),
        "jti": crate::secrets::random_token(16),
    })
}

/// `jti`s remembered in memory, each with the instant it is kept until.
#[derive(Default)]
pub struct MemoryJtis(Mutex<HashMap<(String, String), OffsetDateTime>>);

impl MemoryJtis {
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn kept_until(&self, client_id: &str, jti: &str) -> Option<OffsetDateTime> {
        let key = (client_id.to_owned(), crate::secrets::hash_secret(jti));
        self.0.lock().unwrap().get(&key).copied()
    }
}

impl JtiStore for MemoryJtis {
    async fn first_use(
        &self,
        client_id: &str,
        jti_hash: &str,
        until: OffsetDateTime,
        _: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let mut seen = self.0.lock().unwrap();
        match seen.entry((client_id.to_owned(), jti_hash.to_owned())) {
            Entry::Occupied(_) => Ok(false),
            Entry::Vacant(first) => {
                first.insert(until);
                Ok(true)
            }
        }
    }
}

fn expected() -> Expected<'static> {
    Expected {
        client_id: CLIENT,
        audiences: AUDIENCES,
        algorithm: None,
    }
}

async fn check(assertion: &str, keys: &Arc<JwkSet>) -> Result<VerifiedAssertion, AssertionError> {
    verify(assertion, &expected(), keys, NOW, &MemoryJtis::default()).await
}

fn with(claim: &str, value: Value) -> Value {
    let mut claims = claims_for(CLIENT, NOW);
    claims[claim] = value;
    claims
}

fn without(claim: &str) -> Value {
    let mut claims = claims_for(CLIENT, NOW);
    claims.as_object_mut().unwrap().remove(claim);
    claims
}

fn jwt(header: &Value, claims: &Value, signature: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

#[tokio::test]
async fn each_allowed_algorithm_verifies() {
    for key in [
        ClientKey::es256("ec"),
        ClientKey::rsa("rs", Algorithm::RS256),
        ClientKey::rsa("ps", Algorithm::PS256),
        ClientKey::ed25519("ed"),
    ] {
        let keys = set_of(&[&key]);
        let claims = claims_for(CLIENT, NOW);
        let verified = check(&key.sign(&claims), &keys).await.unwrap();
        assert_eq!(
            verified,
            VerifiedAssertion {
                client_id: CLIENT.to_owned(),
                algorithm: key.alg,
                kid: Some(key.kid().to_owned()),
                expires_at: NOW + time::Duration::minutes(1),
            }
        );
    }
}

#[tokio::test]
async fn a_jti_is_single_use_per_client_and_a_refusal_spends_none() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    let jtis = MemoryJtis::default();
    let claims = claims_for(CLIENT, NOW);
    let assertion = key.sign(&claims);
    assert!(
        verify(&assertion, &expected(), &keys, NOW, &jtis)
            .await
            .is_ok()
    );
    assert!(matches!(
        verify(&assertion, &expected(), &keys, NOW, &jtis).await,
        Err(AssertionError::Replayed)
    ));
    // Kept as long as the assertion could still be accepted: to `exp`
    // plus the skew `exp` is allowed.
    assert_eq!(
        jtis.kept_until(CLIENT, claims["jti"].as_str().unwrap()),
        Some(NOW + time::Duration::minutes(1) + CLOCK_SKEW)
    );
    // Another assertion with the same jti is a replay too.
    let mut again = claims.clone();
    again["iat"] = json!(NOW.unix_timestamp() + 1);
    assert!(matches!(
        verify(&key.sign(&again), &expected(), &keys, NOW, &jtis).await,
        Err(AssertionError::Replayed)
    ));
    // Another client's jti space is its own.
    let other = "https://other.example/client.json";
    let mut theirs = claims_for(other, NOW);
    theirs["jti"] = claims["jti"].clone();
    let expected_other = Expected {
        client_id: other,
        ..expected()
    };
    assert!(
        verify(&key.sign(&theirs), &expected_other, &keys, NOW, &jtis)
            .await
            .is_ok()
    );
    // A refused assertion records nothing.
    let before = jtis.len();
    let wrong = with("aud", json!("https://elsewhere.example"));
    assert!(
        verify(&key.sign(&wrong), &expected(), &keys, NOW, &jtis)
            .await
            .is_err()
    );
    assert_eq!(jtis.len(), before);
}

#[tokio::test]
async fn aud_must_name_coop_and_nothing_else() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    for good in [
        json!(ISSUER),
        json!(TOKEN_ENDPOINT),
        json!([ISSUER]),
        json!([ISSUER, TOKEN_ENDPOINT]),
    ] {
        assert!(
            check(&key.sign(&with("aud", good.clone())), &keys)
                .await
                .is_ok(),
            "{good}"
        );
    }
    for bad in [
        json!("https://other.example"),
        json!("https://coop.example/"),
        json!("https://coop.example/mcp"),
        json!([ISSUER, "https://other.example"]),
        json!([ISSUER, 7]),
        json!([]),
        json!(7),
    ] {
        assert!(
            matches!(
                check(&key.sign(&with("aud", bad.clone())), &keys).await,
                Err(AssertionError::WrongAudience)
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        check(&key.sign(&without("aud")), &keys).await,
        Err(AssertionError::WrongAudience)
    ));
}

#[tokio::test]
async fn iss_and_sub_must_be_the_client() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    let other = json!("https://other.example/client.json");
    for (claims, want) in [
        (with("iss", other.clone()), "iss"),
        (without("iss"), "iss"),
        (with("sub", other), "sub"),
        (without("sub"), "sub"),
    ] {
        let result = check(&key.sign(&claims), &keys).await;
        match (want, result) {
            ("iss", Err(AssertionError::WrongIssuer))
            | ("sub", Err(AssertionError::WrongSubject)) => {}
            (want, other) => panic!("{want}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn exp_is_required_not_past_and_not_far_ahead() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    let t = NOW.unix_timestamp();
    let skew = CLOCK_SKEW.whole_seconds();
    let most = (MAX_LIFETIME + CLOCK_SKEW).whole_seconds();
    for (exp, ok) in [
        (json!(t - skew), false),
        (json!(t - skew + 1), true),
        (json!(t + most), true),
        (json!(t + most + 1), false),
    ] {
        let result = check(&key.sign(&with("exp", exp.clone())), &keys).await;
        assert_eq!(result.is_ok(), ok, "exp {exp}: {result:?}");
    }
    assert!(matches!(
        check(&key.sign(&with("exp", json!(t - 3600))), &keys).await,
        Err(AssertionError::Expired)
    ));
    assert!(matches!(
        check(&key.sign(&with("exp", json!(t + 3600))), &keys).await,
        Err(AssertionError::TooLongLived)
    ));
    for missing in [
        without("exp"),
        with("exp", json!("soon")),
        with("exp", json!(1.5)),
    ] {
        assert!(matches!(
            check(&key.sign(&missing), &keys).await,
            Err(AssertionError::MissingExpiry)
        ));
    }
}

#[tokio::test]
async fn nbf_and_iat_may_not_be_in_the_future() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    let later = NOW.unix_timestamp() + CLOCK_SKEW.whole_seconds() + 1;
    for claim in ["nbf", "iat"] {
        assert!(matches!(
            check(&key.sign(&with(claim, json!(later))), &keys).await,
            Err(AssertionError::NotYetValid)
        ));
        assert!(
            check(&key.sign(&with(claim, json!(later - 1))), &keys)
                .await
                .is_ok()
        );
        assert!(matches!(
            check(&key.sign(&with(claim, json!("now"))), &keys).await,
            Err(AssertionError::Malformed(_))
        ));
    }
    assert!(check(&key.sign(&without("iat")), &keys).await.is_ok());
}

#[tokio::test]
async fn jti_is_required_and_bounded() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    for claims in [
        without("jti"),
        with("jti", json!("")),
        with("jti", json!(7)),
        with("jti", json!("j".repeat(MAX_JTI_BYTES + 1))),
    ] {
        assert!(matches!(
            check(&key.sign(&claims), &keys).await,
            Err(AssertionError::MissingJti)
        ));
    }
    let longest = with("jti", json!("j".repeat(MAX_JTI_BYTES)));
    assert!(check(&key.sign(&longest), &keys).await.is_ok());
}

#[tokio::test]
async fn only_a_key_of_the_clients_set_verifies() {
    let mine = ClientKey::es256("mine");
    let keys = set_of(&[&mine]);
    let claims = claims_for(CLIENT, NOW);
    // A kid the set does not hold.
    let stranger = ClientKey::es256("stranger");
    assert!(matches!(
        check(&stranger.sign(&claims), &keys).await,
        Err(AssertionError::UnknownKey)
    ));
    // Another client's key under this client's kid.
    let impostor = ClientKey::es256("mine");
    assert!(matches!(
        check(&impostor.sign(&claims), &keys).await,
        Err(AssertionError::BadSignature)
    ));
    // Without a kid, every key of the set is tried, and only they.
    assert!(check(&mine.sign_without_kid(&claims), &keys).await.is_ok());
    let two = set_of(&[&ClientKey::es256("a"), &mine]);
    assert!(
        check(&mine.sign_without_kid(&claims_for(CLIENT, NOW)), &two)
            .await
            .is_ok()
    );
    assert!(matches!(
        check(&impostor.sign_without_kid(&claims), &two).await,
        Err(AssertionError::BadSignature)
    ));
    // Claims altered after signing.
    let signed = mine.sign(&claims);
    let parts: Vec<&str> = signed.split('.').collect();
    let widened = URL_SAFE_NO_PAD.encode(with("sub", json!("x")).to_string());
    let altered = format!("{}.{widened}.{}", parts[0], parts[2]);
    assert!(matches!(
        check(&altered, &keys).await,
        Err(AssertionError::BadSignature)
    ));
}

#[tokio::test]
async fn a_key_verifies_only_what_it_is_for() {
    let claims = claims_for(CLIENT, NOW);
    // An RS256 signature with a key published for PS256.
    let rs = ClientKey::rsa("r", Algorithm::RS256);
    let ps = ClientKey::rsa("r", Algorithm::PS256);
    assert!(matches!(
        check(&rs.sign(&claims), &set_of(&[&ps])).await,
        Err(AssertionError::UnknownKey)
    ));
    // An encryption key, and a key whose operations exclude verifying.
    let key = ClientKey::es256("k");
    let mut enc = key.public.clone();
    enc.common.public_key_use = Some(PublicKeyUse::Encryption);
    let enc = Arc::new(JwkSet { keys: vec![enc] });
    assert!(matches!(
        check(&key.sign(&claims), &enc).await,
        Err(AssertionError::UnknownKey)
    ));
    let mut sign_only = key.public.clone();
    sign_only.common.key_operations = Some(vec![KeyOperations::Sign]);
    let sign_only = Arc::new(JwkSet {
        keys: vec![sign_only],
    });
    assert!(matches!(
        check(&key.sign(&claims), &sign_only).await,
        Err(AssertionError::UnknownKey)
    ));
    // An EdDSA header over an EC key.
    let ed = ClientKey::ed25519("k");
    assert!(matches!(
        check(&ed.sign(&claims), &set_of(&[&key])).await,
        Err(AssertionError::UnknownKey)
    ));
}

#[tokio::test]
async fn none_hmac_and_other_algorithms_are_refused() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    let claims = claims_for(CLIENT, NOW);
    // alg none, unsigned.
    let unsigned = jwt(&json!({"alg": "none", "kid": "k"}), &claims, b"");
    assert!(matches!(
        check(&unsigned, &keys).await,
        Err(AssertionError::Algorithm(alg)) if alg == "none"
    ));
    // HS256 keyed with the public key's coordinates (the classic confusion).
    let secret = key.public.clone();
    let AlgorithmParameters::EllipticCurve(ec) = &secret.algorithm else {
        unreachable!()
    };
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k".into());
    let hmac = jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_secret(ec.x.as_bytes()).unwrap(),
    )
    .unwrap();
    assert!(matches!(
        check(&hmac, &keys).await,
        Err(AssertionError::Algorithm(alg)) if alg == "HS256"
    ));
    for alg in [
        "HS384", "HS512", "ES384", "RS384", "RS512", "PS512", "ES512", "es256", "",
    ] {
        let forged = jwt(&json!({"alg": alg, "kid": "k"}), &claims, b"sig");
        assert!(
            matches!(
                check(&forged, &keys).await,
                Err(AssertionError::Algorithm(_))
            ),
            "{alg}"
        );
    }
}

#[tokio::test]
async fn the_registered_algorithm_is_the_only_one_accepted() {
    let ec = ClientKey::es256("ec");
    let ed = ClientKey::ed25519("ed");
    let keys = set_of(&[&ec, &ed]);
    let only_es256 = Expected {
        algorithm: Some(Algorithm::ES256),
        ..expected()
    };
    let jtis = MemoryJtis::default();
    let claims = claims_for(CLIENT, NOW);
    assert!(
        verify(&ec.sign(&claims), &only_es256, &keys, NOW, &jtis)
            .await
            .is_ok()
    );
    assert!(matches!(
        verify(&ed.sign(&claims_for(CLIENT, NOW)), &only_es256, &keys, NOW, &jtis).await,
        Err(AssertionError::Algorithm(alg)) if alg == "EdDSA"
    ));
}

#[tokio::test]
async fn malformed_assertions_are_refused() {
    let key = ClientKey::es256("k");
    let keys = set_of(&[&key]);
    let claims = claims_for(CLIENT, NOW);
    let good = key.sign(&claims);
    let long = format!("{good}{}", "A".repeat(MAX_ASSERTION_BYTES));
    let crit = jwt(
        &json!({"alg": "ES256", "kid": "k", "crit": ["exp"], "exp": 1}),
        &claims,
        b"x",
    );
    let not_json = format!("{}.e30.", URL_SAFE_NO_PAD.encode("{"));
    for bad in [
        "",
        "abc",
        "a.b",
        "a.b.c.d.e",
        "!!!.e30.",
        not_json.as_str(),
        long.as_str(),
        crit.as_str(),
    ] {
        assert!(
            matches!(check(bad, &keys).await, Err(AssertionError::Malformed(_))),
            "{bad:.40}"
        );
    }
    // Signed claims that are not an object.
    let array = key.sign(&json!(["iss"]));
    assert!(matches!(
        check(&array, &keys).await,
        Err(AssertionError::Malformed(_))
    ));
}

/// An assertion of exactly [`MAX_ASSERTION_BYTES`] is read; one byte more
/// is not, by the verifier or by the look-up of the claimed client.
#[tokio::test]
async fn the_longest_assertion_read_is_max_assertion_bytes() {
    // Base64url never has a length of 4k + 1, so the header's length (the
    // kid's) is varied too, until one padding gives the exact length.
    let (key, longest) = ["k", "kk", "kkk"]
        .into_iter()
        .find_map(|kid| {
            let key = ClientKey::es256(kid);
            let longest = (5_000..MAX_ASSERTION_BYTES)
                .map(|n| key.sign(&with("pad", json!("p".repeat(n)))))
                .take_while(|a| a.len() <= MAX_ASSERTION_BYTES)
                .find(|a| a.len() == MAX_ASSERTION_BYTES)?;
            Some((key, longest))
        })
        .unwrap();
    let keys = set_of(&[&key]);
    assert!(check(&longest, &keys).await.is_ok());
    assert_eq!(claimed_client_id(&longest).as_deref(), Some(CLIENT));

    let one_more = format!("{longest}A");
    assert!(matches!(
        check(&one_more, &keys).await,
        Err(AssertionError::Malformed(_))
    ));
    assert_eq!(claimed_client_id(&one_more), None);
}

#[test]
fn the_claimed_client_is_read_from_sub() {
    let key = ClientKey::es256("k");
    assert_eq!(
        claimed_client_id(&key.sign(&claims_for(CLIENT, NOW))).as_deref(),
        Some(CLIENT)
    );
    assert_eq!(claimed_client_id("x.y.z"), None);
    assert_eq!(claimed_client_id(&key.sign(&without("sub"))), None);
}

#[test]
fn algorithm_names_are_the_allow_list() {
    for (name, alg) in SIGNING_ALGORITHM_NAMES.iter().zip(SIGNING_ALGORITHMS) {
        assert_eq!(algorithm(name), Some(alg));
        assert_eq!(alg_name(alg), *name);
    }
    assert_eq!(algorithm("HS256"), None);
    assert_eq!(algorithm("none"), None);
}

/// A source that counts how it was asked, as a fetching one would be.
struct Asked {
    set: Arc<JwkSet>,
    kids: Mutex<Vec<Option<String>>>,
}

impl KeySource for Asked {
    async fn key_set(
        &self,
        kid: Option<&str>,
        _: OffsetDateTime,
    ) -> Result<Arc<JwkSet>, KeySetError> {
        self.kids.lock().unwrap().push(kid.map(str::to_owned));
        Ok(self.set.clone())
    }
}

#[tokio::test]
async fn the_key_source_is_asked_for_the_assertions_kid_and_its_failure_is_reported() {
    let key = ClientKey::es256("k1");
    let source = Asked {
        set: set_of(&[&key]),
        kids: Mutex::default(),
    };
    let jtis = MemoryJtis::default();
    verify(
        &key.sign(&claims_for(CLIENT, NOW)),
        &expected(),
        &source,
        NOW,
        &jtis,
    )
    .await
    .unwrap();
    assert_eq!(*source.kids.lock().unwrap(), vec![Some("k1".to_owned())]);

    struct Failing;
    impl KeySource for Failing {
        async fn key_set(
            &self,
            _: Option<&str>,
            _: OffsetDateTime,
        ) -> Result<Arc<JwkSet>, KeySetError> {
            Err(KeySetError::Unusable("unreachable".into()))
        }
    }
    assert!(matches!(
        verify(
            &key.sign(&claims_for(CLIENT, NOW)),
            &expected(),
            &Failing,
            NOW,
            &jtis
        )
        .await,
        Err(AssertionError::KeySet(KeySetError::Unusable(_)))
    ));
}

#[tokio::test]
async fn the_store_remembers_a_jti_until_it_expires() {
    let db = crate::testing::TestStore::sqlite().await;
    let store = &db.store;
    let until = NOW + time::Duration::minutes(2);
    assert!(store.first_use(CLIENT, "h1", until, NOW).await.unwrap());
    assert!(!store.first_use(CLIENT, "h1", until, NOW).await.unwrap());
    assert!(store.first_use("other", "h1", until, NOW).await.unwrap());
    // Past its expiry the row no longer counts, and housekeeping drops it.
    let later = until + time::Duration::seconds(1);
    assert!(
        store
            .first_use(CLIENT, "h1", later + time::Duration::minutes(2), later)
            .await
            .unwrap()
    );
    let swept = crate::oauth::housekeeping::sweep(store, later + time::Duration::minutes(3))
        .await
        .unwrap();
    assert_eq!(swept.client_assertion_jtis, 2);
}
