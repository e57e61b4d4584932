//! `prompt` and `max_age` at `/authorize` (OpenID Connect Core §3.1.2.1):
//! `consent` shows the screen, `login` and `max_age` ask for the password
//! again (once), `none` never shows a page and says why in the redirect,
//! and values Coop does not know are `invalid_request`.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::helpers::oauth::{self, HTTPS_REDIRECT, Pkce, TokenRequest, callback, https_callback};
use crate::helpers::{
    Browser, Engine, PASSWORD_ASKED_BY_THE_CLIENT, PASSWORD_SIGN_IN_GREW_OLD, TestApp, TestUser,
    form_value, location,
};
use crate::on_both_engines;

on_both_engines!(
    prompt_consent_shows_the_screen_to_an_approved_client,
    prompt_login_asks_for_the_password_however_fresh_the_sign_in,
    signing_in_answers_prompt_login_and_max_age,
    max_age_asks_again_only_for_an_older_sign_in,
    prompt_none_never_shows_a_page,
    unknown_or_mixed_prompt_values_and_bad_max_age_are_invalid_request,
    prompt_values_are_not_advertised_in_oauth_metadata,
);

const HTTPS: [(&str, Option<&str>); 1] = [("redirect_uri", Some(HTTPS_REDIRECT))];

async fn codes(app: &TestApp) -> i64 {
    app.db_count("select count(*) from authorization_codes")
        .await
}

/// A signed-in browser and an https client it approved for `farm:read`.
async fn approved_https_client(app: &TestApp) -> (Browser, String, TestUser) {
    let user = app.farm_with_member("manager").await;
    let browser = app.signed_in(&user).await;
    let client_id = app.register_https_client(json!({})).await;
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &HTTPS);
    let html = browser.open_consent(&path).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(https_callback(&response).contains_key("code"));
    // Without prompt: approved again silently.
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &HTTPS);
    assert!(https_callback(&browser.open(&path).await).contains_key("code"));
    (browser, client_id, user)
}

/// Asserts an error sent back to `redirect` with `state` and `iss`, and
/// no code.
fn assert_sent_back(response: &reqwest::Response, app: &TestApp, redirect: &str, error: &str) {
    assert_eq!(response.status(), 303);
    let target = location(response);
    assert!(target.starts_with(&format!("{redirect}?")), "{target}");
    let params: HashMap<String, String> = url::Url::parse(&target)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(
        params.get("error").map(String::as_str),
        Some(error),
        "{target}"
    );
    assert!(params.contains_key("error_description"));
    assert_eq!(params.get("state").map(String::as_str), Some("state-123"));
    assert_eq!(params.get("iss"), Some(&app.issuer));
    assert!(!params.contains_key("code"));
}

/// Asserts the password page the client asked for, and returns its form's
/// (csrf, request).
async fn password_page(response: reqwest::Response) -> (String, String) {
    assert_eq!(response.status(), 200);
    let page = response.text().await.unwrap();
    assert!(page.contains("Confirm it is you"), "{page}");
    assert!(page.contains(PASSWORD_ASKED_BY_THE_CLIENT), "{page}");
    assert!(!page.contains(PASSWORD_SIGN_IN_GREW_OLD), "{page}");
    assert!(!page.contains("name=\"decision\""));
    (
        form_value(&page, "csrf").unwrap(),
        form_value(&page, "request").unwrap(),
    )
}

async fn confirm(
    app: &TestApp,
    browser: &Browser,
    (csrf, request): &(String, String),
    password: &str,
) -> reqwest::Response {
    browser
        .post(app.url("/authorize/confirm"))
        .form(&[
            ("csrf", csrf.as_str()),
            ("request", request.as_str()),
            ("password", password),
        ])
        .send()
        .await
        .unwrap()
}

async fn prompt_consent_shows_the_screen_to_an_approved_client(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, _) = approved_https_client(&app).await;
    let mut overrides = HTTPS.to_vec();
    overrides.push(("prompt", Some("consent")));
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &overrides);
    let html = browser.open_consent(&path).await;
    assert!(html.contains("allowed before"), "{html}");
    // An https client asked at its own request is not told it cannot
    // prove who it is.
    assert!(!html.contains("You connected this app before"), "{html}");
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(https_callback(&response).contains_key("code"));
}

