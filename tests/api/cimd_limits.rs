//! What anonymous requests can make Coop fetch (threats 33 and 48): one
//! fetch per URL at a time, failures remembered, a budget per requesting
//! network, a cap on fetches in flight and each network's share of it, a
//! budget per target host; and key sets behind a `jwks_uri` fetched under
//! the same rules, fetched again for an unknown `kid` at most once per
//! interval.
//!
//! Every count is read on the test host (`tls_host`), which counts the
//! requests that reach it. The endpoint tests drive `/authorize` (no one
//! signed in: a usable document sends the browser to `/login`), `/token`
//! and `/revoke` from several loopback source addresses (127.0.0.x, each
//! an IPv4 network of its own), so that the per-network limits can be
//! shown per network. They build the
//! server themselves (as `helpers::TestApp` does) to keep a handle on its
//! fetcher, whose count of requests joining a fetch in progress shows the
//! coalescing without relying on timing.
//!
//! The budgets refill slowly (one fetch every 30 s per address, every 10 s
//! per host), so a test that spends one is not undone by the time it takes.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use coop::clock::Clock;
use coop::config::Config;
use coop::oauth::cimd::limits::{
    FETCHES_PER_HOST, FETCHES_PER_NETWORK, MAX_IN_FLIGHT, MAX_IN_FLIGHT_PER_NETWORK,
};
use coop::oauth::cimd::{CimdError, CimdFetcher, Limit, MAX_KEY_SET_BYTES};
use coop::startup::Application;
use reqwest::redirect::Policy;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;
use tokio::sync::oneshot;

use crate::helpers::oauth::{self, Pkce, REDIRECT_URI};
use crate::helpers::{Engine, TestDatabase, init_logs, retry_after};
use crate::on_both_engines;
use crate::tls_host::{Reply, TlsHost};

on_both_engines!(
    concurrent_requests_for_one_uncached_document_make_one_fetch,
    a_failing_document_is_fetched_once_then_answered_from_memory,
    an_address_may_start_only_so_many_fetches_while_cache_hits_stay_free,
    fetches_in_flight_are_capped_and_the_next_is_refused_at_once,
    one_network_holds_only_its_share_of_the_fetches_in_flight,
    one_host_is_fetched_only_so_often_whoever_asks,
);

const DOC: &str = "/app/client.json";

/// A running Coop trusting the test host, and a handle on its fetcher.
struct Coop {
    address: String,
    issuer: String,
    clock: Clock,
    fetcher: CimdFetcher,
    _db: TestDatabase,
    _stop: oneshot::Sender<()>,
}

impl Coop {
    async fn spawn(engine: Engine, host: &TlsHost) -> Self {
        init_logs();
        let db = TestDatabase::create(engine).await;
        let mut config = Config::with_defaults(db.url.clone());
        config.bind = "127.0.0.1:0".parse().unwrap();
        config.password_hash_concurrency = 2;
        config.cimd_test = host.cimd_settings(true);
        let clock = Clock::adjustable();
        let app = Application::build(config, clock.clone()).await.unwrap();
        let address = format!("http://{}", app.address());
        let issuer = app.issuer().to_string();
        let fetcher = app.state().cimd.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(app.run_until(async move {
            let _ = stopped.await;
        }));
        Self {
            address,
            issuer,
            clock,
            fetcher,
            _db: db,
            _stop: stop,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// An otherwise valid authorization request for `client_id`.
    fn authorize_url(&self, client_id: &str) -> String {
        let resource = format!("{}/mcp", self.issuer);
        let query = serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT_URI),
            ("code_challenge", Pkce::new().challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", resource.as_str()),
            ("scope", "farm:read"),
            ("state", "s-1"),
        ])
        .unwrap();
        self.url(&format!("/authorize?{query}"))
    }
}

/// A client whose requests come from 127.0.0.`n`.
fn from(n: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)))
        .build()
        .unwrap()
}

