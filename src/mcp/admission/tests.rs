//! The order of [`admit`]'s steps: each case makes two steps fail and
//! checks that the earlier one answers. The clock is passed in; the store
//! is a fresh SQLite file (the integration suite runs both engines and the
//! steps' own rules).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream;
use serde_json::json;
use time::macros::datetime;

use super::*;
use crate::domain::{GrantId, UserId};
use crate::mcp::bearer::InvalidToken;
use crate::oauth::access_token::{self, NewAccessToken};
use crate::secrets::MacKey;
use crate::testing::TestStore;

const NOW: OffsetDateTime = datetime!(2026-03-10 12:00 UTC);
const ISSUER: &str = "https://coop.example";

/// A budget that is always spent, or never.
struct Fixed(bool);

impl Budget for Fixed {
    fn spend(&self, _: Uuid) -> Result<(), Duration> {
        if self.0 {
            Ok(())
        } else {
            Err(Duration::from_secs(7))
        }
    }
}

const OPEN: Fixed = Fixed(true);
const SPENT: Fixed = Fixed(false);

struct Server {
    issuer: Issuer,
    allowed_hosts: Vec<String>,
    keys: Keys,
    dpop: dpop::Policy,
    db: TestStore,
    /// A token Coop signed for a grant the store does not hold.
    token: String,
}

impl Server {
    async fn new() -> Self {
        let db = TestStore::sqlite().await;
        let keys = Keys::load_or_create(db.store.clone(), time::Duration::hours(24), NOW)
            .await
            .unwrap();
        let issuer = Issuer::parse(ISSUER).unwrap();
        let token = mint(&keys, &issuer, None).await;
        let dpop = dpop::Policy::new(
            dpop::NonceKey::new(MacKey::derive(b"k", "dpop nonce")),
            false,
        );
        Self {
            issuer,
            allowed_hosts: vec!["proxy.internal".to_owned()],
            keys,
            dpop,
            db,
            token: format!("Bearer {token}"),
        }
    }

    fn resource(&self) -> Resource<'_> {
        Resource {
            issuer: &self.issuer,
            allowed_hosts: &self.allowed_hosts,
            keys: &self.keys,
            dpop: &self.dpop,
            store: &self.db.store,
        }
    }

    /// A POST from the issuer's own site, with no token.
    fn inputs(&self) -> Inputs<'_> {
        Inputs {
            host: Some("coop.example"),
            origin: None,
            content_length: None,
            authorization: None,
            query: None,
            proofs: Vec::new(),
            method: "POST",
            protocol_version: Some("2025-06-18"),
            now: NOW,
        }
    }

    /// The refusal of `inputs` with `body`, through `budgets`.
    async fn refusal(&self, inputs: &Inputs<'_>, budgets: Budgets<'_>, body: Body) -> Refusal {
        match admit(&self.resource(), &budgets, inputs, body).await {
            Err(refusal) => refusal,
            Ok(_) => panic!("admitted"),
        }
    }
}

/// A token Coop signed for a grant the store does not hold, bound to
/// `jkt` if given.
async fn mint(keys: &Keys, issuer: &Issuer, jkt: Option<&str>) -> String {
    let new = NewAccessToken {
        issuer: issuer.as_str(),
        audience: &issuer.mcp_resource(),
        user: UserId::new(),
        client_id: "client-1",
        scope: &ScopeSet::all(),
        grant: GrantId::new(),
        epoch: 1,
        lifetime: time::Duration::minutes(15),
        jkt,
    };
    let (token, _) = access_token::mint(keys, &new, NOW).await.unwrap();
    token.expose().to_owned()
}

type Body = stream::Iter<std::vec::IntoIter<Result<Vec<u8>, String>>>;

fn body(bytes: &[u8]) -> Body {
    stream::iter(vec![Ok(bytes.to_vec())])
}

