//! `/authorize` and the consent screen: every check in its order, every
//! refusal, sign-in, step-up, consent and its memory.

use std::collections::HashMap;

use coop::oauth::authorize::MAX_STATE_BYTES;
use serde_json::json;

use crate::helpers::oauth::{
    self, HTTPS_REDIRECT, Pkce, REDIRECT_URI, TokenRequest, callback, https_callback,
};
use crate::helpers::{
    Browser, Engine, PASSWORD_SIGN_IN_GREW_OLD, TestApp, TestUser, assert_page, form_value,
    location,
};
use crate::on_both_engines;

on_both_engines!(
    an_unknown_or_missing_client_gets_a_page_not_a_redirect,
    a_redirect_uri_that_was_not_registered_gets_a_page_not_a_redirect,
    loopback_redirect_uris_match_with_any_port,
    a_wrong_response_type_is_sent_back_with_state_and_iss,
    pkce_s256_is_required,
    an_unknown_resource_is_invalid_target,
    absent_resource_and_scope_get_the_defaults,
    an_unknown_scope_is_invalid_scope_and_offline_access_is_ignored,
    repeated_parameters_are_refused,
    a_signed_out_person_signs_in_and_comes_back,
    an_old_sign_in_is_asked_for_the_password_before_consent,
    the_consent_screen_shows_who_is_asking_for_what,
    a_pre_registered_client_is_not_marked_unverified,
    a_suspended_farm_or_connected_apps_off_refuse_with_a_page,
    the_person_may_grant_read_and_refuse_write,
    ticking_nothing_grants_nothing,
    deny_redirects_access_denied_and_is_audited,
    an_approved_form_sent_again_repeats_its_code_until_the_code_expires,
    an_approved_form_sent_again_after_its_code_was_exchanged_gets_no_code,
    consent_is_remembered_only_for_what_was_granted,
    consent_is_asked_again_after_the_credential_epoch_moved,
    two_tabs_answer_their_own_requests,
    the_consent_form_needs_its_csrf_token_and_our_origin,
    state_is_optional_and_iss_always_present,
    an_overlong_state_is_invalid_request_sent_back_without_it,
);

/// Signs in, registers a client and returns (browser, client_id).
async fn setup(app: &TestApp, role: &str) -> (Browser, String, TestUser) {
    let user = app.farm_with_member(role).await;
    let client_id = app.register_public_client().await;
    let browser = app.signed_in(&user).await;
    (browser, client_id, user)
}

/// Asserts an error sent back to the client: `error`, `state`, `iss`.
fn assert_error_redirect(response: &reqwest::Response, app: &TestApp, error: &str) {
    let params = callback(response);
    assert_eq!(
        params.get("error").map(String::as_str),
        Some(error),
        "{params:?}"
    );
    assert_eq!(params.get("state").map(String::as_str), Some("state-123"));
    assert_eq!(params.get("iss"), Some(&app.issuer));
    assert!(params.contains_key("error_description"));
    assert!(!params.contains_key("code"));
}

async fn codes(app: &TestApp) -> i64 {
    app.db_count("select count(*) from authorization_codes")
        .await
}

async fn assert_page_refusal(response: reqwest::Response, words: &str) {
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("location").is_none());
    let body = response.text().await.unwrap();
    assert!(body.contains(words), "{body}");
}

async fn an_unknown_or_missing_client_gets_a_page_not_a_redirect(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, _, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let path = app.authorize_path("no-such-client", &pkce, "farm:read", &[]);
    assert_page_refusal(browser.open(&path).await, "not known to Coop").await;
    let path = app.authorize_path("x", &pkce, "farm:read", &[("client_id", None)]);
    assert_page_refusal(browser.open(&path).await, "names no client").await;
    // Signed out, the same page (the checks come before sign-in).
    let path = app.authorize_path("no-such-client", &pkce, "farm:read", &[]);
    assert_page_refusal(app.get(&path).await, "not known to Coop").await;
}

