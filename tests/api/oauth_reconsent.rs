//! Who is approved again without a screen (RFC 8252 §8.6, threats 12 and
//! 31), a consent form answered once however often it is submitted (issue
//! 13.7), and no code for a person who must change their password.

use std::collections::HashMap;
use std::sync::Arc;

use coop::config::Issuer;
use serde_json::json;

use crate::helpers::oauth::{
    self, HTTPS_REDIRECT, Pkce, callback, https_callback, redirect_params,
};
use crate::helpers::{Browser, Engine, TestApp, assert_page, location};
use crate::on_both_engines;

on_both_engines!(
    a_second_program_using_an_approved_loopback_client_gets_the_screen_not_a_code,
    a_native_client_always_sees_the_screen,
    an_https_redirect_to_this_computer_proves_nothing,
    an_approved_https_or_confidential_client_gets_a_code_silently,
    a_person_who_must_change_their_password_gets_no_code_from_the_consent_form,
    one_consent_form_submitted_twice_at_once_issues_one_code,
    one_consent_form_submitted_to_two_replicas_at_once_issues_one_code,
);

async fn codes(app: &TestApp) -> i64 {
    app.db_count("select count(*) from authorization_codes")
        .await
}

async fn a_second_program_using_an_approved_loopback_client_gets_the_screen_not_a_code(
    engine: Engine,
) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    // The genuine app: a public client on a loopback redirect, approved.
    let tokens = app.connect(&user, "farm:read").await;
    assert_eq!(codes(&app).await, 1);

    // Another program on the same computer names the same client and
    // listens on another port; the person's browser is signed in.
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(
        &tokens.client_id,
        &Pkce::new(),
        "farm:read",
        &[("redirect_uri", Some("http://127.0.0.1:4444/callback"))],
    );
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 200, "{}", location(&response));
    assert!(response.headers().get("location").is_none());
    let html = response.text().await.unwrap();
    for shown in [
        "name=\"decision\"",
        "a program running on this computer",
        "You connected this app before",
        "allowed before",
    ] {
        assert!(html.contains(shown), "no {shown:?}: {html}");
    }
    assert_eq!(codes(&app).await, 1, "no code without the person");

    // With the step-up when due, as for any consent.
    app.clock.advance(time::Duration::minutes(11));
    let response = browser.open(&path).await;
    assert_page(response, 200, "Confirm it is you").await;
    assert_eq!(codes(&app).await, 1);
}

async fn a_native_client_always_sees_the_screen(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let browser = app.signed_in(&user).await;
    // An https redirect would prove a web client, but not an installed one.
    let client_id = app
        .register_https_client(json!({"application_type": "native"}))
        .await;
    let https = [("redirect_uri", Some(HTTPS_REDIRECT))];
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &https);
    let html = browser.open_consent(&path).await;
    let first = browser.accept(&html, &["farm:read"]).await;
    assert!(https_callback(&first).contains_key("code"));
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &https);
    let html = browser.open_consent(&path).await;
    assert!(html.contains("You connected this app before"), "{html}");
    assert_eq!(codes(&app).await, 1);
}

async fn an_https_redirect_to_this_computer_proves_nothing(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let browser = app.signed_in(&user).await;
    for redirect in [
        "https://127.0.0.1/cb",
        "https://localhost/cb",
        "https://[::1]/cb",
    ] {
        let registered = app
            .registered(&json!({"client_name": "Local App", "redirect_uris": [redirect]}))
            .await;
        let client_id = registered["client_id"].as_str().unwrap();
        let here = [("redirect_uri", Some(redirect))];
        let path = app.authorize_path(client_id, &Pkce::new(), "farm:read", &here);
        let html = browser.open_consent(&path).await;
        assert!(
            html.contains("a program running on this computer"),
            "{redirect}: {html}"
        );
        let first = browser.accept(&html, &["farm:read"]).await;
        assert!(redirect_params(&first, redirect).contains_key("code"));
        let codes_before = codes(&app).await;

        // Approved once, still the screen every time, with the warning.
        let html = browser.open_consent(&path).await;
        for shown in [
            "a program running on this computer",
            "You connected this app before",
            "allowed before",
        ] {
            assert!(html.contains(shown), "{redirect}: no {shown:?}: {html}");
        }
        // prompt=none cannot skip the screen: consent_required, sent back.
        let silent = [("redirect_uri", Some(redirect)), ("prompt", Some("none"))];
        let path = app.authorize_path(client_id, &Pkce::new(), "farm:read", &silent);
        let params = redirect_params(&browser.open(&path).await, redirect);
        assert_eq!(
            params.get("error").map(String::as_str),
            Some("consent_required"),
            "{redirect}"
        );
        assert_eq!(params["state"], "state-123");
        assert_eq!(params["iss"], app.issuer);
        assert!(!params.contains_key("code"));
        assert_eq!(
            codes(&app).await,
            codes_before,
            "{redirect}: no code without the person"
        );
    }
}