fn document(client_id: &str) -> Value {
    json!({
        "client_id": client_id,
        "client_name": "Egg Counter",
        "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none"
    })
}

/// Serves a valid document at `path_and_query` on `localhost`; its client_id.
fn serve_document(host: &TlsHost, path_and_query: &str) -> String {
    let client_id = host.url(path_and_query);
    host.serve(path_and_query, Reply::json(&document(&client_id)));
    client_id
}

async fn authorize(client: &reqwest::Client, coop: &Coop, client_id: &str) -> reqwest::Response {
    client
        .get(coop.authorize_url(client_id))
        .send()
        .await
        .unwrap()
}

async fn token(client: &reqwest::Client, coop: &Coop, client_id: &str) -> reqwest::Response {
    client
        .post(coop.url("/token"))
        .form(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", "not-a-code"),
            ("code_verifier", &Pkce::new().verifier),
            ("redirect_uri", REDIRECT_URI),
        ])
        .send()
        .await
        .unwrap()
}

async fn revoke(client: &reqwest::Client, coop: &Coop, client_id: &str) -> reqwest::Response {
    client
        .post(coop.url("/revoke"))
        .form(&[("client_id", client_id), ("token", "not-a-token")])
        .send()
        .await
        .unwrap()
}

/// The document was usable: the browser is sent to sign in.
fn assert_sent_to_sign_in(response: &reqwest::Response) {
    assert_eq!(response.status(), 303, "{response:?}");
    let location = response.headers()["location"].to_str().unwrap();
    assert!(location.starts_with("/login?"), "{location}");
}

/// The "try again shortly" page: `status`, `Retry-After` of 1 to
/// `max_wait` seconds, never a redirect.
async fn assert_throttled_page(response: reqwest::Response, status: u16, max_wait: u64) {
    assert_eq!(response.status(), status, "{response:?}");
    let wait = retry_after(&response);
    assert!((1..=max_wait).contains(&wait), "Retry-After {wait}");
    assert!(response.headers().get("location").is_none());
    let html = response.text().await.unwrap();
    assert!(
        html.contains("description could not be fetched")
            && html.contains(&format!("Try again in {wait} seconds")),
        "{html}"
    );
}

/// An RFC 6749 error with `Retry-After` of 1 to `max_wait` seconds.
async fn assert_retry_later(response: reqwest::Response, status: u16, max_wait: u64) {
    let wait = retry_after(&response);
    assert!((1..=max_wait).contains(&wait), "Retry-After {wait}");
    oauth::assert_oauth_error(response, status, "temporarily_unavailable").await;
}

/// Polls `condition` until it holds; fails after about ten seconds.
async fn until(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..1000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never happened: {what}");
}

async fn concurrent_requests_for_one_uncached_document_make_one_fetch(engine: Engine) {
    let host = TlsHost::start().await;
    let client_id = host.url(DOC);
    // The document is held until the test lets it go, so every request
    // arrives while its fetch is in progress.
    host.serve(DOC, Reply::json(&document(&client_id)).held());
    let coop = Coop::spawn(engine, &host).await;
    // More requests than one address may cause fetches: joining a fetch in
    // progress costs nothing.
    let count = FETCHES_PER_NETWORK as usize + 10;
    let client = from(1);
    let mut requests = Vec::new();
    for _ in 0..count {
        let client = client.clone();
        let url = coop.authorize_url(&client_id);
        requests.push(tokio::spawn(async move {
            client.get(url).send().await.unwrap()
        }));
    }
    // The first request's fetch reaches the host (a TLS handshake away)
    // on its own time: every other request may have joined it before.
    until("every other request joined the first one's fetch", || {
        coop.fetcher.joined(&client_id) == count - 1 && host.hits(DOC) >= 1
    })
    .await;
    assert_eq!(host.hits(DOC), 1);
    host.release();
    for request in requests {
        assert_sent_to_sign_in(&request.await.unwrap());
    }
    assert_eq!(host.hits(DOC), 1, "one fetch served them all");
    assert_eq!(coop.fetcher.joined(&client_id), 0);
    // And the result is cached.
    assert_sent_to_sign_in(&authorize(&client, &coop, &client_id).await);
    assert_eq!(host.hits(DOC), 1);
}