async fn prompt_login_asks_for_the_password_however_fresh_the_sign_in(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, client_id, user) = approved_https_client(&app).await;
    let before = codes(&app).await;
    let mut overrides = HTTPS.to_vec();
    overrides.push(("prompt", Some("login")));
    let pkce = Pkce::new();
    let path = app.authorize_path(&client_id, &pkce, "farm:read", &overrides);
    // Signed in a moment ago, approved before: the password all the same.
    let form = password_page(browser.open(&path).await).await;
    let wrong = confirm(&app, &browser, &form, "not the password").await;
    assert_eq!(wrong.status(), 401);
    // Asked again, for the same reason.
    let page = wrong.text().await.unwrap();
    assert!(page.contains(PASSWORD_ASKED_BY_THE_CLIENT), "{page}");
    assert_eq!(codes(&app).await, before);
    let right = confirm(&app, &browser, &form, &user.password).await;
    assert_eq!(right.status(), 303);
    let next = location(&right);
    assert!(next.starts_with("/authorize/consent?request="), "{next}");
    // Asked once: then on as without prompt (here, the silent approval).
    let params = https_callback(&browser.open(&next).await);
    let exchanged = app
        .token(
            &TokenRequest::code(&client_id, &params["code"], &pkce.verifier)
                .field("redirect_uri", HTTPS_REDIRECT),
        )
        .await;
    assert_eq!(exchanged.status(), 200);
    // The waiting request is answered: a reload is a page, not a second code.
    let reload = browser.open(&next).await;
    assert_eq!(reload.status(), 409);
    assert_eq!(codes(&app).await, before + 1);

    // A client that must show the screen: the password, then the screen.
    let loopback = app.register_public_client().await;
    let path = app.authorize_path(
        &loopback,
        &Pkce::new(),
        "farm:read",
        &[("prompt", Some("login consent"))],
    );
    let form = password_page(browser.open(&path).await).await;
    let right = confirm(&app, &browser, &form, &user.password).await;
    let html = browser.open_consent(&location(&right)).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(callback(&response).contains_key("code"));
}

