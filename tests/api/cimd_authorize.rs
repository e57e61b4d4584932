//! Client ID Metadata Document clients at `/authorize`, `/token` and
//! `/revoke`, against a real HTTPS host (`tls_host`) that Coop is set to
//! trust (test CA, loopback allowed).
//!
//! The client's `client_id` is the document's URL
//! (`https://localhost:<port>/app/client.json`); the document lists
//! [`REDIRECT_URI`], so the harness's usual OAuth steps drive the flow.

use serde_json::{Value, json};

use crate::helpers::oauth::{self, Pkce, REDIRECT_URI, TokenRequest, assert_oauth_error, callback};
use crate::helpers::{Engine, TestApp, location};
use crate::on_both_engines;
use crate::tls_host::{Reply, TlsHost};

on_both_engines!(
    a_document_client_connects_refreshes_and_revokes,
    consent_to_a_document_client_is_remembered,
    a_redirect_uri_the_document_does_not_list_gets_a_page,
    a_document_naming_another_client_id_gets_a_page,
    an_unreachable_document_is_a_page_at_authorize_and_invalid_client_at_token,
    the_token_endpoint_takes_the_url_client_without_a_secret_only,
    the_document_is_fetched_again_once_stale_and_a_refused_refresh_spends_nothing,
    without_the_loopback_setting_a_loopback_document_is_refused,
);

const DOCUMENT: &str = "/app/client.json";
const NAME: &str = "Egg Counter";

/// A host serving a valid document, and Coop trusting it.
async fn setup(engine: Engine) -> (TlsHost, TestApp, String) {
    let host = TlsHost::start().await;
    let client_id = host.serve_client_document(DOCUMENT, NAME, &[REDIRECT_URI]);
    let settings = host.cimd_settings(true);
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = settings).await;
    (host, app, client_id)
}

fn quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

async fn grants_of(app: &TestApp, client_id: &str) -> i64 {
    app.db_count(&format!(
        "select count(*) from grants where client_id = {} and revoked_at is null",
        quoted(client_id)
    ))
    .await
}

async fn codes(app: &TestApp) -> i64 {
    app.db_count("select count(*) from authorization_codes")
        .await
}

/// A 400 error page saying `words`, and no redirect.
pub async fn assert_page_refusal(response: reqwest::Response, words: &str) {
    assert_eq!(response.status(), 400);
    assert!(
        response.headers().get("location").is_none(),
        "a refusal before the redirect URI is trusted must not redirect"
    );
    let body = response.text().await.unwrap();
    assert!(body.contains(words), "{body}");
}

/// Signs in, consents to `scope` for `client_id`; returns the code and PKCE.
async fn consent(app: &TestApp, client_id: &str, scope: &str) -> (String, Pkce, String) {
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    let pkce = Pkce::new();
    let path = app.authorize_path(client_id, &pkce, scope, &[]);
    let html = browser.open_consent(&path).await;
    let ticked: Vec<&str> = scope.split_whitespace().collect();
    let response = browser.accept(&html, &ticked).await;
    let params = callback(&response);
    assert_eq!(params.get("iss"), Some(&app.issuer));
    (params["code"].clone(), pkce, html)
}

async fn a_document_client_connects_refreshes_and_revokes(engine: Engine) {
    let (host, app, client_id) = setup(engine).await;
    let (code, pkce, html) = consent(&app, &client_id, "farm:read daily-entries:write").await;

    // The consent page names the client and the host that vouches for it,
    // and does not call it a self-registered, unverified client.
    assert!(html.contains(NAME), "{html}");
    assert!(
        html.contains(&format!("localhost:{}", host.port())),
        "the document host is shown: {html}"
    );
    assert!(!html.contains("unverified"), "{html}");

    // The URL client exchanges its code with no secret.
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["scope"], "farm:read daily-entries:write");
    let claims = oauth::claims(body["access_token"].as_str().unwrap());
    assert_eq!(claims["client_id"], client_id.as_str());
    assert_eq!(claims["aud"], format!("{}/mcp", app.issuer));

    // Refresh rotates.
    let first = body["refresh_token"].as_str().unwrap().to_owned();
    let response = app.refresh(&client_id, &first).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let second = body["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(first, second);

    // The grant is per (user, document URL), and the client is recorded
    // under its URL for the pages that name it.
    assert_eq!(grants_of(&app, &client_id).await, 1);
    assert_eq!(
        app.db_count(&format!(
            "select count(*) from oauth_clients where client_id = {} \
                 and kind = 'metadata_document' and client_name = {}",
            quoted(&client_id),
            quoted(NAME)
        ))
        .await,
        1
    );
    assert_eq!(app.audit_count("consent").await, 1);

    // Revocation as a public URL client ends the grant.
    let response = app.revoke(&client_id, &second).await;
    assert_eq!(response.status(), 200);
    assert_eq!(grants_of(&app, &client_id).await, 0);
    assert_oauth_error(app.refresh(&client_id, &second).await, 400, "invalid_grant").await;
}