async fn a_failing_document_is_fetched_once_then_answered_from_memory(engine: Engine) {
    let host = TlsHost::start().await;
    let client_id = host.url(DOC);
    host.serve(DOC, Reply::status(500));
    let coop = Coop::spawn(engine, &host).await;
    let client = from(1);
    for _ in 0..3 {
        let response = authorize(&client, &coop, &client_id).await;
        assert_eq!(response.status(), 400);
        assert!(response.headers().get("location").is_none());
        let html = response.text().await.unwrap();
        assert!(
            html.contains("the document could not be fetched from its address"),
            "{html}"
        );
    }
    // At /token the remembered failure is the same invalid_client as the
    // failure itself.
    oauth::assert_oauth_error(
        token(&client, &coop, &client_id).await,
        401,
        "invalid_client",
    )
    .await;
    assert_eq!(host.hits(DOC), 1, "fetched once, then answered from memory");

    // Fixed, but still remembered as failing for half a minute.
    host.serve(DOC, Reply::json(&document(&client_id)));
    assert_eq!(authorize(&client, &coop, &client_id).await.status(), 400);
    assert_eq!(host.hits(DOC), 1);
    coop.clock.advance(time::Duration::seconds(30));
    assert_sent_to_sign_in(&authorize(&client, &coop, &client_id).await);
    assert_eq!(host.hits(DOC), 2);
}

async fn an_address_may_start_only_so_many_fetches_while_cache_hits_stay_free(engine: Engine) {
    let host = TlsHost::start().await;
    let coop = Coop::spawn(engine, &host).await;
    let client = from(1);
    // The attack: one document URL after another, varied by the query.
    let ids: Vec<String> = (0..FETCHES_PER_NETWORK)
        .map(|i| serve_document(&host, &format!("{DOC}?attempt={i}")))
        .collect();
    for id in &ids {
        assert_sent_to_sign_in(&authorize(&client, &coop, id).await);
    }
    assert_eq!(host.hits_on(DOC), ids.len());

    let extra = serve_document(&host, &format!("{DOC}?attempt=extra"));
    let extra_path = format!("{DOC}?attempt=extra");
    assert_throttled_page(authorize(&client, &coop, &extra).await, 429, 30).await;
    assert_retry_later(token(&client, &coop, &extra).await, 429, 30).await;
    assert_retry_later(revoke(&client, &coop, &extra).await, 429, 30).await;
    assert_eq!(host.hits(&extra_path), 0, "nothing was fetched");

    // A document in the cache costs nothing: it still works from this
    // address, at /authorize and at /token (where the made-up code is then
    // refused, so the 429 above was not the endpoint's own rate limit).
    assert_sent_to_sign_in(&authorize(&client, &coop, &ids[0]).await);
    oauth::assert_oauth_error(token(&client, &coop, &ids[1]).await, 400, "invalid_grant").await;
    assert_eq!(host.hits_on(DOC), ids.len());

    // Another address has its own budget.
    assert_sent_to_sign_in(&authorize(&from(2), &coop, &extra).await);
    assert_eq!(host.hits(&extra_path), 1);
}

/// Serves `count` documents that stall until the host lets them go, at
/// `DOC?slow=<tag>-<n>`; their client ids.
fn stalling_documents(host: &TlsHost, tag: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|n| {
            let path = format!("{DOC}?slow={tag}-{n}");
            let client_id = host.url(&path);
            host.serve(&path, Reply::json(&document(&client_id)).held());
            client_id
        })
        .collect()
}