async fn signing_in_answers_prompt_login_and_max_age(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let path = app.authorize_path(
        &client_id,
        &Pkce::new(),
        "farm:read",
        &[("prompt", Some("login consent")), ("max_age", Some("0"))],
    );
    let browser = Browser::new(&app);
    let response = browser.open(&path).await;
    assert_eq!(response.status(), 303);
    let login = url::Url::parse(&format!("{}{}", app.address, location(&response))).unwrap();
    assert_eq!(login.path(), "/login");
    let return_to: HashMap<String, String> = login.query_pairs().into_owned().collect();
    let return_to = &return_to["return_to"];
    assert!(return_to.starts_with("/authorize?"), "{return_to}");
    assert!(!return_to.contains("max_age"), "{return_to}");
    assert!(return_to.contains("prompt=consent"), "{return_to}");
    assert!(!return_to.contains("login"), "{return_to}");

    let page = browser
        .open(&location(&response))
        .await
        .text()
        .await
        .unwrap();
    let signed_in = browser
        .post(app.url("/login"))
        .form(&[
            ("csrf", form_value(&page, "csrf").unwrap().as_str()),
            ("email", user.email.as_str()),
            ("password", user.password.as_str()),
            ("return_to", return_to.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(location(&signed_in), *return_to);
    // The password was just entered: the screen, not the password again.
    browser.open_consent(return_to).await;
}

async fn max_age_asks_again_only_for_an_older_sign_in(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let browser = app.signed_in(&user).await;
    app.clock.advance(time::Duration::minutes(2));
    let with = |max_age: &'static str| {
        app.authorize_path(
            &client_id,
            &Pkce::new(),
            "farm:read",
            &[("max_age", Some(max_age))],
        )
    };
    // Signed in two minutes ago.
    browser.open_consent(&with("600")).await;
    let form = password_page(browser.open(&with("60")).await).await;
    password_page(browser.open(&with("0")).await).await;
    let right = confirm(&app, &browser, &form, &user.password).await;
    let html = browser.open_consent(&location(&right)).await;
    let response = browser.accept(&html, &["farm:read"]).await;
    assert!(callback(&response).contains_key("code"));
    // The sign-in is fresh again now.
    browser.open_consent(&with("60")).await;
}

async fn prompt_none_never_shows_a_page(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let (browser, https_client, user) = approved_https_client(&app).await;
    let before = codes(&app).await;
    let none = |client: &str, redirect: &str, extra: Option<(&'static str, &'static str)>| {
        let mut overrides = vec![("prompt", Some("none")), ("redirect_uri", Some(redirect))];
        if let Some((name, value)) = extra {
            overrides.push((name, Some(value)));
        }
        app.authorize_path(client, &Pkce::new(), "farm:read", &overrides)
    };
    let loopback = oauth::REDIRECT_URI;

    // Signed out: not the sign-in page, `login_required`.
    let path = none(&https_client, HTTPS_REDIRECT, None);
    assert_sent_back(
        &app.get(&path).await,
        &app,
        HTTPS_REDIRECT,
        "login_required",
    );
    // Approved before, and the redirect proves the client: the code.
    assert!(https_callback(&browser.open(&path).await).contains_key("code"));
    assert_eq!(codes(&app).await, before + 1);
    // Asking for more than was approved: `consent_required`.
    let more = app.authorize_path(
        &https_client,
        &Pkce::new(),
        "farm:read daily-entries:write",
        &[
            ("prompt", Some("none")),
            ("redirect_uri", Some(HTTPS_REDIRECT)),
        ],
    );
    assert_sent_back(
        &browser.open(&more).await,
        &app,
        HTTPS_REDIRECT,
        "consent_required",
    );
    // A loopback public client approved before still needs the screen.
    let tokens = app.connect(&user, "farm:read").await;
    let path = none(&tokens.client_id, loopback, None);
    assert_sent_back(
        &browser.open(&path).await,
        &app,
        loopback,
        "consent_required",
    );
    // A sign-in older than max_age: `login_required`.
    app.clock.advance(time::Duration::seconds(30));
    let path = none(&https_client, HTTPS_REDIRECT, Some(("max_age", "10")));
    assert_sent_back(
        &browser.open(&path).await,
        &app,
        HTTPS_REDIRECT,
        "login_required",
    );
    // A password change due: `interaction_required`.
    app.admin(&["user", "require-password-change", &user.email])
        .await;
    let path = none(&https_client, HTTPS_REDIRECT, None);
    assert_sent_back(
        &browser.open(&path).await,
        &app,
        HTTPS_REDIRECT,
        "interaction_required",
    );
    // Connected apps off: `access_denied`.
    app.admin(&["farm", "connected-apps", &user.farm, "off"])
        .await;
    assert_sent_back(
        &browser.open(&path).await,
        &app,
        HTTPS_REDIRECT,
        "access_denied",
    );
    // One code for `connect`, none for any refusal; nothing waits.
    assert_eq!(codes(&app).await, before + 2);
    app.assert_count(
        "select count(*) from pending_authorizations where answered_at is null",
        0,
    )
    .await;
}

async fn unknown_or_mixed_prompt_values_and_bad_max_age_are_invalid_request(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let client_id = app.register_public_client().await;
    let signed_in = app.signed_in(&user).await;
    let signed_out = Browser::new(&app);
    let loopback = oauth::REDIRECT_URI;
    for (name, value) in [
        ("prompt", "bogus"),
        ("prompt", "select_account"),
        ("prompt", "none login"),
        ("prompt", "consent none"),
        ("max_age", "-1"),
        ("max_age", "ten"),
        ("max_age", "99999999999"),
    ] {
        let path = app.authorize_path(
            &client_id,
            &Pkce::new(),
            "farm:read",
            &[(name, Some(value))],
        );
        for browser in [&signed_in, &signed_out] {
            let response = browser.open(&path).await;
            assert_sent_back(&response, &app, loopback, "invalid_request");
        }
    }
    let path = app.authorize_path(&client_id, &Pkce::new(), "farm:read", &[]);
    for repeated in [
        format!("{path}&prompt=login&prompt=consent"),
        format!("{path}&max_age=1&max_age=2"),
    ] {
        assert_sent_back(
            &signed_in.open(&repeated).await,
            &app,
            loopback,
            "invalid_request",
        );
    }
    assert_eq!(codes(&app).await, 0);
    app.assert_count("select count(*) from pending_authorizations", 0)
        .await;
}

async fn prompt_values_are_not_advertised_in_oauth_metadata(engine: Engine) {
    // `prompt_values_supported` is OpenID Connect Discovery metadata
    // (Initiating User Registration via OpenID Connect 1.0 §4); no
    // specification defines it for RFC 8414 metadata, which is what Coop
    // serves at both addresses.
    let app = TestApp::spawn(engine).await;
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let body: Value = app.get(path).await.json().await.unwrap();
        assert!(body.get("issuer").is_some(), "{body}");
        assert!(body.get("prompt_values_supported").is_none(), "{body}");
    }
}