async fn a_redirect_uri_that_was_not_registered_gets_a_page_not_a_redirect(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    for evil in [
        "https://evil.example/callback",
        "http://127.0.0.1:9/callback/extra",
        "http://127.0.0.1:9/Callback",
        "http://localhost:9/callback",
        "http://127.0.0.1:9/callback?x=1",
    ] {
        let path = app.authorize_path(
            &client_id,
            &pkce,
            "farm:read",
            &[("redirect_uri", Some(evil))],
        );
        assert_page_refusal(browser.open(&path).await, "not one it registered").await;
    }
    // A client with one registered URI may leave it out.
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &[("redirect_uri", None)]);
    browser.open_consent(&path).await;
    // With two registered, it must say which.
    let response = app
        .register(&json!({"redirect_uris": ["https://a.example/cb", "https://b.example/cb"]}))
        .await;
    let two: serde_json::Value = response.json().await.unwrap();
    let path = app.authorize_path(
        two["client_id"].as_str().unwrap(),
        &pkce,
        "farm:read",
        &[("redirect_uri", None)],
    );
    assert_page_refusal(browser.open(&path).await, "did not say where").await;
}

async fn loopback_redirect_uris_match_with_any_port(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let browser = app.signed_in(&user).await;
    let response = app
        .register(&json!({"redirect_uris": [
            "http://127.0.0.1/callback",
            "http://[::1]:1/callback",
            "http://localhost:2/callback"
        ]}))
        .await;
    let body: serde_json::Value = response.json().await.unwrap();
    let client_id = body["client_id"].as_str().unwrap();
    for (requested, ok) in [
        ("http://127.0.0.1:53682/callback", true),
        ("http://127.0.0.1/callback", true),
        ("http://[::1]:61000/callback", true),
        ("http://localhost:8080/callback", true),
        ("http://127.0.0.1:53682/other", false),
        ("https://127.0.0.1:53682/callback", false),
    ] {
        let path = app.authorize_path(
            client_id,
            &Pkce::new(),
            "farm:read",
            &[("redirect_uri", Some(requested))],
        );
        let response = browser.open(&path).await;
        if ok {
            // The code goes to the port the client asked for (through the
            // consent screen the first time, at once after that).
            let redirected = if response.status() == 200 {
                let html = response.text().await.unwrap();
                browser.accept(&html, &["farm:read"]).await
            } else {
                response
            };
            assert_eq!(redirected.status(), 303, "{requested}");
            let target = location(&redirected);
            assert!(
                target.starts_with(&format!("{requested}?code=")),
                "{target}"
            );
        } else {
            assert_page_refusal(response, "not one it registered").await;
        }
    }
}

async fn a_wrong_response_type_is_sent_back_with_state_and_iss(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let path = app.authorize_path(
        &client_id,
        &pkce,
        "farm:read",
        &[("response_type", Some("token"))],
    );
    assert_error_redirect(
        &browser.open(&path).await,
        &app,
        "unsupported_response_type",
    );
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &[("response_type", None)]);
    assert_error_redirect(&browser.open(&path).await, &app, "invalid_request");
    // Signed out, the same redirect: nothing is asked of the person.
    let path = app.authorize_path(
        &client_id,
        &pkce,
        "farm:read",
        &[("response_type", Some("token"))],
    );
    assert_error_redirect(&app.get(&path).await, &app, "unsupported_response_type");
    assert_eq!(codes(&app).await, 0);
}

async fn pkce_s256_is_required(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let plain = [("code_challenge_method", Some("plain"))];
    let missing = [("code_challenge", None)];
    let no_method = [("code_challenge_method", None)];
    let malformed = [("code_challenge", Some("too-short"))];
    for overrides in [&plain[..], &missing[..], &no_method[..], &malformed[..]] {
        let path = app.authorize_path(&client_id, &pkce, "farm:read", overrides);
        assert_error_redirect(&browser.open(&path).await, &app, "invalid_request");
    }
    assert_eq!(codes(&app).await, 0);
}

