//! `/revoke` (RFC 7009).

use serde_json::{Value, json};

use crate::helpers::oauth::{self, REDIRECT_URI, assert_oauth_error};
use crate::helpers::{Engine, TestApp, retry_after};
use crate::on_both_engines;

on_both_engines!(
    revoking_a_refresh_token_ends_the_grant,
    revoking_an_access_token_records_its_jti_and_keeps_the_grant,
    unknown_tokens_are_answered_200,
    a_token_of_another_client_is_refused_and_kept,
    a_confidential_client_must_authenticate_to_revoke,
    a_revocation_without_a_token_is_invalid_request,
    revocation_is_rate_limited_per_network_apart_from_token_requests,
);

async fn revoke_form(app: &TestApp, form: &[(&str, &str)]) -> reqwest::Response {
    reqwest::Client::new()
        .post(app.url("/revoke"))
        .form(form)
        .send()
        .await
        .unwrap()
}

async fn revoking_a_refresh_token_ends_the_grant(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let response = app.revoke(&tokens.client_id, &tokens.refresh_token).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    app.assert_count(
        "select count(*) from grants where revoked_at is not null",
        1,
    )
    .await;
    assert_eq!(app.audit_count("grant_revoked").await, 1);
    let response = app.token(&tokens.refresh_request()).await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    // Revoking again is still 200 and changes nothing more.
    let again = app.revoke(&tokens.client_id, &tokens.refresh_token).await;
    assert_eq!(again.status(), 200);
    assert_eq!(app.audit_count("grant_revoked").await, 1);
}

async fn revoking_an_access_token_records_its_jti_and_keeps_the_grant(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let claims = oauth::claims(&tokens.access_token);
    let response = revoke_form(
        &app,
        &[
            ("client_id", &tokens.client_id),
            ("token", &tokens.access_token),
            ("token_type_hint", "access_token"),
        ],
    )
    .await;
    assert_eq!(response.status(), 200);
    let jti = claims["jti"].as_str().unwrap();
    let exp = claims["exp"].as_i64().unwrap();
    assert_eq!(
        app.db_count(&format!(
            "select count(*) from revoked_access_tokens where jti = '{jti}' and expires_at = {exp}"
        ))
        .await,
        1
    );
    assert_eq!(app.audit_count("access_token_revoked").await, 1);
    app.assert_count("select count(*) from grants where revoked_at is null", 1)
        .await;
    // Without a hint too.
    let response = revoke_form(
        &app,
        &[
            ("client_id", &tokens.client_id),
            ("token", &tokens.access_token),
        ],
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(app.token(&tokens.refresh_request()).await.status(), 200);
}

async fn unknown_tokens_are_answered_200(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let client_id = app.register_public_client().await;
    for token in [
        "unknown",
        "a.b.c",
        "eyJhbGciOiJub25lIn0.e30.",
        &"x".repeat(500),
    ] {
        for hint in ["refresh_token", "access_token", "something_else"] {
            let response = revoke_form(
                &app,
                &[
                    ("client_id", &client_id),
                    ("token", token),
                    ("token_type_hint", hint),
                ],
            )
            .await;
            assert_eq!(response.status(), 200, "{token} {hint}");
            assert_eq!(response.text().await.unwrap(), "");
        }
    }
}

async fn a_token_of_another_client_is_refused_and_kept(engine: Engine) {
    let (app, user) = TestApp::with_member(engine, "manager").await;
    let tokens = app.connect(&user, "farm:read").await;
    let other = app.register_public_client().await;
    for token in [&tokens.refresh_token, &tokens.access_token] {
        let response = app.revoke(&other, token).await;
        assert_oauth_error(response, 400, "invalid_request").await;
    }
    app.assert_count("select count(*) from revoked_access_tokens", 0)
        .await;
    assert_eq!(app.token(&tokens.refresh_request()).await.status(), 200);
}

async fn a_confidential_client_must_authenticate_to_revoke(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let response = app.register(&json!({"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "client_secret_basic"}))
    .await;
    let body: Value = response.json().await.unwrap();
    let client_id = body["client_id"].as_str().unwrap();
    let secret = body["client_secret"].as_str().unwrap();
    let response = revoke_form(&app, &[("client_id", client_id), ("token", "x")]).await;
    assert_oauth_error(response, 401, "invalid_client").await;
    let response = reqwest::Client::new()
        .post(app.url("/revoke"))
        .basic_auth(client_id, Some("wrong"))
        .form(&[("token", "x")])
        .send()
        .await
        .unwrap();
    assert_oauth_error(response, 401, "invalid_client").await;
    let response = reqwest::Client::new()
        .post(app.url("/revoke"))
        .basic_auth(client_id, Some(secret))
        .form(&[("token", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

async fn a_revocation_without_a_token_is_invalid_request(engine: Engine) {
    let app = TestApp::spawn(engine).await;
    let client_id = app.register_public_client().await;
    let response = revoke_form(&app, &[("client_id", &client_id)]).await;
    assert_oauth_error(response, 400, "invalid_request").await;
    let response = revoke_form(
        &app,
        &[("client_id", &client_id), ("token", "a"), ("token", "b")],
    )
    .await;
    assert_oauth_error(response, 400, "invalid_request").await;
}

async fn revocation_is_rate_limited_per_network_apart_from_token_requests(engine: Engine) {
    let app = TestApp::spawn_with(engine, |config| config.token_rate_limit = 3).await;
    let client_id = app.register_public_client().await;
    for _ in 0..3 {
        assert_eq!(app.revoke(&client_id, "made-up").await.status(), 200);
    }
    let response = app.revoke(&client_id, "made-up").await;
    let wait = retry_after(&response);
    assert!((1..=20).contains(&wait), "Retry-After {wait}");
    assert_oauth_error(response, 429, "temporarily_unavailable").await;
    // A budget of its own: the network's token requests are still served.
    let refresh = [
        ("grant_type", "refresh_token"),
        ("client_id", client_id.as_str()),
        ("refresh_token", "made-up"),
    ];
    assert_oauth_error(app.token_request(&refresh).await, 400, "invalid_grant").await;
    // And another network revokes.
    let elsewhere = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let response = elsewhere
        .post(app.url("/revoke"))
        .form(&[("client_id", client_id.as_str()), ("token", "made-up")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}
