//! The Client ID Metadata Document fetcher against a real HTTPS host: what
//! it accepts, every refusal, and its cache. Through the library API
//! (`CimdFetcher::new(settings)` then `fetch`), since the endpoints that use
//! it belong to the authorization server; plus the `coop serve` settings.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use coop::config::CimdTestSettings;
use coop::oauth::cimd::{CimdError, CimdFetcher, MAX_DOCUMENT_BYTES};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use crate::helpers::run_cli;
use crate::serve::Server;
use crate::tls_host::{Reply, TlsHost};

const NOW: OffsetDateTime = datetime!(2026-12-01 12:00:00 UTC);
/// The address the fetches are made for (the per-address limit's key).
const PEER: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const PATH: &str = "/oauth/client.json";

fn document(client_id: &str) -> Value {
    json!({
        "client_id": client_id,
        "client_name": "Egg Counter",
        "redirect_uris": ["http://127.0.0.1:7777/callback", "https://eggs.example/cb"],
        "token_endpoint_auth_method": "none"
    })
}

/// A fetcher trusting the host's CA, loopback allowed.
fn fetcher(host: &TlsHost) -> CimdFetcher {
    CimdFetcher::new(host.cimd_settings(true)).unwrap()
}

/// What `fetcher` makes of `client_id` at `now`, for [`PEER`].
async fn fetch(
    fetcher: &CimdFetcher,
    client_id: &str,
    now: OffsetDateTime,
) -> Result<coop::oauth::cimd::ClientMetadataDocument, CimdError> {
    fetcher.for_peer(PEER).fetch(client_id, now).await
}

/// `seconds` after [`NOW`].
fn at(seconds: i64) -> OffsetDateTime {
    NOW + time::Duration::seconds(seconds)
}

/// Serves `doc` at PATH and returns what fetching it gives.
async fn fetch_served(
    host: &TlsHost,
    reply: Reply,
) -> Result<coop::oauth::cimd::ClientMetadataDocument, CimdError> {
    host.serve(PATH, reply);
    fetch(&fetcher(host), &host.url(PATH), NOW).await
}

/// Serves `reply` at PATH and returns why fetching it was refused.
async fn refused_served(host: &TlsHost, reply: Reply) -> CimdError {
    fetch_served(host, reply).await.unwrap_err()
}

#[tokio::test]
async fn a_good_document_is_fetched_and_kept() {
    let host = TlsHost::start().await;
    let client_id = host.url(PATH);
    let doc = fetch_served(
        &host,
        Reply::json(&document(&client_id)).header("cache-control", "max-age=600"),
    )
    .await
    .unwrap();
    assert_eq!(doc.client_id, client_id);
    assert_eq!(doc.client_name, "Egg Counter");
    assert_eq!(
        doc.redirect_uris,
        vec!["http://127.0.0.1:7777/callback", "https://eggs.example/cb"]
    );
    assert_eq!(doc.document_host, format!("localhost:{}", host.port()));
    assert_eq!(doc.fresh_until, NOW + time::Duration::seconds(600));
    assert_eq!(host.hits(PATH), 1);
}

#[tokio::test]
async fn the_ip_literal_form_is_fetched_when_loopback_is_allowed() {
    let host = TlsHost::start().await;
    let client_id = host.ip_url(PATH);
    host.serve(PATH, Reply::json(&document(&client_id)));
    let doc = fetch(&fetcher(&host), &client_id, NOW).await.unwrap();
    assert_eq!(doc.document_host, format!("127.0.0.1:{}", host.port()));
}

#[tokio::test]
async fn the_helper_serves_a_valid_client_document() {
    let host = TlsHost::start().await;
    let client_id =
        host.serve_client_document("/app.json", "Helper App", &["https://a.example/cb"]);
    let doc = fetch(&fetcher(&host), &client_id, NOW).await.unwrap();
    assert_eq!(doc.client_name, "Helper App");
    assert_eq!(doc.redirect_uris, vec!["https://a.example/cb"]);
}