async fn an_unknown_resource_is_invalid_target(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let other_path = format!("{}/other", app.issuer);
    let trailing = format!("{}/mcp/", app.issuer);
    for resource in [
        "https://evil.example/mcp",
        app.issuer.as_str(),
        other_path.as_str(),
    ] {
        let path = app.authorize_path(
            &client_id,
            &pkce,
            "farm:read",
            &[("resource", Some(resource))],
        );
        assert_error_redirect(&browser.open(&path).await, &app, "invalid_target");
    }
    // The same resource with a trailing slash is the same resource.
    let path = app.authorize_path(
        &client_id,
        &pkce,
        "farm:read",
        &[("resource", Some(&trailing))],
    );
    browser.open_consent(&path).await;
}

async fn absent_resource_and_scope_get_the_defaults(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, user) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let path = app.authorize_path(
        &client_id,
        &pkce,
        "",
        &[("resource", None), ("scope", None)],
    );
    let html = browser.open_consent(&path).await;
    assert!(html.contains("value=\"farm:read\""));
    assert!(!html.contains("value=\"daily-entries:write\""));
    let code = callback(&browser.accept(&html, &["farm:read"]).await)["code"].clone();
    let response = app
        .token(&TokenRequest::code(&client_id, &code, &pkce.verifier))
        .await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["scope"], "farm:read");
    let claims = oauth::claims(body["access_token"].as_str().unwrap());
    assert_eq!(claims["aud"], format!("{}/mcp", app.issuer));
    assert_eq!(claims["scope"], "farm:read");
    let _ = user;
}

async fn an_unknown_scope_is_invalid_scope_and_offline_access_is_ignored(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read admin:all", &[]);
    assert_error_redirect(&browser.open(&path).await, &app, "invalid_scope");
    let path = app.authorize_path(&client_id, &pkce, "farm:read offline_access", &[]);
    let html = browser.open_consent(&path).await;
    assert!(!html.contains("offline_access"));
    assert!(html.contains("value=\"farm:read\""));
}