/// A body past the cap, in two chunks and with no length declared.
fn oversized() -> Body {
    stream::iter(vec![Ok(vec![b' '; MAX_BODY]), Ok(b"{}".to_vec())])
}

fn budgets<'a>(per_grant: &'a Fixed, per_subject: &'a Fixed) -> Budgets<'a> {
    Budgets {
        per_grant,
        per_subject,
    }
}

fn is_token(refusal: &Refusal, expected: &bearer::Refusal) -> bool {
    matches!(refusal, Refusal::Token { refusal, scheme: Scheme::Bearer } if refusal == expected)
}

#[tokio::test]
async fn the_site_is_checked_before_the_size_and_the_token() {
    let server = Server::new().await;
    let open = budgets(&OPEN, &OPEN);
    let mut foreign = server.inputs();
    foreign.host = Some("attacker.example");
    foreign.content_length = Some(MAX_BODY as u64 + 1);
    let refusal = server.refusal(&foreign, open, oversized()).await;
    assert!(matches!(refusal, Refusal::ForeignHost), "{refusal:?}");
    foreign.host = None;
    let refusal = server.refusal(&foreign, open, oversized()).await;
    assert!(matches!(refusal, Refusal::ForeignHost), "{refusal:?}");

    let mut origin = server.inputs();
    origin.host = Some("PROXY.internal");
    origin.origin = Some(b"https://attacker.example");
    origin.content_length = Some(MAX_BODY as u64 + 1);
    let refusal = server.refusal(&origin, open, oversized()).await;
    assert!(matches!(refusal, Refusal::ForeignOrigin), "{refusal:?}");
    origin.origin = Some(ISSUER.as_bytes());
    let refusal = server.refusal(&origin, open, oversized()).await;
    assert!(matches!(refusal, Refusal::BodyTooLarge), "{refusal:?}");
}

#[tokio::test]
async fn a_declared_size_over_the_cap_is_refused_before_the_token() {
    let server = Server::new().await;
    let open = budgets(&OPEN, &OPEN);
    let mut inputs = server.inputs();
    inputs.content_length = Some(MAX_BODY as u64 + 1);
    let refusal = server.refusal(&inputs, open, body(b"{}")).await;
    assert!(matches!(refusal, Refusal::BodyTooLarge), "{refusal:?}");
    inputs.content_length = Some(MAX_BODY as u64);
    let refusal = server.refusal(&inputs, open, body(b"{}")).await;
    assert!(is_token(&refusal, &bearer::Refusal::NoToken), "{refusal:?}");
}

#[tokio::test]
async fn the_budgets_are_spent_before_the_body_is_read() {
    let server = Server::new().await;
    let mut inputs = server.inputs();
    inputs.authorization = Some(&server.token);
    let refusal = server
        .refusal(&inputs, budgets(&SPENT, &OPEN), oversized())
        .await;
    assert!(
        matches!(refusal, Refusal::RateLimited { spent: Spent::App, wait } if wait == Duration::from_secs(7)),
        "{refusal:?}"
    );
    let refusal = server
        .refusal(&inputs, budgets(&OPEN, &SPENT), oversized())
        .await;
    assert!(
        matches!(
            refusal,
            Refusal::RateLimited {
                spent: Spent::Account,
                ..
            }
        ),
        "{refusal:?}"
    );
    let refusal = server
        .refusal(&inputs, budgets(&OPEN, &OPEN), oversized())
        .await;
    assert!(matches!(refusal, Refusal::BodyTooLarge), "{refusal:?}");
}

#[tokio::test]
async fn the_body_is_read_before_the_store_and_the_store_asked_before_the_message() {
    let server = Server::new().await;
    let open = budgets(&OPEN, &OPEN);
    let mut inputs = server.inputs();
    inputs.authorization = Some(&server.token);
    // The grant is unknown to the store, and the message is not JSON: the
    // store's answer comes first.
    let refusal = server.refusal(&inputs, open, body(b"not json")).await;
    let unknown = bearer::Refusal::InvalidToken(InvalidToken::UnknownGrant);
    assert!(is_token(&refusal, &unknown), "{refusal:?}");
    // A body past the cap is refused before the store is asked.
    let refusal = server.refusal(&inputs, open, oversized()).await;
    assert!(matches!(refusal, Refusal::BodyTooLarge), "{refusal:?}");
}