/// Starts an `/authorize` for each of `client_ids` from 127.0.0.`n`,
/// without waiting for the answers.
fn authorize_in_background(
    coop: &Coop,
    n: u8,
    client_ids: &[String],
) -> Vec<tokio::task::JoinHandle<reqwest::Response>> {
    client_ids
        .iter()
        .map(|client_id| {
            let url = coop.authorize_url(client_id);
            let client = from(n);
            tokio::spawn(async move { client.get(url).send().await.unwrap() })
        })
        .collect()
}

/// `/authorize`, `/token` and `/revoke` from `client` naming `client_id`
/// are each refused at once with 503 and `Retry-After: 5` (a place frees
/// within one fetch's time limit), and nothing is fetched.
async fn assert_refused_for_fetches_in_flight(
    coop: &Coop,
    host: &TlsHost,
    client: &reqwest::Client,
    client_id: &str,
    path: &str,
) {
    assert_throttled_page(authorize(client, coop, client_id).await, 503, 5).await;
    let response = token(client, coop, client_id).await;
    assert_eq!(
        retry_after(&response),
        5,
        "a place frees within one fetch's time limit"
    );
    assert_retry_later(response, 503, 5).await;
    assert_retry_later(revoke(client, coop, client_id).await, 503, 5).await;
    assert_eq!(host.hits(path), 0);
}

/// Lets the host answer the held fetches; each of `requests` then ends at
/// sign-in, and every place in flight is given back.
async fn let_the_held_fetches_end(
    host: &TlsHost,
    coop: &Coop,
    requests: Vec<tokio::task::JoinHandle<reqwest::Response>>,
) {
    host.release();
    for request in requests {
        assert_sent_to_sign_in(&request.await.unwrap());
    }
    until("the slow fetches gave their places back", || {
        coop.fetcher.in_flight() == 0
    })
    .await;
}

async fn fetches_in_flight_are_capped_and_the_next_is_refused_at_once(engine: Engine) {
    let host = TlsHost::start().await;
    let coop = Coop::spawn(engine, &host).await;
    // Enough networks, each with its share of slow fetches, to fill the cap.
    let networks = MAX_IN_FLIGHT / MAX_IN_FLIGHT_PER_NETWORK;
    let mut requests = Vec::new();
    for n in 1..=networks as u8 {
        let slow = stalling_documents(&host, &n.to_string(), MAX_IN_FLIGHT_PER_NETWORK);
        requests.extend(authorize_in_background(&coop, n, &slow));
    }
    until("every slow fetch reached the host", || {
        host.hits_on(DOC) == MAX_IN_FLIGHT && coop.fetcher.in_flight() == MAX_IN_FLIGHT
    })
    .await;

    // From a network with nothing in flight and its whole budget: refused
    // at once, not queued.
    let other = from(100);
    let extra = serve_document(&host, "/app/extra.json");
    assert_refused_for_fetches_in_flight(&coop, &host, &other, &extra, "/app/extra.json").await;

    let_the_held_fetches_end(&host, &coop, requests).await;
    assert_sent_to_sign_in(&authorize(&other, &coop, &extra).await);
    assert_eq!(host.hits("/app/extra.json"), 1);
}