async fn repeated_parameters_are_refused(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &[]);
    let twice = format!("{path}&client_id={client_id}");
    assert_page_refusal(browser.open(&twice).await, "repeated").await;
    let twice = format!("{path}&redirect_uri={}", urlencode(REDIRECT_URI));
    assert_page_refusal(browser.open(&twice).await, "repeated").await;
    let twice = format!("{path}&scope=farm%3Aread");
    assert_error_redirect(&browser.open(&twice).await, &app, "invalid_request");
    let twice = format!(
        "{path}&resource={}",
        urlencode(&format!("{}/mcp", app.issuer))
    );
    assert_error_redirect(&browser.open(&twice).await, &app, "invalid_target");
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn a_signed_out_person_signs_in_and_comes_back(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "worker").await;
    let client_id = app.register_public_client().await;
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &[]);
    let browser = Browser::new(&app);
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 303);
    let login = location(&response);
    let login_url = url::Url::parse(&format!("{}{login}", app.address)).unwrap();
    assert_eq!(login_url.path(), "/login");
    let return_to: HashMap<String, String> = login_url.query_pairs().into_owned().collect();
    assert_eq!(return_to["return_to"], path);

    let page = browser.open(&login).await.text().await.unwrap();
    assert_eq!(form_value(&page, "return_to").unwrap(), path);
    let csrf = form_value(&page, "csrf").unwrap();
    let signed_in = browser
        .post(app.url("/login"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("email", user.email.as_str()),
            ("password", user.password.as_str()),
            ("return_to", path.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    assert_eq!(location(&signed_in), path);
    browser.open_consent(&path).await;
}

async fn an_old_sign_in_is_asked_for_the_password_before_consent(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, user) = setup(&app, "manager").await;
    app.clock.advance(time::Duration::minutes(11));
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let page = response.text().await.unwrap();
    assert!(page.contains("Confirm it is you"), "{page}");
    // Why: the sign-in's age, not the client's asking.
    assert!(page.contains(PASSWORD_SIGN_IN_GREW_OLD), "{page}");
    assert!(!page.contains("asks that you confirm"), "{page}");
    assert!(!page.contains("name=\"decision\""));
    let csrf = form_value(&page, "csrf").unwrap();
    let request = form_value(&page, "request").unwrap();

    let wrong = browser
        .post(app.url("/authorize/confirm"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("request", &request),
            ("password", "not it at all"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let page = wrong.text().await.unwrap();
    assert!(page.contains("not right"), "{page}");
    assert!(page.contains(PASSWORD_SIGN_IN_GREW_OLD), "{page}");
    assert_eq!(codes(&app).await, 0);

    let right = browser
        .post(app.url("/authorize/confirm"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("request", &request),
            ("password", &user.password),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 303);
    let next = location(&right);
    assert!(next.starts_with("/authorize/consent?request="), "{next}");
    let html = browser.open_consent(&next).await;
    // The consent screen itself waits too long: asked again, no code.
    app.clock.advance(time::Duration::minutes(11));
    let late = browser.accept(&html, &["farm:read"]).await;
    assert_page(late, 200, "Confirm it is you").await;
    assert_eq!(codes(&app).await, 0);
}

async fn the_consent_screen_shows_who_is_asking_for_what(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read daily-entries:write",
        &[],
    );
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.headers()["x-frame-options"], "DENY");
    assert!(
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    let html = response.text().await.unwrap();
    for shown in [
        "Test Assistant",
        "unverified",
        "127.0.0.1",
        "a program running on this computer",
        &format!("{}/mcp", app.issuer),
        "Hillside Farm",
        "manager@hillside.example",
        "value=\"farm:read\"",
        "value=\"daily-entries:write\"",
        "See your farm&#39;s records",
        "Record or correct daily entries",
        "value=\"approve\"",
        "value=\"deny\"",
    ] {
        assert!(html.contains(shown), "consent page lacks {shown:?}: {html}");
    }
    assert!(form_value(&html, "csrf").is_some_and(|c| !c.is_empty()));
    // An https redirect carries no loopback warning.
    let response = app
        .register(&json!({"client_name": "Web App", "redirect_uris": ["https://web.example/cb"]}))
        .await;
    let web: serde_json::Value = response.json().await.unwrap();
    let path = app.authorize_path(
        web["client_id"].as_str().unwrap(),
        &Pkce::new(),
        "farm:read",
        &[("redirect_uri", Some("https://web.example/cb"))],
    );
    let html = browser.open_consent(&path).await;
    assert!(html.contains("web.example"));
    assert!(!html.contains("a program running on this computer"));
}

async fn a_pre_registered_client_is_not_marked_unverified(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "owner").await;
    let added = app
        .add_client(&["--name", "Farm Office", "--redirect-uri", REDIRECT_URI])
        .await;
    assert_eq!(added.out.trim().lines().count(), 1, "{}", added.out);
    let client_id = added.field("client_id");
    let browser = app.signed_in(&user).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    assert!(html.contains("Farm Office"));
    assert!(!html.contains("unverified"), "{html}");
}

async fn a_suspended_farm_or_connected_apps_off_refuse_with_a_page(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, user) = setup(&app, "owner").await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;

    app.admin(&["farm", "connected-apps", &user.farm, "off"])
        .await;
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 403);
    assert!(response.headers().get("location").is_none());
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("Connected apps are turned off")
    );
    // A consent screen opened before the switch cannot be approved either.
    let late = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(late.status(), 403);

    app.admin(&["farm", "connected-apps", &user.farm, "on"])
        .await;
    app.admin(&["farm", "suspend", &user.farm]).await;
    let response = browser.open(&path).await;
    assert_page(response, 403, "suspended").await;
    assert_eq!(codes(&app).await, 0);
    assert_eq!(app.db_count("select count(*) from grants").await, 0);
}