#[tokio::test]
async fn a_client_id_that_is_not_the_url_is_refused() {
    let host = TlsHost::start().await;
    for other in [
        host.url("/oauth/other.json"),
        host.ip_url(PATH),
        format!("{}/", host.url(PATH)),
        "https://eggs.example/oauth/client.json".to_owned(),
    ] {
        let err = refused_served(&host, Reply::json(&document(&other))).await;
        assert!(
            matches!(err, CimdError::ClientIdMismatch),
            "{other}: {err:?}"
        );
    }
}

#[tokio::test]
async fn a_document_missing_a_required_member_is_refused() {
    let host = TlsHost::start().await;
    for member in ["client_id", "client_name", "redirect_uris"] {
        let mut doc = document(&host.url(PATH));
        doc.as_object_mut().unwrap().remove(member);
        let err = refused_served(&host, Reply::json(&doc)).await;
        match err {
            CimdError::Invalid(why) => {
                assert!(why.contains(&format!("{member} is missing")), "{why}")
            }
            other => panic!("{member}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn shared_secret_authentication_is_refused() {
    let host = TlsHost::start().await;
    for method in ["client_secret_basic", "client_secret_post"] {
        let mut doc = document(&host.url(PATH));
        doc["token_endpoint_auth_method"] = json!(method);
        let err = refused_served(&host, Reply::json(&doc)).await;
        assert!(
            matches!(err, CimdError::SharedSecretAuth),
            "{method}: {err:?}"
        );
    }
    let mut doc = document(&host.url(PATH));
    doc["client_secret"] = json!("hunter2");
    let err = refused_served(&host, Reply::json(&doc)).await;
    assert!(matches!(err, CimdError::SharedSecretAuth), "{err:?}");
}

#[tokio::test]
async fn a_redirect_is_refused_and_not_followed() {
    let host = TlsHost::start().await;
    let target = "/oauth/real.json";
    host.serve(target, Reply::json(&document(&host.url(PATH))));
    for code in [301, 302, 303, 307, 308] {
        let err = refused_served(&host, Reply::redirect(code, &host.url(target))).await;
        assert!(matches!(err, CimdError::Redirect), "{code}: {err:?}");
    }
    assert_eq!(
        host.hits(target),
        0,
        "the redirect target was never fetched"
    );
}

/// A valid document padded with trailing spaces to exactly `size` bytes.
fn padded_document(client_id: &str, size: usize) -> Vec<u8> {
    let mut body = document(client_id).to_string().into_bytes();
    assert!(body.len() <= size);
    body.resize(size, b' ');
    body
}

#[tokio::test]
async fn a_document_of_exactly_five_kib_is_accepted() {
    let host = TlsHost::start().await;
    let body = padded_document(&host.url(PATH), MAX_DOCUMENT_BYTES);
    assert!(
        fetch_served(&host, Reply::bytes("application/json", body.clone()))
            .await
            .is_ok()
    );
    let host = TlsHost::start().await;
    let body = padded_document(&host.url(PATH), MAX_DOCUMENT_BYTES);
    assert!(
        fetch_served(&host, Reply::bytes("application/json", body).chunked())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_larger_document_is_refused_with_or_without_a_length() {
    let host = TlsHost::start().await;
    let body = padded_document(&host.url(PATH), MAX_DOCUMENT_BYTES + 1);
    let err = refused_served(&host, Reply::bytes("application/json", body.clone())).await;
    assert!(
        matches!(err, CimdError::TooLarge),
        "declared length: {err:?}"
    );
    let err = refused_served(&host, Reply::bytes("application/json", body).chunked()).await;
    assert!(matches!(err, CimdError::TooLarge), "chunked: {err:?}");
    let huge = padded_document(&host.url(PATH), 10 * 1024 * 1024);
    let err = refused_served(&host, Reply::bytes("application/json", huge).chunked()).await;
    assert!(
        matches!(err, CimdError::TooLarge),
        "10 MiB chunked: {err:?}"
    );
}

#[tokio::test]
async fn a_slow_host_is_cut_off_at_the_time_limit() {
    let host = TlsHost::start().await;
    let limit = Duration::from_millis(400);
    let slow = Duration::from_secs(3);
    let doc = document(&host.url(PATH));
    for (what, reply) in [
        ("slow head", Reply::json(&doc).delayed(slow)),
        ("stalled body", Reply::json(&doc).stalled_body(slow)),
    ] {
        host.serve(PATH, reply);
        let started = Instant::now();
        let err = fetcher(&host)
            .with_timeout(limit)
            .for_peer(PEER)
            .fetch(&host.url(PATH), NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, CimdError::Timeout), "{what}: {err:?}");
        assert!(started.elapsed() < slow, "{what}: not cut off");
    }
}

#[tokio::test]
async fn a_loopback_host_is_refused_when_loopback_is_not_allowed_even_with_the_ca_trusted() {
    let host = TlsHost::start().await;
    host.serve(PATH, Reply::json(&document(&host.url(PATH))));
    let strict = CimdFetcher::new(host.cimd_settings(false)).unwrap();
    for client_id in [host.url(PATH), host.ip_url(PATH)] {
        let err = fetch(&strict, &client_id, NOW).await.unwrap_err();
        assert!(
            matches!(err, CimdError::ForbiddenAddress(_)),
            "{client_id}: {err:?}"
        );
    }
    assert_eq!(host.hits(PATH), 0, "no request reached the host");
    // The same document is accepted once loopback is allowed.
    assert!(fetch(&fetcher(&host), &host.url(PATH), NOW).await.is_ok());
}

#[tokio::test]
async fn an_http_client_id_is_refused_without_a_request() {
    let host = TlsHost::start().await;
    host.serve(PATH, Reply::json(&document(&host.url(PATH))));
    let url = format!("http://localhost:{}{PATH}", host.port());
    let err = fetch(&fetcher(&host), &url, NOW).await.unwrap_err();
    assert!(matches!(err, CimdError::NotHttpsUrl), "{err:?}");
    assert_eq!(host.hits(PATH), 0);
}

#[tokio::test]
async fn a_host_whose_certificate_is_not_trusted_is_refused() {
    let host = TlsHost::start().await;
    host.serve(PATH, Reply::json(&document(&host.url(PATH))));
    let untrusting = CimdFetcher::new(CimdTestSettings {
        extra_ca_pem: None,
        allow_loopback: true,
    })
    .unwrap();
    let err = fetch(&untrusting, &host.url(PATH), NOW).await.unwrap_err();
    // The log says why, down to the innermost cause.
    match &err {
        CimdError::Fetch(why) => assert!(
            why.contains(&host.url(PATH)) && why.contains("certificate"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(host.hits(PATH), 0, "the TLS handshake failed first");
}

#[tokio::test]
async fn any_status_but_200_and_a_non_json_body_are_refused() {
    let host = TlsHost::start().await;
    for code in [201, 204, 304, 404, 500] {
        let err = refused_served(&host, Reply::status(code)).await;
        match (code, &err) {
            (304, CimdError::Redirect) => {}
            (_, CimdError::Status(got)) if *got == code => {}
            _ => panic!("{code}: {err:?}"),
        }
    }
    let err = refused_served(&host, Reply::bytes("text/html", "<html>hello</html>")).await;
    assert!(matches!(err, CimdError::Invalid(_)), "{err:?}");
}

#[tokio::test]
async fn a_fresh_document_is_served_from_the_cache() {
    let host = TlsHost::start().await;
    host.serve(
        PATH,
        Reply::json(&document(&host.url(PATH))).header("cache-control", "public, max-age=600"),
    );
    let fetcher = fetcher(&host);
    let first = fetch(&fetcher, &host.url(PATH), NOW).await.unwrap();
    let again = fetch(&fetcher, &host.url(PATH), at(599)).await.unwrap();
    assert_eq!(first, again);
    assert_eq!(
        host.hits(PATH),
        1,
        "the second fetch did not reach the host"
    );
    // A clone shares the cache (AppState is cloned per request).
    let _ = fetch(&fetcher.clone(), &host.url(PATH), at(300))
        .await
        .unwrap();
    assert_eq!(host.hits(PATH), 1);
    let later = NOW + time::Duration::seconds(600);
    let refreshed = fetch(&fetcher, &host.url(PATH), later).await.unwrap();
    assert_eq!(host.hits(PATH), 2, "stale after max-age");
    assert_eq!(refreshed.fresh_until, later + time::Duration::seconds(600));
}

/// Without `Cache-Control`, `Expires` says how long, measured from the
/// host's own `Date` (its clock here is an hour behind Coop's).
#[tokio::test]
async fn expires_keeps_a_document_for_as_long_as_the_hosts_date_says() {
    let host = TlsHost::start().await;
    host.serve(
        PATH,
        Reply::json(&document(&host.url(PATH)))
            .header("date", "Tue, 01 Dec 2026 11:00:00 GMT")
            .header("expires", "Tue, 01 Dec 2026 11:20:00 GMT"),
    );
    let fetcher = fetcher(&host);
    let doc = fetch(&fetcher, &host.url(PATH), NOW).await.unwrap();
    assert_eq!(doc.fresh_until, at(20 * 60));
    fetch(&fetcher, &host.url(PATH), at(20 * 60 - 1))
        .await
        .unwrap();
    assert_eq!(host.hits(PATH), 1);
    fetch(&fetcher, &host.url(PATH), at(20 * 60)).await.unwrap();
    assert_eq!(host.hits(PATH), 2);
}

#[tokio::test]
async fn no_store_still_keeps_a_document_for_the_minimum_minute() {
    let host = TlsHost::start().await;
    host.serve(
        PATH,
        Reply::json(&document(&host.url(PATH))).header("cache-control", "no-store"),
    );
    let fetcher = fetcher(&host);
    let doc = fetch(&fetcher, &host.url(PATH), NOW).await.unwrap();
    assert_eq!(doc.fresh_until, NOW + time::Duration::seconds(60));
    fetch(&fetcher, &host.url(PATH), at(59)).await.unwrap();
    assert_eq!(host.hits(PATH), 1);
    fetch(&fetcher, &host.url(PATH), at(60)).await.unwrap();
    assert_eq!(host.hits(PATH), 2);
}

#[tokio::test]
async fn a_refused_document_is_remembered_for_half_a_minute_then_fetched_again() {
    let host = TlsHost::start().await;
    let mut bad = document(&host.url(PATH));
    bad["client_secret"] = json!("x");
    host.serve(
        PATH,
        Reply::json(&bad).header("cache-control", "max-age=600"),
    );
    let fetcher = fetcher(&host);
    let first = fetch(&fetcher, &host.url(PATH), NOW).await;
    assert!(
        matches!(first, Err(CimdError::SharedSecretAuth)),
        "{first:?}"
    );
    host.serve(PATH, Reply::json(&document(&host.url(PATH))));
    // The failure is remembered (not cached for the document's max-age).
    let again = fetch(&fetcher, &host.url(PATH), at(29)).await;
    assert!(
        matches!(again, Err(CimdError::SharedSecretAuth)),
        "{again:?}"
    );
    assert_eq!(host.hits(PATH), 1);
    let later = NOW + time::Duration::seconds(30);
    assert!(fetch(&fetcher, &host.url(PATH), later).await.is_ok());
    assert_eq!(host.hits(PATH), 2);
}

// ---- `coop serve` settings ----

async fn serve_refuses_extra_ca(path: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db");
    let url = format!("sqlite://{}", db.display());
    let (code, _out, err) = run_cli(&url, &["serve", "--cimd-test-extra-ca", path], None).await;
    assert_eq!(code, 1, "{err}");
    let line = err.trim().to_owned();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert!(line.contains("COOP_CIMD_TEST_EXTRA_CA"), "{line}");
    assert!(!db.exists(), "a refused configuration created the database");
    line
}

#[tokio::test]
async fn an_unreadable_extra_ca_is_a_one_line_configuration_error() {
    let line = serve_refuses_extra_ca("/nonexistent/coop-ca.pem").await;
    assert!(line.contains("cannot read"), "{line}");
}

#[tokio::test]
async fn an_extra_ca_that_is_not_a_certificate_is_a_one_line_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, "hello, not a certificate\n").unwrap();
    let line = serve_refuses_extra_ca(path.to_str().unwrap()).await;
    assert!(line.contains("no PEM certificate"), "{line}");
    let broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    std::fs::write(&path, broken).unwrap();
    serve_refuses_extra_ca(path.to_str().unwrap()).await;
}

/// Starts `coop serve` with `args`/`env`, waits until it serves, stops it,
/// and returns what it logged.
async fn serve_log(args: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("coop.db").display());
    let env: Vec<(&str, &str)> = [("COOP_LOG_FORMAT", "json")]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    Server::start(&url, args, &env)
        .await
        .kill_returning_logs()
        .await
}

#[tokio::test]
async fn the_test_settings_are_off_by_default_and_loud_when_on() {
    let quiet = serve_log(&[], &[]).await;
    assert!(!quiet.contains("CIMD TEST SETTINGS"), "{quiet}");

    let loud = serve_log(&["--cimd-test-allow-loopback"], &[]).await;
    let warning = loud
        .lines()
        .find(|line| line.contains("CIMD TEST SETTINGS ARE ON"))
        .unwrap_or_else(|| panic!("no warning in {loud}"));
    assert!(warning.contains(r#""level":"WARN""#), "{warning}");
    assert!(warning.contains(r#""allow_loopback":true"#), "{warning}");

    let host = TlsHost::start().await;
    let ca = host.ca_pem_path().to_str().unwrap().to_owned();
    let by_env = serve_log(&[], &[("COOP_CIMD_TEST_EXTRA_CA", ca.as_str())]).await;
    assert!(by_env.contains("CIMD TEST SETTINGS ARE ON"), "{by_env}");
    assert!(by_env.contains(r#""allow_loopback":false"#), "{by_env}");
    assert!(by_env.contains("coop-test-ca.pem"), "{by_env}");

    let by_env = serve_log(&[], &[("COOP_CIMD_TEST_ALLOW_LOOPBACK", "true")]).await;
    assert!(by_env.contains(r#""allow_loopback":true"#), "{by_env}");
}

#[tokio::test]
async fn the_application_state_carries_a_working_fetcher() {
    let host = TlsHost::start().await;
    let client_id = host.serve_client_document(PATH, "State App", &["https://a.example/cb"]);
    let db = crate::helpers::TestDatabase::create(crate::helpers::Engine::Sqlite).await;
    let mut config = coop::config::Config::with_defaults(db.url.clone());
    config.bind = "127.0.0.1:0".parse().unwrap();
    config.cimd_test = host.cimd_settings(true);
    let app = coop::startup::Application::build(config, coop::clock::Clock::adjustable())
        .await
        .unwrap();
    let doc = app
        .state()
        .cimd
        .for_peer(PEER)
        .fetch(&client_id, NOW)
        .await
        .unwrap();
    assert_eq!(doc.client_name, "State App");

    // With the defaults, the same loopback document is refused.
    let db = crate::helpers::TestDatabase::create(crate::helpers::Engine::Sqlite).await;
    let mut config = coop::config::Config::with_defaults(db.url.clone());
    config.bind = "127.0.0.1:0".parse().unwrap();
    let app = coop::startup::Application::build(config, coop::clock::Clock::adjustable())
        .await
        .unwrap();
    let err = app
        .state()
        .cimd
        .for_peer(PEER)
        .fetch(&client_id, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, CimdError::ForbiddenAddress(_)), "{err:?}");
}