async fn one_network_holds_only_its_share_of_the_fetches_in_flight(engine: Engine) {
    let host = TlsHost::start().await;
    let coop = Coop::spawn(engine, &host).await;
    // The attack: documents on a host that never answers, named from one
    // network, one after another.
    let slow = stalling_documents(&host, "mine", MAX_IN_FLIGHT_PER_NETWORK);
    let requests = authorize_in_background(&coop, 1, &slow);
    until("the network's slow fetches reached the host", || {
        host.hits_on(DOC) == MAX_IN_FLIGHT_PER_NETWORK
            && coop.fetcher.in_flight() == MAX_IN_FLIGHT_PER_NETWORK
    })
    .await;

    // Its next is refused, though the cap over everyone is far off...
    let attacker = from(1);
    let more = stalling_documents(&host, "more", 1);
    let more_path = format!("{DOC}?slow=more-0");
    assert_refused_for_fetches_in_flight(&coop, &host, &attacker, &more[0], &more_path).await;
    assert_eq!(coop.fetcher.in_flight(), MAX_IN_FLIGHT_PER_NETWORK);

    // ...while another network's new client is fetched and served.
    let newcomer = serve_document(&host, "/app/newcomer.json");
    assert_sent_to_sign_in(&authorize(&from(2), &coop, &newcomer).await);
    assert_eq!(host.hits("/app/newcomer.json"), 1);

    // Once its fetches end, the network may fetch again.
    let_the_held_fetches_end(&host, &coop, requests).await;
    assert_sent_to_sign_in(&authorize(&attacker, &coop, &more[0]).await);
    assert_eq!(host.hits(&more_path), 1);
}

async fn one_host_is_fetched_only_so_often_whoever_asks(engine: Engine) {
    let host = TlsHost::start().await;
    let coop = Coop::spawn(engine, &host).await;
    let ids: Vec<String> = (0..FETCHES_PER_HOST)
        .map(|i| serve_document(&host, &format!("{DOC}?n={i}")))
        .collect();
    // Spread over enough networks that none runs out of its own budget, a
    // network's share of the fetches in flight at a time.
    let per_network = FETCHES_PER_NETWORK as usize;
    let at_once = MAX_IN_FLIGHT_PER_NETWORK;
    for (batch, chunk) in ids.chunks(at_once).enumerate() {
        let client = from(1 + (batch * at_once / per_network) as u8);
        let responses =
            futures::future::join_all(chunk.iter().map(|id| authorize(&client, &coop, id))).await;
        for response in &responses {
            assert_sent_to_sign_in(response);
        }
    }
    assert_eq!(host.hits_on(DOC), ids.len());

    // Yet another address, with its whole budget, and another path and port
    // of the same host: refused.
    let newcomer = from(100);
    let extra = serve_document(&host, "/elsewhere/client.json");
    assert_throttled_page(authorize(&newcomer, &coop, &extra).await, 503, 10).await;
    assert_retry_later(token(&newcomer, &coop, &extra).await, 503, 10).await;
    let second_port = TlsHost::start().await;
    let same_host = serve_document(&second_port, DOC);
    assert_throttled_page(authorize(&newcomer, &coop, &same_host).await, 503, 10).await;
    assert_eq!(
        host.hits("/elsewhere/client.json") + second_port.total_hits(),
        0
    );

    // Another host is not affected (the same server by its IP address).
    let by_ip = host.ip_url("/by-ip.json");
    host.serve("/by-ip.json", Reply::json(&document(&by_ip)));
    assert_sent_to_sign_in(&authorize(&newcomer, &coop, &by_ip).await);
    assert_eq!(host.hits("/by-ip.json"), 1);
}

// ---- key sets, through the fetcher's API (nothing uses them at an endpoint yet) ----

const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);
const PEER: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const JWKS: &str = "/.well-known/jwks.json";

/// Public keys with these `kid`s (RFC 7517 A.1's EC key).
fn key_set(kids: &[&str]) -> Value {
    let keys: Vec<Value> = kids
        .iter()
        .map(|kid| {
            json!({
                "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4",
                "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"
            })
        })
        .collect();
    json!({ "keys": keys })
}

fn at(seconds: i64) -> OffsetDateTime {
    NOW + time::Duration::seconds(seconds)
}