async fn the_person_may_grant_read_and_refuse_write(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read daily-entries:write", &[]);
    let html = browser.open_consent(&path).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    let params = callback(&response);
    let exchanged = app
        .exchange_code(&client_id, &params["code"], &pkce.verifier)
        .await;
    assert_eq!(exchanged.status(), 200);
    let body: serde_json::Value = exchanged.json().await.unwrap();
    assert_eq!(body["scope"], "farm:read");
    assert_eq!(
        oauth::claims(body["access_token"].as_str().unwrap())["scope"],
        "farm:read"
    );
    assert_eq!(app.audit_count("consent").await, 1);
}

async fn ticking_nothing_grants_nothing(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    // A box for a scope that was not asked for counts for nothing.
    let response = browser.accept(&html, &["daily-entries:write"]).await;
    assert_eq!(response.status(), 400);
    let again = response.text().await.unwrap();
    assert!(again.contains("tick at least one"), "{again}");
    assert_eq!(codes(&app).await, 0);
    assert_eq!(app.db_count("select count(*) from grants").await, 0);
    // The same request can still be answered.
    let response = browser.accept(&again, &["farm:read"]).await;
    assert!(callback(&response).contains_key("code"));
}

async fn deny_redirects_access_denied_and_is_audited(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let response = browser.answer_consent(&html, "deny", &["farm:read"]).await;
    assert_error_redirect(&response, &app, "access_denied");
    assert_eq!(app.audit_count("consent_denied").await, 1);
    assert_eq!(app.db_count("select count(*) from grants").await, 0);
    assert_eq!(codes(&app).await, 0);
    // The request is answered: submitting the form again, even with the
    // other button, gets the same answer and changes nothing.
    let again = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(location(&again), location(&response));
    assert_eq!(codes(&app).await, 0);
    assert_eq!(app.audit_count("consent_denied").await, 1);
}

async fn an_approved_form_sent_again_repeats_its_code_until_the_code_expires(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let first = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(first.status(), 303);
    assert!(callback(&first).contains_key("code"));
    // A double click or a reload: the same redirect, the same code.
    let again = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(again.status(), 303);
    assert_eq!(location(&again), location(&first));
    assert_eq!(codes(&app).await, 1);
    // From the second the code expires, it is not handed out again: the
    // client could not exchange it.
    app.clock.advance(coop::oauth::approval::CODE_TTL);
    let late = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(late.status(), 409);
    assert!(late.headers().get("location").is_none());
    assert!(late.text().await.unwrap().contains("already answered"));
    assert_eq!(codes(&app).await, 1);
}

async fn an_approved_form_sent_again_after_its_code_was_exchanged_gets_no_code(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let first = browser.accept(&html, &["farm:read"]).await;
    let code = callback(&first)["code"].clone();
    let exchanged = app.exchange_code(&client_id, &code, &pkce.verifier).await;
    assert_eq!(exchanged.status(), 200);
    // Still within the code's minute: handing the spent code out again
    // would make the client present it twice and lose its grant to reuse
    // detection.
    let again = browser.accept(&html, &["farm:read"]).await;
    assert_eq!(again.status(), 409);
    assert!(again.headers().get("location").is_none());
    assert!(again.text().await.unwrap().contains("already answered"));
    let refresh = app
        .refresh(
            &client_id,
            exchanged.json::<serde_json::Value>().await.unwrap()["refresh_token"]
                .as_str()
                .unwrap(),
        )
        .await;
    assert_eq!(refresh.status(), 200, "the grant is untouched");
}