async fn an_approved_https_or_confidential_client_gets_a_code_silently(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let browser = app.signed_in(&user).await;
    // A confidential client with an https redirect.
    let response = app
        .register(&json!({
            "client_name": "Farm Office",
            "redirect_uris": [HTTPS_REDIRECT],
            "token_endpoint_auth_method": "client_secret_post",
        }))
        .await;
    assert_eq!(response.status(), 201);
    let registered: serde_json::Value = response.json().await.unwrap();
    let client_id = registered["client_id"].as_str().unwrap();
    let secret = registered["client_secret"].as_str().unwrap();
    let https = [("redirect_uri", Some(HTTPS_REDIRECT))];
    let path = app.authorize_path(client_id, &Pkce::new(), "farm:read", &https);
    let html = browser.open_consent(&path).await;
    browser.accept(&html, &["farm:read"]).await;

    let pkce = Pkce::new();
    let path = app.authorize_path(client_id, &pkce, "farm:read", &https);
    let params = https_callback(&browser.open(&path).await);
    assert_eq!(params["state"], "state-123");
    assert_eq!(params["iss"], app.issuer);
    let resource = format!("{}/mcp", app.issuer);
    let response = app
        .token_request(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("client_secret", secret),
            ("code", &params["code"]),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", HTTPS_REDIRECT),
            ("resource", &resource),
        ])
        .await;
    assert_eq!(response.status(), 200);

    // A confidential client proves itself with its secret even when its
    // redirect is a loopback address.
    let response = app
        .register(&json!({
            "redirect_uris": [oauth::REDIRECT_URI],
            "token_endpoint_auth_method": "client_secret_basic",
        }))
        .await;
    let registered: serde_json::Value = response.json().await.unwrap();
    let client_id = registered["client_id"].as_str().unwrap();
    let path = app.authorize_path(client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    browser.accept(&html, &["farm:read"]).await;
    let path = app.authorize_path(client_id, &Pkce::new(), "farm:read", &[]);
    let response = browser.open(&path).await;
    assert!(callback(&response).contains_key("code"));
    // Two consents, four codes: the silent ones need no screen.
    assert_eq!(app.audit_count("consent").await, 2);
    assert_eq!(codes(&app).await, 4);
}

async fn a_person_who_must_change_their_password_gets_no_code_from_the_consent_form(
    engine: Engine,
) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;

    app.admin(&["user", "require-password-change", &user.email])
        .await;
    // The screen opened before cannot be approved.
    let response = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/account/password");
    // Nor asked again.
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/account/password");
    assert_eq!(codes(&app).await, 0);
    assert_eq!(app.db_count("select count(*) from grants").await, 0);
    assert_eq!(app.audit_count("consent").await, 0);
}

/// Submits `html`'s consent form (approve, `farm:read`) twice at once
/// through `first` and `second`; asserts no 5xx and one code, exchanges
/// it, and returns the two responses' targets.
async fn submit_twice(
    app: &TestApp,
    first: &TestApp,
    second: &TestApp,
    browser: &Browser,
    html: &str,
    pkce: &Pkce,
    client_id: &str,
) {
    let codes_before = codes(app).await;
    let (to_first, to_second) = (browser.on(first), browser.on(second));
    let (one, two) = tokio::join!(
        to_first.accept(html, &["farm:read"]),
        to_second.accept(html, &["farm:read"]),
    );
    let mut codes_seen = Vec::new();
    for response in [one, two] {
        let status = response.status().as_u16();
        assert!(status == 303 || status == 409, "status {status}");
        if status == 303 {
            codes_seen.push(callback(&response)["code"].clone());
        } else {
            let page = response.text().await.unwrap();
            assert!(page.contains("already answered"), "{page}");
        }
    }
    assert!(!codes_seen.is_empty(), "neither submit got the code");
    codes_seen.dedup();
    assert_eq!(codes_seen.len(), 1, "two different codes: {codes_seen:?}");
    assert_eq!(codes(app).await, codes_before + 1, "one decision, one code");
    let exchanged = app
        .exchange_code(client_id, &codes_seen[0], &pkce.verifier)
        .await;
    assert_eq!(exchanged.status(), 200);
    // Once the code is spent, the form gets a page, not the spent code
    // (which the client would present again and lose its grant for).
    let again = browser.accept(html, &["farm:read"]).await;
    assert_eq!(again.status(), 409);
    assert!(again.headers().get("location").is_none());
}

async fn one_consent_form_submitted_twice_at_once_issues_one_code(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let browser = app.signed_in(&user).await;
    // Several rounds: the two submits meet at a different point each time.
    for round in 0..5 {
        let pkce = Pkce::new();
        let path = app.authorize_path(&client_id, &pkce, "farm:read", &[]);
        let html = browser.open_consent(&path).await;
        submit_twice(&app, &app, &app, &browser, &html, &pkce, &client_id).await;
        assert_eq!(app.audit_count("consent").await, round + 1);
    }
    // A denial answered twice: one audit entry, the same redirect.
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let (one, two) = tokio::join!(
        browser.answer_consent(&html, "deny", &[]),
        browser.answer_consent(&html, "deny", &[]),
    );
    assert_eq!(one.status(), 303);
    assert_eq!(location(&one), location(&two));
    let params: HashMap<String, String> = callback(&one);
    assert_eq!(params["error"], "access_denied");
    assert_eq!(app.audit_count("consent_denied").await, 1);
    app.assert_count("select count(*) from grants where revoked_at is null", 1)
        .await;
}

async fn one_consent_form_submitted_to_two_replicas_at_once_issues_one_code(engine: Engine) {
    let a = TestApp::spawn(engine).await;
    let issuer = Issuer::parse(&a.issuer).unwrap();
    let b = TestApp::spawn_on(Arc::clone(&a.db), |config| config.issuer = Some(issuer)).await;
    let user = a.farm_with_member("manager").await;
    let client_id = a.register_public_client().await;
    // Cookies are per host, not per port: the session reaches both.
    let browser = a.signed_in(&user).await;
    for _ in 0..3 {
        let pkce = Pkce::new();
        let path = a.authorize_path(&client_id, &pkce, "farm:read", &[]);
        let html = browser.on(&a).open_consent(&path).await;
        submit_twice(&a, &a, &b, &browser, &html, &pkce, &client_id).await;
    }
}
