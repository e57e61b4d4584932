//! A client's document or key set host that goes down (issue 31 item 10):
//! the last good copy is served for the grace period (7 days by default)
//! when the host does not answer or answers 5xx, on every replica; never
//! when it answered with a refusal or a changed document, which replaces
//! or deletes the copy. Against a real HTTPS host (`tls_host`), the copies
//! counted at `/metrics`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::cimd_authorize::assert_page_refusal;
use crate::helpers::client_keys::key_set;
use crate::helpers::oauth::{Pkce, REDIRECT_URI, assert_oauth_error, callback};
use crate::helpers::{ClientKey, Engine, TestApp, TestUser};
use crate::on_both_engines;
use crate::private_key_jwt::{ASSERTION_TYPE, claims};
use crate::tls_host::{Reply, TlsHost};

on_both_engines!(
    a_document_host_that_goes_down_is_served_from_the_last_good_copy_within_the_grace,
    a_changed_document_is_used_at_once_and_becomes_the_copy,
    a_host_that_refuses_after_a_good_fetch_is_refused_and_its_copy_deleted,
    nothing_is_kept_for_a_document_nobody_connected,
    a_key_set_host_that_goes_down_still_verifies_assertions_within_the_grace,
    key_sets_of_automations_and_registered_clients_are_kept_not_of_unused_registrations,
    the_grace_is_a_setting_and_zero_turns_copies_off,
);

const DOCUMENT: &str = "/app/client.json";
const NAME: &str = "Egg Counter";
const KEYS: &str = "/app/jwks.json";

/// A host serving a valid document at `path`, named `name`.
fn serve_document(host: &TlsHost, path: &str, name: &str) -> String {
    host.serve_client_document(path, name, &[REDIRECT_URI])
}

/// A host serving a valid document, and Coop trusting it with `tweak`.
async fn setup_with(
    engine: Engine,
    tweak: impl FnOnce(&mut coop::config::Config),
) -> (TlsHost, TestApp, String) {
    let host = TlsHost::start().await;
    let client_id = serve_document(&host, DOCUMENT, NAME);
    let settings = host.cimd_settings(true);
    let app = TestApp::spawn_with(engine, |c| {
        c.cimd_test = settings;
        tweak(c);
    })
    .await;
    (host, app, client_id)
}

async fn setup(engine: Engine) -> (TlsHost, TestApp, String) {
    setup_with(engine, |_| {}).await
}

