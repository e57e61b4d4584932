//! What a real `coop serve` logs at debug level while a client goes through
//! the whole authorization flow, and a person through a password reset
//! link: never a code, a PKCE verifier, an access or refresh token, a
//! client secret, a reset link's token or a password (threat 27), also
//! when they are refused.

use std::sync::Arc;

use crate::helpers::oauth::{Pkce, REDIRECT_URI, TokenRequest, callback};
use crate::helpers::{Browser, Engine, PASSWORD, TestApp, TestDatabase};
use crate::serve::Server;

#[tokio::test]
async fn no_token_code_or_secret_reaches_the_logs_even_at_debug_level() {
    let db = TestDatabase::create(Engine::Sqlite).await;
    let database_url = db.url_string();
    let server = Server::start(
        &database_url,
        &[],
        &[
            ("RUST_LOG", "debug"),
            // The replay below must be reuse at once, not a retry.
            ("COOP_REFRESH_REUSE_WINDOW", "0"),
        ],
    )
    .await;
    let issuer = server.issuer.clone();
    let app = TestApp::attach(&issuer, Arc::new(db));

    // Fixtures through the real command line, on the server's database.
    let farm = app.add_farm("Hillside Farm").await;
    let password = PASSWORD;
    let email = "owner@hillside.example";
    app.add_user(&farm, email, "owner", password).await;
    let added = app
        .add_client(&[
            "--name",
            "Office",
            "--redirect-uri",
            REDIRECT_URI,
            "--confidential",
        ])
        .await;
    let client_id = added.field("client_id");
    let secret = added.field("client_secret");

    // Sign in, authorize, consent.
    let person = Browser::new(&app);
    assert_eq!(person.sign_in(email, password).await.status(), 303);
    let pkce = Pkce::new();
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("scope", "farm:read"),
        ("state", "s"),
    ])
    .unwrap();
    let html = person.open_consent(&format!("/authorize?{query}")).await;
    let response = person.accept(&html, &["farm:read"]).await;
    let auth_code = callback(&response)["code"].clone();

    // The client: a refused exchange (wrong verifier), the exchange with
    // Basic, the secret in the body (refused), a refresh, a replay,
    // revocations.
    let code = |verifier: &str| {
        TokenRequest::fields(&[
            ("grant_type", "authorization_code"),
            ("code", &auth_code),
            ("code_verifier", verifier),
        ])
        .basic(&client_id, &secret)
    };
    let wrong_verifier = Pkce::new().verifier;
    let refused = app.token(&code(&wrong_verifier)).await;
    assert_eq!(refused.status(), 400);
    let body: serde_json::Value = app.token(&code(&pkce.verifier)).await.json().await.unwrap();
    let access = body["access_token"].as_str().unwrap().to_owned();
    let first_refresh = body["refresh_token"].as_str().unwrap().to_owned();
    // The secret in the body: refused, since the client registered Basic.
    let in_body = app
        .token(&TokenRequest::refresh(&client_id, &first_refresh).field("client_secret", &secret))
        .await;
    assert_eq!(in_body.status(), 401);
    let refresh = |refresh: &str, secret: &str| {
        TokenRequest::fields(&[("grant_type", "refresh_token"), ("refresh_token", refresh)])
            .basic(&client_id, secret)
    };
    let body: serde_json::Value = app
        .token(&refresh(&first_refresh, &secret))
        .await
        .json()
        .await
        .unwrap();
    let second_refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let wrong_secret = format!("{secret}-wrong");
    let refused = app.token(&refresh("x", &wrong_secret)).await;
    assert_eq!(refused.status(), 401);
    let revoke = |token: String| {
        reqwest::Client::new()
            .post(app.url("/revoke"))
            .basic_auth(&client_id, Some(&secret))
            .form(&[("token", token)])
            .send()
    };
    assert_eq!(revoke(access.clone()).await.unwrap().status(), 200);
    // The replay: reuse detected, the grant revoked.
    assert_eq!(
        app.token(&refresh(&first_refresh, &secret)).await.status(),
        400
    );
    assert_eq!(revoke(second_refresh.clone()).await.unwrap().status(), 200);

    // A password reset link, opened and used (the token in the query, then
    // in the form), and the new password.
    let (code, out, err) = app
        .cli(&[
            "admin",
            "user",
            "password-reset",
            email,
            "--issuer",
            &issuer,
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let link = crate::helpers::app::printed(&out, "reset_link").unwrap();
    let path = link.strip_prefix(&issuer).unwrap().to_owned();
    let reset_token = path.trim_start_matches("/password-reset?token=").to_owned();
    let stranger = Browser::new(&app);
    let page = stranger.text(&path).await;
    let csrf = crate::helpers::form_value(&page, "csrf").unwrap();
    let new_password = "the password chosen with the link";
    let chosen = stranger
        .submit(
            "/password-reset",
            &[
                ("csrf", csrf.as_str()),
                ("token", reset_token.as_str()),
                ("new_password", new_password),
                ("confirm_password", new_password),
            ],
        )
        .await;
    assert_eq!(chosen.status(), 200);

    let (status, logs) = server.terminate().await;
    assert!(status.success());

    // Really at debug level, covering the flow and its refusals...
    assert!(logs.contains("DEBUG"), "{logs}");
    assert!(logs.contains("/token"), "{logs}");
    assert!(logs.contains("reuse detected"), "{logs}");
    assert!(logs.contains("client authentication failed"), "{logs}");
    // ...and not one secret.
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"));
    assert!(!logs.contains(&basic), "the Basic credentials were logged");
    for (what, secret) in [
        ("the code", auth_code.as_str()),
        ("the PKCE verifier", pkce.verifier.as_str()),
        ("a wrong PKCE verifier", wrong_verifier.as_str()),
        ("the access token", access.as_str()),
        ("the first refresh token", first_refresh.as_str()),
        ("the second refresh token", second_refresh.as_str()),
        ("the client secret", secret.as_str()),
        ("a wrong client secret", wrong_secret.as_str()),
        ("the password", password),
        ("the reset link's token", reset_token.as_str()),
        ("the password chosen with it", new_password),
    ] {
        assert!(!logs.contains(secret), "{what} was logged");
    }
}