async fn consent_is_remembered_only_for_what_was_granted(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let browser = app.signed_in(&user).await;
    // A client whose redirect proves it (https), approved once.
    let client_id = app.register_https_client(json!({})).await;
    let https = [("redirect_uri", Some(HTTPS_REDIRECT))];
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &https);
    let html = browser.open_consent(&path).await;
    let first = browser.accept(&html, &["farm:read"]).await;
    assert!(https_callback(&first).contains_key("code"));

    // The same or less: no screen, a code at once.
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &https);
    let params = https_callback(&browser.open(&path).await);
    assert_eq!(params["state"], "state-123");
    assert_eq!(params["iss"], app.issuer);
    let response = app
        .token(
            &TokenRequest::code(&client_id, &params["code"], &pkce.verifier)
                .field("redirect_uri", HTTPS_REDIRECT),
        )
        .await;
    assert_eq!(response.status(), 200);
    let tokens: serde_json::Value = response.json().await.unwrap();

    // More than was granted: the screen again, the granted scope marked.
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read daily-entries:write",
        &https,
    );
    let html = browser.open_consent(&path).await;
    assert_eq!(html.matches("allowed before").count(), 1, "{html}");

    // Another client, never approved: the screen, never a silent approval.
    let other = app.register_https_client(json!({})).await;
    let path = app.authorize_path(&other, &Pkce::new(), "farm:read", &https);
    browser.open_consent(&path).await;

    // A revoked grant is not remembered.
    let revoked = app
        .revoke(&client_id, tokens["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(revoked.status(), 200);
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &https);
    let html = browser.open_consent(&path).await;
    assert!(!html.contains("allowed before"), "{html}");
    assert_eq!(app.audit_count("consent").await, 1);
}

async fn consent_is_asked_again_after_the_credential_epoch_moved(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    app.admin(&["user", "sign-out-everywhere", &user.email])
        .await;
    let (code, verifier) = app
        .approved_code_for(&user, &tokens.client_id, "farm:read")
        .await;
    // A new grant: the old one, made under the old epoch, is revoked, so its
    // refresh token stays dead even though the person approved again.
    app.assert_count(
        "select count(*) from grants where revoked_at is not null",
        1,
    )
    .await;
    // The old grant's end is a grant event of its own in the audit log.
    assert_eq!(
        app.db_count(
            "select count(*) from audit_log a join grants g on g.id = a.grant_id \
             where a.kind = 'grant_revoked' and g.revoked_at is not null"
        )
        .await,
        1
    );
    let old = app.refresh(&tokens.client_id, &tokens.refresh_token).await;
    oauth::assert_oauth_error(old, 400, "invalid_grant").await;
    let new = app.exchange_code(&tokens.client_id, &code, &verifier).await;
    assert_eq!(new.status(), 200);
}

async fn two_tabs_answer_their_own_requests(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let first = Pkce::new();
    let second = Pkce::new();
    let path_one = app.authorize_path(&client_id, &first, "farm:read", &[("state", Some("tab-1"))]);
    let path_two = app.authorize_path(
        &client_id,
        &second,
        "farm:read daily-entries:write",
        &[("state", Some("tab-2"))],
    );
    let html_one = browser.open_consent(&path_one).await;
    let html_two = browser.open_consent(&path_two).await;
    assert_ne!(
        form_value(&html_one, "request"),
        form_value(&html_two, "request")
    );

    let two = callback(
        &browser
            .accept(&html_two, &["farm:read", "daily-entries:write"])
            .await,
    );
    let one = callback(&browser.accept(&html_one, &["farm:read"]).await);
    assert_eq!(two["state"], "tab-2");
    assert_eq!(one["state"], "tab-1");
    let response = app
        .exchange_code(&client_id, &two["code"], &second.verifier)
        .await;
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["scope"], "farm:read daily-entries:write");
    let response = app
        .exchange_code(&client_id, &one["code"], &first.verifier)
        .await;
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["scope"], "farm:read");
    // One grant per (user, client).
    app.assert_count("select count(*) from grants where revoked_at is null", 1)
        .await;
}