#[tokio::test]
async fn a_key_set_is_cached_and_fetched_again_once_for_an_unknown_kid() {
    let host = TlsHost::start().await;
    host.serve(
        JWKS,
        Reply::json(&key_set(&["k1"])).header("cache-control", "max-age=3600"),
    );
    let fetcher = CimdFetcher::new(host.cimd_settings(true)).unwrap();
    let coop = fetcher.for_peer(PEER);
    let url = host.url(JWKS);

    let set = coop.key_set(&url, at(0)).await.unwrap();
    assert!(set.find("k1").is_some());
    assert!(
        coop.key_set(&url, at(10))
            .await
            .unwrap()
            .find("k1")
            .is_some()
    );
    let set = coop.key_set_with_kid(&url, "k1", at(20)).await.unwrap();
    assert!(set.find("k1").is_some());
    assert_eq!(host.hits(JWKS), 1, "cached, and the kid was known");

    // The client rotates to k2 and signs with it at once: within the
    // interval of the last fetch, the set is not fetched again.
    host.serve(
        JWKS,
        Reply::json(&key_set(&["k1", "k2"])).header("cache-control", "max-age=3600"),
    );
    let set = coop.key_set_with_kid(&url, "k2", at(30)).await.unwrap();
    assert!(set.find("k2").is_none());
    assert_eq!(host.hits(JWKS), 1);
    // Once the interval has passed, an unknown kid fetches it once.
    let set = coop.key_set_with_kid(&url, "k2", at(60)).await.unwrap();
    assert!(set.find("k2").is_some());
    assert_eq!(host.hits(JWKS), 2);
    assert!(coop.key_set_with_kid(&url, "k2", at(61)).await.is_ok());
    assert_eq!(host.hits(JWKS), 2, "now known");

    // An attacker's made-up kids: no more than one fetch per interval.
    for (i, second) in [61, 70, 90, 119].into_iter().enumerate() {
        let kid = format!("made-up-{i}");
        let set = coop.key_set_with_kid(&url, &kid, at(second)).await.unwrap();
        assert!(set.find(&kid).is_none());
    }
    assert_eq!(host.hits(JWKS), 2);
    coop.key_set_with_kid(&url, "made-up-again", at(120))
        .await
        .unwrap();
    assert_eq!(host.hits(JWKS), 3);
    coop.key_set(&url, at(121)).await.unwrap();
    assert_eq!(host.hits(JWKS), 3);
}