/// A DPoP proof is spent in the store only once the body is in: refused
/// for its body, the same proof is still good for a request that has one.
#[tokio::test]
async fn the_proof_is_spent_only_once_the_body_is_in() {
    use crate::oauth::dpop::testing::{ProofKey, proof};
    let server = Server::new().await;
    let open = budgets(&OPEN, &OPEN);
    let key = ProofKey::es256();
    let token = mint(&server.keys, &server.issuer, Some(&key.thumbprint())).await;
    let claims = json!({
        "jti": "once", "htm": "POST", "htu": format!("{ISSUER}/mcp"),
        "iat": NOW.unix_timestamp(), "ath": dpop::token_hash(&token),
    });
    let proof = proof(&key, &claims);
    let authorization = format!("DPoP {token}");
    let mut inputs = server.inputs();
    inputs.authorization = Some(&authorization);
    inputs.proofs = vec![&proof];
    let refusal = server.refusal(&inputs, open, oversized()).await;
    assert!(matches!(refusal, Refusal::BodyTooLarge), "{refusal:?}");
    // Not a replay: the grant is what is refused.
    let refusal = server.refusal(&inputs, open, body(b"{}")).await;
    let unknown = bearer::Refusal::InvalidToken(InvalidToken::UnknownGrant);
    assert!(
        matches!(&refusal, Refusal::Token { refusal, scheme: Scheme::Dpop } if *refusal == unknown),
        "{refusal:?}"
    );
    // Spent now.
    let refusal = server.refusal(&inputs, open, body(b"{}")).await;
    let replayed = bearer::Refusal::InvalidDpopProof(dpop::ProofError::Replayed);
    assert!(
        matches!(&refusal, Refusal::Token { refusal, scheme: Scheme::Dpop } if *refusal == replayed),
        "{refusal:?}"
    );
}

#[tokio::test]
async fn a_request_refused_early_still_has_its_body_read_unless_declared_over_the_cap() {
    let server = Server::new().await;
    let open = budgets(&OPEN, &OPEN);
    for (declared, read) in [(None, true), (Some(MAX_BODY as u64 + 1), false)] {
        let polled = Arc::new(AtomicBool::new(false));
        let seen = polled.clone();
        let watched = body(b"{}").inspect(move |_| seen.store(true, Ordering::SeqCst));
        let mut inputs = server.inputs();
        inputs.content_length = declared;
        let refusal = match admit(&server.resource(), &open, &inputs, watched).await {
            Err(refusal) => refusal,
            Ok(_) => panic!("admitted"),
        };
        assert!(!matches!(refusal, Refusal::Store { .. }), "{refusal:?}");
        assert_eq!(polled.load(Ordering::SeqCst), read, "{declared:?}");
    }
}

/// The id a store failure's JSON-RPC error answers to (on SQLite the
/// admission's reads do not fail, so only PostgreSQL's fault tests reach
/// it over HTTP).
#[test]
fn a_store_failure_answers_to_the_requests_own_id() {
    let id = |body: &[u8]| request_id(Some(body));
    assert_eq!(id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), json!(7));
    assert_eq!(
        id(br#"{"jsonrpc":"2.0","id":"a-1","method":"x"}"#),
        json!("a-1")
    );
    // No id JSON-RPC allows to answer to: null.
    for body in [
        &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
        br#"{"jsonrpc":"2.0","id":{"n":1},"method":"x"}"#,
        br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
        br#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#,
        b"not json",
    ] {
        assert_eq!(id(body), json!(null), "{}", String::from_utf8_lossy(body));
    }
    assert_eq!(request_id(None), json!(null), "a GET has no body");
}