/// A member of a farm of their own, each time another.
async fn new_member(app: &TestApp) -> TestUser {
    let name = format!("Farm {}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let slug = app.add_farm(&name).await;
    app.add_member(&slug, &format!("manager@{slug}.example"), "manager", None)
        .await
}

/// A new member approves `client_id`; returns the consent page, the code
/// and its PKCE.
async fn approve(app: &TestApp, client_id: &str) -> (String, String, Pkce) {
    let user = new_member(app).await;
    let browser = app.signed_in(&user).await;
    let pkce = Pkce::new();
    let path = app.authorize_path(client_id, &pkce, "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    (html, callback(&response)["code"].clone(), pkce)
}

/// A new member connects `client_id` (a public client); its refresh token.
async fn connect(app: &TestApp, client_id: &str) -> String {
    let (_, code, pkce) = approve(app, client_id).await;
    let response = app.exchange_code(client_id, &code, &pkce.verifier).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["refresh_token"].as_str().unwrap().to_owned()
}

/// Refreshes, expecting success; the next refresh token.
async fn refreshed(app: &TestApp, client_id: &str, token: &str) -> String {
    let response = app.refresh(client_id, token).await;
    assert_eq!(response.status(), 200, "the client is still served");
    let body: Value = response.json().await.unwrap();
    body["refresh_token"].as_str().unwrap().to_owned()
}

/// The consent page a new member sees for `client_id`.
async fn consent_page(app: &TestApp, client_id: &str) -> String {
    approve(app, client_id).await.0
}

/// `coop_cimd_stale_served_total{kind}` at `/metrics` (0 when absent).
async fn stale_served(app: &TestApp, kind: &str) -> u64 {
    let text = app.get("/metrics").await.text().await.unwrap();
    let series = format!("coop_cimd_stale_served_total{{kind=\"{kind}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0, |n| n.trim().parse().unwrap())
}

async fn copies(app: &TestApp) -> i64 {
    app.db_count("select count(*) from last_good_copies").await
}

fn seconds(n: i64) -> time::Duration {
    time::Duration::seconds(n)
}

async fn a_document_host_that_goes_down_is_served_from_the_last_good_copy_within_the_grace(
    engine: Engine,
) {
    // A second client's host, which will stop answering at all.
    let gone = TlsHost::start().await;
    let gone_id = serve_document(&gone, DOCUMENT, "Gone");
    let both_cas = tempfile::NamedTempFile::new().unwrap();
    // Coop trusts both hosts' CAs.
    let (host, app, client_id) = setup_with(engine, |c| {
        let mut trusted =
            std::fs::read_to_string(c.cimd_test.extra_ca_pem.as_ref().unwrap()).unwrap();
        trusted.push_str(gone.ca_pem());
        std::fs::write(both_cas.path(), trusted).unwrap();
        c.cimd_test.extra_ca_pem = Some(both_cas.path().to_owned());
    })
    .await;
    let mut token = connect(&app, &client_id).await;
    let gone_token = connect(&app, &gone_id).await;
    assert_eq!(copies(&app).await, 2, "kept from the consent step on");
    assert_eq!(stale_served(&app, "document").await, 0);
    drop(gone);

    host.serve(DOCUMENT, Reply::status(503));
    let fetched = host.hits(DOCUMENT);

    // A replica started during the outage has never fetched the document:
    // the copy in the shared store serves it.
    let settings = host.cimd_settings(true);
    let replica = TestApp::spawn_on(app.db.clone(), |c| c.cimd_test = settings).await;
    token = refreshed(&replica, &client_id, &token).await;
    assert_eq!(host.hits(DOCUMENT), fetched + 1, "the host was tried");
    assert_eq!(stale_served(&replica, "document").await, 1);

    // The first replica, once its own copies are stale; a connection
    // refused is the host down too.
    app.clock.advance(seconds(61));
    token = refreshed(&app, &client_id, &token).await;
    refreshed(&app, &gone_id, &gone_token).await;
    assert_eq!(stale_served(&app, "document").await, 2);
    // The copy stands in for half a minute: the host is not tried on every
    // request, and a newcomer still gets the consent page.
    let html = consent_page(&app, &client_id).await;
    assert!(html.contains(NAME), "{html}");
    assert_eq!(host.hits(DOCUMENT), fetched + 2);
    assert_eq!(stale_served(&app, "document").await, 2);

    // Six days and more into the outage, within the grace of seven.
    host.serve(DOCUMENT, Reply::status(502));
    app.clock
        .advance(time::Duration::days(7) - time::Duration::hours(1));
    token = refreshed(&app, &client_id, &token).await;
    assert_eq!(stale_served(&app, "document").await, 3);

    // Past the grace the client is refused as if there were no copy.
    app.clock.advance(time::Duration::hours(2));
    assert_oauth_error(app.refresh(&client_id, &token).await, 401, "invalid_client").await;
    assert_eq!(stale_served(&app, "document").await, 3);

    // The host answers again: the client works and nothing was spent.
    serve_document(&host, DOCUMENT, NAME);
    app.clock.advance(seconds(31));
    refreshed(&app, &client_id, &token).await;
}

async fn a_changed_document_is_used_at_once_and_becomes_the_copy(engine: Engine) {
    let (host, app, client_id) = setup(engine).await;
    let token = connect(&app, &client_id).await;

    // The document changes: the new one is used once the cached copy is
    // stale, and a refresh is all it takes to keep it as the copy.
    serve_document(&host, DOCUMENT, "Egg Counter Pro");
    app.clock.advance(seconds(61));
    let token = refreshed(&app, &client_id, &token).await;

    // Then the host goes down: what is served is the changed document.
    host.serve(DOCUMENT, Reply::status(500));
    app.clock.advance(seconds(61));
    let html = consent_page(&app, &client_id).await;
    assert!(html.contains("Egg Counter Pro"), "{html}");
    assert_eq!(stale_served(&app, "document").await, 1);
    refreshed(&app, &client_id, &token).await;
}

async fn a_host_that_refuses_after_a_good_fetch_is_refused_and_its_copy_deleted(engine: Engine) {
    let (host, app, _) = setup(engine).await;
    let refusals: Vec<(&str, Reply)> = vec![
        ("/gone/404.json", Reply::status(404)),
        ("/gone/410.json", Reply::status(410)),
        ("/gone/403.json", Reply::status(403)),
        ("/gone/moved.json", Reply::redirect(302, "/app/client.json")),
        (
            "/gone/renamed.json",
            Reply::json(&json!({
                "client_id": host.url("/somewhere/else.json"),
                "client_name": NAME,
                "redirect_uris": [REDIRECT_URI],
            })),
        ),
        (
            "/gone/invalid.json",
            Reply::json(&json!({
                "client_id": host.url("/gone/invalid.json"),
                "redirect_uris": [REDIRECT_URI],
            })),
        ),
    ];
    let mut connected = Vec::new();
    for (path, _) in &refusals {
        let client_id = serve_document(&host, path, NAME);
        let token = connect(&app, &client_id).await;
        connected.push((client_id, token));
    }
    assert_eq!(copies(&app).await, refusals.len() as i64);

    for (path, refusal) in &refusals {
        host.serve(path, refusal.clone());
    }
    app.clock.advance(seconds(61));
    for (client_id, token) in &connected {
        let response = app.refresh(client_id, token).await;
        assert_oauth_error(response, 401, "invalid_client").await;
    }
    assert_eq!(stale_served(&app, "document").await, 0);
    assert_eq!(copies(&app).await, 0, "a refusal deletes the copy");

    // A later outage cannot bring a refused document back.
    for (path, _) in &refusals {
        host.serve(path, Reply::status(503));
    }
    app.clock.advance(seconds(31));
    for (client_id, token) in &connected {
        let response = app.refresh(client_id, token).await;
        assert_oauth_error(response, 401, "invalid_client").await;
    }
    assert_eq!(stale_served(&app, "document").await, 0);
}

async fn nothing_is_kept_for_a_document_nobody_connected(engine: Engine) {
    let (host, app, client_id) = setup(engine).await;
    // Anyone may make Coop fetch a document (here, signed out): nothing is
    // written for it.
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let response = app.get(&path).await;
    assert_eq!(response.status(), 303, "to the sign-in page");
    assert_eq!(host.hits(DOCUMENT), 1);
    assert_eq!(copies(&app).await, 0);

    host.serve(DOCUMENT, Reply::status(503));
    app.clock.advance(seconds(61));
    assert_page_refusal(
        app.get(&path).await,
        "could not be fetched from its address",
    )
    .await;
    assert_eq!(stale_served(&app, "document").await, 0);
}

async fn a_key_set_host_that_goes_down_still_verifies_assertions_within_the_grace(engine: Engine) {
    let key = ClientKey::rs256("agent-1", 0);
    let host = TlsHost::start().await;
    let client_id = host.url(DOCUMENT);
    host.serve(
        DOCUMENT,
        Reply::json(&json!({
            "client_id": client_id,
            "client_name": "Agent",
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "RS256",
            "jwks_uri": host.url(KEYS),
        })),
    );
    host.serve(KEYS, Reply::json(&key_set(&[&key])));
    let settings = host.cimd_settings(true);
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = settings).await;

    let (_, code, pkce) = approve(&app, &client_id).await;
    let assertion = key.sign(&claims(&app, &client_id));
    let resource = format!("{}/mcp", app.issuer);
    let response = app
        .token_request(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", REDIRECT_URI),
            ("resource", &resource),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", &assertion),
        ])
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let mut token = body["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(host.hits(KEYS), 1);

    // Only the key set's host is down; its copy verifies the assertion.
    host.serve(KEYS, Reply::status(503));
    let refresh = |token: String| {
        let app = &app;
        let client_id = &client_id;
        let key = &key;
        async move {
            let assertion = key.sign(&claims(app, client_id));
            app.token_request(&[
                ("grant_type", "refresh_token"),
                ("client_id", client_id),
                ("refresh_token", &token),
                ("client_assertion_type", ASSERTION_TYPE),
                ("client_assertion", &assertion),
            ])
            .await
        }
    };
    app.clock.advance(seconds(61));
    let response = refresh(token).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    token = body["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(host.hits(KEYS), 2, "the host was tried");
    assert_eq!(stale_served(&app, "key_set").await, 1);
    assert_eq!(stale_served(&app, "document").await, 0);

    // Past the grace, the client cannot authenticate.
    app.clock.advance(time::Duration::days(7));
    let response = refresh(token).await;
    assert_oauth_error(response, 401, "invalid_client").await;
}

async fn the_grace_is_a_setting_and_zero_turns_copies_off(engine: Engine) {
    // One hour.
    let (host, app, client_id) =
        setup_with(engine, |c| c.cimd_stale_grace = Duration::from_secs(3600)).await;
    let token = connect(&app, &client_id).await;
    host.serve(DOCUMENT, Reply::status(503));
    app.clock.advance(seconds(61));
    let token = refreshed(&app, &client_id, &token).await;
    app.clock.advance(time::Duration::hours(1));
    assert_oauth_error(app.refresh(&client_id, &token).await, 401, "invalid_client").await;

    // Zero: a copy is never served.
    let (host, app, client_id) = setup_with(engine, |c| c.cimd_stale_grace = Duration::ZERO).await;
    let token = connect(&app, &client_id).await;
    host.serve(DOCUMENT, Reply::status(503));
    app.clock.advance(seconds(61));
    assert_oauth_error(app.refresh(&client_id, &token).await, 401, "invalid_client").await;
    assert_eq!(stale_served(&app, "document").await, 0);
}

async fn key_sets_of_automations_and_registered_clients_are_kept_not_of_unused_registrations(
    engine: Engine,
) {
    let host = TlsHost::start().await;
    let settings = host.cimd_settings(true);
    let app = TestApp::spawn_with(engine, |c| c.cimd_test = settings).await;
    let key = ClientKey::es256("k-1");
    for path in [
        "/automation/jwks.json",
        "/registered/jwks.json",
        "/dynamic/jwks.json",
    ] {
        host.serve(path, Reply::json(&key_set(&[&key])));
    }
    let with_assertion = |client_id: String, form: &'static [(&'static str, &'static str)]| {
        let app = &app;
        let key = &key;
        async move {
            let assertion = key.sign(&claims(app, &client_id));
            let mut fields: Vec<(&str, &str)> = form.to_vec();
            fields.push(("client_assertion_type", ASSERTION_TYPE));
            fields.push(("client_assertion", &assertion));
            let url = if form.iter().any(|(name, _)| *name == "grant_type") {
                app.url("/token")
            } else {
                app.url("/revoke")
            };
            let response = reqwest::Client::new()
                .post(url)
                .form(&fields)
                .send()
                .await
                .unwrap();
            response.status()
        }
    };

    // An automation with its keys behind a URL.
    let slug = app.add_farm("Barn Farm").await;
    let automation_keys = host.url("/automation/jwks.json");
    let (code, out, err) = app
        .cli(&[
            "admin",
            "automation",
            "add",
            "--farm",
            &slug,
            "--name",
            "Barn scale",
            "--role",
            "worker",
            "--scope",
            "daily-entries:write",
            "--jwks-uri",
            &automation_keys,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let automation = crate::helpers::app::printed(&out, "client_id").unwrap();
    const CREDENTIALS: &[(&str, &str)] = &[("grant_type", "client_credentials")];
    assert_eq!(with_assertion(automation.clone(), CREDENTIALS).await, 200);

    // A client registered by the operator, authenticating at /revoke.
    let registered_keys = host.url("/registered/jwks.json");
    let printed = app
        .add_client(&[
            "--name",
            "Barn Sync",
            "--redirect-uri",
            "https://sync.example/cb",
            "--jwks-uri",
            &registered_keys,
        ])
        .await;
    const REVOKE: &[(&str, &str)] = &[("token", "not-a-token")];
    assert_eq!(
        with_assertion(printed.field("client_id"), REVOKE).await,
        200
    );

    // A self-registered client never used: anyone can make one, so its key
    // set is not kept.
    let response = app
        .register(&json!({
            "client_name": "Signed App",
            "redirect_uris": ["https://signed.example/cb"],
            "token_endpoint_auth_method": "private_key_jwt",
            "token_endpoint_auth_signing_alg": "ES256",
            "jwks_uri": host.url("/dynamic/jwks.json"),
        }))
        .await;
    assert_eq!(response.status(), 201);
    let registered: Value = response.json().await.unwrap();
    let dynamic = registered["client_id"].as_str().unwrap().to_owned();
    assert_eq!(with_assertion(dynamic, REVOKE).await, 200);

    assert_eq!(host.hits("/dynamic/jwks.json"), 1);
    let kept = app
        .db_count(&format!(
            "select count(*) from last_good_copies where kind = 'key_set' \
             and url in ('{automation_keys}', '{registered_keys}')"
        ))
        .await;
    assert_eq!(kept, 2);
    assert_eq!(copies(&app).await, 2, "nothing for the unused registration");

    // The automation's key host goes down: it still gets tokens.
    host.serve("/automation/jwks.json", Reply::status(503));
    app.clock.advance(seconds(61));
    assert_eq!(with_assertion(automation, CREDENTIALS).await, 200);
    assert_eq!(stale_served(&app, "key_set").await, 1);
}
