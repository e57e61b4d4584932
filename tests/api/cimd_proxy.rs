//! `--outbound-proxy`: documents and key sets fetched through a real
//! `CONNECT` proxy (`connect_proxy`), which is asked for a tunnel to the
//! address Coop resolved and checked, never to the name; the SSRF guard
//! refuses a host resolving to a forbidden address before the proxy hears
//! of it. Plus the settings' one-line refusals.

use crate::cimd_authorize::assert_page_refusal;
use crate::config::serve_refuses;
use crate::connect_proxy::ConnectProxy;
use crate::helpers::oauth::{Pkce, REDIRECT_URI};
use crate::helpers::{Engine, TestApp};
use crate::on_both_engines;
use crate::tls_host::TlsHost;

on_both_engines!(
    documents_are_fetched_through_the_proxy_by_their_checked_address,
    with_the_proxy_a_host_resolving_to_a_forbidden_address_is_still_refused,
);

const DOCUMENT: &str = "/app/client.json";
const NAME: &str = "Proxied Eggs";

/// A host serving a document, a proxy, and Coop fetching through the
/// proxy, loopback hosts admitted or not.
async fn setup(engine: Engine, allow_loopback: bool) -> (TlsHost, ConnectProxy, TestApp, String) {
    let host = TlsHost::start().await;
    let client_id = host.serve_client_document(DOCUMENT, NAME, &[REDIRECT_URI]);
    let proxy = ConnectProxy::start().await;
    let (settings, setting) = (host.cimd_settings(allow_loopback), proxy.setting());
    let app = TestApp::spawn_with(engine, |c| {
        c.cimd_test = settings;
        c.outbound_proxy = Some(setting);
    })
    .await;
    (host, proxy, app, client_id)
}

async fn documents_are_fetched_through_the_proxy_by_their_checked_address(engine: Engine) {
    let (host, proxy, app, client_id) = setup(engine, true).await;

    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    assert!(html.contains(NAME), "{html}");
    assert_eq!(host.hits(DOCUMENT), 1);

    // The proxy was asked for addresses (localhost's, as Coop resolved
    // them: ::1 may come first and find nobody), never for the name; the
    // tunnel that served the document went to 127.0.0.1.
    let targets = proxy.targets();
    assert!(!targets.is_empty(), "the fetch went through the proxy");
    for target in &targets {
        assert!(
            target.parse::<std::net::SocketAddr>().is_ok(),
            "the proxy was asked for {target}, not an address"
        );
    }
    assert_eq!(
        targets.last().map(String::as_str),
        Some(format!("127.0.0.1:{}", host.port()).as_str())
    );
}

async fn with_the_proxy_a_host_resolving_to_a_forbidden_address_is_still_refused(engine: Engine) {
    // Loopback is not admitted: localhost resolves to forbidden addresses.
    let (host, proxy, app, client_id) = setup(engine, false).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    assert_page_refusal(
        app.get(&path).await,
        "could not be fetched from its address",
    )
    .await;
    assert!(proxy.targets().is_empty(), "the proxy heard nothing");
    assert_eq!(host.hits(DOCUMENT), 0);
}

#[tokio::test]
async fn a_proxy_that_is_not_an_http_url_is_refused_without_echoing_a_password() {
    for bad in [
        "socks5://proxy.internal:1080",
        "https://coop:hunter2@proxy.internal:3128",
        "http://coop:hunter2@proxy.internal:3128/path",
        "proxy.internal:3128",
    ] {
        let line = serve_refuses(&["--outbound-proxy", bad], "COOP_OUTBOUND_PROXY").await;
        assert!(!line.contains("hunter2"), "{line}");
    }
}

#[tokio::test]
async fn a_bad_stale_grace_is_refused() {
    for bad in ["-1", "2592001", "a week"] {
        serve_refuses(&["--cimd-stale-grace", bad], "COOP_CIMD_STALE_GRACE").await;
    }
}