async fn consent_to_a_document_client_is_remembered(engine: Engine) {
    let (host, app, client_id) = setup(engine).await;
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(callback(&response).contains_key("code"));

    // Its redirect is a loopback address, which any program can listen on
    // under its name: the screen again (RFC 8252 §8.6), the scope marked.
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    assert!(html.contains("allowed before"), "{html}");
    assert!(html.contains("You connected this app before"), "{html}");

    // A document whose redirect is https: asking again for no more gets a
    // code at once.
    let web = host.serve_client_document("/app/web.json", "Egg Web", &[WEB_REDIRECT]);
    let redirect = [("redirect_uri", Some(WEB_REDIRECT))];
    let path = app.authorize_path(&web, &Pkce::new(), "farm:read", &redirect);
    let html = browser.open_consent(&path).await;
    let first = browser.accept(&html, &["farm:read"]).await;
    assert!(location(&first).starts_with(&format!("{WEB_REDIRECT}?code=")));
    let pkce = Pkce::new();
    let path = app.authorize_path(&web, &pkce, "farm:read", &redirect);
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 303);
    let target = url::Url::parse(&location(&response)).unwrap();
    let params: std::collections::HashMap<String, String> =
        target.query_pairs().into_owned().collect();
    assert_eq!(params.get("state").map(String::as_str), Some("state-123"));
    let resource = format!("{}/mcp", app.issuer);
    let response = app
        .token(
            &TokenRequest::code(&web, &params["code"], &pkce.verifier)
                .field("redirect_uri", WEB_REDIRECT)
                .field("resource", &resource),
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(grants_of(&app, &web).await, 1);

    // Asking for more: the screen again.
    let path = app.authorize_path(
        &web,
        &Pkce::new(),
        "farm:read daily-entries:write",
        &redirect,
    );
    browser.open_consent(&path).await;
}

const WEB_REDIRECT: &str = "https://web.example/callback";

async fn a_redirect_uri_the_document_does_not_list_gets_a_page(engine: Engine) {
    let (_host, app, client_id) = setup(engine).await;
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    for evil in [
        "https://evil.example/callback",
        "http://127.0.0.1:9/callback/extra",
    ] {
        let path = app.authorize_path(
            &client_id,
            &Pkce::new(),
            "farm:read",
            &[("redirect_uri", Some(evil))],
        );
        let response = browser.open(&path).await;
        assert_page_refusal(response, "not one it registered").await;
    }
    // The redirect URI is checked before any later parameter: a bad
    // response type with a bad redirect URI is still a page.
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read",
        &[
            ("redirect_uri", Some("https://evil.example/callback")),
            ("response_type", Some("token")),
        ],
    );
    assert_page_refusal(app.get(&path).await, "not one it registered").await;
    assert_eq!(codes(&app).await, 0);
}

async fn a_document_naming_another_client_id_gets_a_page(engine: Engine) {
    let (host, app, _) = setup(engine).await;
    let path_of = "/app/impostor.json";
    let client_id = host.url(path_of);
    host.serve(
        path_of,
        Reply::json(&json!({
            "client_id": host.url(DOCUMENT),
            "client_name": "Impostor",
            "redirect_uris": [REDIRECT_URI],
        })),
    );
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let response = browser.open(&path).await;
    assert_page_refusal(response, "names another client_id than its own address").await;
    assert_eq!(host.hits(path_of), 1);
    // Nothing recorded for it.
    assert_eq!(
        app.client_count().await,
        0,
        "no client row for a refused document"
    );
    // And the token endpoint refuses it as a client.
    let response = app
        .token(&TokenRequest::code(&client_id, "x", &Pkce::new().verifier))
        .await;
    assert_oauth_error(response, 401, "invalid_client").await;
}