/// The consent form approving `farm:read` for `request` with `csrf`.
fn approval<'a>(csrf: &'a str, request: &'a str) -> [(&'a str, &'a str); 4] {
    [
        ("csrf", csrf),
        ("request", request),
        ("decision", "approve"),
        ("scope", "farm:read"),
    ]
}

/// POSTs `form` to `/authorize/consent` from `browser`, from a foreign
/// `origin` when given (else none); the status.
async fn post_consent(browser: &Browser, origin: Option<&str>, form: &[(&str, &str)]) -> u16 {
    let mut request = browser.post(browser.url("/authorize/consent")).form(form);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.unwrap().status().as_u16()
}

async fn the_consent_form_needs_its_csrf_token_and_our_origin(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    let html = browser.open_consent(&path).await;
    let request = form_value(&html, "request").unwrap();
    let csrf = form_value(&html, "csrf").unwrap();
    for forged in ["", "forged"] {
        let status = post_consent(&browser, None, &approval(forged, &request)).await;
        assert_eq!(status, 403, "csrf {forged:?}");
    }
    let evil = Some("https://evil.example");
    let status = post_consent(&browser, evil, &approval(&csrf, &request)).await;
    assert_eq!(status, 403);
    // Another person's browser cannot answer it either (no such request there).
    let farm = app.add_farm("Other Farm").await;
    let other_user = app
        .add_member(&farm, "viewer@other.example", "viewer", None)
        .await;
    let other = app.signed_in(&other_user).await;
    // The start page's sign-out form carries the other session's token.
    let other_page = other.text("/").await;
    let other_csrf = form_value(&other_page, "csrf").unwrap();
    let status = post_consent(&other, None, &approval(&other_csrf, &request)).await;
    assert_eq!(status, 400);
    assert_eq!(codes(&app).await, 0);
    // The genuine answer still works.
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(callback(&response).contains_key("code"));
}

async fn state_is_optional_and_iss_always_present(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[("state", None)]);
    let html = browser.open_consent(&path).await;
    let params = callback(&browser.accept(&html, &["farm:read"]).await);
    assert!(!params.contains_key("state"));
    assert_eq!(params["iss"], app.issuer);
    assert!(params.contains_key("code"));
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read",
        &[("state", None), ("scope", Some("bogus"))],
    );
    let params = callback(&browser.open(&path).await);
    assert!(!params.contains_key("state"));
    assert_eq!(params["iss"], app.issuer);
    assert_eq!(params["error"], "invalid_scope");
}

async fn an_overlong_state_is_invalid_request_sent_back_without_it(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = setup(&app, "manager").await;
    // The longest state is kept through consent and echoed whole.
    let longest = "s".repeat(MAX_STATE_BYTES);
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read",
        &[("state", Some(&longest))],
    );
    let html = browser.open_consent(&path).await;
    let params = callback(&browser.accept(&html, &["farm:read"]).await);
    assert_eq!(params["state"], longest);
    assert!(params.contains_key("code"));

    // One byte more: sent back to the client (its redirect URI is known),
    // without the state, signed in or not.
    let too_long = format!("{longest}s");
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read",
        &[("state", Some(&too_long))],
    );
    for response in [
        browser.open(&path).await,
        Browser::new(&app).open(&path).await,
    ] {
        let params = callback(&response);
        assert_eq!(params["error"], "invalid_request", "{params:?}");
        assert_eq!(
            params["error_description"],
            format!("state is longer than {MAX_STATE_BYTES} bytes")
        );
        assert_eq!(params["iss"], app.issuer);
        assert!(!params.contains_key("state"));
        assert!(!params.contains_key("code"));
    }
    assert_eq!(codes(&app).await, 1);
}