#[tokio::test]
async fn key_sets_are_fetched_under_the_documents_rules() {
    let host = TlsHost::start().await;
    let fetcher = CimdFetcher::new(host.cimd_settings(true)).unwrap();
    let coop = fetcher.for_peer(PEER);

    // Size: 16 KiB exactly is read, one byte more is refused, with or
    // without a declared length.
    let mut body = key_set(&["k"]).to_string().into_bytes();
    body.resize(MAX_KEY_SET_BYTES, b' ');
    host.serve(
        "/exact.json",
        Reply::bytes("application/json", body.clone()),
    );
    assert!(coop.key_set(&host.url("/exact.json"), NOW).await.is_ok());
    body.push(b' ');
    host.serve("/big.json", Reply::bytes("application/json", body.clone()));
    host.serve(
        "/big-chunked.json",
        Reply::bytes("application/json", body).chunked(),
    );
    for path in ["/big.json", "/big-chunked.json"] {
        let err = coop.key_set(&host.url(path), NOW).await.unwrap_err();
        assert_eq!(err, CimdError::TooLarge, "{path}");
    }

    // Not a key set; a private key; a redirect; an http URL; loopback
    // refused without the test setting.
    host.serve("/doc.json", Reply::json(&json!({"client_id": "x"})));
    let err = coop.key_set(&host.url("/doc.json"), NOW).await.unwrap_err();
    assert!(matches!(err, CimdError::InvalidKeySet(_)), "{err:?}");
    let mut private = key_set(&["k"]);
    private["keys"][0]["d"] = json!("870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE");
    host.serve("/private.json", Reply::json(&private));
    let err = coop
        .key_set(&host.url("/private.json"), NOW)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CimdError::InvalidKeySet(ref why) if why.contains("private")),
        "{err:?}"
    );
    host.serve(
        "/moved.json",
        Reply::redirect(302, &host.url("/exact.json")),
    );
    assert_eq!(
        coop.key_set(&host.url("/moved.json"), NOW)
            .await
            .unwrap_err(),
        CimdError::Redirect
    );
    let http = format!("http://localhost:{}/exact.json", host.port());
    assert_eq!(
        coop.key_set(&http, NOW).await.unwrap_err(),
        CimdError::NotHttpsUrl
    );
    let strict = CimdFetcher::new(host.cimd_settings(false)).unwrap();
    let err = strict
        .for_peer(PEER)
        .key_set(&host.url("/exact.json"), NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, CimdError::ForbiddenAddress(_)), "{err:?}");
    assert_eq!(
        host.hits("/exact.json"),
        1,
        "neither the redirect nor the refused fetch reached it"
    );

    // A failure is remembered, and a failing refetch for an unknown kid
    // keeps the set already held.
    host.serve(JWKS, Reply::status(503));
    let url = host.url(JWKS);
    assert_eq!(
        coop.key_set(&url, NOW).await.unwrap_err(),
        CimdError::Status(503)
    );
    assert_eq!(
        coop.key_set(&url, at(29)).await.unwrap_err(),
        CimdError::Status(503)
    );
    assert_eq!(host.hits(JWKS), 1);
    host.serve(
        JWKS,
        Reply::json(&key_set(&["k1"])).header("cache-control", "max-age=3600"),
    );
    assert!(coop.key_set(&url, at(30)).await.is_ok());
    host.serve(JWKS, Reply::status(500));
    assert_eq!(
        coop.key_set_with_kid(&url, "k2", at(90)).await.unwrap_err(),
        CimdError::Status(500)
    );
    assert!(
        coop.key_set(&url, at(91))
            .await
            .unwrap()
            .find("k1")
            .is_some()
    );
    assert_eq!(host.hits(JWKS), 3);
}

#[tokio::test]
async fn key_sets_share_the_documents_limits_and_coalescing() {
    let host = TlsHost::start().await;
    let fetcher = CimdFetcher::new(host.cimd_settings(true)).unwrap();

    // Concurrent requests for one key set: one fetch.
    host.serve(JWKS, Reply::json(&key_set(&["k1"])).held());
    let url = host.url(JWKS);
    let mut waiting = Vec::new();
    for _ in 0..5 {
        let fetcher = fetcher.clone();
        let url = url.clone();
        waiting.push(tokio::spawn(async move {
            fetcher.for_peer(PEER).key_set(&url, NOW).await
        }));
    }
    until("four requests joined the fetch", || {
        fetcher.joined(&url) == 4
    })
    .await;
    host.release();
    for request in waiting {
        assert!(request.await.unwrap().unwrap().find("k1").is_some());
    }
    assert_eq!(host.hits(JWKS), 1);

    // Documents and key sets spend one budget per address.
    let coop = fetcher.for_peer(PEER);
    for i in 1..FETCHES_PER_NETWORK {
        let client_id = serve_document(&host, &format!("{DOC}?k={i}"));
        coop.fetch(&client_id, NOW).await.unwrap();
    }
    host.serve("/other-jwks.json", Reply::json(&key_set(&["k"])));
    match coop.key_set(&host.url("/other-jwks.json"), NOW).await {
        Err(CimdError::Throttled(throttle)) => assert_eq!(throttle.limit, Limit::Network),
        other => panic!("{other:?}"),
    }
    // A refusal is not remembered as a failure: another address fetches it.
    let other = fetcher.for_peer(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    assert!(
        other
            .key_set(&host.url("/other-jwks.json"), NOW)
            .await
            .is_ok()
    );
    assert_eq!(host.hits("/other-jwks.json"), 1);
}