async fn an_unreachable_document_is_a_page_at_authorize_and_invalid_client_at_token(
    engine: Engine,
) {
    let (host, app, _) = setup(engine).await;
    // A closed port on loopback: nothing listens there.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    for client_id in [
        host.url("/app/missing.json"),
        format!("https://localhost:{closed}/app/client.json"),
    ] {
        let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
        let response = browser.open(&path).await;
        assert_page_refusal(response, "could not be fetched from its address").await;

        let response = app
            .token(&TokenRequest::refresh(&client_id, "whatever"))
            .await;
        assert_oauth_error(response, 401, "invalid_client").await;
        let response = app.revoke(&client_id, "whatever").await;
        assert_oauth_error(response, 401, "invalid_client").await;
    }
    assert_eq!(codes(&app).await, 0);
}

async fn the_token_endpoint_takes_the_url_client_without_a_secret_only(engine: Engine) {
    let (_host, app, client_id) = setup(engine).await;
    let (code, pkce, _) = consent(&app, &client_id, "farm:read").await;
    let resource = format!("{}/mcp", app.issuer);
    let exchange = |extra: Vec<(&'static str, String)>| {
        let mut form: Vec<(&str, String)> = vec![
            ("grant_type", "authorization_code".into()),
            ("code", code.clone()),
            ("code_verifier", pkce.verifier.clone()),
            ("redirect_uri", REDIRECT_URI.into()),
            ("resource", resource.clone()),
        ];
        form.extend(extra);
        form
    };
    // A secret, in the body or the Basic header, is refused: a document
    // client has none. The code survives.
    let form = exchange(vec![
        ("client_id", client_id.clone()),
        ("client_secret", "guess".into()),
    ]);
    let response = reqwest::Client::new()
        .post(app.url("/token"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_oauth_error(response, 401, "invalid_client").await;
    let response = reqwest::Client::new()
        .post(app.url("/token"))
        .basic_auth(&client_id, Some("guess"))
        .form(&exchange(vec![]))
        .send()
        .await
        .unwrap();
    let response_headers = response.headers().clone();
    assert_oauth_error(response, 401, "invalid_client").await;
    assert_eq!(response_headers["www-authenticate"], "Basic realm=\"coop\"");

    // Without a secret: tokens.
    let response = reqwest::Client::new()
        .post(app.url("/token"))
        .form(&exchange(vec![("client_id", client_id.clone())]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["access_token"].is_string() && body["refresh_token"].is_string());
    assert!(body["expires_in"].is_i64());
}

async fn the_document_is_fetched_again_once_stale_and_a_refused_refresh_spends_nothing(
    engine: Engine,
) {
    let (host, app, client_id) = setup(engine).await;
    let (code, pkce, _) = consent(&app, &client_id, "farm:read").await;
    let response = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    let body: Value = response.json().await.unwrap();
    let token = body["refresh_token"].as_str().unwrap().to_owned();
    let fetched = host.hits(DOCUMENT);

    // The document is withdrawn; the cached copy (a minute without cache
    // headers) goes stale; the client is no longer known.
    host.serve(DOCUMENT, Reply::status(404));
    app.clock.advance(time::Duration::seconds(61));
    assert_oauth_error(app.refresh(&client_id, &token).await, 401, "invalid_client").await;
    assert_eq!(host.hits(DOCUMENT), fetched + 1);

    // Back again: the same refresh token still works (nothing was spent).
    host.serve_client_document(DOCUMENT, NAME, &[REDIRECT_URI]);
    app.clock.advance(time::Duration::seconds(61));
    let response = app.refresh(&client_id, &token).await;
    assert_eq!(response.status(), 200);
}

async fn without_the_loopback_setting_a_loopback_document_is_refused(engine: Engine) {
    let host = TlsHost::start().await;
    let client_id = host.serve_client_document(DOCUMENT, NAME, &[REDIRECT_URI]);
    let settings = host.cimd_settings(false);
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = settings).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let response = app.get(&path).await;
    assert!(location(&response).is_empty());
    assert_page_refusal(response, "could not be fetched from its address").await;
    assert_eq!(host.hits(DOCUMENT), 0, "the SSRF guard sent no request");
}
